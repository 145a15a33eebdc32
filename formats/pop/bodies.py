"""POP consumption's revive records: the bodies of `ck`, `ack` and `bAck` messages in the revive topic
(`rmq_sys_REVIVE_LOG_<cluster>`), as 5.x's PopCheckPoint, AckMsg and BatchAckMsg (store/pop/*.java).

The broker writes each body with fastjson's `JSON.toJSONString(obj)`: compact, keys in alphabetical
order of their JSON names, null fields left out, strings UTF-8 as they are (only quote, backslash and
control characters escaped). Besides its fields a checkpoint carries `reviveTime` (its getter: popTime +
invisibleTime), which the reader ignores. PopReviveService reads them back with `JSON.parseObject(body,
Class)`: missing keys stay 0 / null, unknown keys are ignored, AckMsg also takes its long names
(`ackOffset`, `startOffset`, `consumerGroup`, `topic`, `queueId`, `popTime`, `brokerName`;
`ackOffsetList`). Facts from the real 5.3.3 classes: tests/data/pop-bodies.json (oracle `pop-bodies`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from formats.config import fastjson
from formats.errors import FormatError

JAVA_INT = (-(2**31), 2**31 - 1)
JAVA_LONG = (-(2**63), 2**63 - 1)


def _java_byte(value: int) -> int:
    """`(byte) value`: fastjson narrows a number into a byte field."""
    return (value + 128) % 256 - 128


def _number(doc: dict[str, Any], names: tuple[str, ...], bounds: tuple[int, int], what: str) -> int:
    for name in names:
        if name in doc and doc[name] is not None:
            value = doc[name]
            if isinstance(value, bool) or not isinstance(value, int):
                raise FormatError(f"{what}: {name} is {value!r}, not an integer")
            if not bounds[0] <= value <= bounds[1]:
                raise FormatError(f"{what}: {name} {value} is out of the Java range")
            return value
    return 0


def _text(doc: dict[str, Any], names: tuple[str, ...], what: str) -> str | None:
    for name in names:
        if name in doc and doc[name] is not None:
            value = doc[name]
            if not isinstance(value, str):
                raise FormatError(f"{what}: {name} is {value!r}, not a string")
            return value
    return None


def _int_list(
    doc: dict[str, Any], names: tuple[str, ...], bounds: tuple[int, int], what: str
) -> list[int] | None:
    for name in names:
        if name in doc and doc[name] is not None:
            value = doc[name]
            if not isinstance(value, list | tuple):
                raise FormatError(f"{what}: {name} is {value!r}, not a list")
            out = []
            for item in value:
                if isinstance(item, bool) or not isinstance(item, int) or not bounds[0] <= item <= bounds[1]:
                    raise FormatError(f"{what}: {name} holds {item!r}, not a Java integer")
                out.append(item)
            return out
    return None


def _document(body: bytes, what: str) -> dict[str, Any]:
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(f"{what}: not UTF-8 at byte {exc.start}") from None
    doc = fastjson.parse(text)
    if not isinstance(doc, dict):
        raise FormatError(f"{what}: the body is not a JSON object")
    return doc


def _body(fields: dict[str, Any]) -> bytes:
    doc = {k: (tuple(v) if isinstance(v, list) else v) for k, v in sorted(fields.items()) if v is not None}
    return fastjson.dumps(doc, pretty=False).encode("utf-8")


@dataclass
class PopCheckPoint:
    """What a POP handed out from one queue: `num` messages from `start_offset` (at the offsets
    `queue_offset_diff` adds, or consecutive in the old form), invisible until pop_time + invisible_time;
    bit i of `bit_map` set when message i is acked."""

    start_offset: int = 0
    pop_time: int = 0
    invisible_time: int = 0
    bit_map: int = 0
    num: int = 0  # a Java byte
    queue_id: int = 0
    topic: str | None = None
    cid: str | None = None  # the consumer group
    revive_offset: int = 0
    queue_offset_diff: list[int] | None = None
    broker_name: str | None = None
    re_put_times: str | None = None

    @property
    def revive_time(self) -> int:
        return self.pop_time + self.invisible_time

    def parse_re_put_times(self) -> int:
        """`parseRePutTimes`: 0 when absent, Byte.MAX_VALUE when not an int."""
        if self.re_put_times is None:
            return 0
        from formats.message.commitlog import java_parse_int

        value = java_parse_int(self.re_put_times)
        return 127 if value is None else value

    def ack_offsets(self) -> list[int]:
        """`ackOffsetByIndex` for every index below `num`: the queue offsets handed out (a diff list shorter
        than `num` gives as many as it holds: Java's `get` fails at the first index beyond it)."""
        if not self.queue_offset_diff:
            return [self.start_offset + i for i in range(max(self.num, 0))]
        return [self.start_offset + d for d in self.queue_offset_diff[: max(self.num, 0)]]

    @classmethod
    def parse(cls, body: bytes) -> PopCheckPoint:
        what = "checkpoint body"
        doc = _document(body, what)
        return cls(
            start_offset=_number(doc, ("so",), JAVA_LONG, what),
            pop_time=_number(doc, ("pt",), JAVA_LONG, what),
            invisible_time=_number(doc, ("it",), JAVA_LONG, what),
            bit_map=_number(doc, ("bm",), JAVA_INT, what),
            num=_java_byte(_number(doc, ("n",), JAVA_INT, what)),
            queue_id=_number(doc, ("q",), JAVA_INT, what),
            topic=_text(doc, ("t",), what),
            cid=_text(doc, ("c",), what),
            revive_offset=_number(doc, ("ro",), JAVA_LONG, what),
            queue_offset_diff=_int_list(doc, ("d",), JAVA_INT, what),
            broker_name=_text(doc, ("bn",), what),
            re_put_times=_text(doc, ("rp",), what),
        )

    def to_body(self) -> bytes:
        """`JSON.toJSONString(ck)` as UTF-8: the body PopMessageProcessor.buildCkMsg stores."""
        return _body(
            {
                "so": self.start_offset,
                "pt": self.pop_time,
                "it": self.invisible_time,
                "bm": self.bit_map,
                "n": self.num,
                "q": self.queue_id,
                "t": self.topic,
                "c": self.cid,
                "ro": self.revive_offset,
                "d": self.queue_offset_diff,
                "bn": self.broker_name,
                "rp": self.re_put_times,
                "reviveTime": self.revive_time,
            }
        )


_ACK_NAMES = {
    "ack_offset": ("ao", "ackOffset"),
    "start_offset": ("so", "startOffset"),
    "consumer_group": ("c", "consumerGroup"),
    "topic": ("t", "topic"),
    "queue_id": ("q", "queueId"),
    "pop_time": ("pt", "popTime"),
    "broker_name": ("bn", "brokerName"),
}


@dataclass
class AckMsg:
    """One acked message (`ack`), or with `ack_offset_list` a BatchAckMsg (`bAck`)."""

    ack_offset: int = 0
    start_offset: int = 0
    consumer_group: str | None = None
    topic: str | None = None
    queue_id: int = 0
    pop_time: int = 0
    broker_name: str | None = None
    ack_offset_list: list[int] | None = field(default=None)  # BatchAckMsg only

    @property
    def batch(self) -> bool:
        return self.ack_offset_list is not None

    @classmethod
    def parse(cls, body: bytes, *, batch: bool = False) -> AckMsg:
        """`JSON.parseObject(body, AckMsg.class)` (or BatchAckMsg.class, whose list starts empty)."""
        what = "batch ack body" if batch else "ack body"
        doc = _document(body, what)
        n = _ACK_NAMES
        offsets = _int_list(doc, ("aol", "ackOffsetList"), JAVA_LONG, what) if batch else None
        return cls(
            ack_offset=_number(doc, n["ack_offset"], JAVA_LONG, what),
            start_offset=_number(doc, n["start_offset"], JAVA_LONG, what),
            consumer_group=_text(doc, n["consumer_group"], what),
            topic=_text(doc, n["topic"], what),
            queue_id=_number(doc, n["queue_id"], JAVA_INT, what),
            pop_time=_number(doc, n["pop_time"], JAVA_LONG, what),
            broker_name=_text(doc, n["broker_name"], what),
            ack_offset_list=(offsets if offsets is not None else []) if batch else None,
        )

    def to_body(self) -> bytes:
        """`JSON.toJSONString(ackMsg)` as UTF-8 (AckMessageProcessor, PopBufferMergeService)."""
        return _body(
            {
                "ao": self.ack_offset,
                "so": self.start_offset,
                "c": self.consumer_group,
                "t": self.topic,
                "q": self.queue_id,
                "pt": self.pop_time,
                "bn": self.broker_name,
                "aol": self.ack_offset_list,
            }
        )


__all__ = ["AckMsg", "PopCheckPoint"]
