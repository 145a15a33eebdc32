"""How the `dlq` commands show what `mqtool.dlq` returns."""

from __future__ import annotations

from mqtool.dlq.listing import AGE_BUCKETS, DlqListing, DlqStatsRow
from mqtool.render.output import Column, RenderContext, emit_rows
from mqtool.timeparse import format_time

LIST_COLUMNS = [
    Column("group", kind="name", priority=0),
    Column("storeTimestamp", "died at", kind="time", priority=0),
    Column("reconsumeTimes", "reconsumed", kind="int", priority=1),
    Column("originTopic", "original topic", kind="name", priority=0),
    Column("originQueueId", "orig queue", kind="int", priority=2),
    Column("originStoreTimestamp", "sent at", kind="time", priority=2),
    Column("keys", max_width=30, priority=1),
    Column("tags", priority=2),
    Column("uniqKey", "uniq key", kind="id", priority=1),
    Column("originMessageId", "origin msgId", kind="id", priority=3),
    Column("realTopic", "last retried from", kind="name", priority=3),
    Column("queueId", "dlq queue", kind="int", priority=3),
    Column("queueOffset", "dlq offset", kind="int", priority=3),
    Column("originNote", "note", max_width=40, priority=3),
]


def render_list(listing: DlqListing, ctx: RenderContext) -> None:
    groups = ", ".join(listing.groups) or "none"
    emit_rows(
        (r.to_json() for r in listing.rows),
        LIST_COLUMNS,
        ctx,
        title=None if ctx.machine else f"Dead letters ({len(listing.rows)}) of group(s): {groups}",
        empty="(no dead letter)",
    )


def render_stats(rows: list[DlqStatsRow], listing: DlqListing, now: int, ctx: RenderContext) -> None:
    columns = [
        Column("group", kind="name", priority=0),
        Column("originTopic", "original topic", kind="name", priority=0),
        Column("messages", kind="int", priority=0),
        Column("oldestStoreTimestamp", "oldest death", kind="time", priority=1),
        Column("newestStoreTimestamp", "newest death", kind="time", priority=1),
        Column("maxReconsumeTimes", "max reconsumed", kind="int", priority=2),
        *(Column(f"age{label}", label, kind="int", priority=2) for label, _ in AGE_BUCKETS),
    ]
    title = f"Dead letters per group and original topic (ages at {format_time(now, ctx.zone)})"
    emit_rows(
        (r.to_json() for r in rows),
        columns,
        ctx,
        title=None if ctx.machine else title,
        empty="(no dead letter)",
    )
