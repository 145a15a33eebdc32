"""Stores of a fleet audit that fail while their ranges are scanned: one bad store must not end the audit
of the others.

A store that opens can still fail on an executor: the broker's CleanCommitLogService deletes an expired
commitlog file while the audit runs, a disk returns I/O errors, a file was replaced by something that
cannot be mapped. The task then returns, instead of its partial rows, one STOP row with key `UNREADABLE`
and the error (`unreadable_row`); the driver takes every store with such a row out of the result
(`split_failures`, `without_stores`) and reports it in failedStores and as a `store` problem, as it does a
store that cannot be opened (`mqtool.audit.plan.StoreFailure`). Its figures would be partial, and a
partial count is worse than none: the operator re-runs that store.
"""

from __future__ import annotations

import os
from typing import Any

import pyarrow as pa

from mqtool.audit.plan import StoreFailure, StorePlan
from mqtool.audit.schema import STOP, SplitTask, partial_rows

UNREADABLE = -2  # STOP row key of a range that could not be read (NO_STOP is -1, statuses count from 0)
# the result's sections with a `store` column that the driver fills for every opened store
STORE_SECTIONS = ("lag", "delay", "timer", "pop", "transactions", "compaction")
# a store that failed while scanned leaves the replica pairs it is in (they were compared before the scan)
PAIR_SECTIONS = ("replicas",)


def reading_failed(task: SplitTask, exc: OSError) -> bool:
    """True when `exc` came from reading the store (its file, or a map of it that names no file), not
    from writing the output directory: an output that cannot be written fails the whole audit."""
    if exc.filename is None or os.fspath(exc.filename) == task.path:
        return True
    return os.path.abspath(exc.filename).startswith(os.path.join(task.root, ""))


def unreadable_row(task: SplitTask, exc: OSError) -> pa.RecordBatch:
    """The one row a task returns for a range it could not read."""
    return partial_rows(
        {
            "seq": [task.seq],
            "store": [task.store],
            "kind": [STOP],
            "key": [UNREADABLE],
            "n": [0],
            "bytes": [0],
            "text": ["unreadable"],
            "file": [task.path],
            "detail": [f"{task.path}: cannot read range [{task.start}, {task.end}): {exc}"],
        },
        1,
    )


def split_failures(plans: list[StorePlan], stops: list[Any]) -> dict[int, StoreFailure]:
    """Store index -> its failure, from the STOP rows (Spark rows: store, key, detail), first range first."""
    failed: dict[int, StoreFailure] = {}
    for row in sorted((r for r in stops if r.key == UNREADABLE), key=lambda r: r.seq):
        failed.setdefault(row.store, StoreFailure(plans[row.store].label, row.detail))
    return failed


def without_stores(document: dict[str, Any], labels: set[str]) -> None:
    """Drop the driver's rows and notes about failed stores (computed while the executors scanned)."""
    if not labels:
        return
    for section in STORE_SECTIONS:
        if section in document:
            document[section] = [r for r in document[section] if r.get("store") not in labels]
    for section in PAIR_SECTIONS:
        if section in document:
            document[section] = [r for r in document[section] if not {r["storeA"], r["storeB"]} & labels]
    document["replicaProblems"] = [p for p in document.get("replicaProblems", []) if p["store"] not in labels]
    notes = document.get("notes", [])
    document["notes"] = [n for n in notes if not any(n.startswith(f"{label}: ") for label in labels)]
