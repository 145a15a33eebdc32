"""A tiered tree and its metadata read as the 5.3.3 plugin reads them at start (`FlatFileStore.load`).

The queues are the metadata's (`FlatFileStore.recover`: every topic of `topicMetadataTable`, every queue
of its `queueMetadataTable` entry); a queue's COMMIT_LOG and CONSUME_QUEUE segments are the metadata's
segment entries under `<brokerName>/<topic>/<queueId>`, sorted by base offset (`FlatAppendFile.recover`),
each with the committed size the metadata holds, except the last, which takes its file's size
(`recoverFileSize`, `FlatAppendFile.java:73-87`; the POSIX provider's size of a missing file is 0). Files on
disk that the metadata does not list are not read (the broker does not see them either).

Ranges (`FlatMessageFile.java:221-235`): the tiered queue holds [getConsumeQueueMinOffset,
getConsumeQueueCommitOffset): the min is the larger of the first CQ segment's base / 20 and the QUEUEOFFSET
of the message at the start of the COMMIT_LOG (`FlatCommitLogFile.getMinOffsetFromFile`, -1 when the log
holds fewer than 28 bytes); the max is the CQ's commit offset / 20.
Reading (`FlatMessageFile.getMessageAsync`): the 20-byte unit at queueOffset*20 of CONSUME_QUEUE, then
`size` bytes at its offset of COMMIT_LOG, from the segment holding that offset and, when they run past its
commit offset, the next one (`FlatAppendFile.readAsync`, `FlatAppendFile.java:209-234`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from formats.config.tiered import FileSegmentMetadata, TieredMetadata
from formats.consumequeue import CqUnit, decode_unit
from formats.errors import FormatError
from formats.message.commitlog import BadRecord, Message, decode_record
from formats.tiered import (
    METADATA_FILE,
    QUEUE_OFFSET_POSITION,
    STORE_TIMESTAMP_POSITION,
    TIERED_CQ_UNIT_SIZE,
    SegmentType,
    queue_path,
    segment_file_name,
)
from store.config.configfile import ConfigFile, LoadedConfig
from store.io.filereads import read_range
from store.tiered.settings import TieredSettings

GET_OFFSET_ERROR = -1  # FlatCommitLogFile.GET_OFFSET_ERROR
MAX_READ = 1 << 26  # a message or a unit read is at most this large (a size past it is damage, not data)


@dataclass(frozen=True)
class Segment:
    """One segment file: its metadata entry, its file, and the commit position the broker starts with."""

    meta: FileSegmentMetadata
    path: Path
    file_size: int | None  # None: no such file
    commit_position: int

    @property
    def base_offset(self) -> int:
        return self.meta.base_offset

    @property
    def commit_offset(self) -> int:
        return self.meta.base_offset + self.commit_position


class TieredAppendFile:
    """FlatAppendFile: the segments of one kind of one queue, in base-offset order."""

    def __init__(self, kind: SegmentType, segments: list[Segment], listed_in: Path) -> None:
        self.kind = kind
        self.segments = segments
        self.listed_in = listed_in  # the metadata file: what errors name when it lists no segment

    @property
    def min_offset(self) -> int:
        return self.segments[0].base_offset if self.segments else 0

    @property
    def commit_offset(self) -> int:
        return self.segments[-1].commit_offset if self.segments else 0

    def segment_at(self, offset: int) -> Segment | None:
        """The segment `readAsync` reads `offset` from: the last whose base offset is not above it."""
        for segment in reversed(self.segments):
            if segment.base_offset <= offset:
                return segment
        return None

    def where(self, offset: int) -> tuple[str, int | None]:
        """(file, position) naming `offset` in errors: its segment file, else the first one."""
        segment = self.segment_at(offset) or (self.segments[0] if self.segments else None)
        if segment is None:
            return str(self.listed_in), None
        return str(segment.path), offset - segment.base_offset

    def read(self, offset: int, length: int) -> bytes:
        """`length` bytes at `offset`, across at most two segments as `readAsync` reads them."""
        if length < 0 or length > MAX_READ:
            raise FormatError(
                f"{self.kind.name} read of {length} bytes at offset {offset}", *self.where(offset)
            )
        first = self.segment_at(offset)
        if first is None:
            file, _ = self.where(offset)
            if not self.segments:
                raise FormatError(
                    f"{self.kind.name} offset {offset}: the metadata lists no {self.kind.name} segment of "
                    "this queue",
                    file,
                )
            raise FormatError(
                f"{self.kind.name} offset {offset} is below the first segment ({self.min_offset})", file
            )
        index = self.segments.index(first)
        second = self.segments[index + 1] if index + 1 < len(self.segments) else None
        if second is None or offset + length <= first.commit_offset:
            return self._read(first, offset - first.base_offset, length)
        head = first.commit_offset - offset
        return self._read(first, offset - first.base_offset, head) + self._read(second, 0, length - head)

    @staticmethod
    def _read(segment: Segment, position: int, length: int) -> bytes:
        if segment.file_size is None:
            raise FormatError("segment file is missing (listed in the metadata)", str(segment.path))
        data = read_range(segment.path, position, length) if length > 0 else b""
        if len(data) != length:
            raise FormatError(
                f"{length} bytes at {position} asked, the file holds {segment.file_size}",
                str(segment.path),
                position,
            )
        return data


class TieredQueue:
    """FlatMessageFile of topic/queueId: its tiered COMMIT_LOG and CONSUME_QUEUE."""

    def __init__(
        self, topic: str, queue_id: int, commit_log: TieredAppendFile, consume_queue: TieredAppendFile
    ):
        self.topic = topic
        self.queue_id = queue_id
        self.commit_log = commit_log
        self.consume_queue = consume_queue

    @cached_property
    def first_message_offset(self) -> int:
        """FlatCommitLogFile.getMinOffsetFromFile: QUEUEOFFSET of the message at the log's min offset."""
        length = QUEUE_OFFSET_POSITION + 8
        log = self.commit_log
        if not log.segments or log.commit_offset - log.min_offset < length:
            return GET_OFFSET_ERROR
        head = log.read(log.min_offset, length)
        return int.from_bytes(head[QUEUE_OFFSET_POSITION:length], "big", signed=True)

    @property
    def min_offset(self) -> int:
        """getConsumeQueueMinOffset."""
        return max(self.consume_queue.min_offset // TIERED_CQ_UNIT_SIZE, self.first_message_offset)

    @property
    def max_offset(self) -> int:
        """getConsumeQueueCommitOffset: the next queue offset the tiered CQ would hold."""
        return self.consume_queue.commit_offset // TIERED_CQ_UNIT_SIZE

    def message_at(self, offset: int, size: int, check_crc: bool = True) -> Message:
        """The message of `size` bytes at `offset` of the tiered COMMIT_LOG (getCommitLogAsync)."""
        data = self.commit_log.read(offset, size)
        file, position = self.commit_log.where(offset)
        record = decode_record(data, 0, offset, check_crc=check_crc, file=file)
        if isinstance(record, BadRecord):
            raise record.to_error(file, position)
        if not isinstance(record, Message):
            raise FormatError(f"no message at tiered COMMIT_LOG offset {offset}", file, position)
        return record

    def store_time(self, queue_offset: int) -> int:
        """STORETIMESTAMP of the message at `queue_offset` (MessageFormatUtil.getStoreTimeStamp)."""
        unit = self.unit(queue_offset)
        head = self.commit_log.read(unit.phy_offset, STORE_TIMESTAMP_POSITION + 8)
        return int.from_bytes(head[STORE_TIMESTAMP_POSITION:], "big", signed=True)

    def offset_by_time(self, timestamp: int, boundary: str = "lower") -> int:
        """FlatMessageFile.getQueueOffsetByTimeAsync (`FlatMessageFile.java:280-355`): the first queue offset
        stored at or after `timestamp` (`upper`: the last one stored at it, when some are); past the last
        message the commit offset, before the first the min offset. The CQ segment is picked by the
        segments' begin/end timestamps from the metadata, then searched by each message's store time."""
        lo, last = self.min_offset, self.max_offset - 1
        if last == -1 or last < lo:
            return lo
        if self.store_time(last) < timestamp:
            return last + 1
        if self.store_time(lo) > timestamp:
            return lo
        segments = self.consume_queue.segments
        low, high = 0, len(segments) - 1
        mid = low + (high - low) // 2
        while low <= high:
            meta = segments[mid].meta
            if meta.begin_timestamp <= timestamp <= meta.end_timestamp:
                break
            if timestamp < meta.begin_timestamp:
                high = mid - 1
            else:
                low = mid + 1
            mid = low + (high - low) // 2
        if mid >= len(segments):  # the broker's list.get(mid) throws here
            raise FormatError(
                f"time {timestamp}: after every tiered CONSUME_QUEUE segment's end timestamp, though not "
                "after the last message's store time: the broker's search fails (IndexOutOfBoundsException)",
                str(segments[-1].path),
            )
        target = segments[mid]
        first = target.base_offset // TIERED_CQ_UNIT_SIZE
        end = target.commit_offset // TIERED_CQ_UNIT_SIZE - 1
        while first < end:
            middle = first + (end - first) // 2
            if self.store_time(middle) < timestamp:
                first = middle + 1
            else:
                end = middle
        offset = first
        if boundary == "upper":
            while offset + 1 <= last and self.store_time(offset + 1) == timestamp:
                offset += 1
        return offset

    def unit(self, queue_offset: int) -> CqUnit:
        data = self.consume_queue.read(queue_offset * TIERED_CQ_UNIT_SIZE, TIERED_CQ_UNIT_SIZE)
        return decode_unit(data)

    def message(self, queue_offset: int, check_crc: bool = True) -> Message:
        """The message a consumer gets at `queue_offset` from the tiered store. Its PHYSICALOFFSET is its
        offset in the tiered COMMIT_LOG (rewritten on upload, `CommitLogInputStream`), so its offsetMsgId is
        not the one it had locally; a field other than the unit's offset is reported in `problems`."""
        unit = self.unit(queue_offset)
        record = self.message_at(unit.phy_offset, unit.size, check_crc)
        if record.queue_offset != queue_offset:
            file, position = self.commit_log.where(unit.phy_offset)
            raise FormatError(
                f"queue offset {queue_offset}: the message there says QUEUEOFFSET {record.queue_offset}",
                file,
                position,
            )
        return record


class TieredStore:
    """FlatFileStore: the metadata (config/tieredStoreMetadata.json, .bak as ConfigManager.load) and the
    queues it lists, with their segments under the settings' tree."""

    def __init__(self, settings: TieredSettings, store_root: Path) -> None:
        self.settings = settings
        self.metadata_file = ConfigFile(store_root, METADATA_FILE, TieredMetadata)

    @cached_property
    def loaded(self) -> LoadedConfig:
        return self.metadata_file.load()

    @property
    def metadata(self) -> TieredMetadata:
        return self.loaded.model

    def queues(self) -> list[tuple[str, int]]:
        """(topic, queueId) of every flat file the plugin recovers, sorted."""
        meta = self.metadata
        return sorted((topic, q) for topic in meta.topics for q in meta.queues.get(topic, {}))

    def segments(self, kind: SegmentType, path: str) -> list[Segment]:
        metas = self.metadata.queue_segments(kind, path)
        out = []
        for i, m in enumerate(metas):
            file = self.settings.cluster_dir / m.path / kind.name / segment_file_name(m.base_offset)
            size = file.stat().st_size if file.is_file() else None
            commit = m.size
            if i == len(metas) - 1 and kind != SegmentType.INDEX:
                commit = size or 0  # recoverFileSize: the last segment's size is its file's
            out.append(Segment(m, file, size, commit))
        return out

    def queue(self, topic: str, queue_id: int) -> TieredQueue | None:
        """The flat file of topic/queueId; None when the plugin has none (no such queue in the metadata)."""
        if queue_id not in self.metadata.queues.get(topic, {}) or topic not in self.metadata.topics:
            return None
        path = queue_path(self.settings.broker, topic, queue_id)
        return TieredQueue(
            topic,
            queue_id,
            *(
                TieredAppendFile(kind, self.segments(kind, path), self.metadata_file.path)
                for kind in (SegmentType.COMMIT_LOG, SegmentType.CONSUME_QUEUE)
            ),
        )
