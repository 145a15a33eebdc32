"""How `mqtool replicas diff` shows what `mqtool.replicas.diff` returns: one JSON document for scripts;
for people, tables side by side (A | B) and the HA verdict in words."""

from __future__ import annotations

import sys
from typing import Any

from mqtool.render.output import Column, RenderContext, emit_document, emit_table, to_json_text
from mqtool.replicas.diff import ReplicaDiff
from mqtool.replicas.salvage import SalvagePlan


def _short(value: Any, limit: int = 60) -> str:
    if value is None:
        return "-"
    text = value if isinstance(value, str) else to_json_text(value, indent=None)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _side_columns(first: str = "field") -> list[Column]:
    return [Column(first, priority=0), Column("a", "A", priority=0), Column("b", "B", priority=0)]


def render_diff(result: ReplicaDiff, ctx: RenderContext) -> None:
    emit_document(result.to_dict(), ctx, lambda: _human(result, ctx))
    for note in result.notes + result.configs.notes:
        sys.stderr.write(f"mqtool: note: {note}\n")


def _human(result: ReplicaDiff, ctx: RenderContext) -> None:
    a, b = result.identities
    rows = [
        {"field": label, "a": _short(x), "b": _short(y)}
        for label, x, y in (
            ("store", a.path, b.path),
            ("brokerClusterName", a.cluster, b.cluster),
            ("brokerName", a.broker_name, b.broker_name),
            ("brokerId", a.broker_id, b.broker_id),
            ("brokerRole", a.broker_role, b.broker_role),
            ("store host (newest record)", a.store_host, b.store_host),
            ("layout", a.layout, b.layout),
            ("controller mode", a.controller, b.controller),
        )
    ]
    emit_table(rows, _side_columns(), ctx, title="Replicas")
    log = result.log
    out = ctx.out
    if log is None:
        out.write(f"\nCommitlogs: not compared yet: {result.log_not_compared}\n")
    else:
        rows = [
            {"field": "min offset", "a": log.min_offsets[0], "b": log.min_offsets[1]},
            {"field": "max offset (valid end)", "a": log.max_offsets[0], "b": log.max_offsets[1]},
        ]
        ra, rb = log.records
        if log.first_difference is not None:
            for label, key in (
                ("kind", "kind"),
                ("topic", "topic"),
                ("queue", "queue_id"),
                ("queue offset", "queue_offset"),
                ("msgId", "msg_id"),
                ("UNIQ_KEY", "uniq_key"),
                ("keys", "keys"),
            ):
                rows.append(
                    {
                        "field": f"record at {log.record_start}: {label}",
                        "a": _short(getattr(ra, key, None)),
                        "b": _short(getattr(rb, key, None)),
                    }
                )
        past = [sum(p.values()) for p in log.past_prefix]
        rows.append({"field": f"messages past {log.prefix_end}", "a": past[0], "b": past[1]})
        emit_table(rows, _side_columns(), ctx, title="\nCommitlogs")
        if log.identical:
            out.write("The commitlogs are identical.\n")
        elif log.first_difference is None:
            out.write(
                f"No byte differs in [{log.compared[0]}, {log.compared[1]}): {log.ahead} is longer "
                f"(the other is its byte prefix).\n"
            )
        else:
            out.write(
                f"First differing byte at {log.first_difference}, in the record at {log.record_start} "
                f"(common prefix [{log.compared[0]}, {log.record_start})); ahead: {log.ahead or 'neither'}.\n"
            )
        topics = sorted(set(log.past_prefix[0]) | set(log.past_prefix[1]))
        if topics:
            rows = [
                {"topic": t, "a": log.past_prefix[0].get(t, 0), "b": log.past_prefix[1].get(t, 0)}
                for t in topics
            ]
            emit_table(rows, _side_columns("topic"), ctx, title=f"\nMessages per topic past {log.prefix_end}")
    rule = (
        "controller mode: AutoSwitchHAService's epoch rule"
        if any(i.controller for i in result.identities)  # diff_replicas judges by the epoch rule then
        else "classic DefaultHAService"
    )
    out.write(f"\nHA ({rule}) if the pair is started now:\n")
    if result.ha_not_compared:
        out.write(f"  not compared yet: {result.ha_not_compared}\n")
    for v in result.ha:
        out.write(f"  master {v.master}: {v.outcome}: {v.text}\n    ({v.to_dict()['cites']})\n")
    configs = result.configs
    rows = [
        {
            "table": r.table,
            "key": r.key,
            "state": r.state,
            "a": _short(r.a),
            "b": _short(r.b),
            "fields": ", ".join(r.fields),
        }
        for r in configs.rows
    ]
    columns = [
        Column("table", priority=0),
        Column("key", kind="name", priority=0),
        Column("state", priority=0),
        Column("a", "A"),
        Column("b", "B"),
        Column("fields"),
    ]
    compared = ", ".join(f"{t} {n}" for t, n in configs.compared.items())
    emit_table(
        rows,
        columns,
        ctx,
        title=f"\nConfig rows that differ (rows compared: {compared})",
        empty="(none: every config table is the same)",
    )
    _human_queues(result, ctx)
    out.write("\nIdentical.\n" if result.identical else "\nThe replicas differ.\n")


def _range(side: dict[str, Any] | None) -> str:
    if side is None:
        return "-"
    if "error" in side:
        return _short(side["error"])
    return f"[{side.get('minOffset')}, {side.get('maxOffset')})"


def _human_queues(result: ReplicaDiff, ctx: RenderContext) -> None:
    queues = result.queues
    rows = [
        {
            "queue": f"{r.topic}/{'-' if r.queue_id is None else r.queue_id}"
            + (" (BatchCQ)" if r.kind == "batchconsumequeue" else ""),
            "state": r.state,
            "a": _range(r.a),
            "b": _range(r.b),
            "ahead": r.ahead or "-",
        }
        for r in queues.rows
    ]
    columns = [
        Column("queue", kind="name", priority=0),
        Column("state", priority=0),
        Column("a", "A [min, max)", priority=0),
        Column("b", "B [min, max)", priority=0),
        Column("ahead"),
    ]
    emit_table(
        rows,
        columns,
        ctx,
        title=f"\nConsume queues that differ (queues compared: {queues.compared})",
        empty="(none: every queue serves the same offsets)",
    )
    da, db = queues.dispatch
    ca, cb = (c or {} for c in queues.checkpoints)
    side_rows = [
        {"field": f"dispatch: {key}", "a": _short(da.get(key)), "b": _short(db.get(key))}
        for key in sorted(set(da) | set(db))
    ]
    side_rows.append(
        {"field": "index files", "a": _short(queues.index_files[0]), "b": _short(queues.index_files[1])}
    )
    side_rows.append({"field": "LMQ queues", "a": queues.lmq_queues[0], "b": queues.lmq_queues[1]})
    side_rows += [
        {"field": f"checkpoint: {key}", "a": _short(ca.get(key)), "b": _short(cb.get(key))}
        for key in list(dict.fromkeys([*ca, *cb]))
    ]
    emit_table(side_rows, _side_columns(), ctx, title="\nDispatch, index and checkpoint (each replica's own)")


SALVAGE_COLUMNS = [
    Column("physicalOffset", "from offset", "int"),
    Column("topic", kind="name", max_width=40),
    Column("queueId", "queue", "int"),
    Column("queueOffset", "queue offset", "int"),
    Column("uniqKey", kind="id"),
    Column("keys", max_width=30),
    Column("action"),
    Column("reason", max_width=60),
]


def render_salvage(plan: SalvagePlan, ctx: RenderContext) -> None:
    doc = plan.to_json()

    def human() -> None:
        from mqtool.render.output import emit_fields

        counts = ", ".join(f"{n} {action}" for action, n in sorted(doc["counts"].items())) or "nothing"
        verdict = (
            f"appended {len(plan.to_copy)} message(s)"
            if plan.executed
            else ("dry run: " if not plan.execute else "") + counts
        )
        pairs = [
            ("into", doc["into"], "text"),
            ("from", doc["from"], "text"),
            ("result", verdict, "text"),
            ("common prefix ends", doc["commonPrefixEnd"], "int"),
            ("ends (into / from)", f"{doc['intoEnd']} / {doc['fromEnd']}", "text"),
        ]
        pairs += [("note", n, "text") for n in doc["notes"]]
        emit_fields(pairs, ctx, title="Salvage plan" if not plan.executed else "Salvage")
        rows = [
            m | {"reason": m["reason"] or ("no UNIQ_KEY" if m["unkeyed"] else None)} for m in doc["messages"]
        ]
        emit_table(rows, SALVAGE_COLUMNS, ctx, title="Messages past the common prefix")

    emit_document(doc, ctx, human, csv_rows=(doc["messages"], SALVAGE_COLUMNS))
