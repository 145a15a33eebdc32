"""How the `delay` commands show what `mqtool.delay` returns: tables for people, documents for scripts."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from mqtool.delay.listing import DelayListing, DelayStats
from mqtool.delay.replay import ReplayPlan, ReplayResult
from mqtool.delay.timer import TIMER_REPLAY_HINT, TimerRow
from mqtool.delay.timer_replay import TimerReplayPlan
from mqtool.render.output import Column, RenderContext, emit_document, emit_fields, emit_rows
from mqtool.timeparse import duration_text, format_time, human_duration

_LIST_COLUMNS = [
    Column("level", kind="int"),
    Column("delay"),
    Column("queueOffset", "qOffset", kind="int"),
    Column("deliverTimestamp", "deliver at", kind="time"),
    Column("due", kind="bool"),
    Column("late"),
    Column("realTopic", "real topic", kind="name", max_width=40),
    Column("realQueueId", "queue", kind="int"),
    Column("keys", max_width=30),
    Column("uniqKey", "uniq key", kind="id"),
    Column("storeTimestamp", "stored at", kind="time"),
    Column("note", max_width=50),
]


def render_list(listing: DelayListing, ctx: RenderContext) -> None:
    def rows() -> Iterator[dict[str, Any]]:
        for row in listing.rows:
            data = row.to_json()
            if not ctx.machine:
                data["delay"] = duration_text(row.delay_ms)
                data["late"] = human_duration(row.late_ms) if row.late_ms else ""
            yield data

    title = f"Delayed messages not yet delivered (due at {format_time(listing.now, ctx.zone)})"
    emit_rows(rows(), _LIST_COLUMNS, ctx, title=None if ctx.machine else title, empty="(none)")


_STATS_COLUMNS = [
    Column("level", kind="int"),
    Column("delay"),
    Column("minOffset", "min", kind="int"),
    Column("maxOffset", "max", kind="int"),
    Column("delayOffset", "progress", kind="int"),
    Column("backlog", kind="int"),
    Column("due", kind="int"),
    Column("oldestDeliverTimestamp", "oldest due", kind="time"),
    Column("late"),
    Column("stuck", kind="bool"),
]


def render_stats(stats: DelayStats, ctx: RenderContext) -> None:
    def human() -> None:
        emit_fields(
            [
                ("now", stats.now, "time"),
                ("messageDelayLevel", f"{stats.levels.text} ({stats.levels.source})", "text"),
                ("delayOffset.json", stats.progress_source, "text"),
            ],
            ctx,
            title="Delay queue (SCHEDULE_TOPIC_XXXX)",
        )
        rows = []
        for r in stats.rows:
            data = r.to_json()
            data["delay"] = duration_text(r.delay_ms) if r.delay_ms is not None else "(no such level)"
            data["late"] = human_duration(r.late_ms) if r.late_ms else ""
            rows.append(data)
        emit_rows(rows, _STATS_COLUMNS, ctx, title="Levels", empty="(no delay levels used)")
        if stats.timer is not None:
            t = stats.timer
            states = ", ".join(f"{n} {state}" for state, n in t.states.items()) or "none"
            backlog = t.backlog
            pairs: list[tuple[str, Any, str]] = [
                ("messages in rmq_sys_wheel_timer", t.messages, "int"),
                ("by state", states, "text"),
                ("not yet in the timer wheel", t.not_enqueued, "int"),
                ("waiting in the timer wheel", t.waiting, "int"),
                ("due now", t.due, "int"),
                (
                    "backlog by deliver time",
                    f"{backlog.get('overdue', 0)} overdue, {backlog.get('nextHour', 0)} in the next hour, "
                    f"{backlog.get('nextDay', 0)} in the next day, {backlog.get('later', 0)} later",
                    "text",
                ),
                ("timercheck lastReadTimeMs", t.last_read_time_ms, "time"),
            ]
            if t.oldest_overdue_ms is not None:
                pairs.append(("oldest overdue", t.oldest_overdue_ms, "time"))
                pairs.append(("late by", human_duration(t.late_ms or 0), "text"))
            if t.stuck:
                behind = human_duration(t.read_behind_ms or 0)
                pairs.append(
                    ("STUCK", f"the wheel's read time is {behind} behind while messages are due", "text")
                )
            if t.skipped_on_restart:
                pairs.append(
                    (
                        "skipped on restart",
                        f"{t.skipped_on_restart} waiting messages sit in slots older than the wheel: a "
                        "broker started now moves its read time past them (TimerMessageStore.recover)",
                        "text",
                    )
                )
            emit_fields(pairs, ctx, title="5.x timer-wheel messages")
        for note in stats.notes:
            ctx.out.write(f"note: {note}\n")

    emit_document(stats.to_json(), ctx, human)


_TIMER_COLUMNS = [
    Column("queueOffset", "qOffset", kind="int"),
    Column("deliverTimestamp", "deliver at (TIMER_OUT_MS)", kind="time"),
    Column("due", kind="bool"),
    Column("timerState", "timer state"),
    Column("slotTimestamp", "wheel slot", kind="time"),
    Column("realTopic", "real topic", kind="name", max_width=40),
    Column("realQueueId", "queue", kind="int"),
    Column("keys", max_width=30),
    Column("uniqKey", "uniq key", kind="id"),
    Column("rollTimes", "rolls", kind="int"),
    Column("deleteUniqKey", "deletes"),
]


def render_timer_list(rows: list[TimerRow], ctx: RenderContext, now: int) -> None:
    title = f"5.x timer-wheel messages (rmq_sys_wheel_timer; due at {format_time(now, ctx.zone)})"
    emit_rows(
        (r.to_json() for r in rows), _TIMER_COLUMNS, ctx, title=None if ctx.machine else title, empty="(none)"
    )
    if rows and not ctx.machine:
        ctx.out.write(f"note: {TIMER_REPLAY_HINT}\n")


_PLAN_COLUMNS = [
    Column("level", kind="int"),
    Column("queueOffset", "qOffset", kind="int"),
    Column("deliverTimestamp", "deliver at", kind="time"),
    Column("action"),
    Column("realTopic", "real topic", kind="name", max_width=40),
    Column("realQueueId", "queue", kind="int"),
    Column("newQueueOffset", "new qOffset", kind="int"),
    Column("keys", max_width=30),
    Column("uniqKey", "uniq key", kind="id"),
    Column("reason", max_width=60),
]


def render_plan(plan: ReplayPlan, result: ReplayResult, ctx: RenderContext, execute: bool) -> None:
    document = plan.to_json()
    document["executed"] = result.executed

    def human() -> None:
        out = ctx.out
        out.write(f"{plan.broker.describe()}; now = {format_time(plan.now, ctx.zone)}\n")
        emit_rows(
            [d.to_json() for d in plan.deliveries],
            _PLAN_COLUMNS,
            ctx,
            title="Delay replay (executeOnTimeUp per level)",
            empty="(nothing due)",
        )
        changes = plan.progress_changes
        if changes:
            emit_rows(
                [{"level": lv, "from": old, "to": new} for lv, old, new in changes],
                [Column("level", kind="int"), Column("from", kind="int"), Column("to", kind="int")],
                ctx,
                title="delayOffset.json",
            )
        for note in plan.notes + result.notes:
            out.write(f"note: {note}\n")
        n = len(plan.to_deliver)
        if result.executed:
            offsets = "updated" if result.delay_offset_written else "unchanged"
            out.write(f"delivered {n} message(s); delayOffset.json {offsets}\n")
        elif not plan.changes_anything:
            out.write("nothing to do\n")
        elif not execute:
            out.write(f"dry run: {n} message(s) would be delivered; add --execute to write\n")

    emit_document(document, ctx, human)


_TIMER_PLAN_COLUMNS = [
    Column("slotTimestamp", "slot", kind="time"),
    Column("queueOffset", "qOffset", kind="int"),
    Column("action"),
    Column("realTopic", "real topic", kind="name", max_width=40),
    Column("realQueueId", "queue", kind="int"),
    Column("newTopic", "written to", kind="name", max_width=40),
    Column("newQueueOffset", "new qOffset", kind="int"),
    Column("keys", max_width=30),
    Column("uniqKey", "uniq key", kind="id"),
    Column("reason", max_width=60),
]


def render_timer_plan(plan: TimerReplayPlan, result: ReplayResult, ctx: RenderContext, execute: bool) -> None:
    document = plan.to_json()
    document["executed"] = result.executed
    d = plan.dequeue

    def human() -> None:
        out = ctx.out
        start = format_time(d.read_from, ctx.zone)
        out.write(f"timer wheel read from {start} to {format_time(d.read_to, ctx.zone)} (exclusive); ")
        out.write(f"now = {format_time(plan.now, ctx.zone)}\n")
        emit_rows(
            [x.to_json() for x in plan.deliveries],
            _TIMER_PLAN_COLUMNS,
            ctx,
            title="Timer replay (TimerMessageStore.dequeue per slot)",
            empty="(no slot due)",
        )
        for note in document["notes"] + result.notes:
            out.write(f"note: {note}\n")
        n = len(plan.to_write)
        if result.executed:
            moved = "moved" if result.delay_offset_written else "unchanged"
            out.write(f"wrote {n} record(s); timercheck read time {moved}\n")
        elif not plan.changes_anything:
            out.write("nothing to do\n")
        elif not execute:
            out.write(
                f"dry run: {n} record(s) would be written and the read time moved; add --execute to write\n"
            )

    emit_document(document, ctx, human)
