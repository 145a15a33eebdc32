"""`mqtool query offset` and `query time` on a compaction topic: what pulls are served.

The broker serves a compaction topic from compaction/ (`store.kv.compaction`; 5.3.3
DefaultMessageStore.java:804-809), and `mqadmin queryMsgByOffset` is a pull of one message: at an offset
compacted away (or below the minimum) it gets the next live record, past the maximum nothing. So `count`
messages are those successive pulls from `offset` get, each noted when it is not at the offset asked for.
By time: the live records stored in [begin, end] (each compaction CQ unit carries its record's store time),
which is what pulls from the offset by time get up to `end` - not the superseded records the ConsumeQueue
still lists, which no consumer is served.
"""

from __future__ import annotations

import functools

from formats.errors import UsageError
from formats.java.hash import tags_code
from formats.names import escaped_name
from mqtool.compaction import served_log
from mqtool.query.queue import (
    QueueOffsetError,
    QueueQueryResult,
    TimeQueryResult,
    fill_page,
    parse_tag_expression,
)
from store.storedir import Store


def query_compacted_by_queue_offset(
    store: Store, topic: str, queue_id: int, offset: int, *, count: int = 1
) -> QueueQueryResult:
    """The messages `count` successive pulls from queue offset `offset` of a compaction topic's queue get."""
    if count <= 0:
        raise UsageError("--count must be positive")
    if offset < 0:
        raise QueueOffsetError(f"queue offset {offset} is negative")
    log = served_log(store, topic, queue_id, QueueOffsetError)
    lo, hi = log.min_offset, log.max_offset
    result = QueueQueryResult(topic, queue_id, lo, hi, [])
    result.problems.append(
        f"{escaped_name(topic)} is a compaction topic: served from compaction/ (phyOffset is the record's "
        "place in its compaction log)"
    )
    at = offset
    for _ in range(count):
        served = log.get_message(at)
        if served.status != "FOUND":
            if not result.messages:
                raise QueueOffsetError(_not_served(f"{topic}/{queue_id}", served))
            break
        if served.message is None:  # the unit's record cannot be read
            result.problems.append(f"queue offset {served.unit.queue_offset}: {served.problem}")
        else:
            if served.unit.queue_offset != at:
                result.problems.append(
                    f"queue offset {at} is not in the compacted queue (compacted away, or below its minimum "
                    f"{lo}): a pull there is served the next live record, at {served.unit.queue_offset}"
                )
            result.messages.append(served.message)
        at = served.next_begin_offset
    if count > 1 and at < hi:
        result.next_offset = at
    if not result.messages and len(result.problems) > 1:
        raise QueueOffsetError(result.problems[1])
    return result


def query_compacted_by_time(
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
    """The live records of a compaction topic (one queue or all) stored in [begin, end], oldest first,
    paged by skip/max as `mqtool.query.queue.query_by_time` pages."""
    ids = (
        [queue_id] if queue_id is not None else sorted(q for t, q in store.compaction.queues() if t == topic)
    )
    logs = {q: served_log(store, topic, q, QueueOffsetError) for q in (ids or [0])}
    tags = parse_tag_expression(tag) if tag is not None else None
    codes = {tags_code(t) for t in tags} if tags is not None else None
    candidates = [
        (u.unit.store_time, q, u.queue_offset, u.unit)
        for q, log in logs.items()
        for u in log.units
        if begin <= u.unit.store_time <= end and (codes is None or u.unit.tags_code in codes)
    ]
    candidates.sort(key=lambda c: c[:3])
    result = TimeQueryResult(topic, ids, begin, end, tags, [])
    result.problems.append(
        f"{escaped_name(topic)} is a compaction topic: the live records served from compaction/ (superseded "
        "ones are left out; phyOffset is the record's place in its compaction log)"
    )
    readers = (
        (q, queue_offset, functools.partial(logs[q].read_record, unit))
        for _t, q, queue_offset, unit in candidates
    )
    fill_page(result, readers, skip=skip, max_num=max_num)
    return result


def _not_served(where: str, served) -> str:
    if served.status == "NO_MESSAGE_IN_QUEUE":
        return f"compacted queue {where} holds no message (maxOffset 0)"
    return (
        f"no message at queue offset {served.offset} of compacted queue {where}: maxOffset is "
        f"{served.max_offset} ({served.status})"
    )


__all__ = ["query_compacted_by_queue_offset", "query_compacted_by_time"]
