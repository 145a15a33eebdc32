"""The broker's record check (`CommitLog.checkMessageAndReturnSize`) with plain struct
reads: the fast twin of `formats.message.commitlog.decode_record`, for walks that only need where the valid
data ends and a few fixed fields (the CommitLog's recovery walk, `info`, store times).

It accepts and rejects exactly the records `decode_record` does (a hypothesis test corrupts real stores
and compares the two); it builds no Message and explains no rejection - decode the one stopping record
with `decode_record` for that.
"""

from __future__ import annotations

import struct
import zlib

from formats.java.hash import to_int32
from formats.message.commitlog import RECORD_PRELUDE, java_parse_int
from formats.message.properties import PROPERTY_DELAY_TIME_LEVEL, decode_properties
from formats.message.recordfast import MESSAGE_TO_BORN
from formats.names import SCHEDULE_TOPIC
from formats.structs import BLANK_MAGIC, BORNHOST_V6_FLAG, MAGIC_V1, MAGIC_V2, STOREHOSTADDRESS_V6_FLAG

# the registered twins under short local names: the hot loop below reads them per record
_PRELUDE = RECORD_PRELUDE
_FIXED = MESSAGE_TO_BORN
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_SCHEDULE_TOPIC = SCHEDULE_TOPIC.encode()

# check_record's fields for an accepted record
Fields = tuple[int, int, int, int, int, int, bytes]


def check_record(buf, n: int, pos: int, check_crc: bool, accept_v2: bool) -> tuple[str, int, Fields | None]:
    """The broker's check (`CommitLog.checkMessageAndReturnSize`) on the record at buf[pos:], with
    struct reads. Returns (status, TOTALSIZE, fields) with status ok / blank / end / bad_magic / truncated /
    size_mismatch / crc_mismatch / bad_property; fields = (queueId, queueOffset, phys, sysFlag, born,
    store, topic bytes) for ok."""
    rem = n - pos
    if rem < 8:
        return ("end" if not any(bytes(buf[pos:n])) else "truncated"), 0, None
    total, magic = _PRELUDE.unpack_from(buf, pos)
    if rem - 4 < to_int32(total - 4):
        return "truncated", total, None
    if magic == MAGIC_V1:
        tls = 1
    elif magic == MAGIC_V2 and accept_v2:
        tls = 2
    elif magic == BLANK_MAGIC:
        return "blank", total, None
    elif magic == 0 and total == 0:
        return "end", 0, None
    else:
        return "bad_magic", total, None
    if total < 0:
        return "size_mismatch", total, None
    if pos + 48 > n:
        return "truncated", total, None
    _, _, body_crc, queue_id, _, queue_offset, phys, sys_flag, born = _FIXED.unpack_from(buf, pos)
    bl = 20 if sys_flag & BORNHOST_V6_FLAG else 8
    sl = 20 if sys_flag & STOREHOSTADDRESS_V6_FLAG else 8
    if bl > total or sl > total:
        return "size_mismatch", total, None
    p = pos + 48 + bl + 8 + sl + 16
    if p > n:
        return "truncated", total, None
    store_ts = _I64.unpack_from(buf, pos + 48 + bl)[0]
    body_len = _I32.unpack_from(buf, p - 4)[0]
    if body_len > 0:
        if body_len > total:
            return "size_mismatch", total, None
        if p + body_len > n:
            return "truncated", total, None
        if check_crc and (zlib.crc32(buf[p : p + body_len]) & 0x7FFFFFFF) != body_crc:
            return "crc_mismatch", total, None
        p += body_len
    if p + tls > n:
        return "truncated", total, None
    topic_len = struct.unpack_from(">b" if tls == 1 else ">h", buf, p)[0]
    p += tls
    if topic_len < 0 or topic_len > total:
        return "size_mismatch", total, None
    if p + topic_len > n:
        return "truncated", total, None
    topic = bytes(buf[p : p + topic_len])
    p += topic_len
    if p + 2 > n:
        return "truncated", total, None
    props_len = _I16.unpack_from(buf, p)[0]
    p += 2
    if props_len > 0:
        if props_len > total:
            return "size_mismatch", total, None
        if p + props_len > n:
            return "truncated", total, None
        if topic == _SCHEDULE_TOPIC and not _delay_ok(bytes(buf[p : p + props_len])):
            return "bad_property", total, None
    if total != to_int32(74 + bl + sl + max(body_len, 0) + tls + topic_len + max(props_len, 0)):
        return "size_mismatch", total, None
    return "ok", total, (queue_id, queue_offset, phys, sys_flag, born, store_ts, topic)


def _delay_ok(raw: bytes) -> bool:
    delay = decode_properties(raw).get(PROPERTY_DELAY_TIME_LEVEL)
    return delay is None or java_parse_int(delay) is not None


def store_timestamp_at(buf, n: int, pos: int, size: int | None = None) -> int | None:
    """STORETIMESTAMP of the message record at buf[pos:] (at 56, or 68 with an IPv6 born host), or None
    when no message record starts there (not a message magic, TOTALSIZE != `size` when given, too short).
    A header check only (the field `CommitLog.pickupStoreTimestamp` reads): no CRC, no size chain."""
    if pos < 0 or pos + 64 > n:
        return None
    total, magic = _PRELUDE.unpack_from(buf, pos)
    if magic not in (MAGIC_V1, MAGIC_V2) or total < 64 or (size is not None and total != size):
        return None
    sys_flag = _I32.unpack_from(buf, pos + 36)[0]
    at = pos + (68 if sys_flag & BORNHOST_V6_FLAG else 56)
    if at + 8 > n:
        return None
    return _I64.unpack_from(buf, at)[0]
