"""How the `pop` commands show what `mqtool.pop` returns: tables for people, documents for scripts."""

from __future__ import annotations

import sys

from mqtool.pop import PopListing, PopStats
from mqtool.render.output import Column, RenderContext, emit_document, emit_rows
from mqtool.timeparse import human_duration

_LIST_COLUMNS = [
    Column("group", kind="name", max_width=30),
    Column("topic", kind="name", max_width=40),
    Column("queueId", "queue", kind="int"),
    Column("queueOffset", "qOffset", kind="int"),
    Column("popTime", "popped at", kind="time"),
    Column("invisibleUntil", "invisible until", kind="time"),
    Column("state"),
    Column("reviveQueue", "revive q", kind="int"),
    Column("orderly", kind="bool"),
    Column("kvStore", kind="bool"),
    Column("keys", max_width=30),
    Column("tags", max_width=20),
    Column("uniqKey", "uniq key", kind="id"),
    Column("retryTopic", "retry copy in", kind="name", max_width=40),
]


def _notes(notes: list[str]) -> None:
    for note in notes:
        sys.stderr.write(f"mqtool: note: {note}\n")


def render_list(listing: PopListing, ctx: RenderContext) -> None:
    emit_rows(
        [m.to_json() for m in listing.rows],
        _LIST_COLUMNS,
        ctx,
        title=None if ctx.machine else f"POP messages ({listing.revive_topic or 'no revive topic'})",
        empty="(none)",
    )
    _notes(listing.notes)


_GROUP_COLUMNS = [
    Column("group", kind="name", max_width=40),
    Column("popped", kind="int"),
    Column("acked", kind="int"),
    Column("inFlight", "in flight", kind="int"),
    Column("oldestInvisibleUntil", "oldest invisible until", kind="time"),
    Column("overdue", kind="int"),
    Column("oldestOverdue", "oldest overdue", kind="time"),
    Column("late"),
    Column("revived", kind="int"),
    Column("orderly", kind="bool"),
]

_QUEUE_COLUMNS = [
    Column("reviveQueue", "revive q", kind="int"),
    Column("minOffset", "min", kind="int"),
    Column("maxOffset", "max", kind="int"),
    Column("reviveOffset", "revive offset", kind="int"),
    Column("backlog", kind="int"),
    Column("inTimer", "in timer", kind="int"),
    Column("overdue", kind="int"),
    Column("late"),
]


def render_stats(stats: PopStats, ctx: RenderContext) -> None:
    def human() -> None:
        groups = []
        for g in stats.groups:
            data = g.to_json()
            data["late"] = human_duration(g.late_ms) if g.late_ms else ""
            groups.append(data)
        emit_rows(groups, _GROUP_COLUMNS, ctx, title="POP groups", empty="(no POP checkpoints)")
        queues = []
        for q in stats.queues:
            data = q.to_json()
            data["late"] = human_duration(q.late_ms) if q.late_ms else ""
            queues.append(data)
        emit_rows(queues, _QUEUE_COLUMNS, ctx, title=f"Revive queues ({stats.revive_topic})", empty="(none)")
        for note in stats.notes:
            ctx.out.write(f"note: {note}\n")

    emit_document(stats.to_json(), ctx, human)
