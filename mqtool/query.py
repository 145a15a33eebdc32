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

Each key/id answer also says whether the index covers the commitlog: the newest index file's
endPhyOffset is compared with the first commitlog record after it that the dispatcher would have
indexed; a lagging index (a crash before dispatch, an index rebuilt late) is reported and `scan=True`
searches the uncovered tail of the commitlog directly. Nothing here writes into the store.
"""

from __future__ import annotations

import base64
import heapq
import json
import re
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from formats.commitlog import STOPS, Message, read_prelude
from formats.compression import BodyNotDecoded
from formats.errors import MqtoolError
from formats.indexfile import LONG_MAX
from formats.javahash import tags_code
from formats.msgid import OffsetMsgId, decode_offset_msg_id, looks_like_offset_msg_id
from formats.structs import BLANK_MAGIC, MESSAGE_MAGICS
from mqtool.consumer_progress import CommittedOffsets, store_time_of
from store.index import MAX_MSGS_NUM_BATCH
from store.storedir import Store

SYSTEM_TOPICS = (
    "RMQ_SYS_TRANS_HALF_TOPIC",
    "RMQ_SYS_TRANS_OP_HALF_TOPIC",
    "SCHEDULE_TOPIC_XXXX",
    "rmq_sys_wheel_timer",
)
TABLE_BODY_PREVIEW = 60  # characters of body text in a table cell


class UnknownTopicError(MqtoolError):
    """A topic that has no consume queue, no topic config and no committed offset in this store."""


class MessageIdError(MqtoolError):
    """An id that is neither an offsetMsgId nor a UNIQ_KEY (32 or 56 hex digits)."""


class QueueOffsetError(MqtoolError):
    """A queue offset outside what the queue holds."""


class ExportError(MqtoolError):
    """The export directory cannot be used."""


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
    model = _config_model(store, "consumerOffset.json")
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


# --- index coverage ------------------------------------------------------------------------------


@dataclass
class IndexCoverage:
    """How far the index files cover the commitlog."""

    index_end_phy_offset: int | None  # newest index file's endPhyOffset (None: no index files)
    index_end_timestamp: int | None
    first_unindexed_offset: int | None  # first record after the index end the dispatcher would index
    commitlog_end: int | None  # where the commitlog data ends (exact when `end_exact`)
    end_exact: bool = True
    error: str | None = None  # why coverage could not be established

    @property
    def behind(self) -> bool:
        return self.first_unindexed_offset is not None

    @property
    def uncovered_bytes(self) -> int | None:
        if self.first_unindexed_offset is None or self.commitlog_end is None:
            return None
        return max(0, self.commitlog_end - self.first_unindexed_offset)

    def to_json(self) -> dict[str, Any]:
        return {
            "indexEndPhyOffset": self.index_end_phy_offset,
            "indexEndTimestamp": self.index_end_timestamp,
            "firstUnindexedOffset": self.first_unindexed_offset,
            "commitlogEnd": self.commitlog_end,
            "indexBehind": self.behind,
            "uncoveredBytes": self.uncovered_bytes,
            "error": self.error,
        }


def _data_end(store: Store, offset: int) -> int:
    """Where the records starting at `offset` end, by following TOTALSIZE (no checks: a quick bound)."""
    files = store.commitlog.files
    index = next((i for i, f in enumerate(files) if f.start_offset <= offset < f.end_offset), None)
    if index is None:
        return offset
    pos = offset - files[index].start_offset
    while True:
        f = files[index]
        buf = f.buffer()
        size = len(buf)
        while pos + 8 <= size:
            total, magic = read_prelude(buf, pos)
            if magic in MESSAGE_MAGICS and 0 < total <= size - pos:
                pos += total
                continue
            if magic == BLANK_MAGIC and index + 1 < len(files):
                break
            return f.start_offset + pos
        else:
            return f.start_offset + pos
        index += 1
        pos = 0


def index_coverage(store: Store) -> IndexCoverage:
    """Compare the newest index file's endPhyOffset with the commitlog records after it.

    Walks the commitlog from the index end to the first record that has index keys (UNIQ_KEY or KEYS,
    not a rolled-back transaction): on a healthy store that is just the last record.
    """
    commitlog = store.commitlog
    headers = [h for _, h in store.index_service.headers()]
    indexed_any = any(h.effective_index_count > 1 for h in headers)
    end_phy = headers[-1].end_phy_offset if headers else None
    end_ts = headers[-1].end_timestamp if headers else None
    skip = indexed_any and end_phy is not None and end_phy >= commitlog.min_offset
    start = end_phy if skip else commitlog.min_offset
    coverage = IndexCoverage(end_phy, end_ts, None, None)
    if not commitlog.files:
        coverage.commitlog_end = 0
        return coverage
    try:
        for record in commitlog.iter_records(start):
            if isinstance(record, Message):
                if skip and record.physical_offset == end_phy:
                    continue
                if record.index_keys():
                    coverage.first_unindexed_offset = record.physical_offset
                    coverage.commitlog_end = _data_end(store, record.physical_offset)
                    coverage.end_exact = False
                    return coverage
            elif isinstance(record, STOPS):
                coverage.commitlog_end = record.physical_offset
                return coverage
    except MqtoolError as exc:
        coverage.error = f"cannot follow the commitlog from the index end {start}: {exc}"
    return coverage


# --- scanning ------------------------------------------------------------------------------------


@dataclass
class ScanOutcome:
    messages: list[Message]
    start: int
    end: int  # where the broker's walk stops (the valid end)
    stop_reason: str


def scan_commitlog(
    store: Store,
    start: int,
    match: Callable[[Message], bool],
    *,
    advance: Callable[[int], None] | None = None,
) -> ScanOutcome:
    """Every message from `start` (a record boundary) to the valid end for which `match` is true."""
    found: list[Message] = []
    last = start
    for record in store.commitlog.iter_records(start):
        if advance is not None:
            advance(record.physical_offset - last)
            last = record.physical_offset
        if isinstance(record, Message):
            if match(record):
                found.append(record)
        elif isinstance(record, STOPS):
            return ScanOutcome(found, start, record.physical_offset, record.reason)
    raise AssertionError("iter_records always ends with a stop")  # pragma: no cover


# --- reading hits --------------------------------------------------------------------------------


@dataclass
class HitReport:
    """What became of the physical offsets an index walk returned."""

    raw_hits: int = 0
    dropped_collisions: int = 0
    deleted: int = 0  # hits below the commitlog's min offset (removed by retention)
    unreadable: list[str] = field(default_factory=list)  # hits where no valid message starts

    def to_json(self) -> dict[str, Any]:
        return {
            "rawHits": self.raw_hits,
            "droppedCollisions": self.dropped_collisions,
            "deletedHits": self.deleted,
            "unreadableHits": list(self.unreadable),
        }


def _read_hits(
    store: Store,
    offsets: list[int],
    confirm: Callable[[Message], bool],
    report: HitReport,
    limit: int | None = None,
    seen: set[int] | None = None,
) -> tuple[list[Message], bool]:
    """Read and confirm hits in the order given; stop after `limit` confirmed. (messages, truncated)."""
    commitlog = store.commitlog
    seen = set() if seen is None else seen
    out: list[Message] = []
    for i, offset in enumerate(offsets):
        if offset in seen:
            continue
        if limit is not None and len(out) >= limit:
            return out, any(o not in seen for o in offsets[i:])
        seen.add(offset)
        if offset < commitlog.min_offset:
            report.deleted += 1
            continue
        try:
            msg = commitlog.read_message_at(offset)
        except MqtoolError as exc:
            report.unreadable.append(f"{offset}: {exc}")
            continue
        if confirm(msg):
            out.append(msg)
        else:
            report.dropped_collisions += 1
    return out, False


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
        return _hit_notes(self.hits, self.capped_like_broker, self.truncated) + _coverage_notes(
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
    found, truncated = _read_hits(
        store, raw, lambda m: m.topic == topic and _has_key(m, key), hits, max_num, seen
    )
    coverage = index_coverage(store)
    outcome = None
    if scan or scan_from is not None:
        outcome = _scan_tail(
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


def _scan_tail(
    store: Store,
    coverage: IndexCoverage,
    scan_from: int | None,
    match: Callable[[Message], bool],
    advance: Callable[[int], None] | None,
) -> ScanOutcome | None:
    start = scan_from if scan_from is not None else coverage.first_unindexed_offset
    if start is None:
        return None
    outcome = scan_commitlog(store, start, match, advance=advance)
    if scan_from is None:
        coverage.commitlog_end, coverage.end_exact = outcome.end, True
    return outcome


def _hit_notes(hits: HitReport, capped: bool, truncated: bool) -> list[str]:
    notes = []
    if hits.dropped_collisions:
        n = hits.dropped_collisions
        notes.append(
            f"{n} hash collision{'s' if n != 1 else ''} dropped (index hits whose message does not carry "
            "the key)"
        )
    if hits.deleted:
        notes.append(f"{hits.deleted} index hit(s) point to commitlog data already deleted by retention")
    for problem in hits.unreadable:
        notes.append(f"index hit at physical offset {problem}")
    if capped:
        notes.append(
            f"the index returned {hits.raw_hits} raw hits: a live broker would have returned at most "
            f"{MAX_MSGS_NUM_BATCH}"
        )
    if truncated:
        notes.append("--max stopped the answer: more index hits were not read (the newest are shown)")
    return notes


def _coverage_notes(
    coverage: IndexCoverage, scanned: ScanOutcome | None, scan_requested: bool = False
) -> list[str]:
    notes = []
    if scan_requested and scanned is None and not coverage.behind and coverage.error is None:
        notes.append("the index covers the whole commitlog: nothing to scan")
    if coverage.error:
        notes.append(coverage.error)
    if coverage.behind:
        end = coverage.commitlog_end
        approx = "" if coverage.end_exact else "about "
        covered = (
            "there are no index files"
            if coverage.index_end_phy_offset is None
            else f"the index covers up to physical offset {coverage.index_end_phy_offset}"
        )
        text = (
            f"{covered}, but the commitlog goes on to {end}: {approx}{coverage.uncovered_bytes} bytes from "
            f"{coverage.first_unindexed_offset} are not indexed"
        )
        if scanned is None:
            text += " — rerun with --scan to search them"
        notes.append(text)
    if scanned is not None:
        n = len(scanned.messages)
        notes.append(
            f"scanned the commitlog from {scanned.start} to {scanned.end} ({scanned.stop_reason}): "
            f"{n} matching message{'s' if n != 1 else ''}"
        )
    return notes


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
            notes += _hit_notes(self.hits, False, False)
        if self.coverage is not None:
            notes += _coverage_notes(self.coverage, self.scanned, self.scan_requested)
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
    found, _ = _read_hits(store, raw, lambda m: m.uniq_key == ident, hits, None, seen)
    coverage = index_coverage(store)
    outcome = None
    if scan:
        outcome = _scan_tail(
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


def query_by_queue_offset(
    store: Store, topic: str, queue_id: int, offset: int, *, count: int = 1
) -> QueueQueryResult:
    """The message(s) at queue offsets [offset, offset+count) of topic/queueId (mqadmin queryMsgByOffset)."""
    if count <= 0:
        raise MqtoolError("--count must be positive")
    cq = _queue(store, topic, queue_id)
    lo, hi = cq.min_offset, cq.max_offset
    where = f"{topic}/{queue_id}"
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


# --- message documents, rendering, export --------------------------------------------------------


@dataclass
class BodyView:
    data: bytes  # decompressed when possible
    decompressed: bool
    error: str | None
    text: str | None  # when `data` is valid UTF-8


def body_view(msg: Message) -> BodyView:
    data, decompressed, error = msg.body, False, None
    if msg.compression:
        try:
            data, decompressed = msg.decompressed_body(), True
        except BodyNotDecoded as exc:
            error = str(exc)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    return BodyView(data, decompressed, error, text)


def message_document(
    msg: Message, committed: CommittedOffsets | None = None, *, body_limit: int | None = None
) -> dict[str, Any]:
    """Message.to_json plus msgId, the body as text where possible, and consumedBy {group: bool}."""
    doc = msg.to_json(include_body=True)
    view = body_view(msg)
    if body_limit is not None and len(msg.body) > body_limit:
        doc["body"] = base64.b64encode(msg.body[:body_limit]).decode("ascii")
    doc["msgId"] = msg.uniq_key or msg.offset_msg_id
    doc["bodyCompression"] = msg.compression
    doc["bodyDecompressed"] = view.decompressed
    if view.error:
        doc["bodyError"] = view.error
    text = view.text
    if text is not None and body_limit is not None and len(text) > body_limit:
        text = text[:body_limit]
    doc["bodyText"] = text
    doc["bodyTruncated"] = body_limit is not None and len(view.data) > body_limit
    doc["consumedBy"] = (
        committed.consumed_by(msg.topic, msg.queue_id, msg.queue_offset) if committed is not None else {}
    )
    return doc


_UNSAFE = re.compile(r"[^A-Za-z0-9%_.+-]")


@dataclass
class ExportResult:
    directory: Path
    files: list[str]
    manifest: Path


def export_messages(
    messages: list[Message], directory: Path | str, store: Store, committed: CommittedOffsets | None = None
) -> ExportResult:
    """Write each body (decompressed when possible) to its own file and a manifest.json describing them.

    Refuses a directory inside the store, and one that already holds a manifest.json.
    """
    target = Path(directory).expanduser().resolve()
    root = store.root.resolve()
    if target == root or root in target.parents:
        raise ExportError("refusing to export into the store directory", str(target))
    manifest = target / "manifest.json"
    if manifest.exists():
        raise ExportError("already holds an export (manifest.json); choose another directory", str(target))
    try:
        target.mkdir(parents=True, exist_ok=True)
        entries, names = [], []
        for msg in messages:
            view = body_view(msg)
            name = (
                f"{_UNSAFE.sub('_', msg.topic)}_{msg.queue_id}_{msg.queue_offset}_{msg.physical_offset}.bin"
            )
            (target / name).write_bytes(view.data)
            doc = message_document(msg, committed)
            for key in ("body", "bodyText"):
                doc.pop(key, None)
            doc["file"] = name
            doc["fileLength"] = len(view.data)
            entries.append(doc)
            names.append(name)
        manifest.write_text(json.dumps(entries, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    except OSError as exc:
        raise ExportError(f"cannot write the export: {exc.strerror or exc}", str(target)) from exc
    return ExportResult(target, names, manifest)
