"""LMQ checks: units of `%LMQ%` queues against the records' INNER_MULTI_DISPATCH / INNER_MULTI_QUEUE_OFFSET,
and records naming an LMQ queue that has no unit for them.

An LMQ unit points at a record of another topic (`ConsumeQueue.multiDispatchLmqQueue`): it is right when the
record names the queue in INNER_MULTI_DISPATCH and its INNER_MULTI_QUEUE_OFFSET entry for the queue equals
the unit's queue offset (the broker filled that entry at put time and wrote the unit at it).
"""

from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass

import numpy as np

from formats.names import LMQ_QUEUE_ID
from store.checks.problems import ProblemList
from store.checks.records import RecordIndex
from store.queue.lmq import LmqSettings, is_lmq, multi_dispatch_units

_ON = LmqSettings(True, True, "an LMQ queue on disk")


def named_offsets(records: RecordIndex, row: int) -> dict[tuple[str, int], int]:
    """(queue, queue id) -> queue offset of every unit the record at `row` is multi-dispatched to."""
    pair = records.multi_dispatch.get(row)
    if pair is None:
        return {}
    topic = records.topics[int(records.topic[row])]
    units = multi_dispatch_units(topic, int(records.queue_id[row]), pair[0], pair[1], _ON)
    return {(u.queue, u.queue_id): u.queue_offset for u in units}


@dataclass
class LmqUnitFaults:
    """Judged units of one LMQ queue whose record does not name the queue, or names another offset."""

    not_named: np.ndarray  # bool per judged unit
    offset_differs: np.ndarray  # bool per judged unit
    named_offset: np.ndarray  # int64: the offset the record gives (-1 where not named)


def lmq_unit_faults(
    records: RecordIndex, topic: str, queue_id: int, queue_offsets: np.ndarray, rows: np.ndarray
) -> LmqUnitFaults:
    n = len(rows)
    named = np.full(n, -1, dtype=np.int64)
    cache: dict[int, int] = {}
    for i in range(n):
        row = int(rows[i])
        if row not in cache:
            cache[row] = named_offsets(records, row).get((topic, queue_id), -1)
        named[i] = cache[row]
    not_named = named < 0
    return LmqUnitFaults(not_named, ~not_named & (named != queue_offsets), named)


@dataclass
class LmqCoverage:
    """LMQ queues on disk, their units, and the units records name that the queues lack."""

    queues: int = 0
    units: int = 0
    missing_units: int = 0


@dataclass
class LmqMissing:
    """Records naming one LMQ queue at offsets the queue does not reach: how many, their queue offsets'
    range and the first one's physical offset. Summaries of parts of a commitlog `merge` into the whole's."""

    count: int
    min_offset: int
    max_offset: int
    first_phy: int

    def merge(self, other: LmqMissing) -> LmqMissing:
        return LmqMissing(
            self.count + other.count,
            min(self.min_offset, other.min_offset),
            max(self.max_offset, other.max_offset),
            min(self.first_phy, other.first_phy),
        )


def lmq_missing(
    records: RecordIndex, queues: dict, *, horizon: int, settings: LmqSettings
) -> dict[str, LmqMissing]:
    """Per LMQ queue: the records (dispatched, before the dispatch `horizon`) that name it at an offset it
    does not reach. `queues` maps (topic, queue id) to QueueFacts."""
    if not settings.enable_multi_dispatch or not records.multi_dispatch:
        return {}
    dispatchable = records.dispatchable()
    missing: dict[str, LmqMissing] = {}
    for row in sorted(records.multi_dispatch):
        phy = int(records.phy[row])
        if not dispatchable[row] or phy >= horizon:
            continue
        for (queue, qid), offset in named_offsets(records, row).items():
            if not is_lmq(queue) or qid != LMQ_QUEUE_ID:
                continue
            facts = queues.get((queue, qid))
            if facts is None or offset >= facts.max_offset:
                one = LmqMissing(1, offset, offset, phy)
                missing[queue] = missing[queue].merge(one) if queue in missing else one
    return missing


def report_lmq_missing(missing: dict[str, LmqMissing], queues: Container, problems: ProblemList) -> int:
    """One `lmq_missing_unit` row per queue; returns how many units are missing."""
    for queue, m in sorted(missing.items()):
        problems.add(
            "lmq_missing_unit",
            f"consumequeue/{queue}/{LMQ_QUEUE_ID}",
            None,
            f"{queue}/{LMQ_QUEUE_ID}: {m.count} records name this LMQ queue in INNER_MULTI_DISPATCH "
            f"(queue offsets {m.min_offset}..{m.max_offset}, first at phy {m.first_phy}) but the queue "
            + ("does not exist" if (queue, LMQ_QUEUE_ID) not in queues else "has no unit for them")
            + "; mqtool rebuild cq writes them",
        )
    return sum(m.count for m in missing.values())


def check_lmq_coverage(
    records: RecordIndex,
    queues: dict,
    problems: ProblemList,
    *,
    horizon: int,
    settings: LmqSettings,
) -> LmqCoverage:
    """Records (dispatched, before the dispatch `horizon`) that name an LMQ queue at an offset the queue
    does not reach: one `lmq_missing_unit` row per queue. `queues` maps (topic, queue id) to QueueFacts."""
    found = LmqCoverage()
    for (topic, _qid), facts in queues.items():
        if is_lmq(topic):
            found.queues += 1
            found.units += facts.max_offset - facts.min_offset
    missing = lmq_missing(records, queues, horizon=horizon, settings=settings)
    found.missing_units = report_lmq_missing(missing, queues, problems)
    return found


__all__ = [
    "LmqCoverage",
    "LmqMissing",
    "LmqUnitFaults",
    "check_lmq_coverage",
    "lmq_missing",
    "lmq_unit_faults",
    "named_offsets",
    "report_lmq_missing",
]
