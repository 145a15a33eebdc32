"""The body of an inner-batch record (BatchCQ topics): the client's encoded messages, counted and unwrapped.

A producer's batch to a BatchCQ topic is stored as one record whose body is `MessageDecoder.encodeMessages`
of the batch (`formats.structs.InnerBatchMessage`, back to back). The broker counts them as
`countInnerMsgNum` does (each message's first int is its size) into `INNER_NUM`; the consumer unwraps the
record as `MessageDecoder.decodeMessage(messageExt, list)`: message i keeps the record's topic, queue,
hosts, times, sysFlag and physical offset, takes queue offset base + i and its own flag, body and
properties (and WAIT from the record's).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, replace

from construct import ConstructError, StreamError

from formats.errors import FormatError
from formats.message.commitlog import Message
from formats.message.properties import PROPERTY_WAIT_STORE_MSG_OK, decode_properties, encode_properties
from formats.structs import INNER_BATCH_FLAG, NEED_UNWRAP_FLAG, InnerBatchMessage

_SIZE = struct.Struct(">i")


@dataclass(frozen=True, slots=True)
class InnerMessage:
    """One message of a batch body, as `MessageDecoder.decodeMessage(ByteBuffer)` reads it."""

    position: int
    total_size: int
    flag: int
    body_crc: int
    body: bytes
    properties_raw: bytes


def is_inner_batch(sys_flag: int) -> bool:
    """The record is an inner batch the consumer unwraps (INNER_BATCH and NEED_UNWRAP both set)."""
    return sys_flag & INNER_BATCH_FLAG != 0 and sys_flag & NEED_UNWRAP_FLAG != 0


def count_inner_messages(body: bytes) -> int | None:
    """`countInnerMsgNum`: step by each message's size field; None where the broker's walk would not end
    at the body's end (a size below 4 or past the end)."""
    position, count = 0, 0
    while position < len(body):
        if position + 4 > len(body):
            return None
        (size,) = _SIZE.unpack_from(body, position)
        if size < 4 or position + size > len(body):
            return None
        position += size
        count += 1
    return count


def decode_inner_messages(
    body: bytes, file: str | None = None, offset: int | None = None
) -> list[InnerMessage]:
    """`MessageDecoder.decodeMessages`: every message of a batch body (FormatError on a torn one)."""
    out = []
    position = 0
    while position < len(body):
        what = f"inner-batch body: message {len(out)}"
        try:
            p = InnerBatchMessage.parse(body[position:])
        except (ConstructError, StreamError) as exc:
            raise FormatError(f"{what} cannot be read: {exc}", file, offset) from exc
        if p.propertiesLength < 0 or p.bodyLength < 0:
            raise FormatError(f"{what} has a negative length", file, offset)
        read = 22 + len(p.body) + len(p.properties)
        out.append(InnerMessage(position, p.totalSize, p.flag, p.bodyCRC, p.body, p.properties))
        position += read  # the reader steps by what it read, not by the size field
    return out


def unwrap(record: Message) -> list[Message]:
    """The messages a consumer gets from `record`: its inner messages if it is an inner batch, else itself.

    Each inner message's properties also get WAIT: the unwrap sets it from the record's
    (`isWaitStoreMsgOK`: true unless the record's WAIT parses as false).
    """
    if not is_inner_batch(record.sys_flag):
        return [record]
    wait = record.properties.get(PROPERTY_WAIT_STORE_MSG_OK)
    wait_ok = "true" if wait is None or wait.lower() == "true" else "false"
    out = []
    for i, inner in enumerate(decode_inner_messages(record.body, offset=record.physical_offset)):
        properties = decode_properties(inner.properties_raw)
        properties[PROPERTY_WAIT_STORE_MSG_OK] = wait_ok
        out.append(
            replace(
                record,
                queue_offset=record.queue_offset + i,
                flag=inner.flag,
                body_crc=inner.body_crc,
                body=inner.body,
                properties_raw=encode_properties(properties),
            )
        )
    return out


__all__ = ["InnerMessage", "count_inner_messages", "decode_inner_messages", "is_inner_batch", "unwrap"]
