"""`mqtool delay ...`: the delay queue (SCHEDULE_TOPIC_XXXX) — what waits, how late it is, and replaying it
exactly as the broker's ScheduleMessageService does. Thin wrappers over `mqtool.delay`."""

from __future__ import annotations

from typing import Annotated

import typer

from mqtool.cli.options import (
    BrokerConfigOpt,
    DryRunOpt,
    FormatOpt,
    RecordOpt,
    StoreOpt,
    TzOpt,
    WideOpt,
    execute_flag,
    new_app,
    session,
    skip_pandas_probe,
)

delay_app = new_app("Delay queue: list what waits in SCHEDULE_TOPIC_XXXX, level stats, replay what is due.")

LevelOpt = Annotated[int | None, typer.Option("--level", "-l", help="Only this delay level (1-based).")]
NowOpt = Annotated[
    str | None,
    typer.Option(
        "--now",
        metavar="TIME",
        help="The time to judge 'due' and ages against (epoch ms, ISO-8601, yyyy-MM-dd#HH:mm:ss:SSS, "
        "-2h). Default: now.",
        show_default=False,
    ),
]
BrokerVersionOpt = Annotated[
    int | None,
    typer.Option(
        "--broker-version",
        metavar="4|5",
        help="Follow 4.9.x or 5.x rules (property order and separators). Default: detected from the store.",
        show_default=False,
    ),
]


def resolve_now(now: str | None, zone) -> int:
    """--now as epoch ms (the current time when not given)."""
    from mqtool.timeparse import now_ms, parse_time

    return now_ms() if now is None else parse_time(now, zone)


@delay_app.command("list")
def delay_list(
    level: LevelOpt = None,
    due: Annotated[bool, typer.Option("--due", help="Only messages due at --now.")] = False,
    pending: Annotated[bool, typer.Option("--pending", help="Only messages not yet due at --now.")] = False,
    timer: Annotated[
        bool,
        typer.Option(
            "--timer",
            help="List 5.x timer-wheel messages (rmq_sys_wheel_timer) instead, each with its state in the "
            "timer store (not-enqueued, waiting, delivered, rolled, recalled, ...).",
        ),
    ] = False,
    now: NowOpt = None,
    store: StoreOpt = None,
    fmt: FormatOpt = None,
    tz: TzOpt = None,
    wide: WideOpt = False,
    record: RecordOpt = False,
    broker_config: BrokerConfigOpt = None,
) -> None:
    """Every message of SCHEDULE_TOPIC_XXXX not yet delivered (queue offset at or after its level's progress
    in delayOffset.json): level, delay, delivery time (the ConsumeQueue tags code), due or not at --now, real
    topic and queue, keys, unique key, store time."""
    from formats.errors import UsageError
    from mqtool.cli.scheduled import delay_render as show
    from mqtool.delay.listing import list_delayed
    from mqtool.delay.timer import list_timer_messages

    if due and pending:
        raise UsageError("--due and --pending exclude each other")
    skip_pandas_probe()
    s = session(store, fmt, tz, wide, record)
    when = resolve_now(now, s.ctx.zone)
    only = "due" if due else "pending" if pending else None
    with s.open_store(broker_config) as st:
        if timer:
            show.render_timer_list(list_timer_messages(st, now=when, only=only), s.ctx, when)
            return
        listing = list_delayed(st, now=when, level=level, only=only)
        show.render_list(listing, s.ctx)
    _notes(listing.notes)


@delay_app.command("stats")
def delay_stats(
    now: NowOpt = None,
    stuck_after: Annotated[
        str,
        typer.Option(
            "--stuck-after",
            metavar="DURATION",
            help="Call a level stuck when its oldest message is this late.",
        ),
    ] = "1m",
    store: StoreOpt = None,
    fmt: FormatOpt = None,
    tz: TzOpt = None,
    wide: WideOpt = False,
    record: RecordOpt = False,
    broker_config: BrokerConfigOpt = None,
) -> None:
    """Per delay level: backlog, messages due, the oldest due time and how late it is ("stuck" when due long
    ago), delayOffset.json progress against the queue's min and max; the messageDelayLevel table in use
    (default, or from --broker-config); on a 5.x store the timer wheel: messages by state, the backlog by
    deliver time, the oldest overdue, stuck when its read time lags --now while messages are due."""
    from mqtool.cli.scheduled import delay_render as show
    from mqtool.delay.listing import delay_stats as stats
    from mqtool.timeparse import parse_duration

    skip_pandas_probe()
    s = session(store, fmt, tz, wide, record, csv=False)
    when = resolve_now(now, s.ctx.zone)
    with s.open_store(broker_config) as st:
        show.render_stats(stats(st, now=when, stuck_after_ms=parse_duration(stuck_after)), s.ctx)


@delay_app.command("replay")
def delay_replay(
    level: LevelOpt = None,
    now: NowOpt = None,
    execute: Annotated[
        bool, typer.Option("--execute", help="Write the records and delayOffset.json (default: dry run).")
    ] = False,
    dry_run: DryRunOpt = False,
    broker_version: BrokerVersionOpt = None,
    timer: Annotated[
        bool,
        typer.Option(
            "--timer",
            help="Replay the 5.x timer wheel instead: what TimerMessageStore's dequeue writes from the slots "
            "between timercheck's read time and --now (delivered copies, roll units put back into "
            "rmq_sys_wheel_timer, recalled ones dropped), then move timercheck's read time past them so the "
            "broker does not deliver them again.",
        ),
    ] = False,
    real_topic: Annotated[
        str | None,
        typer.Option(
            "--real-topic",
            metavar="TOPIC",
            help="With --timer: only slots whose messages all go to TOPIC; the read time stops at the first "
            "slot with another topic's message (the broker delivers the rest).",
            show_default=False,
        ),
    ] = None,
    store: StoreOpt = None,
    fmt: FormatOpt = None,
    tz: TzOpt = None,
    wide: WideOpt = False,
    record: RecordOpt = False,
    broker_config: BrokerConfigOpt = None,
) -> None:
    """Deliver what is due exactly as DeliverDelayedMessageTimerTask.executeOnTimeUp does: each due message
    becomes a new record in its real topic/queue (messageTimeUp: properties as the broker rebuilds them, tags
    code back to the tag hash, same body/flag/born fields), dispatched to ConsumeQueue and index, and
    delayOffset.json advances. A message already delivered is recognised and not delivered twice. A --now
    ahead of the clock delivers early (said in a note). Dry run unless --execute; never while a broker holds
    the store lock. With --timer, the 5.x timer wheel instead (see --timer)."""
    from formats.errors import UsageError
    from mqtool.cli.scheduled import delay_render as show
    from mqtool.delay import replay, timer_replay

    execute = execute_flag(execute, dry_run)
    if not timer and real_topic is not None:
        raise UsageError("--real-topic goes with --timer")
    if timer and (level is not None or broker_version is not None):
        raise UsageError("--level and --broker-version are for the delay levels, not --timer")
    s = session(store, fmt, tz, wide, record, csv=False)
    when = resolve_now(now, s.ctx.zone)
    with s.open_store(broker_config) as st:
        if timer:
            tplan = timer_replay.plan_timer_replay(st, now=when, real_topic=real_topic)
            tresult = timer_replay.execute_timer_replay(st, tplan, execute)
            show.render_timer_plan(tplan, tresult, s.ctx, execute)
            return
        plan = replay.plan_replay(st, now=when, level=level, broker_version=broker_version)
        result = replay.execute_replay(st, plan, execute)
        show.render_plan(plan, result, s.ctx, execute)


def _notes(notes: list[str]) -> None:
    import sys

    for note in notes:
        sys.stderr.write(f"mqtool: note: {note}\n")
