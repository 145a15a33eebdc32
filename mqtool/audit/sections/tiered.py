"""The audit's tiered section: per store with a tiered tree (`--tiered`, or broker.conf's
tieredStoreFilePath), per tiered queue the ranges a broker with the plugin answers (`mqtool.tiered.ranges`)
beside what a scan of every COMMIT_LOG segment found - one Spark task per segment
(`mqtool.audit.executor.tiered.scan_segment`): the messages and bytes the tiered store holds, those it serves
(below where the local store takes over), their store times - and a `tiered_message` problem for each
segment whose walk stops at a message the broker's decode rejects. The tree's own checks (the metadata,
segment chains, CQ units: `store.checks.tiered`) run with the driver's whole-store checks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from formats.errors import MqtoolError
from mqtool.audit.executor.tiered import SegmentTask, scan_segment
from mqtool.audit.plan import AuditOptions, StorePlan
from store.checks.tiered import tree_path


def tiered_section(spark, plans: list[StorePlan], opts: AuditOptions, document: dict) -> None:
    """document["tiered"] (rows per queue) and document["tieredProblems"] (rows of the audit's problems)."""
    rows: list[dict[str, Any]] = []
    problems: list[dict[str, Any]] = []
    tasks: list[SegmentTask] = []
    trees: dict[int, Any] = {}
    notes = document.setdefault("notes", [])
    for plan in plans:
        try:
            tiered = plan.store.tiered
            if tiered is None:
                continue
            queues = tiered.queues()
        except MqtoolError as exc:  # named by the tiered checks (tiered_layout, tiered_metadata)
            notes.append(f"{plan.label}: tiered section not computed: {exc}")
            continue
        trees[plan.index] = tiered.settings.root
        for topic, queue_id in queues:
            row, more = _queue_tasks(plan, topic, queue_id, opts.check_crc)
            rows.append(row)
            tasks += more
    if not tasks and not rows:
        return
    if spark is not None and tasks:
        results = spark.sparkContext.parallelize(tasks, len(tasks)).map(scan_segment).collect()
    else:
        results = [scan_segment(t) for t in tasks]
    by_queue = {(r["storeIndex"], r["topic"], r["queueId"]): r for r in rows}
    labels = {plan.index: plan.label for plan in plans}
    for result in results:
        task = result["task"]
        row = by_queue[(task["store"], task["topic"], task["queue_id"])]
        for name, key in (("scannedMessages", "messages"), ("scannedBytes", "bytes")):
            row[name] += result[key]
        row["servedMessages"] += result["served"]
        row["servedBytes"] += result["servedBytes"]
        if result["messages"]:
            first = row["firstStoreTime"]
            row["firstStoreTime"] = (
                min(first, result["firstStoreTime"]) if first else result["firstStoreTime"]
            )
            row["lastStoreTime"] = max(row["lastStoreTime"] or 0, result["lastStoreTime"])
        trouble = result.get("error") or (result.get("stop") or {}).get("status")
        if trouble:
            row["damagedSegments"] += 1
            stop = result.get("stop") or {}
            problems.append(
                {
                    "store": labels[task["store"]],
                    "file": tree_path(trees[task["store"]], Path(task["path"])),
                    "offset": stop.get("position"),
                    "kind": "tiered_message",
                    "severity": "error",
                    "detail": (
                        f"{task['topic']}/{task['queue_id']}: the segment's walk stops here: {trouble}; "
                        "the messages after it are not read (by the broker either)"
                        if stop
                        else f"{task['topic']}/{task['queue_id']}: {trouble}"
                    ),
                }
            )
    for row in rows:
        row.pop("storeIndex")
        if row["servedMessages"] != row["servedExpected"] and "error" not in row:
            row["note"] = (
                f"{row['servedMessages']} of the {row['servedExpected']} messages the broker serves from the "
                "tiered store were read"
            )
    document["tiered"] = rows
    document["tieredProblems"] = problems


def _queue_tasks(plan: StorePlan, topic: str, queue_id: int, check_crc: bool):
    """The queue's row (ranges, zeroed counts) and one task per COMMIT_LOG segment with a file."""
    from mqtool.tiered.fetch import tiered_span
    from mqtool.tiered.ranges import queue_row

    store = plan.store
    row = {"store": plan.label, "storeIndex": plan.index}
    row |= queue_row(store, topic, queue_id)
    row |= {
        "servedExpected": 0,
        "servedMessages": 0,
        "servedBytes": 0,
        "scannedMessages": 0,
        "scannedBytes": 0,
        "firstStoreTime": None,
        "lastStoreTime": None,
        "damagedSegments": 0,
    }
    if "error" in row:
        return row, []
    try:
        span = tiered_span(store, topic, queue_id)
        queue = store.tiered.queue(topic, queue_id)
        below = queue.min_offset if span is None else span[1]
        row["servedExpected"] = max(0, below - queue.min_offset)
        segments = queue.commit_log.segments
    except MqtoolError as exc:
        row["error"] = str(exc)
        return row, []
    tasks = [
        SegmentTask(
            plan.index, topic, queue_id, str(s.path), s.base_offset, s.commit_position, below, check_crc
        )
        for s in segments
        if s.file_size is not None and s.commit_position > 0
    ]
    return row, tasks
