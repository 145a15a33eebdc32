"""`query offset|time` on a BatchCQ topic: the messages a consumer gets, unwrapped from inner batches.

A BatchCQ unit covers the queue offsets [base, base + batch size) of one record. The message at a queue
offset is found as the broker's `get(offset)` finds the unit (store.batchconsumequeue), its record read
from the commitlog and unwrapped as the client does (formats.message.innerbatch): inner message i has queue
offset base + i. By time, the broker's `getOffsetInQueueByTime` picks the first unit and the units'
store times (each its record's) bound the rest; a tag expression matches the inner messages' TAGS (the
consumer's own filter after the broker's by the batch's tags code).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator

from formats.errors import MqtoolError
from formats.message.innerbatch import unwrap
from formats.names import escaped_name
from mqtool.query.queue import (
    QueueOffsetError,
    QueueQueryResult,
    TimeQueryResult,
    check_queue_range,
    parse_tag_expression,
)
from mqtool.query.topics import UnknownTopicError
from store.queue.batchconsumequeue import BatchConsumeQueue
from store.storedir import Store


def batch_queue(store: Store, topic: str, queue_id: int) -> BatchConsumeQueue:
    """The BatchConsumeQueue of topic/queueId, or the error naming the queues there are."""
    queues = store.batch_consume_queues
    ids = queues.queue_ids(topic)
    if not ids:
        raise UnknownTopicError(
            f"BatchCQ topic {escaped_name(topic)} has no queue directory", str(queues.directory)
        )
    if queue_id not in ids:
        raise QueueOffsetError(
            f"BatchCQ topic {escaped_name(topic)} has no queue {queue_id} "
            f"(queues: {', '.join(map(str, ids))})",
            str(queues.directory),
        )
    return store.batch_consume_queue(topic, queue_id)


def query_batch_by_queue_offset(
    store: Store, topic: str, queue_id: int, offset: int, *, count: int = 1
) -> QueueQueryResult:
    """The messages at queue offsets [offset, offset+count) of a BatchCQ queue, inner batches unwrapped."""
    cq = batch_queue(store, topic, queue_id)
    lo, hi = cq.min_offset, cq.max_offset
    check_queue_range(f"{topic}/{queue_id}", offset, lo, hi)
    stop = min(hi, offset + count)
    result = QueueQueryResult(topic, queue_id, lo, hi, [])
    at = offset
    while at < stop:
        unit = cq.unit(at)
        if unit is None:
            result.problems.append(f"queue offset {at}: no BatchConsumeQueue unit holds it")
            break
        try:
            messages = unwrap(store.commitlog.read_message_at(unit.phy_offset, unit.size))
        except MqtoolError as exc:
            result.problems.append(
                f"queue offset {at} (unit at base offset {unit.base_offset}, physical offset "
                f"{unit.phy_offset}): {exc}"
            )
            messages = []
        result.messages.extend(m for m in messages if at <= m.queue_offset < stop)
        at = max(unit.end_offset, at + 1)
    if count > 1 and stop < hi:
        result.next_offset = stop
    if not result.messages and result.problems:
        raise QueueOffsetError(result.problems[0])
    return result


def _units_in_time(cq: BatchConsumeQueue, begin: int, end: int) -> Iterator[tuple[int, int, int, int]]:
    """(storeTime, phyOffset, queueId, size) of the units from the broker's answer for `begin` on,
    stored in [begin, end]."""
    start = cq.offset_by_time(5, begin, None, "lower")
    units = cq.units()
    keep = (
        (units["msgBaseOffset"] + units["batchSize"] > start)
        & (units["storeTime"] >= begin)
        & (units["storeTime"] <= end)
    )
    for stored, phy, size in units[keep][["storeTime", "phyOffset", "size"]].tolist():
        yield stored, phy, cq.queue_id, size


def query_batch_by_time(
    store: Store,
    topic: str,
    *,
    begin: int,
    end: int,
    queue_id: int | None = None,
    tag: str | None = None,
    skip: int = 0,
    max_num: int | None = None,
) -> TimeQueryResult:
    """Messages of a BatchCQ topic (one queue or all) stored in [begin, end], oldest record first."""
    if queue_id is not None:
        queues = [batch_queue(store, topic, queue_id)]
    else:
        ids = store.batch_consume_queues.queue_ids(topic)
        queues = [batch_queue(store, topic, q) for q in ids] if ids else [batch_queue(store, topic, 0)]
    tags = parse_tag_expression(tag) if tag is not None else None
    result = TimeQueryResult(topic, [cq.queue_id for cq in queues], begin, end, tags, [])
    matched = 0
    for _t, phy, q, size in heapq.merge(*(_units_in_time(cq, begin, end) for cq in queues)):
        try:
            messages = unwrap(store.commitlog.read_message_at(phy, size))
        except MqtoolError as exc:
            result.problems.append(f"{topic}/{q} physical offset {phy}: {exc}")
            continue
        for msg in messages:
            if tags is not None and msg.tags not in tags:
                continue
            if matched >= skip:
                if max_num is not None and len(result.messages) >= max_num:
                    result.next_skip = matched
                    return result
                result.messages.append(msg)
            matched += 1
    return result


__all__ = ["batch_queue", "query_batch_by_queue_offset", "query_batch_by_time"]
