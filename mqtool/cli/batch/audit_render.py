"""How `mqtool audit` shows its result: summary tables for people, the whole document for scripts."""

from __future__ import annotations

from typing import Any

from mqtool.audit.results.output import json_document
from mqtool.audit.run import AuditResult

LABEL_WIDTH = 24
"""Store labels longer than this become numbers (#1, #2, ...), explained by the Stores table."""


def store_labels(names: list[str], width: int = LABEL_WIDTH) -> dict[str, str]:
    """A short label per store for the terminal tables: the shortest suffix of its path (whole path
    components) that no other store's path ends with, so two stores never look alike; when one of those
    is longer than `width`, every store gets its number in the Stores table instead."""
    parts = {name: [p for p in name.rstrip("/").split("/") if p] or [name] for name in names}
    labels = {}
    for name, own in parts.items():
        others = [p for n, p in parts.items() if n != name]
        for k in range(1, len(own) + 1):
            if all(other[-k:] != own[-k:] for other in others):
                break
        labels[name] = "/".join(own[-k:])
    if any(len(label) > width for label in labels.values()):
        return {name: f"#{i}" for i, name in enumerate(names, start=1)}
    return labels


def render_audit(result: AuditResult, ctx) -> None:
    """Summary tables for people; the whole document for --format json."""
    from mqtool.render.output import Column, emit_document, emit_fields, emit_table, size_text

    doc = json_document(result)
    names = [s["store"] for s in doc["stores"]] + [f["store"] for f in doc.get("failedStores", [])]
    labels = store_labels(list(dict.fromkeys(names)))

    def labelled(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [r | {"store": labels.get(r["store"], r["store"])} for r in rows]

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
            [
                s | {"label": labels.get(s["store"], s["store"]), "bytes": size_text(s["commitlogBytes"])}
                for s in doc["stores"]
            ]
            + [
                {"label": labels.get(f["store"], f["store"]), "store": f["store"], "end": "not audited"}
                for f in doc.get("failedStores", [])
            ],
            [
                Column("label", "store", kind="name"),
                Column("store", "path", kind="name"),
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
            labelled(doc["queues"]),
            [
                Column("store", kind="name"),
                Column("topic", kind="name", max_width=48),
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
                t
                | {
                    "store": labels.get(t["store"], t["store"]),
                    "share": f"{100 * t['share']:.1f} %" if t["share"] is not None else "",
                }
                for t in doc["topics"]
            ],
            [
                Column("store", kind="name"),
                Column("topic", kind="name", max_width=48),
                Column("messages", kind="int"),
                Column("bytes", kind="int"),
                Column("share", "share of commitlog"),
            ],
            ctx,
            title="Disk per topic",
        )
        emit_table(
            labelled(doc["problems"]),  # worst first (mqtool.audit.checks.sort_problems)
            [
                Column("severity"),
                Column("store", kind="name"),
                Column("file", kind="name", max_width=48),
                Column("offset", kind="int"),
                Column("kind"),
                Column("detail", max_width=90),
            ],
            ctx,
            title="Problems",
            empty="none",
        )
        emit_table(
            labelled([r for r in doc["lag"] if r["lag"] is not None]),
            [
                Column("store", kind="name"),
                Column("group", kind="name", max_width=32),
                Column("topic", kind="name", max_width=40),
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
            labelled(doc["delay"]),
            [
                Column("store", kind="name"),
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
        if doc.get("timer"):
            emit_table(
                labelled(doc["timer"]),
                [
                    Column("store", kind="name"),
                    Column("messages", kind="int"),
                    Column("waiting", kind="int"),
                    Column("notEnqueued", "not enqueued", "int"),
                    Column("overdue", kind="int"),
                    Column("oldestOverdueMs", "oldest overdue", "time"),
                    Column("stuck", kind="bool"),
                    Column("states", "by state", max_width=60),
                ],
                ctx,
                title="Timer wheel (5.x)",
            )
        if doc.get("replicas"):
            emit_table(
                [
                    r | {k: labels.get(r[k], r[k]) for k in ("storeA", "storeB", "ahead")}
                    for r in doc["replicas"]
                ],  # fmt: skip
                [
                    Column("storeA", "A", "name"),
                    Column("storeB", "B", "name"),
                    Column("identical", kind="bool"),
                    Column("commonPrefixEnd", "common prefix ends", "int"),
                    Column("firstDifference", "first difference", "int"),
                    Column("ahead", kind="name"),
                    Column("messagesPastPrefixA", "past it (A)", "int"),
                    Column("messagesPastPrefixB", "past it (B)", "int"),
                    Column("ha", "classic HA", max_width=50),
                    Column("configRowsDiffering", "config rows differing", "int"),
                    Column("queuesDiffering", "queues differing", "int"),
                ],
                ctx,
                title="Replicas",
            )
        if doc.get("compaction"):
            emit_table(
                labelled(doc["compaction"]),
                [
                    Column("store", kind="name"),
                    Column("topic", kind="name", max_width=30),
                    Column("queueId", "queue", "int"),
                    Column("records", "served", "int"),
                    Column("keys", kind="int"),
                    Column("superseded", kind="int"),
                    Column("tombstones", kind="int"),
                    Column("reclaimableRecords", "next compaction drops", "int"),
                    Column("reclaimableBytes", "bytes reclaimable", "int"),
                ],
                ctx,
                title="Compaction topics (5.x)",
            )
        if doc.get("tiered"):
            emit_table(
                labelled(doc["tiered"]),
                [
                    Column("store", kind="name"),
                    Column("topic", kind="name", max_width=30),
                    Column("queueId", "queue", "int"),
                    Column("localMinOffset", "local min", "int"),
                    Column("tieredMinOffset", "tiered min", "int"),
                    Column("tieredMaxOffset", "tiered max", "int"),
                    Column("scannedMessages", "tiered messages", "int"),
                    Column("scannedBytes", "tiered bytes", "int"),
                    Column("servedMessages", "served from tiered", "int"),
                    Column("damagedSegments", "damaged segments", "int"),
                ],
                ctx,
                title="Tiered storage (5.x)",
            )
        if doc.get("pop"):
            emit_table(
                labelled(doc["pop"]),
                [
                    Column("store", kind="name"),
                    Column("group", kind="name", max_width=30),
                    Column("popped", kind="int"),
                    Column("acked", kind="int"),
                    Column("inFlight", "in flight", "int"),
                    Column("overdue", kind="int"),
                    Column("oldestOverdue", "oldest overdue", "time"),
                    Column("revived", kind="int"),
                    Column("reviveBacklog", "revive backlog", "int"),
                ],
                ctx,
                title="POP groups (5.x)",
            )
        counts: dict[tuple[str, str], int] = {}
        for t in doc["transactions"]:
            key = (labels.get(t["store"], t["store"]), t["state"])
            counts[key] = counts.get(key, 0) + 1
        emit_table(
            [{"store": s, "state": st, "transactions": n} for (s, st), n in sorted(counts.items())],
            [Column("store", kind="name"), Column("state"), Column("transactions", kind="int")],
            ctx,
            title="Transactions (half messages)",
            empty="(no transaction half queue)",
        )
        if doc.get("trace"):
            emit_table(
                doc["trace"],
                [
                    Column("store", max_width=24),
                    Column("traceType", "type"),
                    Column("topic", max_width=30),
                    Column("group", max_width=30),
                    Column("records", kind="int"),
                    Column("failed", kind="int"),
                    Column("costP50", "cost p50 ms", "int"),
                    Column("costP90", "p90", "int"),
                    Column("costP99", "p99", "int"),
                    Column("costMax", "max", "int"),
                ],
                ctx,
                title="Message trace (records per type, topic and group; cost in ms)",
            )
        emit_table(
            [
                d
                | {
                    "store": labels.get(d["store"], d["store"]),
                    "example": (d["top"][0]["key"] or "") if d["top"] else "",
                    "most": d["top"][0]["messages"] if d["top"] else None,
                }
                for d in doc["duplicates"]
            ],
            [
                Column("store", kind="name"),
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
                    "store": labels.get(r["store"], r["store"]),
                    "byReconsume": " ".join(
                        f"{k}:{v}" for k, v in sorted(r["reconsumeTimes"].items(), key=lambda kv: int(kv[0]))
                    ),
                }
                for r in doc["retry"]
            ],
            [
                Column("store", kind="name"),
                Column("group", kind="name", max_width=32),
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
