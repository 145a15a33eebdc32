"""The tiered store's compacted index (5.3.3 `IndexStoreFile` of status UPLOAD, `IndexStoreService`): one
compacted file per INDEX segment of `<broker>/rmq_sys_INDEX/0`, found by key as the plugin's
`queryAsyncFromSegmentFile` does (`IndexStoreFile.java:343-398`), and the messages its items point at, as
`MessageStoreFetcherImpl.queryMessageAsync` reads them (`MessageStoreFetcherImpl.java:411-455`).

The broker reads a segment with its configured `tieredStoreIndexFileMaxHashSlotNum` (not a field of the file);
the file's own slot count is where its first slot's items start. A file whose slot count is not the
configured one (broker.conf, else the default 5,000,000) is named and not read: the broker would look its keys
up in the wrong slots.
"""

from __future__ import annotations

from dataclasses import dataclass

from formats.errors import FormatError, MqtoolError
from formats.message.commitlog import Message
from formats.tiered import (
    COMPACT_INDEX_ITEM_SIZE,
    INDEX_HEADER_SIZE,
    INDEX_SLOT_SIZE,
    INDEX_TOPIC,
    MAX_ITEMS_READ,
    SegmentType,
    queue_path,
    tiered_key_hash,
)
from store.io.filereads import read_range
from store.tiered.flatfile import Segment, TieredStore

DEFAULT_MAX_HASH_SLOT_NUM = 5_000_000  # tieredstore MessageStoreConfig.tieredStoreIndexFileMaxHashSlotNum


@dataclass(frozen=True)
class IndexItem:
    key_hash: int
    topic_id: int
    queue_id: int
    offset: int  # in the queue's tiered COMMIT_LOG
    size: int
    store_time: int  # timeDiff * 1000 + the file's begin timestamp (second precision)


def _int(data: bytes, at: int, n: int = 4) -> int:
    return int.from_bytes(data[at : at + n], "big", signed=True)


class TieredIndexFile:
    """One compacted index file (an INDEX segment); begin timestamp: the segment's (`getMinTimestamp`)."""

    def __init__(self, segment: Segment, slots: int) -> None:
        self.segment = segment
        self.slots = slots
        self.begin_timestamp = segment.meta.begin_timestamp
        first = _int(self._read(INDEX_HEADER_SIZE, 4), 0)
        on_disk = (first - INDEX_HEADER_SIZE) // INDEX_SLOT_SIZE
        if first < INDEX_HEADER_SIZE or on_disk != slots:
            raise FormatError(
                f"compacted index of {on_disk} hash slots, the broker reads it with "
                f"tieredStoreIndexFileMaxHashSlotNum={slots}",
                str(segment.path),
            )

    def _read(self, position: int, length: int) -> bytes:
        if self.segment.file_size is None:
            raise FormatError("segment file is missing (listed in the metadata)", str(self.segment.path))
        return read_range(self.segment.path, position, length)

    def query(self, topic: str, key: str, max_count: int, begin: int, end: int) -> list[IndexItem]:
        h = tiered_key_hash(topic, key)
        if h < 0:
            return []  # Integer.MIN_VALUE: a negative slot, the broker's read fails and finds nothing
        slot = self._read(INDEX_HEADER_SIZE + (h % self.slots) * INDEX_SLOT_SIZE, INDEX_SLOT_SIZE)
        if len(slot) < INDEX_SLOT_SIZE:
            return []
        position, length = _int(slot, 0), min(_int(slot, 4), COMPACT_INDEX_ITEM_SIZE * MAX_ITEMS_READ)
        if position <= 0 or length <= 0:
            return []
        data = self._read(position, length)
        if len(data) % COMPACT_INDEX_ITEM_SIZE:
            return []  # the broker logs the bad length and returns nothing
        found = []
        for at in range(0, len(data), COMPACT_INDEX_ITEM_SIZE):
            item = IndexItem(
                _int(data, at),
                _int(data, at + 4),
                _int(data, at + 8),
                _int(data, at + 12, 8),
                _int(data, at + 20),
                _int(data, at + 24) * 1000 + self.begin_timestamp,
            )
            if item.key_hash == h and begin <= item.store_time <= end and len(found) < max_count:
                found.append(item)
        return found


def index_files(tiered: TieredStore, slots: int = DEFAULT_MAX_HASH_SLOT_NUM) -> list[TieredIndexFile]:
    """The uploaded index files, in the order of their begin timestamps (IndexStoreService.timeStoreTable)."""
    path = queue_path(tiered.settings.broker, INDEX_TOPIC, 0)
    files = [TieredIndexFile(s, slots) for s in tiered.segments(SegmentType.INDEX, path)]
    return sorted(files, key=lambda f: f.begin_timestamp)


def query_messages(
    tiered: TieredStore,
    topic: str,
    key: str,
    max_count: int,
    begin: int,
    end: int,
    slots: int,
    problems: list[str] | None = None,
) -> list[Message]:
    """MessageStoreFetcherImpl.queryMessageAsync: the items of files whose begin timestamp is in [begin, end]
    (`timeStoreTable.subMap`), newest file first, at most `max_count` distinct (queueId, offset); items of
    another topic id dropped; each message read from its queue's tiered COMMIT_LOG. The broker collects the
    items in a hash map, so their order is not defined: these are sorted by queue id and offset. An index
    file or a message that cannot be read is skipped and said in `problems` (when given; raised otherwise)."""
    meta = tiered.metadata.topics.get(topic)
    if meta is None or begin > end:
        return []
    items: dict[tuple[int, int], IndexItem] = {}
    for segment in reversed(
        tiered.segments(SegmentType.INDEX, queue_path(tiered.settings.broker, INDEX_TOPIC, 0))
    ):
        if not begin <= segment.meta.begin_timestamp <= end:
            continue
        try:
            found = TieredIndexFile(segment, slots).query(topic, key, max_count, begin, end)
        except MqtoolError as exc:
            if problems is None:
                raise
            problems.append(str(exc))
            continue
        for item in found:
            if len(items) < max_count:
                items[(item.queue_id, item.offset)] = item
    messages = []
    for (queue_id, _offset), item in sorted(items.items()):
        if item.topic_id != meta.topic_id:
            continue
        queue = tiered.queue(topic, queue_id)
        if queue is None:
            continue
        try:
            messages.append(queue.message_at(item.offset, item.size))
        except MqtoolError as exc:
            if problems is None:
                raise
            problems.append(str(exc))
            continue
        if len(messages) >= max_count:
            break
    return messages
