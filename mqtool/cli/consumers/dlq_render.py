"""How the `dlq` commands show what `mqtool.dlq` returns."""

from __future__ import annotations

from mqtool.dlq.export import DlqExportSummary
from mqtool.dlq.listing import AGE_BUCKETS, DlqListing, DlqStatsRow
from mqtool.dlq.resend import ResendPlan, ResendResult
from mqtool.render.output import Column, RenderContext, emit_document, emit_fields, emit_rows
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


def render_export(summary: DlqExportSummary, ctx: RenderContext) -> None:
    doc = summary.to_json()

    def human() -> None:
        emit_fields(
            [
                ("output", summary.output, "text"),
                ("file format", summary.format, "text"),
                ("dead letters", summary.messages, "int"),
                ("groups", ", ".join(summary.groups) or "none", "text"),
            ],
            ctx,
            title="Dead-letter export",
        )

    emit_document(doc, ctx, human, csv_rows=([doc], []))


RESEND_COLUMNS = [
    Column("dlqQueueOffset", "dlq offset", kind="int", priority=0),
    Column("action", priority=0),
    Column("originTopic", "original topic", kind="name", priority=1),
    Column("keys", max_width=30, priority=1),
    Column("uniqKey", "uniq key", kind="id", priority=2),
    Column("topic", "written to", kind="name", priority=0),
    Column("queueId", "queue", kind="int", priority=0),
    Column("newQueueOffset", "new qOffset", kind="int", priority=1),
    Column("newPhyOffset", "new phy", kind="int", priority=3),
    Column("reconsumeTimes", "reconsume", kind="int", priority=2),
    Column("reason", max_width=60, priority=0),
]


def render_resend(plan: ResendPlan, result: ResendResult, ctx: RenderContext, execute: bool) -> None:
    document = plan.to_json()
    document["executed"] = result.executed

    def human() -> None:
        out = ctx.out
        out.write(f"{plan.broker.describe()}; %DLQ%{plan.group} -> {plan.target}\n")
        emit_rows(
            [r.to_json() for r in plan.resends],
            RESEND_COLUMNS,
            ctx,
            title="Dead-letter resend",
            empty="(no dead letter selected)",
        )
        for note in plan.notes + result.notes:
            out.write(f"note: {note}\n")
        counts = plan.counts()
        tally = f"{counts['skip']} already resent or superseded, {counts['refuse']} refused"
        if result.executed:
            out.write(f"resent {len(result.written)} message(s); {tally}\n")
        elif not plan.changes_anything:
            out.write(f"nothing to resend; {tally}\n")
        elif not execute:
            out.write(
                f"dry run: {counts['resend']} message(s) would be resent ({tally}); add --execute to write\n"
            )

    emit_document(document, ctx, human)
