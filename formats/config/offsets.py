"""Consumer and delay progress files: consumerOffset.json (`ConsumerOffsetManager`) and delayOffset.json
(`ScheduleMessageService`), as typed models (see `formats.config.codec`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar, Self

from formats.config.base import (
    TOPIC_GROUP_SEPARATOR,
    DataVersion,
    _data_version,
    _dv_json,
    _int_long_map,
    _long,
    _object,
    _str_key,
    _table,
    _unknown,
    bean,
    java_hash_order,
    java_split_topic_group,
)
from formats.config.fastjson import Path
from formats.names import LMQ_PREFIX, LMQ_QUEUE_ID

# consumerOffset.json / lmqConsumerOffset.json


def split_offset_key(key: str) -> tuple[str, str] | None:
    """`topic@group` split at the first '@'; a broadcast key keeps its suffix in the group
    (`t@g@broadcast` -> `("t", "g@broadcast")`). None for a key without '@'."""
    topic, sep, group = key.partition(TOPIC_GROUP_SEPARATOR)
    return (topic, group) if sep else None


def offset_key(topic: str, group: str) -> str:
    return topic + TOPIC_GROUP_SEPARATOR + group


def _offset_tables(value: Any, path: Path) -> dict[str, dict[int, int]]:
    table = _object(value, path)
    return {_str_key(k): _int_long_map(v, (*path, k)) for k, v in table.items()}


@dataclass
class ConsumerOffsetTable:
    """ConsumerOffsetManager: `offsetTable` "topic@group" -> {queueId: next offset to consume}.

    `groupTopicMap` is derived (the 5.x getter) and regenerated on write when `with_group_topic_map`
    (set when the file had the 5.x shape: a dataVersion or a groupTopicMap). `pullOffsetTable` and
    `resetOffsetTable` are never written by 4.9.8/5.3.3 but are kept if a file has them.
    """

    offset_table: dict[str, dict[int, int]] = field(default_factory=dict)
    data_version: DataVersion | None = None
    with_group_topic_map: bool = False
    pull_offset_table: dict[str, dict[int, int]] | None = None
    reset_offset_table: dict[str, dict[int, int]] | None = None
    extra: dict[Any, Any] = field(default_factory=dict)

    KNOWN: ClassVar[tuple[str, ...]] = (
        "offsetTable",
        "dataVersion",
        "groupTopicMap",
        "pullOffsetTable",
        "resetOffsetTable",
    )

    @classmethod
    def from_json(cls, value: Any) -> Self:
        obj = _object(value, ())
        optional = {
            name: None if obj.get(name) is None else _offset_tables(obj[name], (name,))
            for name in ("pullOffsetTable", "resetOffsetTable")
        }
        return cls(
            offset_table=_offset_tables(_table(obj, "offsetTable", ()), ("offsetTable",)),
            data_version=_data_version(obj, (), null_fails=False),
            with_group_topic_map="dataVersion" in obj or "groupTopicMap" in obj,
            pull_offset_table=optional["pullOffsetTable"],
            reset_offset_table=optional["resetOffsetTable"],
            extra=_unknown(obj, cls.KNOWN),
        )

    def to_json(self) -> dict[str, Any]:
        return bean(
            {
                "dataVersion": _dv_json(self.data_version),
                "groupTopicMap": self.group_topic_map() if self.with_group_topic_map else None,
                "offsetTable": {k: dict(v) for k, v in self.offset_table.items()},
                "pullOffsetTable": self.pull_offset_table,
                "resetOffsetTable": self.reset_offset_table,
            },
            self.extra,
        )

    def group_topic_map(self) -> dict[str, tuple[str, ...]]:
        """`ConsumerOffsetManager.getGroupTopicMap()`: HashMap(128) group -> HashSet(8) of topics, keys
        with exactly two '@'-separated parts only, in the Java iteration order (Sets are written inline)."""
        topics_by_group: dict[str, list[str]] = {}
        for key in self.offset_table:
            parts = java_split_topic_group(key)
            if len(parts) == 2:
                topics_by_group.setdefault(parts[1], []).append(parts[0])
        return {
            group: tuple(java_hash_order(topics_by_group[group], 8))
            for group in java_hash_order(topics_by_group, 128)
        }

    def entries(self) -> Iterator[tuple[str, str, int, int]]:
        """(topic, group, queueId, offset) of every key that has an '@'."""
        for key, queues in self.offset_table.items():
            split = split_offset_key(key)
            if split is not None:
                for queue_id, offset in queues.items():
                    yield split[0], split[1], queue_id, offset

    def get(self, topic: str, group: str) -> dict[int, int] | None:
        return self.offset_table.get(offset_key(topic, group))

    def set_offset(self, topic: str, group: str, queue_id: int, offset: int) -> None:
        """Commit one offset as `commitOffset` does, creating the `topic@group` entry if needed."""
        self.offset_table.setdefault(offset_key(topic, group), {})[queue_id] = offset

    def bump_version(self, now_ms: int) -> None:
        if self.data_version is not None:
            self.data_version = self.data_version.next_version(now_ms)


@dataclass
class LmqConsumerOffsetTable(ConsumerOffsetTable):
    """lmqConsumerOffset.json (`LmqConsumerOffsetManager`, the manager of a broker with enableLmq): the
    `offsetTable` of every other group, plus `lmqOffsetTable` "topic@group" -> offset for groups named
    `%LMQ%...` (their one queue, id 0). `get`/`set_offset`/`entries` branch on the group as its
    queryOffset/commitOffset do (`MixAll.isLmq(group)`)."""

    lmq_offset_table: dict[str, int] = field(default_factory=dict)

    KNOWN: ClassVar[tuple[str, ...]] = (*ConsumerOffsetTable.KNOWN, "lmqOffsetTable")

    @classmethod
    def from_json(cls, value: Any) -> Self:
        table = super().from_json(value)
        obj = _object(value, ())
        lmq = _table(obj, "lmqOffsetTable", ())
        table.lmq_offset_table = {_str_key(k): _long(v, ("lmqOffsetTable", k)) for k, v in lmq.items()}
        table.extra.pop("lmqOffsetTable", None)
        return table

    def to_json(self) -> dict[str, Any]:
        out = super().to_json()
        out["lmqOffsetTable"] = dict(self.lmq_offset_table)
        return {name: out[name] for name in sorted(out, key=str)}

    def entries(self) -> Iterator[tuple[str, str, int, int]]:
        yield from super().entries()
        for key, offset in self.lmq_offset_table.items():
            split = split_offset_key(key)
            if split is not None:
                yield split[0], split[1], LMQ_QUEUE_ID, offset

    def get(self, topic: str, group: str) -> dict[int, int] | None:
        if not group.startswith(LMQ_PREFIX):
            return super().get(topic, group)
        offset = self.lmq_offset_table.get(offset_key(topic, group))
        return None if offset is None else {LMQ_QUEUE_ID: offset}

    def set_offset(self, topic: str, group: str, queue_id: int, offset: int) -> None:
        if not group.startswith(LMQ_PREFIX):
            super().set_offset(topic, group, queue_id, offset)
        else:  # commitOffset: the queue id is not part of the key
            self.lmq_offset_table[offset_key(topic, group)] = offset


# ---------------------------------------------------------------------------------------------------
# delayOffset.json


@dataclass
class DelayOffsetTable:
    """ScheduleMessageService: delay level (1-based) -> next offset of SCHEDULE_TOPIC_XXXX queue level-1."""

    offset_table: dict[int, int] = field(default_factory=dict)
    data_version: DataVersion | None = None
    extra: dict[Any, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, value: Any) -> Self:
        obj = _object(value, ())
        return cls(
            offset_table=_int_long_map(_table(obj, "offsetTable", ()), ("offsetTable",)),
            data_version=_data_version(obj, (), null_fails=False),
            extra=_unknown(obj, ("offsetTable", "dataVersion")),
        )

    def to_json(self) -> dict[str, Any]:
        return bean(
            {"dataVersion": _dv_json(self.data_version), "offsetTable": dict(self.offset_table)}, self.extra
        )

    def bump_version(self, now_ms: int) -> None:
        if self.data_version is not None:
            self.data_version = self.data_version.next_version(now_ms)
