"""config/tieredStoreMetadata.json: the tiered store's metadata (5.3.3 `DefaultMetadataStore`), read-only.

`DefaultMetadataStore` is a ConfigManager: `persist` writes `TieredMetadataSerializeWrapper` through fastjson
(pretty, `DisableCircularReferenceDetect`; `DefaultMetadataStore.java:73-92`) into
`<storePathRootDir>/config/tieredStoreMetadata.json` (`.bak` beside it). Properties: `topicSerialNumber`
(AtomicLong), `topicMetadataTable` topic -> TopicMetadata, `queueMetadataTable` topic -> {queueId:
QueueMetadata}, and three segment tables `commitLogFileSegmentTable`, `consumeQueueFileSegmentTable`,
`indexFileSegmentTable`: queue path ("broker/topic/queueId") -> {baseOffset: FileSegmentMetadata}. The broker
lists a queue's segments from these tables only (`FlatAppendFile.recover`): a segment missing here is not
read, whatever is on disk.

A FileSegmentMetadata `type` other than 0, 1, 2 is refused here: the broker's `FileSegmentType.valueOf`
would silently take it for COMMIT_LOG.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Self

from formats.config.base import ConfigValueError, _int, _int_key, _long, _object, _str, _str_key, _table
from formats.config.fastjson import Path
from formats.tiered import SegmentType

SEGMENT_TABLES = {
    "commitLogFileSegmentTable": SegmentType.COMMIT_LOG,
    "consumeQueueFileSegmentTable": SegmentType.CONSUME_QUEUE,
    "indexFileSegmentTable": SegmentType.INDEX,
}


def _opt_long(obj: dict[Any, Any], name: str, path: Path, default: int = 0) -> int:
    return default if obj.get(name) is None else _long(obj[name], (*path, name))


@dataclass(frozen=True)
class FileSegmentMetadata:
    """One segment: its queue path, type, base offset, committed size, status and times."""

    path: str
    type: SegmentType
    base_offset: int
    size: int
    status: int
    create_timestamp: int
    begin_timestamp: int
    end_timestamp: int
    seal_timestamp: int

    @classmethod
    def from_json(cls, value: Any, path: Path) -> Self:
        obj = _object(value, path)
        code = _int(obj.get("type", 0), (*path, "type"))
        if code not in SegmentType._value2member_map_:
            raise ConfigValueError(
                f"segment type {code} is none of 0, 1, 2 (COMMIT_LOG, CONSUME_QUEUE, INDEX)", path
            )
        return cls(
            path=_str(obj.get("path"), (*path, "path")),
            type=SegmentType(code),
            base_offset=_opt_long(obj, "baseOffset", path),
            size=_opt_long(obj, "size", path),
            status=_int(obj.get("status", 0), (*path, "status")),
            create_timestamp=_opt_long(obj, "createTimestamp", path),
            begin_timestamp=_opt_long(obj, "beginTimestamp", path),
            end_timestamp=_opt_long(obj, "endTimestamp", path),
            seal_timestamp=_opt_long(obj, "sealTimestamp", path),
        )


@dataclass(frozen=True)
class QueueMetadata:
    topic: str
    broker_name: str
    queue_id: int
    min_offset: int
    max_offset: int
    update_timestamp: int

    @classmethod
    def from_json(cls, value: Any, path: Path) -> Self:
        obj = _object(value, path)
        queue = _object(obj.get("queue"), (*path, "queue"))
        return cls(
            topic=_str(queue.get("topic"), (*path, "queue", "topic")),
            broker_name=_str(queue.get("brokerName"), (*path, "queue", "brokerName")),
            queue_id=_int(queue.get("queueId"), (*path, "queue", "queueId")),
            min_offset=_opt_long(obj, "minOffset", path),
            max_offset=_opt_long(obj, "maxOffset", path),
            update_timestamp=_opt_long(obj, "updateTimestamp", path),
        )


@dataclass(frozen=True)
class TopicMetadata:
    topic_id: int
    topic: str
    status: int
    reserve_time: int
    update_timestamp: int

    @classmethod
    def from_json(cls, value: Any, path: Path) -> Self:
        obj = _object(value, path)
        return cls(
            topic_id=_opt_long(obj, "topicId", path),
            topic=_str(obj.get("topic"), (*path, "topic")),
            status=_int(obj.get("status", 0), (*path, "status")),
            reserve_time=_opt_long(obj, "reserveTime", path),
            update_timestamp=_opt_long(obj, "updateTimestamp", path),
        )


@dataclass
class TieredMetadata:
    """The whole file. `segments[(type, queue path)]` lists that file's segments sorted by base offset, as
    `FlatAppendFile.recover` sorts them (FileSegment.compareTo: by base offset)."""

    topic_serial_number: int = -1
    topics: dict[str, TopicMetadata] = field(default_factory=dict)
    queues: dict[str, dict[int, QueueMetadata]] = field(default_factory=dict)
    segments: dict[tuple[SegmentType, str], list[FileSegmentMetadata]] = field(default_factory=dict)

    @classmethod
    def from_json(cls, value: Any) -> Self:
        obj = _object(value, ())
        topics = {
            _str_key(k): TopicMetadata.from_json(v, ("topicMetadataTable", k))
            for k, v in _table(obj, "topicMetadataTable", ()).items()
        }
        queues: dict[str, dict[int, QueueMetadata]] = {}
        for topic, table in _table(obj, "queueMetadataTable", ()).items():
            where: Path = ("queueMetadataTable", topic)
            queues[_str_key(topic)] = {
                _int_key(q, where): QueueMetadata.from_json(v, (*where, q))
                for q, v in _object(table, where).items()
            }
        segments: dict[tuple[SegmentType, str], list[FileSegmentMetadata]] = {}
        for name, kind in SEGMENT_TABLES.items():
            for queue_path, table in _table(obj, name, ()).items():
                where = (name, queue_path)
                found = []
                for base, v in _object(table, where).items():
                    segment = FileSegmentMetadata.from_json(v, (*where, base))
                    if segment.path != _str_key(queue_path):
                        raise ConfigValueError(
                            f"segment path {segment.path!r} is not its table's {_str_key(queue_path)!r} "
                            "(the broker would read another directory)",
                            (*where, base),
                        )
                    if segment.type != kind or segment.base_offset != _int_key(base, where, bits=64):
                        raise ConfigValueError(
                            f"segment says type {segment.type.name} base offset {segment.base_offset}: "
                            f"not the table's ({kind.name}, key {base})",
                            (*where, base),
                        )
                    found.append(segment)
                segments[(kind, _str_key(queue_path))] = sorted(found, key=lambda s: s.base_offset)
        serial = obj.get("topicSerialNumber")
        return cls(
            topic_serial_number=-1 if serial is None else _long(serial, ("topicSerialNumber",)),
            topics=topics,
            queues=queues,
            segments=segments,
        )

    def queue_segments(self, kind: SegmentType, queue_path: str) -> list[FileSegmentMetadata]:
        return self.segments.get((kind, queue_path), [])
