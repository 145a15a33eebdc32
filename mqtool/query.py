"""Find messages with the broker down: by key, by msgId / UNIQ_KEY, by queue offset, by store time.

* By key (mqadmin queryMsgByKey): the index files are walked newest first as `IndexService.queryOffset` does,
  without the broker's cap of 64 hits; each hit is then confirmed on the message itself (topic equal
  and the key among its space-separated KEYS or equal to its UNIQ_KEY), so hash collisions are dropped
  and counted instead of silently returned or silently lost.
* By id (mqadmin queryMsgById, `MQAdminImpl.viewMessage` / `queryMessageByUniqKey`): a 32/56-hex id is first
  read as an offsetMsgId (store host + physical offset);
  when no message with that id is there, it is looked up as a UNIQ_KEY under every topic of the store
  (or the one given), and every record carrying it is listed (retries, re-puts, batches).
* By queue offset / by time (mqadmin queryMsgByOffset, `ConsumeQueue.getOffsetInQueueByTime`): through the
  ConsumeQueue; a tag filter compares
  tagsCode first and then the exact TAGS, as broker and client do.

Each key/id answer also says whether the index covers the commitlog (`mqtool.index_lookup`); `scan=True`
searches the uncovered tail of the commitlog directly. Nothing here writes into the store.
"""

from __future__ import annotations

import heapq
import re
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from formats.commitlog import Message
from formats.errors import MqtoolError
from formats.indexfile import LONG_MAX
from formats.javahash import tags_code
from formats.msgid import OffsetMsgId, decode_offset_msg_id, looks_like_offset_msg_id
from formats.names import SCHEDULE_TOPIC, TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC
from mqtool.consumer_progress import store_time_of
from mqtool.index_lookup import (
    HitReport,
    IndexCoverage,
    ScanOutcome,
    coverage_notes,
    hit_notes,
    index_coverage,
    read_hits,
    scan_tail,
)
from mqtool.message_view import (  # noqa: F401 (the library surface of `from mqtool.query import ...`)
    ExportError,
    body_view,
    export_messages,
    message_document,
)
from store.index import MAX_MSGS_NUM_BATCH
from store.storedir import Store
from store.timer import TIMER_TOPIC

SYSTEM_TOPICS = (TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC, SCHEDULE_TOPIC, TIMER_TOPIC)


class UnknownTopicError(MqtoolError):
    """A topic that has no consume queue, no topic config and no committed offset in this store."""


class MessageIdError(MqtoolError):
    """An id that is neither an offsetMsgId nor a UNIQ_KEY (32 or 56 hex digits)."""


class QueueOffsetError(MqtoolError):
    """A queue offset outside what the queue holds."""


# --- topics --------------------------------------------------------------------------------------


def _config_model(store: Store, name: str):
    try:
        return store.config(name).load().model
    except MqtoolError:
        return None


_KNOWN_TOPICS: weakref.WeakKeyDictionary[Store, list[str]] = weakref.WeakKeyDictionary()


def known_topics(store: Store) -> list[str]:
    """Topics the store knows: consume queue directories, topics.json, the groups' retry/DLQ topics,
    topics of consumerOffset.json, and the broker's system topics (computed once per open store)."""
    cached = _KNOWN_TOPICS.get(store)
    if cached is None:
        cached = _KNOWN_TOPICS[store] = _known_topics(store)
    return cached


def _known_topics(store: Store) -> list[str]:
    topics = set(store.consume_queues.topics())
    model = _config_model(store, "topics.json")
    if model is not None:
        topics.update(model.topic_config_table)
    groups: set[str] = set()
    model = _config_model(store, "subscriptionGroup.json")
    if model is not None:
        groups.update(model.subscription_group_table)
    model = _config_model(store, store.layout.consumer_offset_file)
    if model is not None:
        for topic, group, _, _ in model.entries():
            topics.add(topic)
            groups.add(group)
    for group in groups:
        topics.update((f"%RETRY%{group}", f"%DLQ%{group}"))
    topics.update(SYSTEM_TOPICS)
    return sorted(topics)


def check_topic(store: Store, topic: str) -> None:
    """Raise UnknownTopicError unless the store knows `topic` (see known_topics)."""
    if topic in store.consume_queues.topics():
        return
    if topic not in known_topics(store):
        raise UnknownTopicError(
            f"unknown topic {topic!r}: no consume queue, topic config or committed offset in this store",
            str(store.root),
        )


def _has_key(msg: Message, key: str) -> bool:
    return msg.uniq_key == key or (bool(msg.keys) and key in msg.keys.split(" "))


# --- query by key --------------------------------------------------------------------------------


@dataclass
class KeyQueryResult:
    topic: str
    key: str
    begin: int
    end: int
    messages: list[Message]
    hits: HitReport
    coverage: IndexCoverage
    scanned: ScanOutcome | None = None
    truncated: bool = False  # --max stopped the answer early
    scan_requested: bool = False

    @property
    def capped_like_broker(self) -> bool:
        """A live broker returns at most 64 raw hits (maxMsgsNumBatch) per key query."""
        return self.hits.raw_hits > MAX_MSGS_NUM_BATCH

    def notes(self) -> list[str]:
        return hit_notes(self.hits, self.capped_like_broker, self.truncated) + coverage_notes(
            self.coverage, self.scanned, self.scan_requested
        )


def query_by_key(
    store: Store,
    topic: str,
    key: str,
    *,
    begin: int = 0,
    end: int = LONG_MAX,
    max_num: int | None = None,
    scan: bool = False,
    scan_from: int | None = None,
    advance: Callable[[int], None] | None = None,
) -> KeyQueryResult:
    """Messages of `topic` with `key` among their KEYS or as their UNIQ_KEY, stored in [begin, end].

    Index hits are read newest first; `max_num` (None = no cap) bounds the confirmed messages. The
    answer is sorted by physical offset. `scan` searches the commitlog after the index end (or from
    `scan_from`) too.
    """
    if not key:
        raise MqtoolError("empty key")
    if max_num is not None and max_num <= 0:
        raise MqtoolError("--max must be positive")
    check_topic(store, topic)
    raw = store.index_service.query_offset(topic, key, None, begin, end).phy_offsets
    hits = HitReport(raw_hits=len(raw))
    seen: set[int] = set()
    found, truncated = read_hits(
        store, raw, lambda m: m.topic == topic and _has_key(m, key), hits, max_num, seen
    )
    coverage = index_coverage(store)
    outcome = None
    if scan or scan_from is not None:
        outcome = scan_tail(
            store,
            coverage,
            scan_from,
            lambda m: m.topic == topic and begin <= m.store_timestamp <= end and _has_key(m, key),
            advance,
        )
        if outcome is not None:
            found.extend(m for m in outcome.messages if m.physical_offset not in seen)
    found.sort(key=lambda m: m.physical_offset)
    if max_num is not None and len(found) > max_num:
        found, truncated = found[-max_num:], True
    requested = scan or scan_from is not None
    return KeyQueryResult(topic, key, begin, end, found, hits, coverage, outcome, truncated, requested)


# --- query by id ---------------------------------------------------------------------------------


@dataclass
class IdQueryResult:
    msg_id: str
    kind: str  # "offsetMsgId" or "uniqKey": how the id was resolved (or last tried)
    messages: list[Message]
    decoded: OffsetMsgId | None
    offset_note: str | None  # what the offsetMsgId reading found, when it did not simply match
    topics_searched: list[str]
    hits: HitReport
    coverage: IndexCoverage | None
    scanned: ScanOutcome | None = None
    scan_requested: bool = False

    def notes(self) -> list[str]:
        notes = [self.offset_note] if self.offset_note else []
        if self.kind == "uniqKey":
            where = (
                f"topic {self.topics_searched[0]}"
                if len(self.topics_searched) == 1
                else f"{len(self.topics_searched)} topics"
            )
            notes.append(f"looked up as a UNIQ_KEY under {where}")
            notes += hit_notes(self.hits, False, False)
        if self.coverage is not None:
            notes += coverage_notes(self.coverage, self.scanned, self.scan_requested)
        return notes


def normalize_msg_id(msg_id: str) -> str:
    """Upper-case a 32/56-hex id; raise MessageIdError for anything else."""
    text = msg_id.strip()
    if not looks_like_offset_msg_id(text):
        if not text:
            detail = "empty"
        elif re.fullmatch(r"[0-9A-Fa-f]+", text):
            detail = f"{len(text)} hex digits"
        else:
            detail = "not hexadecimal"
        raise MessageIdError(
            f"not a message id: {msg_id!r} ({detail}); an offsetMsgId or UNIQ_KEY has 32 or 56 hex digits"
        )
    return text.upper()


def query_by_id(
    store: Store,
    msg_id: str,
    *,
    topic: str | None = None,
    scan: bool = False,
    advance: Callable[[int], None] | None = None,
) -> IdQueryResult:
    """The message(s) an offsetMsgId or UNIQ_KEY names (`MQAdminImpl.viewMessage`, `queryMessageByUniqKey`),
    sorted by store time."""
    ident = normalize_msg_id(msg_id)
    if topic is not None:
        check_topic(store, topic)
    decoded = decode_offset_msg_id(ident)
    commitlog = store.commitlog
    offset_msg: Message | None = None
    offset_note: str | None = None
    if decoded.offset < commitlog.min_offset and commitlog.files and decoded.offset >= 0:
        offset_note = (
            f"as an offsetMsgId: physical offset {decoded.offset} is below the commitlog's min offset "
            f"{commitlog.min_offset} (deleted by retention, or not an offsetMsgId)"
        )
    else:
        try:
            offset_msg = commitlog.read_message_at(decoded.offset)
        except MqtoolError as exc:
            offset_note = f"as an offsetMsgId: {exc}"
    exact = offset_msg is not None and offset_msg.offset_msg_id == ident
    if exact and (topic is None or offset_msg.topic == topic):
        return IdQueryResult(ident, "offsetMsgId", [offset_msg], decoded, None, [], HitReport(), None)
    if offset_msg is not None and offset_msg.offset_msg_id != ident:
        offset_note = (
            f"as an offsetMsgId the id names store host {decoded.host}, but the message at physical offset "
            f"{decoded.offset} was stored by {offset_msg.store_host_str}: the id is not from this store"
        )
    topics = [topic] if topic is not None else known_topics(store)
    raw: list[int] = []
    for t in topics:
        raw.extend(store.index_service.query_offset(t, ident).phy_offsets)
    hits = HitReport(raw_hits=len(set(raw)))
    seen: set[int] = set()
    found, _ = read_hits(store, raw, lambda m: m.uniq_key == ident, hits, None, seen)
    coverage = index_coverage(store)
    outcome = None
    if scan:
        outcome = scan_tail(
            store,
            coverage,
            None,
            lambda m: m.uniq_key == ident and (topic is None or m.topic == topic),
            advance,
        )
        if outcome is not None:
            found.extend(m for m in outcome.messages if m.physical_offset not in seen)
    if not found and offset_msg is not None and (topic is None or offset_msg.topic == topic):
        found = [offset_msg]  # shown with the host-mismatch note
        kind = "offsetMsgId"
    else:
        kind = "uniqKey"
        if found and offset_msg is None:
            offset_note = None  # a UNIQ_KEY, as expected: no need to explain the offset reading
    found.sort(key=lambda m: (m.store_timestamp, m.physical_offset))
    return IdQueryResult(ident, kind, found, decoded, offset_note, topics, hits, coverage, outcome, scan)


# --- query by queue offset -----------------------------------------------------------------------


def _queue(store: Store, topic: str, queue_id: int):
    cqs = store.consume_queues
    if topic not in cqs.topics():
        if topic in known_topics(store):
            raise UnknownTopicError(
                f"topic {topic!r} has no consume queues in this store", str(cqs.directory)
            )
        raise UnknownTopicError(f"unknown topic {topic!r}: no consume queue directory", str(cqs.directory))
    ids = cqs.queue_ids(topic)
    if queue_id not in ids:
        raise QueueOffsetError(
            f"topic {topic!r} has no queue {queue_id} (queues: {', '.join(map(str, ids)) or 'none'})",
            str(cqs.directory / topic),
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

    def notes(self) -> list[str]:
        notes = list(self.problems)
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
        raise MqtoolError("--count must be positive")
    if topic in store.batch_consume_queues.topics():
        from mqtool.batch_query import query_batch_by_queue_offset

        return query_batch_by_queue_offset(store, topic, queue_id, offset, count=count)
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


# --- query by time -------------------------------------------------------------------------------


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

    def notes(self) -> list[str]:
        notes = list(self.problems)
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
        raise MqtoolError(f"--end {end} is before --begin {begin}")
    if skip < 0 or (max_num is not None and max_num <= 0):
        raise MqtoolError("--skip must be >= 0 and --max positive")
    if topic in store.batch_consume_queues.topics():
        from mqtool.batch_query import query_batch_by_time

        return query_batch_by_time(
            store, topic, begin=begin, end=end, queue_id=queue_id, tag=tag, skip=skip, max_num=max_num
        )
    if queue_id is not None:
        queues = [_queue(store, topic, queue_id)]
    else:
        _queue_ids = store.consume_queues.queue_ids(topic)
        if not _queue_ids:
            _queue(store, topic, 0)  # raises the unknown-topic error
        queues = [_queue(store, topic, q) for q in _queue_ids]
    tags = parse_tag_expression(tag) if tag is not None else None
    codes = {tags_code(t) for t in tags} if tags is not None else None
    store_time = store_time_of(store)
    merged = heapq.merge(*(_queue_candidates(cq, begin, end, codes, store_time) for cq in queues))
    result = TimeQueryResult(topic, [cq.queue_id for cq in queues], begin, end, tags, [])
    commitlog = store.commitlog
    matched = 0
    for _t, phy, q, queue_offset, size in merged:
        if tags is None and matched < skip:
            matched += 1  # skipped without reading: only a tag check needs the message
            continue
        if tags is None and max_num is not None and len(result.messages) >= max_num:
            result.next_skip = matched
            break
        try:
            msg = commitlog.read_message_at(phy, size)
        except MqtoolError as exc:
            result.problems.append(f"{topic}/{q} queue offset {queue_offset}: {exc}")
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
    return result
