"""Java `String.hashCode` and the IndexFile key hash built on it (FORMATS §0, §5.6)."""

from __future__ import annotations

INT_MIN = -(2**31)


def to_int32(value: int) -> int:
    """Wrap an integer to Java's signed 32-bit range."""
    value &= 0xFFFFFFFF
    return value - 0x100000000 if value & 0x80000000 else value


def java_string_hash(text: str) -> int:
    """`String.hashCode()`: 31*h + c over UTF-16 code units, as a signed int32."""
    data = text.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - 0x100000000 if h & 0x80000000 else h


def index_key_hash(key: str) -> int:
    """`IndexFile.indexKeyHashMethod`: abs of the Java hash, 0 for Integer.MIN_VALUE."""
    h = java_string_hash(key)
    return 0 if h == INT_MIN else abs(h)


def index_key(topic: str, key: str) -> str:
    """The string the broker indexes a key under: `topic#key`."""
    return f"{topic}#{key}"


def tags_code(tags: str | None) -> int:
    """ConsumeQueue tags code of a TAGS property: its Java hash, 0 when absent or empty."""
    return java_string_hash(tags) if tags else 0
