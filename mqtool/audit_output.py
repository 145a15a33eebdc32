"""The audit's result written out: the `--output` directory's Parquet tables, audit.json and report.html
(`write_output`), and the terminal rendering (`render_audit`, `json_document`). Knows only the result
document that `mqtool.audit.run_audit` assembles.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mqtool.audit import AuditResult

OUTPUT_MARKER = "audit.json"  # an earlier audit's directory may be written again

TABLES = {
    "queues": (
        "store",
        "topic",
        "queueId",
        "messages",
        "bytes",
        "firstStoreTimestamp",
        "lastStoreTimestamp",
        "records",
        "recordBytes",
        "prepared",
        "rolledBack",
        "minQueueOffset",
        "maxQueueOffset",
        "bodyBytes",
        "cqMinOffset",
        "cqMaxOffset",
        "cqMessages",
        "cqError",
    ),
    "problems": ("store", "file", "offset", "kind", "severity", "detail"),
    "lag": (
        "store",
        "group",
        "topic",
        "queueId",
        "consumerOffset",
        "minOffset",
        "maxOffset",
        "lag",
        "state",
        "firstUnconsumedStoreTimestamp",
        "lagMs",
        "lastConsumedTimestamp",
    ),
    "topics": ("store", "topic", "queues", "messages", "records", "bytes", "share"),
    "rates": ("store", "topic", "bucketStart", "messages", "bytes"),
    "bodySizes": ("store", "topic", "minSize", "maxSize", "messages", "bodyBytes"),
    "delay": (
        "store",
        "level",
        "delayMs",
        "queueId",
        "minOffset",
        "maxOffset",
        "delayOffset",
        "startOffset",
        "backlog",
        "due",
        "oldestDeliverTimestamp",
        "lateMs",
        "stuck",
    ),
    "duplicates": ("store", "by", "topic", "key", "messages", "firstPhyOffset", "lastPhyOffset"),
    "retry": ("store", "group", "topic", "kind", "reconsumeTimes", "messages"),
    "transactions": (
        "store",
        "queueId",
        "halfQueueOffset",
        "phyOffset",
        "state",
        "realTopic",
        "realQueueId",
        "producerGroup",
        "transactionId",
        "checkTimes",
        "bornTimestamp",
    ),
}
_STRING_COLUMNS = {
    "store",
    "topic",
    "file",
    "kind",
    "severity",
    "detail",
    "group",
    "state",
    "cqError",
    "realTopic",
}
_STRING_COLUMNS |= {"producerGroup", "transactionId", "by", "key"}


def _flat(document: dict, name: str) -> list[dict]:
    """Rows of a section as a flat table: duplicates one row per named key, retry one per reconsumeTimes."""
    rows = document.get(name, [])
    if name == "duplicates":
        return [{"store": d["store"], "by": d["by"], **t} for d in rows for t in d["top"]]
    if name == "retry":
        return [
            {**r, "reconsumeTimes": int(k), "messages": n}
            for r in rows
            for k, n in r["reconsumeTimes"].items()
        ]
    return rows


def _table(rows: list[dict], columns: tuple[str, ...]):
    import pyarrow as pa

    arrays = {}
    for c in columns:
        values = [r.get(c) for r in rows]
        if c in _STRING_COLUMNS:
            kind = pa.string()
        elif c == "share":
            kind = pa.float64()
        elif c == "stuck":
            kind = pa.bool_()
        else:
            kind = pa.int64()
        arrays[c] = pa.array(values, kind)
    return pa.table(arrays)


def write_output(output: Path, document: dict) -> None:
    """Parquet tables, audit.json and the self-contained HTML report."""
    import pyarrow.parquet as pq

    from mqtool.audit_report import render_html
    from mqtool.render import to_json_text

    for name, columns in TABLES.items():
        tmp = output / f".{name}.parquet.tmp"
        pq.write_table(_table(_flat(document, name), columns), tmp)
        os.replace(tmp, output / f"{name}.parquet")
    _atomic_text(output / "report.html", render_html(document))
    _atomic_text(output / OUTPUT_MARKER, to_json_text(document) + "\n")


def _atomic_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


# --- terminal rendering -----------------------------------------------------------------------------


def json_document(result: AuditResult) -> dict[str, Any]:
    """The `--format json` object (key order: the issue's keys first)."""
    doc = result.document
    order = (
        "queues",
        "problems",
        "lag",
        "delay",
        "transactions",
        "duplicates",
        "retry",
        "topics",
        "stores",
        "failedStores",
        "rates",
        "bodySizes",
        "definitions",
        "scan",
        "now",
        "notes",
    )
    return {k: doc[k] for k in order if k in doc} | {k: v for k, v in doc.items() if k not in order}


def render_audit(result: AuditResult, ctx) -> None:
    """Summary tables for people; the whole document for --format json."""
    from mqtool.render import Column, emit_document, emit_fields, emit_table, size_text

    doc = json_document(result)

    def human() -> None:
        scan = doc["scan"]
        secs = scan.get("seconds", {})
        pairs: list[tuple[str, Any, str]] = [
            ("Spark", f"{scan['master']} ({scan['parallelism']} cores)", "text"),
            ("splits", f"{scan['splits']} ranges of up to {size_text(scan['splitSize'])}", "text"),
            (
                "seconds",
                " ".join(f"{k} {v:.1f}" for k, v in secs.items()),
                "text",
            ),
        ]
        emit_fields(pairs, ctx, title="Audit")
        emit_table(
            [s | {"bytes": size_text(s["commitlogBytes"])} for s in doc["stores"]],
            [
                Column("store", max_width=40),
                Column("commitlogFiles", "files", "int"),
                Column("bytes"),
                Column("records", kind="int"),
                Column("messages", kind="int"),
                Column("firstStoreTimestamp", "first", "time"),
                Column("lastStoreTimestamp", "last", "time"),
                Column("validEnd", "valid end", "int"),
                Column("end"),
                Column("problems", kind="int"),
            ],
            ctx,
            title="Stores",
        )
        emit_table(
            doc["queues"],
            [
                Column("store", max_width=24),
                Column("topic", max_width=48),
                Column("queueId", "queue", "int"),
                Column("messages", kind="int"),
                Column("bytes", kind="int"),
                Column("cqMinOffset", "cq min", "int"),
                Column("cqMaxOffset", "cq max", "int"),
                Column("firstStoreTimestamp", "first", "time"),
                Column("lastStoreTimestamp", "last", "time"),
            ],
            ctx,
            title="Queues (messages: dispatchable records in the commitlog)",
        )
        emit_table(
            [
                t | {"share": f"{100 * t['share']:.1f} %" if t["share"] is not None else ""}
                for t in doc["topics"]
            ],
            [
                Column("store", max_width=24),
                Column("topic", max_width=48),
                Column("messages", kind="int"),
                Column("bytes", kind="int"),
                Column("share", "share of commitlog"),
            ],
            ctx,
            title="Disk per topic",
        )
        emit_table(
            doc["problems"],
            [
                Column("store", max_width=24),
                Column("file", max_width=48),
                Column("offset", kind="int"),
                Column("kind"),
                Column("detail", max_width=90),
            ],
            ctx,
            title="Problems",
            empty="none",
        )
        emit_table(
            [r for r in doc["lag"] if r["lag"] is not None],
            [
                Column("store", max_width=24),
                Column("group", max_width=32),
                Column("topic", max_width=40),
                Column("queueId", "queue", "int"),
                Column("consumerOffset", "offset", "int"),
                Column("maxOffset", "max", "int"),
                Column("lag", kind="int"),
                Column("firstUnconsumedStoreTimestamp", "first unconsumed", "time"),
                Column("state"),
            ],
            ctx,
            title="Consumer lag",
            empty="(no consumer offsets)",
        )
        emit_table(
            doc["delay"],
            [
                Column("store", max_width=24),
                Column("level", kind="int"),
                Column("delayMs", "delay ms", "int"),
                Column("startOffset", "progress", "int"),
                Column("maxOffset", "max", "int"),
                Column("backlog", kind="int"),
                Column("due", kind="int"),
                Column("oldestDeliverTimestamp", "oldest", "time"),
            ],
            ctx,
            title="Delay backlog",
            empty="(no delay queue)",
        )
        counts: dict[tuple[str, str], int] = {}
        for t in doc["transactions"]:
            counts[(t["store"], t["state"])] = counts.get((t["store"], t["state"]), 0) + 1
        emit_table(
            [{"store": s, "state": st, "transactions": n} for (s, st), n in sorted(counts.items())],
            [Column("store", max_width=24), Column("state"), Column("transactions", kind="int")],
            ctx,
            title="Transactions (half messages)",
            empty="(no transaction half queue)",
        )
        emit_table(
            [
                d
                | {
                    "example": (d["top"][0]["key"] or "") if d["top"] else "",
                    "most": d["top"][0]["messages"] if d["top"] else None,
                }
                for d in doc["duplicates"]
            ],
            [
                Column("store", max_width=24),
                Column("by"),
                Column("groups", "keys in >1 message", "int"),
                Column("extraMessages", "extra messages", "int"),
                Column("example", "most repeated", max_width=40),
                Column("most", "times", "int"),
            ],
            ctx,
            title="Duplicates",
        )
        emit_table(
            [
                r
                | {
                    "byReconsume": " ".join(
                        f"{k}:{v}" for k, v in sorted(r["reconsumeTimes"].items(), key=lambda kv: int(kv[0]))
                    )
                }
                for r in doc["retry"]
            ],
            [
                Column("store", max_width=24),
                Column("group", max_width=32),
                Column("kind"),
                Column("messages", kind="int"),
                Column("bytes", kind="int"),
                Column("byReconsume", "reconsumeTimes:messages", max_width=60),
            ],
            ctx,
            title="Retry and DLQ",
            empty="(none)",
        )
        for note in doc.get("notes", []):
            ctx.out.write(f"note: {note}\n")
        if result.output:
            ctx.out.write(f"wrote {result.output} (Parquet tables, audit.json, report.html)\n")

    emit_document(doc, ctx, human)


__all__ = ["OUTPUT_MARKER", "TABLES", "json_document", "render_audit", "write_output"]
