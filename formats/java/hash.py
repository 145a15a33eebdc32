"""Java `String.hashCode` and the IndexFile key hash built on it (`IndexFile.indexKeyHashMethod`,
`IndexService.buildKey`)."""

from __future__ import annotations

from collections.abc import Iterable

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


def _table_size_for(n: int) -> int:
    """`HashMap.tableSizeFor`: the power of two at or above `n` (1 for n <= 1)."""
    size = 1
    while size < n:
        size <<= 1
    return size


class JavaHashMapKeys:
    """The keys of a `java.util.HashMap` (JDK 17) in its iteration order, through the calls that size it:
    `HashMap()`, `HashMap(Map)` and `putAll` (both pre-size from the other map's size: `putMapEntries`),
    `put` and `remove`. A resize doubles the table and keeps each bucket's order (`HashMap.resize`); tree
    bins (9 keys in one bucket of 64+) are not modelled: the small maps this serves never reach them."""

    def __init__(self, keys: Iterable[str] = ()) -> None:
        """`new HashMap<>()` followed by putAll(keys) - or `new HashMap<>(m)` for m's keys in order."""
        self.capacity = 0  # table == null
        self.threshold = 0
        self.keys: list[str] = []
        self.put_all(list(keys))

    def _resize(self) -> None:
        if self.capacity > 0:
            new_cap = self.capacity * 2
            new_thr = self.threshold * 2 if self.capacity >= 16 else int(new_cap * 0.75)
        elif self.threshold > 0:
            new_cap, new_thr = self.threshold, int(self.threshold * 0.75)
        else:
            new_cap, new_thr = 16, 12
        self.capacity, self.threshold = new_cap, new_thr

    def put_all(self, keys: list[str]) -> None:
        if keys:
            if self.capacity == 0:  # pre-size
                t = int(len(keys) / 0.75 + 1.0)
                if t > self.threshold:
                    self.threshold = _table_size_for(t)
            else:
                while len(keys) > self.threshold:
                    self._resize()
        for key in keys:
            self.put(key)

    def put(self, key: str) -> None:
        if self.capacity == 0:
            self._resize()
        if key in self.keys:
            return
        self.keys.append(key)  # insertion order; the bucket order is applied by `order`
        if len(self.keys) > self.threshold:
            self._resize()

    def remove(self, key: str) -> None:
        if key in self.keys:
            self.keys.remove(key)

    def order(self) -> list[str]:
        """Iteration order: buckets by index, each in insertion order (resizes keep it)."""
        mask = max(1, self.capacity) - 1
        return sorted(self.keys, key=lambda k: _hashmap_spread(k) & mask)


def java_concurrent_hashmap_order(keys: Iterable[str], initial_table: int = 16) -> list[str]:
    """Iteration order of a `java.util.concurrent.ConcurrentHashMap` with a first table of `initial_table`
    buckets (16: `new ConcurrentHashMap<>()`, what fastjson fills for a `ConcurrentMap` property) after
    `put`ting `keys` in this order (a key put again keeps its node).

    A bin appends at its tail; the table doubles once the count reaches 3/4 of it (`addCount`,
    `sizeCtl`), and `transfer` splits each bin as it does: the last run of nodes bound for the same half
    is moved whole, the nodes before it are prepended to their half one by one (so their order reverses).
    Tree bins (8 nodes in one bin of a table of 64+) are not modelled.
    """
    n = _table_size_for(max(1, initial_table))
    bins: list[list[tuple[int, str]]] = [[] for _ in range(n)]
    present: set[str] = set()
    size_ctl = n - (n >> 2)

    def transfer() -> None:
        nonlocal n, bins, size_ctl
        new: list[list[tuple[int, str]]] = [[] for _ in range(2 * n)]
        for i, chain in enumerate(bins):
            if not chain:
                continue
            last = len(chain) - 1
            run_bit = chain[last][0] & n
            while last > 0 and chain[last - 1][0] & n == run_bit:
                last -= 1
            low: list[tuple[int, str]] = chain[last:] if run_bit == 0 else []
            high: list[tuple[int, str]] = chain[last:] if run_bit != 0 else []
            for node in chain[:last]:
                if node[0] & n == 0:
                    low.insert(0, node)
                else:
                    high.insert(0, node)
            new[i], new[i + n] = low, high
        bins, size_ctl, n = new, (n << 1) - (n >> 1), 2 * n

    for key in keys:
        if key in present:
            continue
        present.add(key)
        h = (java_string_hash(key) & 0xFFFFFFFF) ^ ((java_string_hash(key) & 0xFFFFFFFF) >> 16)
        h &= 0x7FFFFFFF  # ConcurrentHashMap.spread: HASH_BITS
        bins[h & (n - 1)].append((h, key))
        if len(present) >= size_ctl:
            transfer()
    return [key for chain in bins for _, key in chain]
