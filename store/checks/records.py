"""`RecordIndex`: the decoded records the checks judge against, and the columns derived from them
(tags codes, delay levels, index key hashes)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import pyarrow as pa

from formats.columnar.decoder import column_values, dictionary_indices
from formats.java.hash import java_string_hash
from formats.java.strings import _string_parts, java_hash_spans, java_hash_strings, pow31, split_tokens
from formats.message.commitlog import DEFAULT_DELAY_LEVELS_MS, java_parse_int
from formats.message.properties import PROPERTY_DELAY_TIME_LEVEL, decode_properties
from formats.names import SCHEDULE_TOPIC
from formats.structs import (
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_NOT_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
    TRANSACTION_TYPE_MASK,
)
from store.checks.problems import OK
from store.queue.lmq import PROPERTY_INNER_MULTI_DISPATCH, PROPERTY_INNER_MULTI_QUEUE_OFFSET


@dataclass
class RecordIndex:
    """The accepted message records of a store (or a range of it), sorted by physical offset.

    What the ConsumeQueue, index and checkpoint checks join against. Built from decoded batches with
    `RecordIndex.from_batches`; `keys`/`uniq_keys` are kept for the index coverage check only.
    """

    phy: np.ndarray  # int64, ascending
    size: np.ndarray  # int32 TOTALSIZE
    topic: np.ndarray  # int32 code into `topics`
    topics: list[str]
    queue_id: np.ndarray  # int32
    queue_offset: np.ndarray  # int64
    sys_flag: np.ndarray  # int32
    store_ts: np.ndarray  # int64
    tags_code: np.ndarray  # int64, as the dispatcher computes it
    file_starts: np.ndarray  # int64 start offsets of the commitlog files (for locations)
    file_names: list[str]  # their paths relative to the store root
    keys: pa.Array | None = None
    uniq_keys: pa.Array | None = None
    # row -> (INNER_MULTI_DISPATCH, INNER_MULTI_QUEUE_OFFSET) of the rows naming LMQ queues
    multi_dispatch: dict[int, tuple[str, str | None]] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.phy)

    @classmethod
    def from_batches(
        cls,
        batches: Iterable[pa.RecordBatch | pa.Table],
        file_starts: Sequence[int],
        file_names: Sequence[str],
        *,
        delay_levels: tuple[int, ...] = DEFAULT_DELAY_LEVELS_MS,
        with_keys: bool = False,
        below: int | None = None,
    ) -> RecordIndex:
        """Rows with status `ok` (and physicalOffset < `below`) of batches given in physical order."""
        builder = RecordIndexBuilder(delay_levels=delay_levels, with_keys=with_keys)
        for batch in batches:
            builder.add(batch, below=below)
        return builder.build(file_starts, file_names)

    def topic_code(self, topic: str) -> int:
        return self._topic_codes.get(topic, -1)

    @cached_property
    def _topic_codes(self) -> dict[str, int]:
        """Topic -> code (its first place in `topics`): asked once per queue, of stores with 10,000s."""
        codes: dict[str, int] = {}
        for code, topic in enumerate(self.topics):
            codes.setdefault(topic, code)
        return codes

    def find(self, phy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(index, found): the record starting exactly at each physical offset."""
        phy = np.asarray(phy, dtype=np.int64)
        idx = _search_sorted(self.phy, phy)
        clipped = np.minimum(idx, max(len(self.phy) - 1, 0))
        found = (idx < len(self.phy)) & (self.phy[clipped] == phy) if len(self.phy) else idx < 0
        return clipped, found

    def find_in_queue(self, phy: np.ndarray, topic: str, queue_id: int) -> tuple[np.ndarray, np.ndarray]:
        """`find` for the units of one queue: first among the records of `topic`/`queue_id` (a few
        thousand, searched in cache), then among all for the units that point elsewhere. The same answer
        as `find` (no two records start at one offset); a search of the whole log per unit misses the
        cache at every step, a queue's records lying about as many records apart as there are queues."""
        phy = np.asarray(phy, dtype=np.int64)
        rows = self._queue_rows(self.topic_code(topic), queue_id)
        if len(rows) == 0 or len(phy) == 0:
            return self.find(phy)
        own = self.phy[rows]
        at = np.minimum(np.searchsorted(own, phy), len(own) - 1)
        found = own[at] == phy
        idx = rows[at]
        if not found.all():
            elsewhere = np.flatnonzero(~found)
            idx[elsewhere], found[elsewhere] = self.find(phy[elsewhere])
        return idx, found

    def _queue_rows(self, code: int, queue_id: int) -> np.ndarray:
        """Rows of the records of topic code `code`, queue `queue_id`, in physical order."""
        groups = self._queue_groups
        if groups is None or code < 0:
            return np.zeros(0, dtype=np.int64)
        order, starts, qid_min, qid_span = groups
        if not qid_min <= queue_id < qid_min + qid_span:
            return np.zeros(0, dtype=np.int64)
        key = code * qid_span + queue_id - qid_min
        return order[starts[key] : starts[key + 1]]

    @cached_property
    def _queue_groups(self) -> tuple[np.ndarray, np.ndarray, int, int] | None:
        """The rows grouped by (topic, queue) with a stable counting sort: (rows, each group's first
        position in them, the least queue id, the queue ids' span); None when the groups are too many."""
        if len(self.phy) == 0:
            return None
        qid_min = int(self.queue_id.min())
        qid_span = int(self.queue_id.max()) - qid_min + 1
        groups = len(self.topics) * qid_span
        if groups > 1 << 24:
            return None
        key = self.topic.astype(np.int64) * qid_span + (self.queue_id.astype(np.int64) - qid_min)
        key = key.astype(np.int16 if groups <= 1 << 15 else np.int32)
        order = np.argsort(key, kind="stable")  # a radix sort for 16-bit keys
        starts = np.zeros(groups + 1, dtype=np.int64)
        np.cumsum(np.bincount(key, minlength=groups), out=starts[1:])
        return order, starts, qid_min, qid_span

    def locate(self, phy: np.ndarray) -> tuple[pa.Array, np.ndarray]:
        """(commitlog file name, position in it) of physical offsets."""
        return locate(phy, self.file_starts, self.file_names)

    def dispatchable(self) -> np.ndarray:
        """Records the ConsumeQueue dispatcher takes: transaction type NOT_TYPE or COMMIT."""
        t = self.sys_flag & TRANSACTION_TYPE_MASK
        return (t == TRANSACTION_NOT_TYPE) | (t == TRANSACTION_COMMIT_TYPE)


_INDEX_COLUMNS = (
    "physicalOffset",
    "totalSize",
    "topic",
    "queueId",
    "queueOffset",
    "sysFlag",
    "storeTimestamp",
    "tags",
    "properties",
)


@dataclass
class IndexPart:
    """The `RecordIndex` columns of consecutive records, built apart (a worker's range of the commitlog):
    topic codes index `topics`, multi_dispatch rows count from the part's first record."""

    topics: list[str]
    cols: dict[str, np.ndarray]
    keys: pa.Array | None
    uniq: pa.Array | None
    multi_dispatch: dict[int, tuple[str, str | None]]
    rows: int


class RecordIndexBuilder:
    """Collects the `RecordIndex` columns batch by batch, so decoded batches can be dropped early."""

    def __init__(
        self, *, delay_levels: tuple[int, ...] = DEFAULT_DELAY_LEVELS_MS, with_keys: bool = False
    ) -> None:
        self.delay_levels = delay_levels
        self.with_keys = with_keys
        self.codes: dict[str, int] = {}
        self.cols: dict[str, list[np.ndarray]] = {
            k: [] for k in ("phy", "size", "topic", "qid", "qoff", "sys", "ts", "tags")
        }
        self.keys: list[pa.Array] = []
        self.uniq: list[pa.Array] = []
        self.rows = 0
        self.multi_dispatch: dict[int, tuple[str, str | None]] = {}

    def add(self, batch: pa.RecordBatch | pa.Table, *, below: int | None = None) -> None:
        """Add the `ok` rows (below `below`) of a decoded batch; batches come in physical order."""
        if isinstance(batch, pa.Table):
            if batch.num_rows == 0:
                return
            batch = batch.combine_chunks().to_batches()[0]
        status = dictionary_indices(batch.column("status"))
        phy = column_values(batch.column("physicalOffset"))
        mask = status == OK
        if below is not None:
            mask &= phy < below
        k = int(np.count_nonzero(mask))
        if k == 0:
            return
        wanted = [c for c in _INDEX_COLUMNS if c in batch.schema.names]
        if self.with_keys:
            wanted += ["keys", "uniqKey"]
        batch = batch.select(wanted)
        if k != batch.num_rows:
            # the rows that are not `ok` end a decoded batch: the accepted ones are a prefix
            if mask[:k].all():
                batch = batch.slice(0, k)
            else:
                rows = np.flatnonzero(mask)
                batch = pa.RecordBatch.from_arrays(
                    [take_rows(batch.column(c), rows) for c in batch.schema.names], names=batch.schema.names
                )
        topic_col = batch.column("topic")
        mapping = np.array(
            [self.codes.setdefault(t, len(self.codes)) for t in topic_col.dictionary.to_pylist()],
            dtype=np.int32,
        )
        cols = self.cols
        cols["phy"].append(column_values(batch.column("physicalOffset")))
        cols["size"].append(column_values(batch.column("totalSize")))
        cols["topic"].append(
            mapping[dictionary_indices(topic_col)] if len(mapping) else dictionary_indices(topic_col)
        )
        cols["qid"].append(column_values(batch.column("queueId")))
        cols["qoff"].append(column_values(batch.column("queueOffset")))
        cols["sys"].append(column_values(batch.column("sysFlag")))
        cols["ts"].append(column_values(batch.column("storeTimestamp")))
        cols["tags"].append(batch_tags_codes(batch, self.delay_levels))
        if self.with_keys:
            self.keys.append(batch.column("keys"))
            self.uniq.append(batch.column("uniqKey"))
        if "properties" in batch.schema.names:
            for row, pair in multi_dispatch_of(batch.column("properties")).items():
                self.multi_dispatch[self.rows + row] = pair
        self.rows += batch.num_rows

    def part(self) -> IndexPart:
        """What was added so far, as one part (arrays of its own) for another builder's `add_part`."""
        cols = {name: np.concatenate(parts) for name, parts in self.cols.items() if parts}
        keys = _concat(self.keys, pa.string()) if self.with_keys else None
        uniq = _concat(self.uniq, pa.string()) if self.with_keys else None
        return IndexPart(list(self.codes), cols, keys, uniq, dict(self.multi_dispatch), self.rows)

    def add_part(self, part: IndexPart) -> None:
        """Add a part built from the records that follow the ones added so far."""
        if part.rows == 0:
            return
        mapping = np.array([self.codes.setdefault(t, len(self.codes)) for t in part.topics], dtype=np.int32)
        for name, values in part.cols.items():
            self.cols[name].append(mapping[values] if name == "topic" and len(mapping) else values)
        if self.with_keys:
            self.keys.append(part.keys)
            self.uniq.append(part.uniq)
        for row, pair in part.multi_dispatch.items():
            self.multi_dispatch[self.rows + row] = pair
        self.rows += part.rows

    def build(self, file_starts: Sequence[int], file_names: Sequence[str]) -> RecordIndex:
        def cat(name: str, dtype: Any) -> np.ndarray:
            parts = self.cols[name]
            return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype)

        return RecordIndex(
            phy=cat("phy", np.int64),
            size=cat("size", np.int32),
            topic=cat("topic", np.int32),
            topics=list(self.codes),
            queue_id=cat("qid", np.int32),
            queue_offset=cat("qoff", np.int64),
            sys_flag=cat("sys", np.int32),
            store_ts=cat("ts", np.int64),
            tags_code=cat("tags", np.int64),
            file_starts=np.asarray(file_starts, dtype=np.int64),
            file_names=list(file_names),
            keys=_concat(self.keys, pa.string()) if self.with_keys else None,
            uniq_keys=_concat(self.uniq, pa.string()) if self.with_keys else None,
            multi_dispatch=self.multi_dispatch,
        )


# below these sizes numpy's searchsorted is as quick, and a small store's command loads no kernel
_GALLOP_MIN_NEEDLES = 1024
_GALLOP_MIN_HAY = 1 << 16


def _search_sorted(hay: np.ndarray, needles: np.ndarray) -> np.ndarray:
    """np.searchsorted(hay, needles): by the galloping kernel (formats/columnar/_search_kernels.py) where
    the needles ascend (a ConsumeQueue's units) and both are large, else by numpy."""
    if len(needles) < _GALLOP_MIN_NEEDLES or len(hay) < _GALLOP_MIN_HAY or np.any(needles[1:] < needles[:-1]):
        return np.searchsorted(hay, needles)
    from formats.columnar.kernels import kernel

    out = np.empty(len(needles), dtype=np.int64)
    kernel("search_sorted")(np.ascontiguousarray(hay, dtype=np.int64), np.ascontiguousarray(needles), out)
    return out


def locate(
    phy: np.ndarray, file_starts: np.ndarray, file_names: Sequence[str]
) -> tuple[pa.Array, np.ndarray]:
    """(file name, position) of physical offsets in a mapped-file queue given its files' starts."""
    phy = np.asarray(phy, dtype=np.int64)
    if len(file_starts) == 0:
        return pa.nulls(len(phy), pa.string()), phy
    i = np.clip(np.searchsorted(file_starts, phy, side="right") - 1, 0, len(file_starts) - 1)
    names = pa.DictionaryArray.from_arrays(pa.array(i.astype(np.int32)), pa.array(list(file_names)))
    return names.dictionary_decode(), phy - file_starts[i]


def take_rows(arr: pa.Array | pa.ChunkedArray, rows: np.ndarray) -> pa.Array:
    """`arr.take(rows)`, also for binary_view columns (pyarrow has no take kernel for them): their
    16-byte views are gathered, the data buffers shared. Binary views come back as plain binary."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    rows = np.asarray(rows, dtype=np.int64)
    if not pa.types.is_binary_view(arr.type) and not pa.types.is_string_view(arr.type):
        return arr.take(pa.array(rows))
    buffers = arr.buffers()
    views = np.frombuffer(buffers[1], dtype=np.uint8).reshape(-1, 16)[arr.offset : arr.offset + len(arr)]
    valid = arr.is_valid().to_numpy(zero_copy_only=False)[rows]
    bitmap = None if valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))
    picked = pa.Array.from_buffers(
        arr.type, len(rows), [bitmap, pa.py_buffer(np.ascontiguousarray(views[rows]))] + buffers[2:]
    )
    return picked.cast(pa.binary() if pa.types.is_binary_view(arr.type) else pa.string())


def _concat(parts: list[pa.Array], kind: pa.DataType) -> pa.Array:
    if not parts:
        return pa.array([], kind)
    return pa.chunked_array([p.cast(kind) for p in parts], kind).combine_chunks()


def batch_tags_codes(
    batch: pa.RecordBatch, delay_levels: tuple[int, ...] = DEFAULT_DELAY_LEVELS_MS
) -> np.ndarray:
    """The ConsumeQueue tags code of every row (`MessageExtBrokerInner.tagsString2tagsCode`): TAGS hash
    sign-extended, 0 without TAGS,
    the delivery time for SCHEDULE_TOPIC_XXXX records with a DELAY level > 0."""
    hashes, _, valid = java_hash_strings(batch.column("tags"))
    codes = np.where(valid, hashes, 0).astype(np.int64)
    topic = batch.column("topic")
    dictionary = topic.dictionary.to_pylist()
    if SCHEDULE_TOPIC in dictionary:
        sched = np.flatnonzero(dictionary_indices(topic) == dictionary.index(SCHEDULE_TOPIC))
        sched = sched[topic.is_valid().to_numpy(zero_copy_only=False)[sched]]
        if len(sched):
            ts = column_values(batch.column("storeTimestamp"))[sched]
            props = take_rows(batch.column("properties"), sched)
            level = delay_levels_of(props)
            level = np.minimum(level, len(delay_levels))
            due = level > 0
            table = np.asarray((0, *delay_levels), dtype=np.int64)
            codes[sched[due]] = ts[due] + table[level[due]]
    return codes


_DELAY_PAIR = PROPERTY_DELAY_TIME_LEVEL.encode() + b"\x01"
_DIGITS_MAX = 9  # longer (or signed with +, or non-ASCII) values go through Integer.parseInt in Python


def delay_levels_of(properties: pa.Array) -> np.ndarray:
    """The DELAY level of each PROPERTIES value as the broker reads it (the last `DELAY` pair with a
    non-empty value, `Integer.parseInt`); 0 where there is none. Byte searches over the whole buffer."""
    n = len(properties)
    out = np.zeros(n, dtype=np.int64)
    if n == 0:
        return out
    data, starts, lengths, valid = _binary_parts(properties)
    lengths = np.where(valid, lengths, 0)
    ends = starts + lengths
    lo, hi = int(starts[0]), int(ends[-1])
    region = data[lo:hi]
    k = len(_DELAY_PAIR)
    if len(region) < k:
        return out
    hit = np.ones(len(region) - k + 1, dtype=bool)
    for j, c in enumerate(_DELAY_PAIR):
        hit &= region[j : len(region) - k + 1 + j] == c
    pos = np.flatnonzero(hit) + lo
    if len(pos) == 0:
        return out
    row = np.searchsorted(ends, pos, side="right")
    inside = row < n
    pos, row = pos[inside], row[inside]
    inside = pos + k <= ends[row]
    pos, row = pos[inside], row[inside]
    at_part_start = (pos == starts[row]) | (data[np.maximum(pos - 1, 0)] == 2)
    pos, row = pos[at_part_start], row[at_part_start]
    twos = np.flatnonzero(region == 2) + lo
    v_start = pos + k
    nxt = np.searchsorted(twos, v_start)
    v_end = np.where(nxt < len(twos), twos[np.minimum(nxt, max(len(twos) - 1, 0))], hi) if len(twos) else hi
    v_end = np.minimum(v_end, ends[row])
    keep = v_end > v_start  # an empty value is ignored by the reader
    v_start, v_end, row = v_start[keep], v_end[keep], row[keep]
    if len(row) == 0:
        return out
    last = np.flatnonzero(np.append(row[1:] != row[:-1], True))  # the last pair of a row wins
    v_start, v_end, row = v_start[last], v_end[last], row[last]
    length = v_end - v_start
    neg = data[v_start] == ord("-")
    digits = length - neg
    simple = (digits >= 1) & (digits <= _DIGITS_MAX)
    width = _DIGITS_MAX
    cols = np.arange(width, dtype=np.int64)[:, None]
    first = v_start + neg
    idx = first[None, :] + cols
    used = cols < digits[None, :]
    mat = data[np.where(used, np.minimum(idx, len(data) - 1), 0)].astype(np.int64) - ord("0")
    simple &= ((mat >= 0) & (mat <= 9) | ~used).all(axis=0)
    value = np.zeros(len(row), dtype=np.int64)
    for j in range(width):
        value = np.where(used[j], value * 10 + mat[j], value)
    out[row[simple]] = np.where(neg, -value, value)[simple]
    for r, a, b in zip(
        row[~simple].tolist(), v_start[~simple].tolist(), v_end[~simple].tolist(), strict=True
    ):
        out[r] = java_parse_int(bytes(data[a:b]).decode("utf-8", "replace")) or 0
    return out


_MULTI_PAIR = (PROPERTY_INNER_MULTI_DISPATCH + "\x01").encode()


def multi_dispatch_of(properties: pa.Array) -> dict[int, tuple[str, str | None]]:
    """Row -> (INNER_MULTI_DISPATCH, INNER_MULTI_QUEUE_OFFSET) of the PROPERTIES values naming LMQ queues.
    One C-speed search over the buffer; only the rows that have the property are decoded."""
    out: dict[int, tuple[str, str | None]] = {}
    n = len(properties)
    if n == 0:
        return out
    data, starts, lengths, valid = _binary_parts(properties)
    ends = starts + np.where(valid, lengths, 0)
    lo, hi = int(starts[0]), int(ends[-1])
    region = data[lo:hi].tobytes()
    at = region.find(_MULTI_PAIR)
    while at >= 0:
        row = int(np.searchsorted(ends, lo + at, side="right"))
        if row < n and valid[row] and row not in out:
            props = decode_properties(data[int(starts[row]) : int(ends[row])].tobytes())
            value = props.get(PROPERTY_INNER_MULTI_DISPATCH)
            if value is not None:
                out[row] = (value, props.get(PROPERTY_INNER_MULTI_QUEUE_OFFSET))
        at = region.find(_MULTI_PAIR, max(at + 1, int(ends[min(row, n - 1)]) - lo))
    return out


def _binary_parts(arr: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(data bytes, starts, lengths, valid) of a binary (or string) array."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if not pa.types.is_binary(arr.type):
        arr = arr.cast(pa.binary())
    return _string_parts(arr.view(pa.string()))


def index_key_hashes(records: RecordIndex, rows: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(record row, keyHash) of every index key `IndexService.buildIndex` writes:
    `topic#UNIQ_KEY`, then `topic#k` for every non-empty KEYS part; none for ROLLBACK records.

    The hash of `topic#key` is h(topic#) * 31**len(key) + h(key) mod 2**32, so keys are never joined.
    """
    if records.keys is None or records.uniq_keys is None:
        raise ValueError("RecordIndex built without keys (with_keys=True)")
    eligible = (records.sys_flag & TRANSACTION_TYPE_MASK) != TRANSACTION_ROLLBACK_TYPE
    if rows is not None:
        mask = np.zeros(len(records), dtype=bool)
        mask[rows] = True
        eligible &= mask
    prefix = np.array(
        [java_string_hash(t + "#") & 0xFFFFFFFF for t in records.topics] or [0], dtype=np.uint64
    )
    out_rows: list[np.ndarray] = []
    out_hash: list[np.ndarray] = []
    u_hash, u_len, u_valid = java_hash_strings(records.uniq_keys)
    sel = np.flatnonzero(u_valid & eligible)
    out_rows.append(sel)
    out_hash.append(_combine(prefix[records.topic[sel]], u_hash[sel], u_len[sel]))
    k_row, data, k_start, k_len = split_tokens(records.keys)
    if len(k_row):
        keep = eligible[k_row]
        k_row, k_start, k_len = k_row[keep], k_start[keep], k_len[keep]
        k_hash, k_len16 = java_hash_spans(data, k_start, k_len)
        out_rows.append(k_row)
        out_hash.append(_combine(prefix[records.topic[k_row]], k_hash, k_len16))
    rows_all = np.concatenate(out_rows)
    hash_all = np.concatenate(out_hash)
    order = np.argsort(rows_all, kind="stable")  # UNIQ_KEY first, then KEYS parts, per record
    return rows_all[order], hash_all[order]


def _combine(prefix: np.ndarray, key_hash: np.ndarray, key_len16: np.ndarray) -> np.ndarray:
    """indexKeyHashMethod(topic#key) from h(topic#), h(key) and len(key)."""
    mask = np.uint64(0xFFFFFFFF)
    h = (prefix * pow31(key_len16) + (key_hash.astype(np.int64) & 0xFFFFFFFF).astype(np.uint64)) & mask
    h32 = h.astype(np.uint32).view(np.int32).astype(np.int64)
    out = np.abs(h32)
    out[h32 == -(2**31)] = 0
    return out
