"""How `mqtool offsets` shows what `mqtool.offsets.progress` returns: tables for people, JSON for scripts."""

from __future__ import annotations

from mqtool.offsets.progress import ConsumerProgress


def render_progress(progress: ConsumerProgress, ctx) -> None:
    """Rows as a table (plus per-group totals) for people; a JSON list of rows for scripts."""
    from mqtool.render.output import Column, emit_rows, emit_table

    columns = [
        Column("group", kind="name", max_width=40, priority=0),
        Column("topic", kind="name", max_width=48, priority=0),
        Column("queueId", "queue", "int", priority=0),
        Column("consumerOffset", "offset", "int", priority=0),
        Column("minOffset", "min", "int", priority=2),
        Column("maxOffset", "max", "int"),
        Column("lag", "lag", "int", priority=0),
        Column("state"),
        Column("lastConsumedTimestamp", "lastConsumed", "time"),
        Column("newestTimestamp", "newest", "time", priority=2),
    ]
    docs = [r.to_json() for r in progress.rows]
    if any(r.pop_in_flight is not None for r in progress.rows):  # the columns the POP note names
        columns[7:7] = [Column("popInFlight", kind="int"), Column("popOverdue", kind="int")]
    if ctx.machine:
        emit_rows(docs, columns, ctx)
        return
    for doc, row in zip(docs, progress.rows, strict=True):
        if row.state == "behind-min":
            doc["state"] = f"behind-min ({row.deleted} deleted unconsumed)"
        elif row.state == "no-committed-offset":
            doc["state"] = "no committed offset"
    emit_table(docs, columns, ctx, title="Consumer progress", empty="(no consumer offsets)")
    if progress.totals:
        emit_table(
            [t.to_json() for t in progress.totals],
            [
                Column("group", kind="name", max_width=40),
                Column("topics", "topics", "int"),
                Column("queues", "queues", "int"),
                Column("lag", "lag total", "int"),
                Column("flagged", "not ok", "int"),
                Column("lastConsumedTimestamp", "lastConsumed", "time"),
            ],
            ctx,
            title="Totals per group",
        )
