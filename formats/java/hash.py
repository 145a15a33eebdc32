"""Java `String.hashCode` and the IndexFile key hash built on it (`IndexFile.indexKeyHashMethod`,
`IndexService.buildKey`)."""

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


def _hashmap_spread(key: str | None) -> int:
    """`HashMap.hash(key)`: the String hash with its high half folded in, as an unsigned int (0 for null)."""
    if key is None:
        return 0
    h = java_string_hash(key) & 0xFFFFFFFF
    return h ^ (h >> 16)


def java_hashmap_order(keys, initial_capacity: int = 16, *, exact: bool = True) -> list[str]:
    """Iteration order of a `java.util.HashMap(initial_capacity)` (or HashSet) after `put`ting `keys` (None
    stands for a null key).

    Buckets in index order, each bucket in insertion order; a resize (size > 0.75 * capacity, or a bin
    of 9 nodes in a table smaller than 64, both possibly in one put) splits every bucket into its low
    and high halves keeping their order, as `HashMap.resize` does. A bin Java turns into a tree (9 keys
    in one of 64+ buckets) has an order this does not reproduce: `exact` raises ValueError then,
    otherwise that bin keeps insertion order. Re-putting a key keeps its node where it is.
    """
    capacity = 1
    while capacity < max(1, initial_capacity):
        capacity <<= 1
    threshold = int(capacity * 0.75)
    buckets: list[list[tuple[int, str | None]]] = [[] for _ in range(capacity)]
    present: set[str | None] = set()

    def resize() -> None:
        nonlocal capacity, threshold, buckets
        new: list[list[tuple[int, str]]] = [[] for _ in range(capacity * 2)]
        for index, bucket in enumerate(buckets):
            for h, key in bucket:
                new[index + capacity if h & capacity else index].append((h, key))
        capacity, threshold, buckets = capacity * 2, threshold * 2, new

    for key in keys:
        if key in present:
            continue
        present.add(key)
        h = _hashmap_spread(key)
        bucket = buckets[h & (capacity - 1)]
        bucket.append((h, key))
        if len(bucket) > 8:
            if capacity < 64:
                resize()
            elif exact:
                raise ValueError("9 keys collide in one HashMap bucket: Java would use a tree bin")
        if len(present) > threshold:
            resize()
    return [key for bucket in buckets for _, key in bucket]
