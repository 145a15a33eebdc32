"""CommitLog records: decode and check them as the broker does, and encode them byte for byte.

Layouts come from `formats.structs.MessageRecord`/`BlankRecord` (`MessageExtEncoder.encode`,
`CommitLog.DefaultAppendMessageCallback.doAppend`); this module adds the broker's validity check
(`CommitLog.checkMessageAndReturnSize`), the derived values the dispatcher computes (tags code:
`checkMessageAndReturnSize`; index keys: `IndexService.buildIndex`) and the writer's filled-in fields
(`doAppend`). `decode_record` never raises for bad bytes: it classifies them as a `Torn`/`Corrupt`/`EndOfData`
result.
"""

from __future__ import annotations

import base64
import functools
import io
import re
import struct
import zlib
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

from construct import ConstructError, Struct

from formats.errors import FormatError
from formats.java.hash import tags_code as _hash_tags
from formats.java.hash import to_int32
from formats.message.compression import compression_type, decompress_body
from formats.message.msgid import create_offset_msg_id, host_str
from formats.message.properties import (
    CRC32_RESERVED_LEN,
    PROPERTY_CRC32,
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_KEYS,
    PROPERTY_TAGS,
    PROPERTY_UNIQ_KEY,
    crc32_property_trailer,
    decode_properties,
    encode_properties,
    with_crc32_reserve,
)
from formats.names import SCHEDULE_TOPIC
from formats.structs import (
    BLANK_MAGIC,
    BORNHOST_V6_FLAG,
    COMPRESSED_FLAG,
    MAGIC_V1,
    MAGIC_V2,
    MESSAGE_MAGICS,
    STOREHOSTADDRESS_V6_FLAG,
    SYSFLAG_NAMES,
    TRANSACTION_ROLLBACK_TYPE,
    TRANSACTION_TYPE_MASK,
    TRANSACTION_TYPE_NAMES,
    MessageRecord,
    RecordPrelude,
)
from formats.twins import struct_twin

DEFAULT_MESSAGE_DELAY_LEVEL = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
DEFAULT_COMMITLOG_FILE_SIZE = 1024 * 1024 * 1024  # mappedFileSizeCommitLog
MAX_TOPIC_LENGTH_V1 = 127  # the writer switches to V2 above this many (UTF-16) characters

# Fast path of `structs.RecordPrelude` (int32 TOTALSIZE, int32 MAGICCODE); property-tested equal.
RECORD_PRELUDE = struct_twin("RecordPrelude", RecordPrelude, struct.Struct(">ii"))
# The fixed-width head of MessageRecord (everything before BODYLENGTH), for partial records.
_HEAD = Struct(*MessageRecord.subcons[: [s.name for s in MessageRecord.subcons].index("body")])
_ZERO_PROBE = 8  # bytes after a failed record that must be zero for it to count as torn
HEAD_MAX_SIZE = 108  # the fixed-width head (see decode_head) with two IPv6 hosts

# construct's compiled parser is ~2x faster per record but costs ~0.1 s to build; a query that reads a
# handful of records should not pay that, so it is built once this many records have been decoded.
_COMPILE_AFTER = 200
_decoded_count = 0


@functools.cache
def _compiled_record():
    try:
        return MessageRecord.compile()
    except Exception:  # an optimisation only
        return None


def crc32_masked(data: bytes) -> int:
    """`UtilAll.crc32`: CRC-32 with the top bit cleared."""
    return zlib.crc32(data) & 0x7FFFFFFF


def message_length(
    sys_flag: int, body_length: int, topic_length: int, properties_length: int, magic: int = MAGIC_V1
) -> int:
    """`MessageExtEncoder.calMsgLength`: the TOTALSIZE a record with these lengths must have."""
    born = 20 if sys_flag & BORNHOST_V6_FLAG else 8
    store = 20 if sys_flag & STOREHOSTADDRESS_V6_FLAG else 8
    topic_len_size = 2 if magic == MAGIC_V2 else 1
    return (
        4 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8 + born + 8 + store + 4 + 8
        + 4 + max(body_length, 0)
        + topic_len_size + topic_length
        + 2 + max(properties_length, 0)
    )  # fmt: skip


def parse_delay_levels(text: str = DEFAULT_MESSAGE_DELAY_LEVEL) -> tuple[int, ...]:
    """`messageDelayLevel` ("1s 5s ... 2h") as milliseconds per level (index 0 = level 1)."""
    units = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
    levels = []
    for token in text.split(" "):
        if len(token) < 2 or token[-1] not in units or not token[:-1].isdecimal():
            raise FormatError(f"bad delay level {token!r} in messageDelayLevel {text!r}")
        levels.append(int(token[:-1]) * units[token[-1]])
    return tuple(levels)


DEFAULT_DELAY_LEVELS_MS = parse_delay_levels()

_JAVA_INT = re.compile(r"[+-]?[^\W_]+")


def java_parse_int(text: str) -> int | None:
    """`Integer.parseInt(text)`, or None where Java throws NumberFormatException."""
    if not _JAVA_INT.fullmatch(text) or not all(
        c.isdecimal() and ord(c) < 0x10000 for c in text.lstrip("+-")
    ):
        return None
    value = int(text)
    return value if -(2**31) <= value < 2**31 else None


def deliver_tags_code(store_timestamp: int, delay: str, delay_levels: tuple[int, ...]) -> int | None:
    """Tags code of a SCHEDULE_TOPIC_XXXX record with a DELAY property: its delivery time
    (`ScheduleMessageService.computeDeliverTimestamp`).

    None when the level is <= 0 (the TAGS hash stays). Raises FormatError when DELAY is not an int:
    the broker's check then fails for the whole record.
    """
    level = java_parse_int(delay)
    if level is None:
        raise FormatError(f"DELAY property {delay!r} is not an integer")
    level = min(level, len(delay_levels))
    if level <= 0:
        return None
    deliver = store_timestamp + (delay_levels[level - 1] if level <= len(delay_levels) else 1000)
    return (deliver + 2**63) % 2**64 - 2**63  # a Java long: a corrupt store time near 2^63 wraps


# --- results --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Message:
    """One stored message record, fields as written (body stays compressed if it was stored so)."""

    physical_offset: int
    total_size: int
    magic_code: int
    body_crc: int
    queue_id: int
    flag: int
    queue_offset: int
    sys_flag: int
    born_timestamp: int
    born_host: bytes
    born_port: int
    store_timestamp: int
    store_host: bytes
    store_port: int
    reconsume_times: int
    prepared_transaction_offset: int
    topic: str
    properties_raw: bytes
    body: bytes
    # The stored TOPIC bytes, kept only when they are not valid UTF-8 (so encoding gives them back).
    topic_raw: bytes | None = None
    # Things a careful reader notices that the broker accepts (e.g. PHYSICALOFFSET != position).
    problems: tuple[str, ...] = ()

    kind = "message"

    @cached_property
    def properties(self) -> dict[str, str]:
        return decode_properties(self.properties_raw)

    @property
    def keys(self) -> str | None:
        return self.properties.get(PROPERTY_KEYS)

    @property
    def tags(self) -> str | None:
        return self.properties.get(PROPERTY_TAGS)

    @property
    def uniq_key(self) -> str | None:
        return self.properties.get(PROPERTY_UNIQ_KEY)

    @property
    def offset_msg_id(self) -> str:
        return create_offset_msg_id(self.store_host, self.store_port, self.physical_offset)

    @property
    def body_length(self) -> int:
        return len(self.body)

    @property
    def topic_bytes(self) -> bytes:
        if self.topic_raw is not None and self.topic_raw.decode("utf-8", "replace") == self.topic:
            return self.topic_raw
        return self.topic.encode("utf-8")

    @property
    def topic_length_bytes(self) -> int:
        return len(self.topic_bytes)

    @property
    def is_v2(self) -> bool:
        """V2 magic (2-byte topic length): a 4.9.x broker treats it as an illegal magic code."""
        return self.magic_code == MAGIC_V2

    @property
    def born_host_str(self) -> str:
        return host_str(self.born_host, self.born_port)

    @property
    def store_host_str(self) -> str:
        return host_str(self.store_host, self.store_port)

    @property
    def transaction_type(self) -> str:
        return TRANSACTION_TYPE_NAMES[self.sys_flag & TRANSACTION_TYPE_MASK]

    @property
    def sys_flag_names(self) -> list[str]:
        names = [name for bit, name in SYSFLAG_NAMES.items() if self.sys_flag & bit]
        if self.sys_flag & TRANSACTION_TYPE_MASK:
            names.append(self.transaction_type)
        if self.sys_flag & COMPRESSED_FLAG:
            names.append(str(self.compression).upper())
        return names

    @property
    def compression(self) -> str | None:
        return compression_type(self.sys_flag)

    def decompressed_body(self) -> bytes:
        """The body as the producer sent it (raises compression.BodyNotDecoded when it can't)."""
        return decompress_body(self.body, self.sys_flag)

    def tags_code(self, delay_levels: tuple[int, ...] = DEFAULT_DELAY_LEVELS_MS) -> int:
        """The ConsumeQueue tags code the dispatcher computes (`CommitLog.checkMessageAndReturnSize`, without
        CQ-ext)."""
        code = _hash_tags(self.tags)
        delay = self.properties.get(PROPERTY_DELAY_TIME_LEVEL)
        if self.topic == SCHEDULE_TOPIC and delay is not None:
            deliver = deliver_tags_code(self.store_timestamp, delay, delay_levels)
            if deliver is not None:
                code = deliver
        return code

    def index_keys(self) -> list[str]:
        """Keys IndexService indexes (as `topic#key`), in order: UNIQ_KEY, then each KEYS part
        (`IndexService.buildIndex`)."""
        if self.sys_flag & TRANSACTION_TYPE_MASK == TRANSACTION_ROLLBACK_TYPE:
            return []
        keys = [] if self.uniq_key is None else [self.uniq_key]
        if self.keys:
            keys.extend(k for k in self.keys.split(" ") if k)
        return keys

    def to_json(self, include_body: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "physicalOffset": self.physical_offset,
            "totalSize": self.total_size,
            "magicCode": self.magic_code,
            "bodyCRC": self.body_crc,
            "queueId": self.queue_id,
            "flag": self.flag,
            "queueOffset": self.queue_offset,
            "sysFlag": self.sys_flag,
            "bornTimestamp": self.born_timestamp,
            "bornHost": self.born_host_str,
            "storeTimestamp": self.store_timestamp,
            "storeHost": self.store_host_str,
            "reconsumeTimes": self.reconsume_times,
            "preparedTransactionOffset": self.prepared_transaction_offset,
            "topic": self.topic,
            "properties": dict(self.properties),
            "keys": self.keys,
            "tags": self.tags,
            "uniqKey": self.uniq_key,
            "offsetMsgId": self.offset_msg_id,
            "bodyLength": self.body_length,
        }
        if include_body:
            out["body"] = base64.b64encode(self.body).decode("ascii")
        if self.problems:
            out["problems"] = list(self.problems)
        return out


@dataclass(frozen=True)
class Blank:
    """The 8-byte end-of-file marker: the rest of this file is unused, the log goes on in the next."""

    physical_offset: int
    total_size: int
    problems: tuple[str, ...] = ()

    kind = "blank"

    def to_json(self, include_body: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "physicalOffset": self.physical_offset,
            "kind": self.kind,
            "totalSize": self.total_size,
            "reason": "BLANK end-of-file marker",
        }
        if self.problems:
            out["problems"] = list(self.problems)
        return out


@dataclass(frozen=True)
class EndOfData:
    """Where the written data ends (zeros, or the end of a file without a BLANK record)."""

    physical_offset: int
    reason: str

    kind = "end"

    def to_json(self, include_body: bool = True) -> dict[str, Any]:
        return {"physicalOffset": self.physical_offset, "kind": self.kind, "reason": self.reason}


@dataclass(frozen=True)
class BadRecord:
    """Bytes that start like a record but fail the broker's check: its recovery truncates here."""

    physical_offset: int
    reason: str
    total_size: int | None  # as declared by the TOTALSIZE field
    available: int  # bytes from here to the end of the file, at most total_size
    written: int  # of those, the bytes up to the last non-zero one
    header: dict[str, Any] | None = None  # the fixed fields, when enough bytes are there

    kind = "bad"

    def to_json(self, include_body: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "physicalOffset": self.physical_offset,
            "kind": self.kind,
            "reason": self.reason,
            "totalSize": self.total_size,
            "bytesAvailable": self.available,
            "bytesWritten": self.written,
        }
        if self.header is not None:
            out["header"] = self.header
        return out

    def to_error(self, file: str | None = None, offset: int | None = None) -> FormatError:
        return FormatError(
            f"{self.kind} record at physical offset {self.physical_offset}: {self.reason}", file, offset
        )


class Torn(BadRecord):
    """A record cut short: a valid start, then zeros (or the end of the file) before its declared end."""

    kind = "torn"


class Corrupt(BadRecord):
    """Non-zero bytes that are not a valid record (bad magic, CRC, lengths)."""

    kind = "corrupt"


Record = Message | Blank | EndOfData | Torn | Corrupt
STOPS = (EndOfData, BadRecord)  # results after which the broker's walk does not go on


# --- decoding -------------------------------------------------------------------------------------


def read_prelude(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """(TOTALSIZE, MAGICCODE) at `pos`; the caller makes sure 8 bytes are there."""
    return RECORD_PRELUDE.unpack_from(buf, pos)


def decode_head(data: bytes) -> dict[str, Any] | None:
    """The fixed-width fields a record starts with (up to PREPARED TRANSACTION OFFSET), or None
    when `data` is too short. Used for records that are not whole and for quick peeks."""
    try:
        c = _HEAD.parse(data)
    except (ConstructError, ValueError):
        return None
    return {
        "totalSize": c.totalSize,
        "magicCode": c.magicCode,
        "queueId": c.queueId,
        "flag": c.flag,
        "queueOffset": c.queueOffset,
        "physicalOffsetField": c.physicalOffset,
        "sysFlag": c.sysFlag,
        "bornTimestamp": c.bornTimestamp,
        "storeTimestamp": c.storeTimestamp,
    }


_SCAN_CHUNK = 1 << 20


def _written_length(buf, start: int, end: int) -> int:
    """Length of buf[start:end] up to its last non-zero byte, scanned in chunks (no big copies)."""
    hi = end
    while hi > start:
        lo = max(start, hi - _SCAN_CHUNK)
        kept = len(bytes(buf[lo:hi]).rstrip(b"\0"))
        if kept:
            return lo + kept - start
        hi = lo
    return 0


def _zero(buf, start: int, end: int) -> bool:
    return _written_length(buf, start, min(end, len(buf))) == 0


def _failed(buf, pos: int, phy: int, total: int | None, reason: str) -> BadRecord:
    """A record that fails the check: torn if only zeros follow its written prefix, else corrupt."""
    remaining = len(buf) - pos
    extent = remaining if total is None or total < 0 else min(total, remaining)
    written = _written_length(buf, pos, pos + extent)
    header = decode_head(bytes(buf[pos : pos + min(extent, HEAD_MAX_SIZE)]))
    torn = False
    if total is not None and total > remaining:
        torn = True
        reason = f"record of {total} bytes runs past the end of the file ({remaining} bytes left); {reason}"
    elif total is not None and 0 < written < total and _zero(buf, pos + total, pos + total + _ZERO_PROBE):
        torn = True
        reason = f"torn write: {written} of {total} bytes written, the rest is zero; {reason}"
    cls = Torn if torn else Corrupt
    return cls(phy, reason, total, extent, written, header)


def _illegal_magic(buf, pos: int, phy: int, total: int, magic: int) -> Record:
    head = bytes(buf[pos : pos + 8])
    if not head.strip(b"\0"):
        return EndOfData(phy, "zeros: end of the written data")
    magic_bytes = head[4:8].rstrip(b"\0")
    partial_magic = any(struct.pack(">i", m).startswith(magic_bytes) for m in MESSAGE_MAGICS)
    extent = min(total, len(buf) - pos) if total > 8 else 8
    if partial_magic and total > 0 and _zero(buf, pos + 4 + len(magic_bytes), pos + extent):
        written = 4 + len(magic_bytes)
        return Torn(phy, f"torn write: only {written} bytes of the record written", total, extent, written)
    return Corrupt(phy, f"illegal magic code 0x{magic & 0xFFFFFFFF:08X}", total, min(8, len(buf) - pos), 8)


def _parse_message(rec: bytes):
    """`MessageRecord.parse(rec)`, through construct's compiled parser when its answer can be trusted.

    The compiled parser does not check short or negative reads. Any such read before PROPERTIES makes
    a later field fail, so only PROPERTIESLENGTH (an int16 just before PROPERTIES) is rechecked.
    Anything unusual goes to the plain parser, which raises ConstructError with the failing path.
    """
    global _decoded_count
    _decoded_count += 1
    compiled = _compiled_record() if _decoded_count > _COMPILE_AFTER else None
    if compiled is not None:
        try:
            c = compiled.parse(rec)
        except Exception:
            c = None
        if c is not None:
            n = len(c.properties)
            end = message_length(c.sysFlag, len(c.body), len(c.topic), n, c.magicCode)
            if end <= len(rec) and int.from_bytes(rec[end - n - 2 : end - n], "big", signed=True) == n:
                return c
    return MessageRecord.parse(rec)


def _negative_length_field(exc: ConstructError) -> tuple[str, int] | None:
    """(label, width) of the length field a parse failed on for being negative, if the broker skips it."""
    if "non-negative" not in str(exc):
        return None
    path = str(getattr(exc, "path", "") or "")
    if "properties" in path:
        return "PROPERTIESLENGTH", 2
    if "body" in path:
        return "BODYLENGTH", 4
    return None  # a negative TOPICLENGTH makes the broker's check throw


def _parse_as_broker(rec: bytes) -> tuple[Any, tuple[str, ...]]:
    """Parse a record as `checkMessageAndReturnSize` reads it: a negative BODYLENGTH or
    PROPERTIESLENGTH is skipped (`if (len > 0)`) and counts as 0 in the length formula.

    Returns the parsed fields (lengths read as 0 where negative) and notes about such fields;
    raises ConstructError where the broker's check fails too.
    """
    try:
        return _parse_message(rec), ()
    except ConstructError as exc:
        first_error = exc  # what a reader is told if the broker's reading fails too
    data = bytearray(rec)
    problems: list[str] = []
    while True:
        stream = io.BytesIO(bytes(data))
        try:
            return MessageRecord.parse_stream(stream), tuple(problems)
        except ConstructError as exc:
            field = _negative_length_field(exc)
            if field is None or len(problems) >= 2:
                raise first_error from None
            label, width = field
            at = stream.tell() - width  # the failing Prefixed has read just its length field
            value = int.from_bytes(data[at : at + width], "big", signed=True)
            data[at : at + width] = bytes(width)
            problems.append(f"{label} {value} read as 0, as the broker does")


def _parse_fail_reason(exc: ConstructError) -> str:
    path = str(getattr(exc, "path", "") or "")
    for name, label in (("properties", "PROPERTIES"), ("topic", "TOPIC"), ("body", "BODY")):
        if name in path:
            return f"{label} length field is negative or runs past TOTALSIZE"
    return "fields run past TOTALSIZE"


def decode_record(
    buf: bytes | bytearray | memoryview,
    pos: int,
    file_start_offset: int,
    *,
    check_crc: bool = True,
    force_verify_prop_crc: bool = False,
    accept_v2: bool = True,
    file: str | None = None,
) -> Record:
    """Classify the bytes at `pos` of one commitlog file (`buf` = the whole file) as the broker does.

    Mirrors `CommitLog.checkMessageAndReturnSize`: BLANK magic -> `Blank`; zeros ->
    `EndOfData`; any failure (illegal magic, size past the file, body CRC, TOTALSIZE != formula,
    unparsable DELAY on the schedule topic, missing/bad property CRC when forced, V2 magic when
    `accept_v2=False` as for a 4.9.x broker) -> `Torn`/`Corrupt`.
    Accepted as by the broker, and reported in `Message.problems`: a PHYSICALOFFSET field that differs
    from the position; a negative BODYLENGTH/PROPERTIESLENGTH (read as 0: such a record does not
    re-encode to the same bytes); TOPIC/PROPERTIES that are not valid UTF-8.
    """
    size = len(buf)
    if not 0 <= pos <= size:
        raise FormatError(f"position {pos} is outside the file (size {size})", file, pos)
    phy = file_start_offset + pos
    remaining = size - pos
    if remaining < 8:
        if _zero(buf, pos, size):
            if remaining == 0:
                return EndOfData(phy, "end of the file without a BLANK record")
            return EndOfData(phy, "zeros: end of the written data")
        return Corrupt(phy, f"only {remaining} bytes left in the file", None, remaining, remaining)

    total, magic = read_prelude(buf, pos)
    if magic == BLANK_MAGIC:
        if to_int32(total - 4) > remaining - 4:  # Java's int arithmetic: MIN_VALUE - 4 wraps
            return Corrupt(
                phy,
                f"BLANK record of {total} bytes runs past the end of the file ({remaining} left)",
                total,
                8,
                8,
            )
        problems = (
            () if total == remaining else (f"BLANK size {total} but {remaining} bytes left in the file",)
        )
        return Blank(phy, total, problems)
    if magic not in MESSAGE_MAGICS:
        return _illegal_magic(buf, pos, phy, total, magic)
    if magic == MAGIC_V2 and not accept_v2:
        return Corrupt(phy, "magic code V2 (0xDAA320AB) is illegal for a 4.9.x broker", total, 8, 8)
    if total > remaining:
        return _failed(buf, pos, phy, total, "TOTALSIZE larger than the bytes left")
    if total < 8:
        return Corrupt(phy, f"TOTALSIZE {total} is too small", total, 8, 8)

    try:
        c, problems = _parse_as_broker(bytes(buf[pos : pos + total]))
    except ConstructError as exc:
        return _failed(buf, pos, phy, total, _parse_fail_reason(exc))

    body: bytes = c.body
    if check_crc and not force_verify_prop_crc and body and crc32_masked(body) != c.bodyCRC:
        return _failed(buf, pos, phy, total, f"body CRC {crc32_masked(body)} != BODYCRC {c.bodyCRC}")

    topic_raw: bytes = c.topic
    topic = topic_raw.decode("utf-8", "replace")
    properties_raw: bytes = c.properties
    properties: dict[str, str] | None = None
    if topic == SCHEDULE_TOPIC:
        properties = decode_properties(properties_raw)
        delay = properties.get(PROPERTY_DELAY_TIME_LEVEL)
        if delay is not None and java_parse_int(delay) is None:
            return _failed(buf, pos, phy, total, f"DELAY property {delay!r} is not an integer")
    if check_crc and force_verify_prop_crc:
        properties = properties if properties is not None else decode_properties(properties_raw)
        reason = _prop_crc_failure(buf, pos, total, properties.get(PROPERTY_CRC32))
        if reason:
            return _failed(buf, pos, phy, total, reason)

    expected = message_length(c.sysFlag, len(body), len(topic_raw), len(properties_raw), magic)
    if expected != total:
        return _failed(buf, pos, phy, total, f"TOTALSIZE {total} != {expected} computed from the lengths")

    problems = list(problems)
    if c.physicalOffset != phy:
        problems.append(f"PHYSICALOFFSET field {c.physicalOffset} != position {phy}")
    topic_valid = topic.encode("utf-8") == topic_raw
    if not topic_valid:
        problems.append("TOPIC is not valid UTF-8 (read with U+FFFD, as Java does)")
    if not _is_utf8(properties_raw):
        problems.append("PROPERTIES are not valid UTF-8 (read with U+FFFD, as Java does)")
    msg = Message(
        physical_offset=c.physicalOffset,
        total_size=total,
        magic_code=magic,
        body_crc=c.bodyCRC,
        queue_id=c.queueId,
        flag=c.flag,
        queue_offset=c.queueOffset,
        sys_flag=c.sysFlag,
        born_timestamp=c.bornTimestamp,
        born_host=c.bornHost.address,
        born_port=c.bornHost.port,
        store_timestamp=c.storeTimestamp,
        store_host=c.storeHost.address,
        store_port=c.storeHost.port,
        reconsume_times=c.reconsumeTimes,
        prepared_transaction_offset=c.preparedTransactionOffset,
        topic=topic,
        properties_raw=properties_raw,
        body=body,
        topic_raw=None if topic_valid else topic_raw,
        problems=tuple(problems),
    )
    if properties is not None:
        msg.__dict__["properties"] = properties  # prime the cached_property
    return msg


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _prop_crc_failure(buf, pos: int, total: int, value: str | None) -> str | None:
    if value is None:
        return f"no {PROPERTY_CRC32} property (forceVerifyPropCRC)"
    expected = 0
    for ch in reversed(value):  # Java: expectedCRC = expectedCRC * 10 + (ch - '0'), int arithmetic
        expected = (expected * 10 + ord(ch) - ord("0")) & 0xFFFFFFFF
    expected = expected - (1 << 32) if expected & 0x80000000 else expected
    if expected <= 0:
        return f"{PROPERTY_CRC32} property {value!r} is not a CRC"
    actual = crc32_masked(bytes(buf[pos : pos + total - CRC32_RESERVED_LEN]))
    return None if actual == expected else f"property CRC {expected} != record CRC {actual}"


# --- encoding -------------------------------------------------------------------------------------


def encode_message(msg: Message, *, recompute: bool = True) -> bytes:
    """The exact bytes the broker writes for `msg`.

    With `recompute` (default), TOTALSIZE and BODYCRC are computed from the content as the broker
    does; without it the message's own values are written (to reproduce damaged records).
    """
    topic = msg.topic_bytes
    if msg.magic_code not in MESSAGE_MAGICS:
        raise FormatError(f"magic code {msg.magic_code} is not a message magic")
    limit = 32767 if msg.magic_code == MAGIC_V2 else 127
    if len(topic) > limit:
        raise FormatError(
            f"topic of {len(topic)} bytes does not fit a {'V2' if limit > 127 else 'V1'} record"
        )
    if len(msg.properties_raw) > 32767:
        raise FormatError(f"properties of {len(msg.properties_raw)} bytes exceed 32767")
    for name, host in (("born", msg.born_host), ("store", msg.store_host)):
        v6 = BORNHOST_V6_FLAG if name == "born" else STOREHOSTADDRESS_V6_FLAG
        if len(host) != (16 if msg.sys_flag & v6 else 4):
            raise FormatError(
                f"{name} host has {len(host)} address bytes but SYSFLAG {msg.sys_flag:#x} says otherwise"
            )
    total = message_length(msg.sys_flag, len(msg.body), len(topic), len(msg.properties_raw), msg.magic_code)
    try:
        return MessageRecord.build(
            {
                "totalSize": total if recompute else msg.total_size,
                "magicCode": msg.magic_code,
                "bodyCRC": crc32_masked(msg.body) if recompute else msg.body_crc,
                "queueId": msg.queue_id,
                "flag": msg.flag,
                "queueOffset": msg.queue_offset,
                "physicalOffset": msg.physical_offset,
                "sysFlag": msg.sys_flag,
                "bornTimestamp": msg.born_timestamp,
                "bornHost": {"address": msg.born_host, "port": msg.born_port},
                "storeTimestamp": msg.store_timestamp,
                "storeHost": {"address": msg.store_host, "port": msg.store_port},
                "reconsumeTimes": msg.reconsume_times,
                "preparedTransactionOffset": msg.prepared_transaction_offset,
                "body": bytes(msg.body),
                "topic": topic,
                "properties": bytes(msg.properties_raw),
            }
        )
    except (ConstructError, struct.error, OverflowError, ValueError) as exc:
        raise FormatError(f"cannot encode message: {exc}") from exc


def java_length(text: str) -> int:
    """`String.length()`: UTF-16 code units."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def build_message(
    *,
    topic: str,
    body: bytes,
    properties: dict[str, str] | list[tuple[str, str]] | bytes = b"",
    queue_id: int = 0,
    flag: int = 0,
    queue_offset: int = 0,
    physical_offset: int = 0,
    sys_flag: int = 0,
    born_timestamp: int = 0,
    born_host: tuple[bytes, int],
    store_timestamp: int = 0,
    store_host: tuple[bytes, int],
    reconsume_times: int = 0,
    prepared_transaction_offset: int = 0,
    magic_code: int | None = None,
    trailing_separator: bool = True,
    append_prop_crc: bool = False,
) -> Message:
    """A Message with what the broker fills in on append: BODYCRC, TOTALSIZE, the host V6 bits, and
    the magic (V1 unless the topic is longer than 127 characters). `properties` given as a mapping or
    pairs is encoded (5.x style unless `trailing_separator=False`); bytes are used as they are.
    `append_prop_crc` adds the 5.2+ `__CRC32#` trailer (enabledAppendPropCRC, `MessageExtEncoder.encode`).
    """
    if isinstance(properties, bytes | bytearray):
        raw = bytes(properties)
    else:
        pairs = properties.items() if isinstance(properties, dict) else properties
        if append_prop_crc:
            pairs = [(k, v) for k, v in pairs if k != PROPERTY_CRC32]
        raw = encode_properties(pairs, trailing_separator)
    if append_prop_crc:
        raw = with_crc32_reserve(raw)
    if magic_code is None:
        magic_code = MAGIC_V2 if java_length(topic) > MAX_TOPIC_LENGTH_V1 else MAGIC_V1
    sys_flag &= ~(BORNHOST_V6_FLAG | STOREHOSTADDRESS_V6_FLAG)
    if len(born_host[0]) == 16:
        sys_flag |= BORNHOST_V6_FLAG
    if len(store_host[0]) == 16:
        sys_flag |= STOREHOSTADDRESS_V6_FLAG
    try:
        topic_raw = topic.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise FormatError(f"topic is not encodable as UTF-8: {exc.reason}") from exc
    body = bytes(body)
    msg = Message(
        physical_offset=physical_offset,
        total_size=message_length(sys_flag, len(body), len(topic_raw), len(raw), magic_code),
        magic_code=magic_code,
        body_crc=crc32_masked(body),
        queue_id=queue_id,
        flag=flag,
        queue_offset=queue_offset,
        sys_flag=sys_flag,
        born_timestamp=born_timestamp,
        born_host=bytes(born_host[0]),
        born_port=born_host[1],
        store_timestamp=store_timestamp,
        store_host=bytes(store_host[0]),
        store_port=store_host[1],
        reconsume_times=reconsume_times,
        prepared_transaction_offset=prepared_transaction_offset,
        topic=topic,
        properties_raw=raw,
        body=body,
    )
    if append_prop_crc:
        data = encode_message(msg)
        crc = crc32_masked(data[: len(data) - CRC32_RESERVED_LEN])
        msg = replace(msg, properties_raw=raw[:-CRC32_RESERVED_LEN] + crc32_property_trailer(crc))
    return msg


__all__ = [
    "DEFAULT_DELAY_LEVELS_MS",
    "DEFAULT_COMMITLOG_FILE_SIZE",
    "DEFAULT_MESSAGE_DELAY_LEVEL",
    "HEAD_MAX_SIZE",
    "STOPS",
    "BadRecord",
    "Blank",
    "Corrupt",
    "EndOfData",
    "Message",
    "Record",
    "Torn",
    "build_message",
    "crc32_masked",
    "decode_head",
    "decode_record",
    "read_prelude",
    "deliver_tags_code",
    "encode_message",
    "java_length",
    "java_parse_int",
    "message_length",
    "parse_delay_levels",
]
