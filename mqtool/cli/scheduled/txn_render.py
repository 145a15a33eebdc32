"""How the `txn` commands show what `mqtool.transactions` returns: tables for people, JSON for scripts."""

from __future__ import annotations

from formats.names import TRANS_OP_HALF_TOPIC
from mqtool.render.output import Column, RenderContext, emit_document, emit_rows
from mqtool.timeparse import format_time, human_duration
from mqtool.transactions.end_transaction import EndPlan, EndResult
from mqtool.transactions.listing import Transaction, TxnReport
from store.broker.transaction import CHECK_MAX_TIME_TOPIC

_LIST_COLUMNS = [
    Column("halfQueueOffset", "half", kind="int"),
    Column("state"),
    Column("realTopic", "real topic", kind="name", max_width=40),
    Column("realQueueId", "queue", kind="int"),
    Column("producerGroup", "producer group", kind="name"),
    Column("transactionId", "transaction id", kind="id"),
    Column("keys", max_width=30),
    Column("age"),
    Column("checks"),
    Column("immunity"),
    Column("bornTimestamp", "born", kind="time"),
    Column("note", max_width=60),
]


def render_list(report: TxnReport, transactions: list[Transaction], ctx: RenderContext) -> None:
    if ctx.machine:
        emit_rows((t.to_json() for t in transactions), _LIST_COLUMNS, ctx)
        return
    rows = []
    for t in transactions:
        data = t.to_json()
        data["age"] = human_duration(t.age_ms)
        data["checks"] = f"{t.check_times}/{t.check_max}"
        if t.immunity_ms is not None:
            data["immunity"] = f"{human_duration(t.immunity_ms)} ({'immune' if t.immune else 'over'})"
        data["note"] = "; ".join(t.notes)
        rows.append(data)
    counts = ", ".join(f"{n} {s}" for s, n in report.counts().items())
    emit_rows(rows, _LIST_COLUMNS, ctx, title=f"Transactions ({counts})", empty="(none)")
    for q in report.queues:
        stored = "" if q.check_offset_stored else " (not stored: queue min)"
        ctx.out.write(
            f"half queue {q.queue_id}: offsets [{q.min_offset}, {q.max_offset}), check progress "
            f"{q.check_offset}{stored}; op queue [{q.op_min_offset}, {q.op_max_offset}), "
            f"{q.ops} op message(s)\n"
        )
    if report.discarded_records:
        ctx.out.write(f"{CHECK_MAX_TIME_TOPIC}: {report.discarded_records} discarded half message(s)\n")
    ctx.out.write(f"{report.broker.describe()}; transactionCheckMax {report.check_max}\n")
    for note in report.notes:
        ctx.out.write(f"note: {note}\n")


_PLAN_COLUMNS = [
    Column("halfQueueOffset", "half", kind="int"),
    Column("action"),
    Column("status"),
    Column("state", "was"),
    Column("realTopic", "real topic", kind="name", max_width=40),
    Column("realQueueId", "queue", kind="int"),
    Column("commitQueueOffset", "commit qOffset", kind="int"),
    Column("opOffsets", "op names"),
    Column("producerGroup", "producer group", kind="name"),
    Column("transactionId", "transaction id", kind="id"),
    Column("reason", max_width=60),
]


def render_plan(plan: EndPlan, result: EndResult, ctx: RenderContext, execute: bool) -> None:
    document = plan.to_json()
    document["executed"] = result.executed
    if result.written:
        document["written"] = [
            {
                "topic": m.topic,
                "queueId": m.queue_id,
                "queueOffset": m.queue_offset,
                "phyOffset": m.physical_offset,
            }
            for m in result.written
        ]

    def human() -> None:
        out = ctx.out
        out.write(f"{plan.broker.describe()}; now = {format_time(plan.now, ctx.zone)}\n")
        emit_rows(
            [r.to_json() for r in plan.requests],
            _PLAN_COLUMNS,
            ctx,
            title="End transactions (EndTransactionProcessor)",
            empty="(no transaction selected)",
        )
        if plan.op_records:
            emit_rows(
                [
                    {"queueId": m.queue_id, "queueOffset": m.queue_offset, "body": m.body.decode("ascii")}
                    for m in plan.op_records
                ],
                [
                    Column("queueId", "op queue", kind="int"),
                    Column("queueOffset", "qOffset", kind="int"),
                    Column("body"),
                ],
                ctx,
                title=f"Op messages ({TRANS_OP_HALF_TOPIC})",
            )
        for note in plan.notes:
            out.write(f"note: {note}\n")
        commits = sum(r.commit_record is not None for r in plan.requests)
        summary = f"{commits} commit copy(ies) and {len(plan.op_records)} op message(s)"
        if result.executed:
            out.write(f"wrote {summary}\n")
        elif not plan.changes_anything:
            out.write("nothing to do\n")
        elif not execute:
            out.write(f"dry run: would write {summary}; add --execute to write\n")

    emit_document(document, ctx, human)
