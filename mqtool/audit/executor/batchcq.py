"""BatchConsumeQueues (BatchCQ topics) in the audit, judged as `verify` judges them.

The driver reads each queue's units and what the dispatch takes from their records
(`batch_queue_contexts`, shipped in `StoreContext.batch_queues`); each executor judges the units that
point into its split (`check_batch_split`: their record hits and the queues' facts count for the dispatch
coverage); the driver judges the units outside the data, the base offsets unit to unit, the queue types
and the file tails (`store.checks.storefiles.check_batch_queue_files` with `outside_only`). The queues
table gets their min/max offsets (`batch_queue_rows`) and counts their messages, not their records
(`count_batch_messages`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from formats.errors import MqtoolError


@dataclass(frozen=True)
class BatchQueueContext:
    """One BatchConsumeQueue as the driver read it: its units and, per unit, the dispatch facts
    (`store.checks.storefiles.dispatch_facts`)."""

    topic: str
    queue_id: int
    file_size: int
    units: np.ndarray  # store.batchconsumequeue.native_bcq_dtype
    want_base: np.ndarray
    want_batch: np.ndarray
    inner_num: np.ndarray
    body_count: np.ndarray


def batch_queue_contexts(
    store: Any, *, commitlog_min: int, commitlog_end: int
) -> tuple[list[BatchQueueContext], dict[tuple[str, int], tuple[int, int, int]]]:
    """Every readable BatchConsumeQueue with its dispatch facts, and each queue's (min, max, last end).
    Records up to `commitlog_end` are read: units past the recovery walk's end are the driver's."""
    from store.checks.storefiles import dispatch_facts

    contexts: list[BatchQueueContext] = []
    facts: dict[tuple[str, int], tuple[int, int, int]] = {}
    try:
        queue_list = list(store.batch_consume_queues.queues())
    except MqtoolError:
        return contexts, facts  # reported by the driver's checks (bcq_file)
    for topic, queue_id in queue_list:
        try:
            queue = store.batch_consume_queue(topic, queue_id)
            units = queue.units()
            min_offset, max_offset, last = queue.min_offset, queue.max_offset, queue.last_unit
        except MqtoolError:
            continue  # reported by the driver's checks (bcq_file)
        dispatch = dispatch_facts(store, units, commitlog_min, commitlog_end)
        contexts.append(BatchQueueContext(topic, queue_id, queue.file_size, units, *dispatch))
        last_end = last.phy_offset + last.size if last is not None else 0
        facts[(topic, queue_id)] = (max(min_offset, 0), max_offset, last_end)
    return contexts, facts


def batch_queue_rows(index: int, store: Any) -> list[tuple[Any, ...]]:
    """Rows of the audit's queue view for the BatchConsumeQueues: (store, topic, queueId, min, max,
    error) as the broker loads them (offsets count messages, a unit a whole batch)."""
    rows: list[tuple[Any, ...]] = []
    try:
        queue_list = list(store.batch_consume_queues.queues())
    except MqtoolError:
        return rows  # reported by the driver's checks (bcq_file)
    for topic, queue_id in queue_list:
        try:
            queue = store.batch_consume_queue(topic, queue_id)
            rows.append((index, topic, queue_id, queue.min_offset, queue.max_offset, None))
        except MqtoolError as exc:
            rows.append((index, topic, queue_id, None, None, str(exc)))
    return rows


def batch_queue_messages(store: Any, ctx: Any, valid_end: int) -> dict[tuple[str, int], int]:
    """Per BatchConsumeQueue, the messages of its records below `valid_end`: each record's batch size as
    the dispatch takes it (INNER_NUM), through the queue's units. The queues table counts these, as `info`
    does (max - min), and not one per record. `ctx`: the store's `StoreContext` (its queues are read here
    when the checks did not read them)."""
    queues = ctx.batch_queues
    if not ctx.checks:
        queues, _ = batch_queue_contexts(store, commitlog_min=ctx.commitlog_min, commitlog_end=valid_end)
    out = {}
    for q in queues:
        phy = q.units["phyOffset"]
        counted = (phy >= ctx.commitlog_min) & (phy < valid_end) & (q.want_batch >= 0)
        out[(q.topic, q.queue_id)] = int(q.want_batch[counted].sum())
    return out


def count_batch_messages(
    rows: list[dict[str, Any]], plans: list[Any], contexts: dict[int, Any], cuts: dict[int, Any]
) -> None:
    """The queues table's `messages` of BatchCQ queues (`batch_queue_messages`), in place; rows carry the
    store's index."""
    by_key = {(r["store"], r["topic"], r["queueId"]): r for r in rows}
    for plan in plans:
        counts = batch_queue_messages(plan.store, contexts[plan.index], cuts[plan.index].end_offset)
        for (topic, queue_id), messages in counts.items():
            row = by_key.get((plan.index, topic, queue_id))
            if row is not None:
                row["messages"] = messages


def check_batch_split(
    queues: list[BatchQueueContext],
    records: Any,
    problems: Any,
    *,
    lo: int,
    hi: int,
    commitlog_min: int,
    valid_end: int,
) -> list[np.ndarray]:
    """The units of every BatchConsumeQueue that point into [lo, hi) against this split's records;
    returns the record rows they hit."""
    from store.checks.batchcq import check_batch_consume_queue

    hits = []
    for q in queues:
        phy = q.units["phyOffset"]
        sel = np.flatnonzero((phy >= lo) & (phy < hi))
        if not sel.size:
            continue
        hits.append(
            check_batch_consume_queue(
                q.units[sel],
                records,
                problems,
                topic=q.topic,
                queue_id=q.queue_id,
                want_base=q.want_base[sel],
                want_batch=q.want_batch[sel],
                inner_num=q.inner_num[sel],
                body_count=q.body_count[sel],
                file_size=q.file_size,
                commitlog_min=commitlog_min,
                valid_end=valid_end,
                offset_gaps=False,  # judged by the driver over the whole queue
            )
        )
    return hits


__all__ = [
    "BatchQueueContext",
    "batch_queue_contexts",
    "batch_queue_messages",
    "batch_queue_rows",
    "check_batch_split",
    "count_batch_messages",
]
