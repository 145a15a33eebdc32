"""`mqtool tiered rebuild-metadata`: config/tieredStoreMetadata.json written again from the tiered tree.

The 5.3.3 plugin lists its tiered data from that file only (`FlatFileStore.recover` iterates
`topicMetadataTable` then each topic's `queueMetadataTable`, `FlatFileStore.java:73-104`; `FlatAppendFile
.recover` takes a queue's segments from the segment tables, `FlatAppendFile.java:60-71`): lose the file and
the broker no longer sees the tree (apache/rocketmq #7345, #9358, #10193). This module lists the broker's
part of the tree (`<hash>_<cluster>/<broker>/`) and derives every entry the broker would have written:

- a segment per file, its base offset from its name (`MessageStoreUtil.offset2FileName`; a name it never
  writes is refused), `size` = the file's size (what `flushFileSegmentMeta` writes after a commit: the
  commit position, `FlatAppendFile.java:99-111`, and what `recoverFileSize` sets for a queue's last segment,
  `:73-88`); segments of one file follow each other without gap or overlap (`append` rolls at the append
  offset, `:172-193`), anything else is refused;
- `beginTimestamp`/`endTimestamp`: the smallest and largest timestamp the segment was appended with
  (`FileSegment.updateTimestamp`, `FileSegment.java:171-206`): for COMMIT_LOG each message's STORETIMESTAMP
  (`FlatMessageFile.appendCommitLog`, `FlatMessageFile.java:149-154`), for CONSUME_QUEUE the store time of
  the message each unit points at (`appendConsumeQueue` passes `request.getStoreTimestamp()`, `:164-177`;
  the upload changes only PHYSICALOFFSET, so the tiered message carries the same time); for INDEX the
  compacted file's begin/end timestamps from its header (`IndexStoreService.doCompactThenUploadFile`,
  `IndexStoreService.java:313-316`); an empty segment keeps `Long.MAX_VALUE` for both
  (`FileSegment.java:54-55`);
- `status` 0 and `sealTimestamp` 0 (STATUS_NEW; 5.3.3 never calls `markSealed`);
- a topic per topic directory, a queue per queue directory (`QueueMetadata(mq, -1, -1)`: 5.3.3 writes -1 min
  and max and never updates them on this path, `FlatMessageFile.recoverQueueMetadata`, `:104-111`);
- `topicId`: what the tiered index was built with (`constructIndexFile0` stores it in every index item with
  the item's queue, offset and size, `MessageStoreDispatcherImpl.java:352-362`; the fetcher answers a key
  query only from items of the topic's id, `MessageStoreFetcherImpl.java:422-435`): an item is attributed to
  the topic whose queue holds, at the item's offset, a message of the item's size with a key (UNIQ_KEY or
  KEYS) hashing to the item's hash. A topic no item names keeps the id of the current file, else gets the
  next serial number as `DefaultMetadataStore.addTopic` would (`DefaultMetadataStore.java:131-141`);
  `topicSerialNumber` is the largest id (the broker gives the next topic the next number).

Fields nothing on disk records (`createTimestamp`, the topic's and queue's `updateTimestamp`, `reserveTime`)
are kept from the current file (or its `.bak`, what the broker would load) when it has the entry, else set
as the broker sets them for a new entry: now, and -1 for reserveTime. The plan lists every row and how it
differs from the current file; `--execute` writes it atomically with `.bak` as ConfigManager.persist does,
under the store lock.
"""

from __future__ import annotations

import mmap
import os
import struct
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from formats.config import fastjson
from formats.config.tiered import FileSegmentMetadata, QueueMetadata, TieredMetadata, TopicMetadata
from formats.errors import FormatError, MqtoolError
from formats.structs import MESSAGE_MAGICS
from formats.tiered import (
    COMPACT_INDEX_ITEM_SIZE,
    INDEX_END_MAGIC,
    INDEX_HEADER_SIZE,
    INDEX_TOPIC,
    METADATA_FILE,
    STORE_TIMESTAMP_POSITION,
    TIERED_CQ_UNIT_SIZE,
    SegmentType,
    queue_path,
    segment_base_offset,
    tiered_key_hash,
)
from mqtool.safety import write_guard
from store.config.configfile import ConfigFile, ConfigLoadError, atomic_write
from store.io.filereads import read_range
from store.storedir import Store
from store.tiered.flatfile import Segment, TieredAppendFile, TieredQueue
from store.tiered.settings import TieredLayoutError, TieredSettings

_HEAD = struct.Struct(">ii")  # TOTALSIZE, MAGICCODE
_LONG = struct.Struct(">q")
_UNIT = struct.Struct(">qiq")  # a CONSUME_QUEUE unit: offset in the tiered COMMIT_LOG, size, tagsCode
LONG_MAX = 2**63 - 1  # FileSegment's min/max timestamp before anything is appended
MIN_MESSAGE_SIZE = STORE_TIMESTAMP_POSITION + 8
SEGMENT_TABLE_NAMES = {
    SegmentType.COMMIT_LOG: "commitLogFileSegmentTable",
    SegmentType.CONSUME_QUEUE: "consumeQueueFileSegmentTable",
    SegmentType.INDEX: "indexFileSegmentTable",
}


class TieredTreeError(MqtoolError):
    """A tiered tree this rebuild does not understand: named, nothing is written."""


@dataclass
class Change:
    """One difference between the current file and the rebuilt one."""

    table: str  # topic, queue, segment
    name: str
    field: str
    before: Any
    after: Any
    why: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"table": self.table, "name": self.name, "field": self.field, "before": self.before,
                "after": self.after, "why": self.why}  # fmt: skip


@dataclass
class RebuildPlan:
    metadata_file: Path
    current_source: str  # ConfigFile.load's source: file, bak or none
    current_note: str
    metadata: TieredMetadata
    changes: list[Change] = field(default_factory=list)
    topic_id_from: dict[str, str] = field(default_factory=dict)  # topic -> index, current file, new
    executed: bool = False

    @property
    def changed(self) -> bool:
        return bool(self.changes)

    def segment_rows(self) -> list[dict[str, Any]]:
        rows = []
        for (kind, path), segments in sorted(self.metadata.segments.items()):
            for s in segments:
                rows.append({"type": kind.name, "path": path, "baseOffset": s.base_offset, "size": s.size,
                             "beginTimestamp": s.begin_timestamp, "endTimestamp": s.end_timestamp,
                             "createTimestamp": s.create_timestamp})  # fmt: skip
        return rows

    def as_dict(self) -> dict[str, Any]:
        meta = self.metadata
        return {
            "file": str(self.metadata_file),
            "current": {"loadedFrom": self.current_source, "note": self.current_note},
            "topicSerialNumber": meta.topic_serial_number,
            "topics": [
                {"topic": t.topic, "topicId": t.topic_id, "topicIdFrom": self.topic_id_from.get(t.topic)}
                for t in sorted(meta.topics.values(), key=lambda t: t.topic)
            ],
            "queues": [
                {"topic": q.topic, "queueId": q.queue_id, "brokerName": q.broker_name}
                for topic in sorted(meta.queues)
                for q in sorted(meta.queues[topic].values(), key=lambda q: q.queue_id)
            ],
            "segments": self.segment_rows(),
            "changes": [c.to_dict() for c in self.changes],
            "changed": self.changed,
            "executed": self.executed,
        }


# --- listing the tree -------------------------------------------------------------------------------


def _entries(directory: Path) -> list[os.DirEntry]:
    try:
        return sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError as exc:
        raise TieredTreeError(f"cannot list: {exc.strerror or exc}", str(directory)) from exc


def _only_dirs(directory: Path) -> list[os.DirEntry]:
    entries = _entries(directory)
    for e in entries:
        if not e.is_dir(follow_symlinks=False):
            raise TieredTreeError("a file where the plugin keeps only directories", e.path)
    return entries


@dataclass
class _Listed:
    kind: SegmentType
    path: str  # queue path
    base_offset: int
    file: Path
    size: int


def _list_segments(kind_dir: Path, kind: SegmentType, path: str) -> list[_Listed]:
    found = []
    for e in _entries(kind_dir):
        if not e.is_file(follow_symlinks=False):
            raise TieredTreeError("not a segment file (the plugin writes only files here)", e.path)
        base = segment_base_offset(e.name)
        if base is None:
            raise TieredTreeError(
                "not a segment name MessageStoreUtil.offset2FileName writes (8 hex digits of MD5 of the base "
                "offset, then the offset in 20 digits)",
                e.path,
            )
        found.append(_Listed(kind, path, base, Path(e.path), e.stat(follow_symlinks=False).st_size))
    found.sort(key=lambda s: s.base_offset)
    for prev, nxt in zip(found, found[1:], strict=False):
        end = prev.base_offset + prev.size
        if prev.size == 0:
            raise TieredTreeError("an empty segment before the last one (the plugin rolls only full ones)",
                                  str(prev.file))  # fmt: skip
        if nxt.base_offset != end:
            what = "gap" if nxt.base_offset > end else "overlap"
            raise TieredTreeError(
                f"{what}: this segment starts at {nxt.base_offset}, the previous one "
                f"({prev.file.name}, {prev.size} bytes) ends at {end}",
                str(nxt.file),
            )
    return found


def list_tree(
    settings: TieredSettings,
) -> tuple[dict[str, list[int]], dict[tuple[SegmentType, str], list[_Listed]]]:
    """(topic -> queue ids, (type, queue path) -> segments) of the broker's directory, every name checked."""
    broker_dir = settings.broker_dir
    if not broker_dir.is_dir():
        raise TieredTreeError("no directory of this broker in the tiered tree", str(broker_dir))
    queues: dict[str, list[int]] = {}
    segments: dict[tuple[SegmentType, str], list[_Listed]] = {}
    for topic_entry in _only_dirs(broker_dir):
        topic = topic_entry.name
        for queue_entry in _only_dirs(Path(topic_entry.path)):
            name = queue_entry.name
            if not name.isascii() or not name.isdigit() or str(int(name)) != name or int(name) >= 2**31:
                raise TieredTreeError(
                    "not a queue id directory (MessageStoreUtil.toFilePath)", queue_entry.path
                )
            queue_id = int(name)
            path = queue_path(settings.broker, topic, queue_id)
            allowed = {SegmentType.INDEX.name} if topic == INDEX_TOPIC else {
                SegmentType.COMMIT_LOG.name, SegmentType.CONSUME_QUEUE.name}  # fmt: skip
            for kind_entry in _only_dirs(Path(queue_entry.path)):
                if kind_entry.name not in allowed:
                    raise TieredTreeError(
                        "a segment type this rebuild does not know here (expected "
                        f"{', '.join(sorted(allowed))})",
                        kind_entry.path,
                    )
                kind = SegmentType[kind_entry.name]
                listed = _list_segments(Path(kind_entry.path), kind, path)
                if listed:
                    segments[(kind, path)] = listed
            if topic == INDEX_TOPIC:
                if queue_id != 0:
                    raise TieredTreeError("the tiered index lives in queue 0 only", queue_entry.path)
                continue
            queues.setdefault(topic, []).append(queue_id)
    return {t: sorted(q) for t, q in queues.items()}, segments


# --- what each segment's timestamps are --------------------------------------------------------------


def _segment(listed: _Listed, begin: int = LONG_MAX, end: int = LONG_MAX, create: int = 0) -> Segment:
    meta = FileSegmentMetadata(
        listed.path, listed.kind, listed.base_offset, listed.size, 0, create, begin, end, 0
    )
    return Segment(meta, listed.file, listed.size, listed.size)


def _commit_log_times(listed: _Listed, times: dict[int, tuple[int, int]]) -> tuple[int, int]:
    """Min and max STORETIMESTAMP of the messages that fill the segment exactly; each message's
    (store time, size) goes into `times` by its offset in the queue's tiered COMMIT_LOG. Only the header
    fields are read (TOTALSIZE, MAGICCODE, STORETIMESTAMP), through a map of the file: a 1 GiB segment
    (tieredStoreCommitLogMaxSize's default) is not copied into memory."""
    if listed.size == 0:
        return LONG_MAX, LONG_MAX
    low = high = None
    with open(listed.file, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        if len(data) != listed.size:
            raise TieredTreeError(f"the file changed size while read ({listed.size} -> {len(data)})",
                                  str(listed.file))  # fmt: skip
        pos = 0
        while pos < listed.size:
            if listed.size - pos < MIN_MESSAGE_SIZE:
                raise TieredTreeError(
                    f"no message at position {pos}: {listed.size - pos} bytes left (the plugin's COMMIT_LOG "
                    "segments hold whole messages only)",
                    str(listed.file),
                    pos,
                )
            size, magic = _HEAD.unpack_from(data, pos)
            if magic not in MESSAGE_MAGICS or size < MIN_MESSAGE_SIZE or pos + size > listed.size:
                raise TieredTreeError(
                    f"no message at position {pos} (TOTALSIZE {size}, MAGICCODE {magic}; the plugin's "
                    "COMMIT_LOG segments hold whole messages only)",
                    str(listed.file),
                    pos,
                )
            (stored,) = _LONG.unpack_from(data, pos + STORE_TIMESTAMP_POSITION)
            times[listed.base_offset + pos] = (stored, size)
            low = stored if low is None else min(low, stored)
            high = stored if high is None else max(high, stored)
            pos += size
    return low, high  # type: ignore[return-value]


def _consume_queue_times(
    listed: _Listed, log_min: int | None, times: dict[int, tuple[int, int]], old: FileSegmentMetadata | None
) -> tuple[int, int]:
    """Min and max store time of the messages the segment's units point at (each unit must point at the
    start of a message of its size). Units whose message lies below the first COMMIT_LOG segment are the
    plugin's own doing (`FlatMessageFile.destroyExpiredFile` expires the CONSUME_QUEUE and the COMMIT_LOG
    segments each by its own max timestamp, `FlatAppendFile.java:246-272`): their times are not on disk any
    more, so the segment's beginTimestamp is kept from the current file, and without one the rebuild refuses
    (the end is the last readable unit's: a queue's store times rise)."""
    if listed.size % TIERED_CQ_UNIT_SIZE:
        raise TieredTreeError(
            f"{listed.size} bytes, not whole {TIERED_CQ_UNIT_SIZE}-byte units", str(listed.file)
        )
    found: list[int] = []
    expired = 0
    data = read_range(listed.file, 0, listed.size)
    for index, (phy, size, _tags) in enumerate(_UNIT.iter_unpack(data)):
        if log_min is None or phy < log_min:
            expired += 1
            continue
        message = times.get(phy)
        if message is None or message[1] != size:
            where = (
                "no message starts there" if message is None else f"the message there has {message[1]} bytes"
            )
            raise TieredTreeError(
                f"unit of queue offset {listed.base_offset // TIERED_CQ_UNIT_SIZE + index} points at tiered "
                f"COMMIT_LOG offset {phy}, size {size}: {where}",
                str(listed.file),
                index * TIERED_CQ_UNIT_SIZE,
            )
        found.append(message[0])
    if not expired:
        return (min(found), max(found)) if found else (LONG_MAX, LONG_MAX)
    if old is None:
        raise TieredTreeError(
            f"{expired} unit(s) point below the first tiered COMMIT_LOG segment (expired): their store "
            "times, this segment's beginTimestamp, are not on disk and no current metadata file has them",
            str(listed.file),
        )
    return old.begin_timestamp, max(found) if found else old.end_timestamp


def _queue_segments(
    log_listed: list[_Listed],
    cq_listed: list[_Listed],
    old_segment: Callable[[SegmentType, str, int], FileSegmentMetadata | None],
    create_of: Callable[[_Listed], int],
) -> tuple[list[Segment], list[Segment]]:
    """One queue's COMMIT_LOG and CONSUME_QUEUE segments with their timestamps. The COMMIT_LOG is walked
    once, as far as the CONSUME_QUEUE segment being timed needs it, and the message times it no longer
    needs are dropped: memory holds about one segment's messages, not the queue's."""
    times: dict[int, tuple[int, int]] = {}  # offset -> (store time, size), ascending
    log_rows: list[Segment] = []
    walked = iter(log_listed)

    def walk_to(offset: int) -> None:
        while not log_rows or log_rows[-1].commit_offset <= offset:
            s = next(walked, None)
            if s is None:
                return
            begin, end = _commit_log_times(s, times)
            log_rows.append(_segment(s, begin, end, create_of(s)))

    log_min = log_listed[0].base_offset if log_listed else None
    cq_rows: list[Segment] = []
    for s in cq_listed:
        last_phy = _last_unit_offset(s)
        if last_phy is not None:
            walk_to(last_phy)
        begin, end = _consume_queue_times(s, log_min, times, old_segment(s.kind, s.path, s.base_offset))
        cq_rows.append(_segment(s, begin, end, create_of(s)))
        if last_phy is not None:
            # rebuilt, not popped from the front: a dict emptied from its start is iterated in O(deleted)
            kept = {offset: t for offset, t in times.items() if offset >= last_phy}
            times.clear()
            times.update(kept)
    walk_to(2**63 - 1)  # the rest (messages no unit points at yet: the CONSUME_QUEUE lags)
    return log_rows, cq_rows


def _last_unit_offset(listed: _Listed) -> int | None:
    if listed.size < TIERED_CQ_UNIT_SIZE or listed.size % TIERED_CQ_UNIT_SIZE:
        return None
    data = read_range(listed.file, listed.size - TIERED_CQ_UNIT_SIZE, TIERED_CQ_UNIT_SIZE)
    return _UNIT.unpack(data)[0] if len(data) == TIERED_CQ_UNIT_SIZE else None


def _index_header(listed: _Listed) -> tuple[int, int, int]:
    """(begin, end, item count) from a compacted index file's header."""
    head = read_range(listed.file, 0, INDEX_HEADER_SIZE)
    if len(head) < INDEX_HEADER_SIZE or int.from_bytes(head[0:4], "big", signed=True) != INDEX_END_MAGIC:
        raise TieredTreeError(
            "not a compacted tiered index file (IndexStoreFile END_MAGIC_CODE)", str(listed.file)
        )
    begin = int.from_bytes(head[4:12], "big", signed=True)
    end = int.from_bytes(head[12:20], "big", signed=True)
    items = int.from_bytes(head[24:28], "big", signed=True)
    if items < 0 or INDEX_HEADER_SIZE + items * COMPACT_INDEX_ITEM_SIZE > listed.size:
        raise TieredTreeError(f"header says {items} items, more than the file holds", str(listed.file))
    return begin, end, items


def _index_items(listed: _Listed, items: int) -> Iterator[tuple[int, int, int, int, int]]:
    """(key hash, topicId, queueId, offset, size) of every item: the file's last `items` * 28 bytes."""
    start = listed.size - items * COMPACT_INDEX_ITEM_SIZE
    data = read_range(listed.file, start, items * COMPACT_INDEX_ITEM_SIZE)
    for at in range(0, len(data), COMPACT_INDEX_ITEM_SIZE):
        item = data[at : at + COMPACT_INDEX_ITEM_SIZE]
        ints = [int.from_bytes(item[i : i + 4], "big", signed=True) for i in (0, 4, 8)]
        offset = int.from_bytes(item[12:20], "big", signed=True)
        size = int.from_bytes(item[20:24], "big", signed=True)
        yield ints[0], ints[1], ints[2], offset, size


def _message_keys(queue: TieredQueue, offset: int, size: int) -> set[str] | None:
    log = queue.commit_log
    if (
        not log.segments
        or offset < log.min_offset
        or size < MIN_MESSAGE_SIZE
        or offset + size > log.commit_offset
    ):
        return None
    try:
        message = queue.message_at(offset, size, check_crc=False)
    except FormatError:
        return None
    if message.total_size != size:
        return None
    props = message.properties
    keys = {k for k in (props.get("KEYS") or "").split(" ") if k.strip()}
    if (props.get("UNIQ_KEY") or "").strip():
        keys.add(props["UNIQ_KEY"])
    return keys


def topic_ids_from_index(
    index_segments: list[_Listed], flat: dict[tuple[str, int], TieredQueue], seen: set[int] | None = None
) -> dict[str, int]:
    """topic -> the topicId its index items carry; two ids for one topic (or one id for two) is refused.
    `seen` collects every id the items carry (also a deleted topic's): no new topic may get one of them."""
    by_topic: dict[str, int] = {}
    by_id: dict[int, str] = {}
    topics_by_queue: dict[int, list[str]] = {}
    for topic, queue_id in flat:
        topics_by_queue.setdefault(queue_id, []).append(topic)
    for listed in index_segments:
        _, _, items = _index_header(listed)
        for key_hash, topic_id, queue_id, offset, size in _index_items(listed, items):
            if seen is not None:
                seen.add(topic_id)
            matches = []
            for topic in topics_by_queue.get(queue_id, []):
                keys = _message_keys(flat[(topic, queue_id)], offset, size)
                if keys and any(tiered_key_hash(topic, k) == key_hash for k in keys):
                    matches.append(topic)
            if len(matches) != 1:
                continue  # a key of a deleted segment or an ambiguous one: no evidence
            topic = matches[0]
            if by_topic.setdefault(topic, topic_id) != topic_id or by_id.setdefault(topic_id, topic) != topic:
                raise TieredTreeError(
                    f"index items give topic {topic!r} id {topic_id} and also "
                    f"{by_topic[topic]} / id {topic_id} to {by_id[topic_id]!r}: not one id per topic",
                    str(listed.file),
                )
    return by_topic


# --- the plan ---------------------------------------------------------------------------------------


def _current(store_root: Path) -> tuple[TieredMetadata, str, str]:
    try:
        loaded = ConfigFile(store_root, METADATA_FILE, TieredMetadata).load()
    except ConfigLoadError as exc:
        # the broker would not start on it; nothing of it is kept
        return TieredMetadata(), "none", f"unreadable ({exc.message})"
    return loaded.model, loaded.source, loaded.reason


def plan_rebuild(store: Store, settings: TieredSettings, now_ms: int | None = None) -> RebuildPlan:
    """The metadata the tree calls for, and how it differs from the current file."""
    now = int(time.time() * 1000) if now_ms is None else now_ms
    current, source, note = _current(store.root)
    queue_ids, listed = list_tree(settings)

    def old_segment(kind: SegmentType, path: str, base: int) -> FileSegmentMetadata | None:
        return next((s for s in current.queue_segments(kind, path) if s.base_offset == base), None)

    def create_of(s: _Listed) -> int:
        old = old_segment(s.kind, s.path, s.base_offset)
        return old.create_timestamp if old else now

    flat: dict[tuple[str, int], TieredQueue] = {}
    segments: dict[tuple[SegmentType, str], list[FileSegmentMetadata]] = {}
    for topic, ids in queue_ids.items():
        for queue_id in ids:
            path = queue_path(settings.broker, topic, queue_id)
            queue_dir = settings.cluster_dir / path  # what errors name for a kind with no segment
            log_listed = listed.get((SegmentType.COMMIT_LOG, path), [])
            cq_listed = listed.get((SegmentType.CONSUME_QUEUE, path), [])
            log_rows, cq_rows = _queue_segments(log_listed, cq_listed, old_segment, create_of)
            flat[(topic, queue_id)] = TieredQueue(
                topic,
                queue_id,
                TieredAppendFile(SegmentType.COMMIT_LOG, log_rows, queue_dir / SegmentType.COMMIT_LOG.name),
                TieredAppendFile(
                    SegmentType.CONSUME_QUEUE,
                    [_segment(s) for s in cq_listed],
                    queue_dir / SegmentType.CONSUME_QUEUE.name,
                ),
            )
            for kind, rows in ((SegmentType.COMMIT_LOG, log_rows), (SegmentType.CONSUME_QUEUE, cq_rows)):
                if rows:
                    segments[(kind, path)] = [r.meta for r in rows]
    index_listed = listed.get((SegmentType.INDEX, queue_path(settings.broker, INDEX_TOPIC, 0)), [])
    if index_listed:
        rows = []
        for s in index_listed:
            begin, end, _ = _index_header(s)
            rows.append(_segment(s, begin, end, create_of(s)).meta)
        segments[(SegmentType.INDEX, index_listed[0].path)] = rows

    in_index: set[int] = set()
    from_index = topic_ids_from_index(index_listed, flat, in_index)
    topic_id_from: dict[str, str] = {}
    ids: dict[str, int] = {}
    for topic in sorted(queue_ids):
        old = current.topics.get(topic)
        if topic in from_index:
            ids[topic], topic_id_from[topic] = from_index[topic], "index"
            if old is not None and old.topic_id != from_index[topic]:
                topic_id_from[topic] = f"index (the current file says {old.topic_id})"
        elif old is not None:
            ids[topic], topic_id_from[topic] = old.topic_id, "current file"
    serial = max([current.topic_serial_number, *ids.values(), *in_index])
    taken = set(ids.values()) | in_index
    for topic in sorted(queue_ids):
        if topic not in ids:
            serial += 1
            while serial in taken:
                serial += 1
            ids[topic], topic_id_from[topic] = serial, "new (DefaultMetadataStore.addTopic)"
            taken.add(serial)
    serial = max([serial, *ids.values()]) if ids else serial
    if len(set(ids.values())) != len(ids):
        raise TieredTreeError(
            "two topics would share one topicId (the current file's ids clash with the index's)",
            str(store.root / "config" / METADATA_FILE),
        )

    topics: dict[str, TopicMetadata] = {}
    queues: dict[str, dict[int, QueueMetadata]] = {}
    for topic in sorted(queue_ids):
        old = current.topics.get(topic)
        topics[topic] = TopicMetadata(
            ids[topic], topic, old.status if old else 0, old.reserve_time if old else -1,
            old.update_timestamp if old else now,
        )  # fmt: skip
        queues[topic] = {}
        for queue_id in queue_ids[topic]:
            old_q = current.queues.get(topic, {}).get(queue_id)
            queues[topic][queue_id] = QueueMetadata(
                topic, settings.broker, queue_id, old_q.min_offset if old_q else -1,
                old_q.max_offset if old_q else -1, old_q.update_timestamp if old_q else now,
            )  # fmt: skip
    rebuilt = TieredMetadata(serial, topics, queues, segments)
    plan = RebuildPlan(
        store.root / "config" / METADATA_FILE, source, note, rebuilt, topic_id_from=topic_id_from
    )
    plan.changes = diff(current, rebuilt, source)
    return plan


def diff(current: TieredMetadata, rebuilt: TieredMetadata, source: str) -> list[Change]:
    """Field by field: what the rebuilt file changes in the current one (`source` none: every row is new)."""
    changes: list[Change] = []
    why = "no readable current file" if source == "none" else ""
    if current.topic_serial_number != rebuilt.topic_serial_number:
        changes.append(Change("file", "", "topicSerialNumber", current.topic_serial_number,
                              rebuilt.topic_serial_number, why or "the largest topicId"))  # fmt: skip
    fields_topic = ("topic_id", "status", "reserve_time", "update_timestamp")
    for topic in sorted(set(current.topics) | set(rebuilt.topics)):
        _compare(
            changes, "topic", topic, current.topics.get(topic), rebuilt.topics.get(topic), fields_topic, why
        )
    fields_queue = ("broker_name", "min_offset", "max_offset", "update_timestamp")
    for topic in sorted(set(current.queues) | set(rebuilt.queues)):
        old_t, new_t = current.queues.get(topic, {}), rebuilt.queues.get(topic, {})
        for q in sorted(set(old_t) | set(new_t)):
            _compare(changes, "queue", f"{topic}/{q}", old_t.get(q), new_t.get(q), fields_queue, why)
    fields_segment = (
        "size",
        "status",
        "create_timestamp",
        "begin_timestamp",
        "end_timestamp",
        "seal_timestamp",
    )
    for key in sorted(set(current.segments) | set(rebuilt.segments)):
        old_s = {s.base_offset: s for s in current.segments.get(key, [])}
        new_s = {s.base_offset: s for s in rebuilt.segments.get(key, [])}
        for base in sorted(set(old_s) | set(new_s)):
            name = f"{key[0].name} {key[1]} {base}"
            _compare(changes, "segment", name, old_s.get(base), new_s.get(base), fields_segment, why)
    return changes


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p.capitalize() for p in rest)


def _compare(changes: list[Change], table: str, name: str, old: Any, new: Any, fields: tuple[str, ...],
             why: str) -> None:  # fmt: skip
    if old is None and new is not None:
        changes.append(Change(table, name, "*", None, "added", why or "on disk, not in the current file"))
    elif new is None and old is not None:
        changes.append(Change(table, name, "*", "listed", None, "not on disk: dropped"))
    elif old is not None:
        for f in fields:
            a, b = getattr(old, f), getattr(new, f)
            if a != b:
                changes.append(Change(table, name, _camel(f), a, b, "derived from the tree"))


# --- writing ----------------------------------------------------------------------------------------


def to_json(meta: TieredMetadata) -> dict[str, Any]:
    """The file's properties as DefaultMetadataStore.encode writes them (beans by @JSONField ordinal, the
    wrapper's properties alphabetically; map keys sorted here, the broker reads any order)."""

    def segment(s: FileSegmentMetadata) -> dict[str, Any]:
        return {"path": s.path, "type": int(s.type), "baseOffset": s.base_offset, "status": s.status,
                "size": s.size, "createTimestamp": s.create_timestamp, "beginTimestamp": s.begin_timestamp,
                "endTimestamp": s.end_timestamp, "sealTimestamp": s.seal_timestamp}  # fmt: skip

    tables: dict[str, dict[str, Any]] = {name: {} for name in SEGMENT_TABLE_NAMES.values()}
    for (kind, path), rows in sorted(meta.segments.items()):
        tables[SEGMENT_TABLE_NAMES[kind]][path] = {r.base_offset: segment(r) for r in rows}
    out: dict[str, Any] = dict(tables)
    out["queueMetadataTable"] = {
        topic: {
            q.queue_id: {
                "queue": {"brokerName": q.broker_name, "queueId": q.queue_id, "topic": q.topic},
                "minOffset": q.min_offset,
                "maxOffset": q.max_offset,
                "updateTimestamp": q.update_timestamp,
            }
            for q in sorted(table.values(), key=lambda q: q.queue_id)
        }
        for topic, table in sorted(meta.queues.items())
    }
    topics = {}
    for topic, t in sorted(meta.topics.items()):
        row: dict[str, Any] = {"topicId": t.topic_id, "topic": t.topic}
        if t.status:  # the real file shows no status for 0 (tests/data/store-tiered)
            row["status"] = t.status
        row.update({"reserveTime": t.reserve_time, "updateTimestamp": t.update_timestamp})
        topics[topic] = row
    out["topicMetadataTable"] = topics
    out["topicSerialNumber"] = meta.topic_serial_number
    return out


def encode(meta: TieredMetadata) -> str:
    return fastjson.dumps(to_json(meta), pretty=True)


def rebuild_metadata(store: Store, settings: TieredSettings | None, execute: bool = False) -> RebuildPlan:
    """Plan (and with `execute` write) config/tieredStoreMetadata.json from the tiered tree."""
    if settings is None:
        raise TieredLayoutError(
            "no tiered tree named: give --tiered PATH or broker.conf's tieredStoreFilePath", str(store.root)
        )
    with write_guard(store, execute, touches="tiered") as writing:
        plan = plan_rebuild(store, settings)
        if writing and plan.changed:
            ConfigFile(store.root, METADATA_FILE, TieredMetadata).write_targets().check()
            (store.root / "config").mkdir(parents=True, exist_ok=True)
            atomic_write(plan.metadata_file, encode(plan.metadata))
            plan.executed = True
    return plan
