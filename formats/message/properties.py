"""Message PROPERTIES text: the broker's exact reader and writer, and the 5.2+ `__CRC32#` trailer.

`MessageDecoder.messageProperties2String` / `string2messageProperties` (codec) and the
`__CRC32#` trailer of `MessageExtEncoder.encode` (property CRC). Pairs are `name \\x01 value`, separated by
`\\x02`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from formats.errors import FormatError

NAME_VALUE_SEPARATOR = "\x01"
PROPERTY_SEPARATOR = "\x02"

PROPERTY_CRC32 = "__CRC32#"
# len("__CRC32#") + \x01 + 10 digits + \x02
CRC32_RESERVED_LEN = 20

# Well-known keys (`MessageConst`) that this package interprets.
PROPERTY_KEYS = "KEYS"
PROPERTY_TAGS = "TAGS"
PROPERTY_UNIQ_KEY = "UNIQ_KEY"
PROPERTY_DELAY_TIME_LEVEL = "DELAY"
PROPERTY_REAL_TOPIC = "REAL_TOPIC"
PROPERTY_REAL_QUEUE_ID = "REAL_QID"
PROPERTY_WAIT_STORE_MSG_OK = "WAIT"
PROPERTY_CLUSTER = "CLUSTER"
KEY_SEPARATOR = " "
# the 5.x timer wheel (MessageConst.PROPERTY_TIMER_*)
PROPERTY_TIMER_DELIVER_MS = "TIMER_DELIVER_MS"
PROPERTY_TIMER_DELAY_SEC = "TIMER_DELAY_SEC"
PROPERTY_TIMER_DELAY_MS = "TIMER_DELAY_MS"
PROPERTY_TIMER_OUT_MS = "TIMER_OUT_MS"
PROPERTY_TIMER_ROLL_TIMES = "TIMER_ROLL_TIMES"
PROPERTY_TIMER_DEL_UNIQKEY = "TIMER_DEL_UNIQKEY"
PROPERTY_TIMER_ENQUEUE_MS = "TIMER_ENQUEUE_MS"
PROPERTY_TIMER_DEQUEUE_MS = "TIMER_DEQUEUE_MS"
TIMER_PROPERTIES = (
    PROPERTY_TIMER_DELIVER_MS,
    PROPERTY_TIMER_DELAY_SEC,
    PROPERTY_TIMER_DELAY_MS,
    PROPERTY_TIMER_OUT_MS,
)


def decode_properties(raw: bytes | str) -> dict[str, str]:
    """`MessageDecoder.string2messageProperties`: the broker's reader, rule for rule.

    Invalid UTF-8 becomes U+FFFD; parts are split at \\x02 (a trailing part without one still counts);
    a part is kept only if its first \\x01 is neither its first nor its last character; the last
    duplicate wins but the key keeps its first position.
    """
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes | bytearray | memoryview) else raw
    props: dict[str, str] = {}
    for part in text.split(PROPERTY_SEPARATOR):
        # Java's "length >= 3" pre-filter counts UTF-16 units; any part passing the checks below
        # has at least 3 characters either way, so it needs no separate test.
        sep = part.find(NAME_VALUE_SEPARATOR)
        if 0 < sep < len(part) - 1:
            props[part[:sep]] = part[sep + 1 :]
    return props


def _pairs(props: Mapping[str, str] | Iterable[tuple[str, str]]) -> Iterable[tuple[str, str]]:
    return props.items() if isinstance(props, Mapping) else props


def encode_properties(
    props: Mapping[str, str] | Iterable[tuple[str, str]], trailing_separator: bool = True
) -> bytes:
    """`messageProperties2String`, as UTF-8 bytes, pairs in the order given.

    5.x ends every pair with \\x02 (`trailing_separator=True`); 4.9.x puts \\x02 only between pairs.
    Pairs the reader could not give back (empty name or value, separators inside) are refused.
    """
    parts: list[str] = []
    for name, value in _pairs(props):
        if value is None:
            continue  # the Java writer skips null values
        if not name or not value:
            raise FormatError(f"property {name!r}: empty names and values cannot be read back")
        if NAME_VALUE_SEPARATOR in name or PROPERTY_SEPARATOR in name or PROPERTY_SEPARATOR in value:
            raise FormatError(f"property {name!r}: names and values cannot contain \\x01/\\x02")
        parts.append(f"{name}{NAME_VALUE_SEPARATOR}{value}")
    text = PROPERTY_SEPARATOR.join(parts)
    if parts and trailing_separator:
        text += PROPERTY_SEPARATOR
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise FormatError(f"property text is not encodable as UTF-8: {exc.reason}") from exc


# --- property CRC (MessageExtEncoder, CommitLog.CRC32_RESERVED_LEN) -------------------------------


def crc32_property_value(crc: int) -> str:
    """`MessageDecoder.createCrc32` digits: least-significant digit first, right-padded with '0'."""
    if not 0 <= crc <= 0x7FFFFFFF:
        raise FormatError(f"property CRC {crc} is not a masked CRC-32")
    return str(crc)[::-1].ljust(10, "0")


def crc32_property_trailer(crc: int) -> bytes:
    """The 20 reserved bytes `__CRC32#\\x01dddddddddd\\x02` that end PROPERTIES."""
    text = f"{PROPERTY_CRC32}{NAME_VALUE_SEPARATOR}{crc32_property_value(crc)}{PROPERTY_SEPARATOR}"
    return text.encode("ascii")


def parse_crc32_property(value: str) -> int:
    """The CRC held in a `__CRC32#` value (digits reversed). Stricter than Java: digits only."""
    if not value or not value.isascii() or not value.isdigit():
        raise FormatError(f"{PROPERTY_CRC32} value {value!r} is not a digit string")
    return int(value[::-1])


def split_crc32_trailer(properties_raw: bytes) -> tuple[bytes, int | None]:
    """Split PROPERTIES into (text before the reserved area, CRC) when it ends with a CRC trailer."""
    tail = properties_raw[-CRC32_RESERVED_LEN:]
    prefix = (PROPERTY_CRC32 + NAME_VALUE_SEPARATOR).encode("ascii")
    if len(tail) == CRC32_RESERVED_LEN and tail.startswith(prefix) and tail.endswith(b"\x02"):
        digits = tail[len(prefix) : -1]
        if digits.isdigit():
            return properties_raw[:-CRC32_RESERVED_LEN], int(digits[::-1])
    return properties_raw, None


def with_crc32_reserve(properties_raw: bytes) -> bytes:
    """PROPERTIES as the 5.2+ encoder lays them out before the CRC is known (20 placeholder bytes).

    A non-empty text that does not end in \\x02 gets one first (`MessageExtEncoder`).
    """
    if properties_raw and not properties_raw.endswith(b"\x02"):
        properties_raw += b"\x02"
    return properties_raw + crc32_property_trailer(0)
