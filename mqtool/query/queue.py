"""`mqtool query offset|time` (mqadmin queryMsgByOffset, `ConsumeQueue.getOffsetInQueueByTime`): messages
through the ConsumeQueue; a tag filter compares tagsCode first and then the exact TAGS, as broker and client
do. Nothing here writes into the store.
"""

from __future__ import annotations

import functools
import heapq
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from formats.errors import MqtoolError, UsageError
from formats.java.hash import tags_code
from formats.message.commitlog import Message
from formats.names import escaped_name
from mqtool.offsets.progress import store_time_of
from mqtool.query.topics import UnknownTopicError, known_topics
from store.storedir import Store


class QueueOffsetError(MqtoolError):
    """A queue offset outside what the queue holds."""


def _queue(store: Store, topic: str, queue_id: int):
    cqs = store.consume_queues
    if topic not in cqs.topics():
        # without a queue the messages are only in the commitlog (a deleted topic's stay until retention)
        elsewhere = (
            f"; its messages, if any, are only in the commitlog: mqtool dump commitlog --topic {topic} lists "
            "them, query key|id --scan searches them"
        )
        if topic in known_topics(store):
            raise UnknownTopicError(
                f"topic {escaped_name(topic)} has no consume queues in this store{elsewhere}",
                str(cqs.directory),
            )
        raise UnknownTopicError(
            f"unknown topic {escaped_name(topic)}: no consume queue directory{elsewhere}", str(cqs.directory)
        )
    ids = cqs.queue_ids(topic)
    if queue_id not in ids:
        raise QueueOffsetError(
            f"topic {escaped_name(topic)} has no queue {queue_id} "
            f"(queues: {', '.join(map(str, ids)) or 'none'})",
            str(cqs.directory),
        )
    return store.consume_queue(topic, queue_id)


@dataclass
class QueueQueryResult:
    topic: str
    queue_id: int
    min_offset: int
    max_offset: int
    messages: list[Message]
    problems: list[str] = field(default_factory=list)
    next_offset: int | None = None  # where the next page starts, when there is more
    tiered: tuple[int, int] | None = None  # queue offsets [a, b) read from the tiered store

    def notes(self) -> list[str]:
        notes = list(self.problems)
        if self.tiered is not None:
            a, b = self.tiered
            notes.append(f"queue offsets [{a}, {b}) read from the tiered store, as the broker serves them")
        if self.next_offset is not None:
            notes.append(f"more messages in the queue: rerun with offset {self.next_offset}")
        return notes


def check_queue_range(where: str, offset: int, lo: int, hi: int) -> None:
    """Explain a queue offset outside [lo, hi) of queue `where` (QueueOffsetError)."""
    if offset < 0:
        raise QueueOffsetError(f"queue offset {offset} is negative")
    if hi == lo and offset >= lo:
        raise QueueOffsetError(f"{where} holds no message (minOffset = maxOffset = {hi})")
    if offset < lo:
        raise QueueOffsetError(
            f"queue offset {offset} of {where} is below its minOffset {lo}: deleted by retention "
            f"(the queue holds [{lo}, {hi}))"
        )
    if offset >= hi:
        raise QueueOffsetError(
            f"no message at queue offset {offset} of {where}: maxOffset is {hi} "
            f"(the queue holds [{lo}, {hi}))"
        )


def query_by_queue_offset(
    store: Store, topic: str, queue_id: int, offset: int, *, count: int = 1
) -> QueueQueryResult:
    """The message(s) at queue offsets [offset, offset+count) of topic/queueId (mqadmin queryMsgByOffset)."""
    if count <= 0:
        raise UsageError("--count must be positive")
    if store.queue_type(topic) == "BatchCQ":
        from mqtool.query.batch import query_batch_by_queue_offset

        return query_batch_by_queue_offset(store, topic, queue_id, offset, count=count)
    from mqtool.compaction import is_served_compacted

    if is_served_compacted(store, topic):
        from mqtool.query.compacted import query_compacted_by_queue_offset

        return query_compacted_by_queue_offset(store, topic, queue_id, offset, count=count)
    if store.tiered is not None and offset >= 0:
        from mqtool.tiered.fetch import read_tiered

        below = read_tiered(store, topic, queue_id, offset, count)
        if below is not None:
            return _with_tiered(store, topic, queue_id, offset, count, below)
        _tiered_only(store, topic, queue_id, offset)
    cq = _queue(store, topic, queue_id)
    lo, hi = cq.min_offset, cq.max_offset
    check_queue_range(f"{topic}/{queue_id}", offset, lo, hi)
    stop = min(hi, offset + count)
    result = QueueQueryResult(topic, queue_id, lo, hi, [])
    commitlog = store.commitlog
    for q, phy, size, _tags in cq.units(offset, stop).tolist():
        if phy == 0 and size == 0x7FFFFFFF:
            continue  # a pre-blank filler unit
        try:
            result.messages.append(commitlog.read_message_at(phy, size))
        except MqtoolError as exc:
            result.problems.append(f"queue offset {q} (physical offset {phy}): {exc}")
    if count > 1 and stop < hi:
        result.next_offset = stop  # paging through the queue: where the next page starts
    if not result.messages and result.problems:
        raise QueueOffsetError(result.problems[0])
    return result


def _tiered_only(store: Store, topic: str, queue_id: int, offset: int) -> None:
    """Raise why a queue the tiered store holds and the local one does not has no message at `offset`."""
    from mqtool.tiered.fetch import no_local_queue_error, tiered_queue_ids
    from mqtool.tiered.ranges import local_range

    if queue_id in tiered_queue_ids(store, topic) and local_range(store, topic, queue_id) is None:
        raise QueueOffsetError(no_local_queue_error(store, topic, queue_id, offset))


def _with_tiered(store: Store, topic: str, queue_id: int, offset: int, count: int, below) -> QueueQueryResult:
    """The tiered part of a query (`mqtool.tiered.fetch.read_tiered`) and the local rest, if any."""
    check_queue_range(f"{topic}/{queue_id}", offset, below.min_offset, below.max_offset)
    result = QueueQueryResult(topic, queue_id, below.min_offset, below.max_offset, below.messages)
    result.problems = list(below.problems)
    result.tiered = (below.start, below.end)
    rest = offset + count - below.end
    if rest > 0 and below.end < below.max_offset:
        local = query_by_queue_offset(store, topic, queue_id, below.end, count=rest)
        result.messages += local.messages
        result.problems += local.problems
        result.next_offset = local.next_offset
    elif count > 1 and below.end < below.max_offset:
        result.next_offset = below.end
    if not result.messages and result.problems:
        raise QueueOffsetError(result.problems[0])
    return result


def parse_tag_expression(expression: str) -> set[str] | None:
    """`TAG` or `A || B` (a consumer's subscription expression) -> the set of tags; `*` -> None."""
    text = expression.strip()
    if not text or text == "*":
        return None
    tags = {t.strip() for t in text.split("||")}
    tags.discard("")
    if not tags:
        raise MqtoolError(f"bad tag expression {expression!r}")
    return tags


@dataclass
class TimeQueryResult:
    topic: str
    queue_ids: list[int]
    begin: int
    end: int
    tags: set[str] | None
    messages: list[Message]
    tag_collisions: int = 0  # tagsCode matched but TAGS differ
    next_skip: int | None = None  # where the next page starts, when there is more
    problems: list[str] = field(default_factory=list)
    tiered_messages: int = 0  # read from the tiered store (below the local minimum)

    def notes(self) -> list[str]:
        notes = list(self.problems)
        if self.tiered_messages:
            notes.append(
                f"{self.tiered_messages} message(s) read from the tiered store, as the broker serves them"
            )
        if self.tag_collisions:
            notes.append(f"{self.tag_collisions} message(s) with a colliding tagsCode but other TAGS dropped")
        if self.next_skip is not None:
            notes.append(f"more messages match: rerun with --skip {self.next_skip} for the next page")
        return notes


def _queue_candidates(
    cq, begin: int, end: int, codes: set[int] | None, store_time: Callable[[int, int], int]
) -> Iterator[tuple[int, int, int, int, int]]:
    """(storeTimestamp, phyOffset, queueId, queueOffset, size) of the units stored in [begin, end]."""
    lo, hi = cq.min_offset, cq.max_offset
    if hi <= lo:
        return
    start = cq.offset_in_queue_by_time(begin, store_time, "lower")
    stop = min(hi, cq.offset_in_queue_by_time(end, store_time, "upper") + 1)
    chunk = 4096
    for first in range(start, stop, chunk):
        units = cq.units(first, min(stop, first + chunk))
        if codes is not None:
            import numpy as np

            units = units[np.isin(units["tagsCode"], np.array(sorted(codes), dtype=np.int64))]
        for q, phy, size, _tags in units.tolist():
            if phy == 0 and size == 0x7FFFFFFF:
                continue
            t = store_time(phy, size)
            if t < 0:
                continue
            if t > end:
                return
            if t >= begin:
                yield t, phy, cq.queue_id, q, size


def _from_offset(candidates: Iterator[tuple], first: int) -> Iterator[tuple]:
    return (c for c in candidates if c[3] >= first)


def _tiered_candidates(
    queue, stop: int, begin: int, end: int, codes: set[int] | None
) -> Iterator[tuple[int, int, int, int, int, Callable[[int], Message]]]:
    """As `_queue_candidates`, from the tiered queue's offsets below `stop`
    (`mqtool.tiered.fetch.tiered_span`), each with the reader of its message."""
    offset = max(queue.min_offset, queue.offset_by_time(begin, "lower"))
    for q in range(offset, stop):
        unit = queue.unit(q)
        if codes is not None and unit.tags_code not in codes:
            continue
        t = queue.store_time(q)
        if t > end:
            return
        if t >= begin:
            yield t, unit.phy_offset, queue.queue_id, q, unit.size, queue.message


def query_by_time(
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
    """Messages of topic (one queue or all) stored in [begin, end], oldest first, paged by skip/max."""
    if end < begin:
        raise UsageError(f"--end {end} is before --begin {begin}")
    if skip < 0 or (max_num is not None and max_num <= 0):
        raise UsageError("--skip must be >= 0 and --max positive")
    if store.queue_type(topic) == "BatchCQ":
        from mqtool.query.batch import query_batch_by_time

        return query_batch_by_time(
            store, topic, begin=begin, end=end, queue_id=queue_id, tag=tag, skip=skip, max_num=max_num
        )
    from mqtool.compaction import is_served_compacted

    if is_served_compacted(store, topic):
        from mqtool.query.compacted import query_compacted_by_time

        return query_compacted_by_time(
            store, topic, begin=begin, end=end, queue_id=queue_id, tag=tag, skip=skip, max_num=max_num
        )
    tiered_only: set[int] = set()  # queues only the tiered store holds: no local ConsumeQueue
    if store.tiered is not None:
        from mqtool.tiered.fetch import tiered_queue_ids, tiered_span
        from mqtool.tiered.ranges import local_range

        tiered_only = {q for q in tiered_queue_ids(store, topic) if local_range(store, topic, q) is None}
    if queue_id is not None:
        queue_ids = [queue_id]
    else:
        queue_ids = sorted(set(store.consume_queues.queue_ids(topic)) | tiered_only)
        if not queue_ids:
            _queue(store, topic, 0)  # raises the unknown-topic error
    queues = [(q, None if q in tiered_only else _queue(store, topic, q)) for q in queue_ids]
    tags = parse_tag_expression(tag) if tag is not None else None
    codes = {tags_code(t) for t in tags} if tags is not None else None
    store_time = store_time_of(store)
    sources = []
    for q, cq in queues:
        local = iter(()) if cq is None else _queue_candidates(cq, begin, end, codes, store_time)
        span = None if store.tiered is None else tiered_span(store, topic, q)
        if span is not None:
            tiered_queue, stop = span
            sources.append(_tiered_candidates(tiered_queue, stop, begin, end, codes))
            local = _from_offset(local, stop)  # the broker serves those below from the tiered store
        sources.append(local)
    merged = heapq.merge(*sources)
    result = TimeQueryResult(topic, queue_ids, begin, end, tags, [])
    commitlog = store.commitlog

    def readers() -> Iterator[tuple[int, int, Callable[[], Message]]]:
        for _t, phy, q, queue_offset, size, *tiered_reader in merged:
            if tiered_reader:
                yield q, queue_offset, functools.partial(_read_tiered, result, tiered_reader[0], queue_offset)
            else:
                yield q, queue_offset, functools.partial(commitlog.read_message_at, phy, size)

    fill_page(result, readers(), skip=skip, max_num=max_num)
    return result


def _read_tiered(result: TimeQueryResult, read: Callable[[int], Message], queue_offset: int) -> Message:
    msg = read(queue_offset)
    result.tiered_messages += 1
    return msg


def fill_page(
    result: TimeQueryResult,
    candidates: Iterable[tuple[int, int, Callable[[], Message]]],
    *,
    skip: int,
    max_num: int | None,
) -> None:
    """Page `candidates` - (queueId, queueOffset, read) in store-time order - into `result` as `query time`
    pages: `skip` and `max_num` count matches; without tags a skipped message is not read; with tags each
    read message's TAGS is checked (a colliding tagsCode dropped and counted); an unreadable one is a
    problem."""
    tags = result.tags
    matched = 0
    for q, queue_offset, read in candidates:
        if tags is None and matched < skip:
            matched += 1  # skipped without reading: only a tag check needs the message
            continue
        if tags is None and max_num is not None and len(result.messages) >= max_num:
            result.next_skip = matched
            break
        try:
            msg = read()
        except MqtoolError as exc:
            result.problems.append(f"{result.topic}/{q} queue offset {queue_offset}: {exc}")
            continue
        if tags is not None and msg.tags not in tags:
            result.tag_collisions += 1
            continue
        if matched >= skip:
            if max_num is not None and len(result.messages) >= max_num:
                result.next_skip = matched
                break
            result.messages.append(msg)
        matched += 1
