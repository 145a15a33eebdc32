"""struct twins of the CommitLog `MessageRecord` declaration: its fixed heads, and the record encoder.

`MessageExtEncoder` writes a record as one fixed-width head (whose width follows the host kinds in
SYSFLAG) then BODY, TOPIC and PROPERTIES; the walks only need the first fields. Each struct here is
registered (`formats.twins`) with the part of `structs.MessageRecord` it reads or writes.
"""

from __future__ import annotations

import struct
from functools import cache

from construct import Struct

from formats.message.commitlog import crc32_masked, message_length
from formats.structs import MAGIC_V1, MessageRecord
from formats.twins import struct_twin

Host = tuple[bytes, int]

_FIELDS = [s.name for s in MessageRecord.subcons]
_BODY = MessageRecord.subcons[_FIELDS.index("body")]


def message_prefix(count: int) -> Struct:
    """The first `count` fields of `MessageRecord` (up to SYSFLAG and BORNTIMESTAMP: no host yet)."""
    return Struct(*MessageRecord.subcons[:count])


def message_head(born_v6: bool, store_v6: bool) -> Struct:
    """`MessageRecord` up to and with BODYLENGTH, for one choice of host kinds (IPv4 or IPv6)."""
    parts = []
    for sub in MessageRecord.subcons[: _FIELDS.index("body")]:
        if sub.name in ("bornHost", "storeHost"):
            switch = sub.subcon
            v6 = born_v6 if sub.name == "bornHost" else store_v6
            host = next(iter(switch.cases.values())) if v6 else switch.default
            parts.append(sub.name / host)
        else:
            parts.append(sub)
    parts.append("bodyLength" / _BODY.subcon.lengthfield)
    return Struct(*parts)


# TOTALSIZE .. SYSFLAG (40 bytes): what dispatch reads first
MESSAGE_TO_SYSFLAG = struct_twin(
    "MessageRecord[TOTALSIZE..SYSFLAG]", message_prefix(8), struct.Struct(">iiiiiqqi")
)
# where SYSFLAG sits in a record (36): after TOTALSIZE, MAGICCODE, BODYCRC, QUEUEID, FLAG, QUEUEOFFSET and
# PHYSICALOFFSET
SYSFLAG_AT = message_prefix(_FIELDS.index("sysFlag")).sizeof()
# TOTALSIZE .. BORNTIMESTAMP (48 bytes): what the record check reads first
MESSAGE_TO_BORN = struct_twin(
    "MessageRecord[TOTALSIZE..BORNTIMESTAMP]", message_prefix(9), struct.Struct(">iiiiiqqiq")
)


@cache
def record_head(born_len: int, store_len: int) -> struct.Struct:
    """The record head up to BODYLENGTH for host addresses of these lengths (4 or 16 bytes)."""
    return struct.Struct(f">iiiiiqqiq{born_len}siq{store_len}siiqi")


for _born in (4, 16):
    for _store in (4, 16):
        struct_twin(
            f"MessageRecord head (born IPv{4 if _born == 4 else 6}, store IPv{4 if _store == 4 else 6})",
            message_head(_born == 16, _store == 16),
            record_head(_born, _store),
        )

_I16 = struct.Struct(">h")


def encode_record(
    *,
    topic: bytes,
    magic: int,
    body: bytes,
    properties: bytes,
    queue_id: int,
    flag: int,
    queue_offset: int,
    physical_offset: int,
    sys_flag: int,
    born_timestamp: int,
    born_host: Host,
    store_timestamp: int,
    store_host: Host,
    reconsume_times: int,
    prepared_transaction_offset: int,
    total_size: int | None = None,
) -> bytes:
    """The record bytes `MessageExtEncoder` writes: a struct fast path of
    `formats.message.commitlog.encode_message` (tested equal to it). `sys_flag` must already carry the host V6
    bits."""
    total = total_size or message_length(sys_flag, len(body), len(topic), len(properties), magic)
    head = record_head(len(born_host[0]), len(store_host[0])).pack(
        total,
        magic,
        crc32_masked(body),
        queue_id,
        flag,
        queue_offset,
        physical_offset,
        sys_flag,
        born_timestamp,
        born_host[0],
        born_host[1],
        store_timestamp,
        store_host[0],
        store_host[1],
        reconsume_times,
        prepared_transaction_offset,
        len(body),
    )
    topic_len = bytes((len(topic),)) if magic == MAGIC_V1 else _I16.pack(len(topic))
    return b"".join((head, body, topic_len, topic, _I16.pack(len(properties)), properties))


__all__ = [
    "MESSAGE_TO_BORN",
    "MESSAGE_TO_SYSFLAG",
    "encode_record",
    "message_head",
    "message_prefix",
    "record_head",
]
