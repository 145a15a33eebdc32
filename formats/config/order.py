"""consumerOrderInfo.json (`ConsumerOrderInfoManager`, 5.x): what orderly POP consumers hold, per queue.

An orderly POP writes no checkpoint into the revive topic. The broker keeps one `OrderInfo` per
"topic@group" and queue instead: the pop time, the invisible time, the popped queue offsets (the first
one, then each later one as a difference from it), a bit per offset set by its ack (`commitAndNext`),
per-offset visible times that `changeInvisibleTime` moved, and the attempt id of the consumer that holds
the queue. Properties are fastjson's short names (`@JSONField`): `a` attemptId, `cm` commitOffsetBit,
`i` invisibleTime, `l` lastConsumeTimestamp, `o` offsetList, `oc` offsetConsumedCount,
`ot` offsetNextVisibleTime; `popTime` keeps its name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Self

from formats.config.base import (
    TOPIC_GROUP_SEPARATOR,
    ConfigValueError,
    _int,
    _int_key,
    _long,
    _object,
    _str,
    _str_key,
    _table,
    _unknown,
    bean,
)
from formats.config.fastjson import Path

LONG_BITS = 64  # commitOffsetBit is a Java long: `1L << i` wraps past 63


def _long_map(value: Any, path: Path, check: Any) -> dict[int, int]:
    return {_int_key(k, path, bits=64): check(v, (*path, k)) for k, v in _object(value, path).items()}


@dataclass
class OrderInfo:
    """`ConsumerOrderInfoManager.OrderInfo`: one orderly pop of one queue and the acks that followed."""

    pop_time: int = 0
    invisible_time: int | None = None
    offset_list: list[int] | None = None
    offset_next_visible_time: dict[int, int] | None = None
    offset_consumed_count: dict[int, int] | None = None
    last_consume_timestamp: int = 0
    commit_offset_bit: int = 0
    attempt_id: str | None = None
    extra: dict[Any, Any] = field(default_factory=dict)

    KNOWN: ClassVar[tuple[str, ...]] = ("popTime", "i", "o", "ot", "oc", "l", "cm", "a")

    @classmethod
    def from_json(cls, value: Any, path: Path) -> Self:
        obj = _object(value, path)

        def get(name: str, check: Any, default: Any = None) -> Any:
            return default if obj.get(name) is None else check(obj[name], (*path, name))

        def offsets(value: Any, at: Path) -> list[int]:
            if not isinstance(value, list):
                raise ConfigValueError("expected an array", at)
            return [_long(v, (*at, i)) for i, v in enumerate(value)]

        return cls(
            pop_time=get("popTime", _long, 0),
            invisible_time=get("i", _long),
            offset_list=get("o", offsets),
            offset_next_visible_time=get("ot", lambda v, p: _long_map(v, p, _long)),
            offset_consumed_count=get("oc", lambda v, p: _long_map(v, p, _int)),
            last_consume_timestamp=get("l", _long, 0),
            commit_offset_bit=get("cm", _long, 0),
            attempt_id=get("a", _str),
            extra=_unknown(obj, cls.KNOWN),
        )

    def to_json(self) -> dict[str, Any]:
        return bean(
            {
                "a": self.attempt_id,
                "cm": self.commit_offset_bit,
                "i": self.invisible_time,
                "l": self.last_consume_timestamp,
                "o": self.offset_list,
                "oc": self.offset_consumed_count,
                "ot": self.offset_next_visible_time,
                "popTime": self.pop_time,
            },
            self.extra,
        )

    def queue_offsets(self) -> list[int]:
        """`getQueueOffset(i)` for every i: the first offset, then first + each difference."""
        o = self.offset_list or []
        return [o[0] if i == 0 else o[0] + d for i, d in enumerate(o)]

    def is_acked(self, index: int) -> bool:
        """`!isNotAck(i)`: Java's `1L << i` shifts by i mod 64."""
        return (self.commit_offset_bit >> (index % LONG_BITS)) & 1 == 1

    def next_visible_time(self, queue_offset: int) -> int | None:
        """When an unacked offset may be popped again (`needBlock`): its own visible time if
        changeInvisibleTime set one, else popTime + invisibleTime; None without an invisible time."""
        moved = (self.offset_next_visible_time or {}).get(queue_offset)
        if moved is not None:
            return moved
        if self.invisible_time is None or self.invisible_time <= 0:
            return None
        return self.pop_time + self.invisible_time

    def next_offset(self) -> int | None:
        """`getNextOffset()`: the first unacked offset, or the last + 1 when all are acked."""
        offsets = self.queue_offsets()
        if not offsets:
            return None
        for i, offset in enumerate(offsets):
            if not self.is_acked(i):
                return offset
        return offsets[-1] + 1


@dataclass
class ConsumerOrderInfoTable:
    """ConsumerOrderInfoManager's file: "topic@group" -> queueId -> OrderInfo."""

    table: dict[str, dict[int, OrderInfo]] = field(default_factory=dict)
    extra: dict[Any, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, value: Any) -> Self:
        obj = _object(value, ())
        path: Path = ("table",)
        return cls(
            table={
                _str_key(key): {
                    _int_key(qid, (*path, key)): OrderInfo.from_json(info, (*path, key, qid))
                    for qid, info in _object(queues, (*path, key)).items()
                }
                for key, queues in _table(obj, "table", ()).items()
            },
            extra=_unknown(obj, ("table",)),
        )

    def to_json(self) -> dict[str, Any]:
        table = {k: {qid: info.to_json() for qid, info in queues.items()} for k, queues in self.table.items()}
        return bean({"table": table}, self.extra)

    def entries(self) -> list[tuple[str, str, int, OrderInfo]]:
        """(topic, group, queueId, info) of every key `topic@group` (split at the first '@')."""
        rows = []
        for key, queues in self.table.items():
            topic, sep, group = key.partition(TOPIC_GROUP_SEPARATOR)
            if sep:
                rows.extend((topic, group, qid, info) for qid, info in queues.items())
        return rows


__all__ = ["ConsumerOrderInfoTable", "OrderInfo"]
