"""Store checks as pure functions over Arrow batches and numpy arrays (`mqtool verify` and the audit).

Inputs are decoded commitlog record batches (`formats.columnar.MESSAGE_SCHEMA`), ConsumeQueue units
(`store.consumequeue.NATIVE_UNIT_DTYPE`), IndexFile slot/entry views (`formats.indexfile`) and small
metadata; the output is rows of a problems table (`PROBLEM_SCHEMA`: store, file, offset, kind, severity,
detail). Nothing here reads files, imports numba or Spark, or loops over records in Python (only over the
few problem rows, over the rare non-ASCII strings, and over records of SCHEDULE_TOPIC_XXXX), so a Spark
executor can run the same functions on its split.

`file` is the path relative to the store root (`commitlog/00000000000000000000`); `offset` is the byte
position inside that file (a physical offset = file name + offset; details name it too).

Severities, decided here (`mqtool verify` exits non-zero only for errors):

* error - data the broker would reject, cut or never serve: a record failing the broker's check
  (bad_magic, size_chain, crc_mismatch, bad_property) or a torn tail (truncated_tail), zeros before
  later data (premature_end), a PHYSICALOFFSET field that is not the record's position
  (phy_offset_field), commitlog files of the wrong size or with gaps, ConsumeQueue units that disagree
  with their record (cq_*_mismatch, cq_points_outside, cq_not_record_start, cq_order), a dispatchable
  record without its unit below the dispatch horizon (cq_missing_unit), broken index headers and
  chains, index entries no lookup reaches or that point inside a record (index_*), message keys no
  lookup finds (index_key_unreachable, --deep), a checkpoint newer than the data (checkpoint_ahead).
  A torn tail is an error too: the broker drops that record (golden store-c, like the broker's own
  verify, is not clean).
* warning - facts of an unclean stop or of lag that the broker repairs or tolerates: `abort` present,
  records after the dispatch horizon after a crash (undispatched; abnormal recovery dispatches them - an
  error without `abort`, as 5.x never dispatches them then), index lagging the ConsumeQueues
  (index_behind), non-zero bytes after the end of data, BLANK size, ConsumeQueue bytes after the last
  unit, index files the broker drops on an abnormal start, a broker holding the store lock.
* info - facts: ConsumeQueue prefix units and index entries that point into commitlog files deleted by
  retention (cq_expired_units, index_expired_entries), records older than the first index file
  (not_indexed), ConsumeQueueExt tags codes not compared, where the broker's recovery would start and
  end (recovery).

Broker quirks honoured: PREPARED/ROLLBACK records get no ConsumeQueue unit, ROLLBACK records no index
entry; the tags code of SCHEDULE_TOPIC_XXXX records is the delivery time; LMQ queues (`%LMQ%...`) hold
units of records of other topics (only size is compared); a pre-blank filler below the min offset is
fine; an index file's first entry may carry a time diff against the copied begin time (never checked);
a key's entries may straddle two index files (coverage is checked over all files); the last indexed
record may be indexed twice after a re-dispatch.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from formats.columnar import STATUS_NAMES
from formats.commitlog import DEFAULT_DELAY_LEVELS_MS, SCHEDULE_TOPIC, java_parse_int
from formats.consumequeue import FILLER_SIZE, MAX_ADDR
from formats.javahash import java_string_hash
from formats.properties import PROPERTY_DELAY_TIME_LEVEL
from formats.structs import (
    CQ_STORE_UNIT_SIZE,
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_NOT_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
    TRANSACTION_TYPE_MASK,
)

PROBLEM_SCHEMA = pa.schema(
    [
        pa.field("store", pa.string()),
        pa.field("file", pa.string()),
        pa.field("offset", pa.int64()),
        pa.field("kind", pa.string(), nullable=False),
        pa.field("severity", pa.string(), nullable=False),
        pa.field("detail", pa.string(), nullable=False),
    ]
)

ERROR, WARNING, INFO = "error", "warning", "info"
SEVERITY_ORDER = {ERROR: 0, WARNING: 1, INFO: 2}

# kind -> default severity (a call may override it, e.g. undispatched without `abort`)
KINDS: dict[str, str] = {
    # commitlog
    "commitlog_unreadable": ERROR,
    "commitlog_file_size": ERROR,
    "commitlog_file_gap": ERROR,
    "commitlog_empty_last_file": INFO,
    "bad_magic": ERROR,
    "size_chain": ERROR,
    "crc_mismatch": ERROR,
    "bad_property": ERROR,
    "truncated_tail": ERROR,
    "premature_end": ERROR,
    "phy_offset_field": ERROR,
    "nonzero_after_end": WARNING,
    "blank_size": WARNING,
    "nonzero_after_blank": INFO,
    # consume queues
    "cq_file": ERROR,
    "cq_not_checked": WARNING,
    "cq_order": ERROR,
    "cq_points_outside": ERROR,
    "cq_not_record_start": ERROR,
    "cq_size_mismatch": ERROR,
    "cq_topic_mismatch": ERROR,
    "cq_queue_mismatch": ERROR,
    "cq_queue_offset_mismatch": ERROR,
    "cq_tags_code_mismatch": ERROR,
    "cq_missing_unit": ERROR,
    "cq_nonzero_after_end": WARNING,
    "cq_dirty_files": WARNING,
    "cq_expired_units": INFO,
    "cq_ext_tags": INFO,
    "undispatched": WARNING,
    "deleted_topic": INFO,
    # index
    "index_file": ERROR,
    "index_header": ERROR,
    "index_chain": ERROR,
    "index_unreachable": ERROR,
    "index_points_nowhere": ERROR,
    "index_key_unreachable": ERROR,
    "index_beyond_end": WARNING,
    "index_behind": WARNING,
    "index_dropped_on_recovery": WARNING,
    "index_expired_entries": INFO,
    "not_indexed": INFO,
    # checkpoint, state
    "checkpoint_missing": WARNING,
    "checkpoint_unreadable": ERROR,
    "checkpoint_ahead": ERROR,
    "abort_present": WARNING,
    "broker_running": WARNING,
    "recovery": INFO,
    "more": INFO,
}

FAILURE_KIND = {
    "bad_magic": "bad_magic",
    "truncated": "size_chain",
    "size_mismatch": "size_chain",
    "crc_mismatch": "crc_mismatch",
    "bad_property": "bad_property",
}
_STATUS = {name: code for code, name in enumerate(STATUS_NAMES)}
OK, BLANK, END = _STATUS["ok"], _STATUS["blank"], _STATUS["end"]


# --- the problems table --------------------------------------------------------------------------


def _as_string_array(value: Any, n: int) -> pa.Array:
    if isinstance(value, pa.ChunkedArray):
        value = value.combine_chunks()
    if isinstance(value, pa.Array):
        return value.cast(pa.string())
    if isinstance(value, str) or value is None:
        return pa.array([value] * n, pa.string())
    return pa.array(list(value), pa.string())


def fmt(*parts: Any) -> pa.Array:
    """Vectorised text: strings are repeated, numpy/Arrow arrays are formatted element-wise."""
    arrays: list[Any] = []
    n = None
    for p in parts:
        if isinstance(p, str):
            arrays.append(p)
            continue
        arr = p if isinstance(p, pa.Array | pa.ChunkedArray) else pa.array(np.asarray(p))
        arr = arr.cast(pa.string())
        n = len(arr)
        arrays.append(arr)
    if n is None:
        return pa.array(["".join(arrays)], pa.string())
    return pc.binary_join_element_wise(*arrays, "")


class ProblemList:
    """Collects problem rows; vectorised groups go in as arrays, single rows as tuples.

    `max_rows` caps each `add_many` call: the first rows are kept and one `more` row counts the rest.
    """

    def __init__(self, store: str | None = None, max_rows: int | None = 1000) -> None:
        self.store = store
        self.max_rows = max_rows
        self._rows: list[tuple[str | None, int | None, str, str, str]] = []
        self._tables: list[pa.Table] = []

    def add(
        self, kind: str, file: str | None, offset: int | None, detail: str, severity: str | None = None
    ) -> None:
        self._rows.append(
            (file, None if offset is None else int(offset), kind, severity or KINDS[kind], detail)
        )

    def add_many(
        self,
        kind: str,
        files: Any,
        offsets: np.ndarray | Sequence[int],
        details: Any,
        severity: str | None = None,
    ) -> None:
        offsets = np.asarray(offsets, dtype=np.int64)
        n = len(offsets)
        if n == 0:
            return
        files_arr = _as_string_array(files, n)
        details_arr = _as_string_array(details, n)
        keep = n if self.max_rows is None else min(n, self.max_rows)
        sev = severity or KINDS[kind]
        self._tables.append(
            pa.table(
                {
                    "store": pa.array([self.store] * keep, pa.string()),
                    "file": files_arr.slice(0, keep),
                    "offset": pa.array(offsets[:keep]),
                    "kind": pa.array([kind] * keep, pa.string()),
                    "severity": pa.array([sev] * keep, pa.string()),
                    "detail": details_arr.slice(0, keep),
                },
                schema=PROBLEM_SCHEMA,
            )
        )
        if keep < n:
            last_file = files_arr[n - 1].as_py()
            self.add(
                "more",
                last_file,
                int(offsets[n - 1]),
                f"{n - keep} more {kind} problems like the above ({sev}); the last one is here",
                sev,
            )

    def extend(self, table: pa.Table) -> None:
        if table.num_rows:
            self._tables.append(table.cast(PROBLEM_SCHEMA))

    def __len__(self) -> int:
        return len(self._rows) + sum(t.num_rows for t in self._tables)

    def table(self) -> pa.Table:
        parts = list(self._tables)
        if self._rows:
            files, offsets, kinds, sevs, details = zip(*self._rows, strict=True)
            parts.append(
                pa.table(
                    {
                        "store": pa.array([self.store] * len(kinds), pa.string()),
                        "file": pa.array(files, pa.string()),
                        "offset": pa.array(offsets, pa.int64()),
                        "kind": pa.array(kinds, pa.string()),
                        "severity": pa.array(sevs, pa.string()),
                        "detail": pa.array(details, pa.string()),
                    },
                    schema=PROBLEM_SCHEMA,
                )
            )
        if not parts:
            return PROBLEM_SCHEMA.empty_table()
        return pa.concat_tables(parts)


def sort_problems(table: pa.Table) -> pa.Table:
    """Problems by file, then offset (rows without a file first)."""
    if table.num_rows == 0:
        return table
    return table.sort_by([("file", "ascending"), ("offset", "ascending"), ("kind", "ascending")])


def count_by_severity(table: pa.Table) -> dict[str, int]:
    counts = {ERROR: 0, WARNING: 0, INFO: 0}
    for row in table.group_by("severity").aggregate([("kind", "count")]).to_pylist():
        counts[row["severity"]] = row["kind_count"]
    return counts


# --- Java String.hashCode over Arrow strings ----------------------------------------------------

_HASH_CHUNK = 1 << 22  # bytes of string data hashed per step
_INV31 = pow(31, -1, 2**32)


@functools.lru_cache(maxsize=2)
def _power_tables(n: int) -> tuple[np.ndarray, np.ndarray]:
    """(31**k, 31**-(k+1)) mod 2**32 for k in [0, n], uint32 (31 is odd, so it has an inverse)."""
    pw = np.full(n + 1, 31, dtype=np.uint32)
    pw[0] = 1
    inv = np.full(n + 1, _INV31, dtype=np.uint32)
    return np.cumprod(pw, dtype=np.uint32), np.cumprod(inv, dtype=np.uint32)


@functools.lru_cache(maxsize=8)
def _pow31_table(n: int) -> np.ndarray:
    """31**k mod 2**32 for k in [0, n], as uint64."""
    return _power_tables(max(n, _HASH_CHUNK))[0][: n + 1].astype(np.uint64)


def pow31(k: np.ndarray) -> np.ndarray:
    """31**k mod 2**32 element-wise (uint64)."""
    k = np.asarray(k, dtype=np.int64)
    top = int(k.max(initial=0))
    return _pow31_table(1 << max(8, top.bit_length()))[k]


def _java_utf16(text: str) -> tuple[int, int]:
    return java_string_hash(text), len(text.encode("utf-16-le", "surrogatepass")) // 2


def java_hash_spans(
    data: np.ndarray, starts: np.ndarray, lengths: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Java `String.hashCode` (int64 holding the int32) and UTF-16 length of UTF-8 spans of `data`.

    With w_j = c_j * 31**-(j+1) and prefix sums S of w (all mod 2**32), the hash of bytes [a, b) is
    31**b * (S[b] - S[a]): a few vectorised passes over the bytes, no per-string loop. Spans holding
    non-ASCII bytes (UTF-16 code units differ from bytes) are recomputed in Python.
    """
    data = np.asarray(data, dtype=np.uint8)
    starts = np.asarray(starts, dtype=np.int64)
    lengths = np.asarray(lengths, dtype=np.int64)
    n = len(starts)
    hashes = np.zeros(n, dtype=np.uint32)
    len16 = lengths.copy()
    if n == 0:
        return hashes.astype(np.int64), len16
    order = None
    if np.any(np.diff(starts) < 0):
        order = np.argsort(starts, kind="stable")
        starts, lengths = starts[order], lengths[order]
    ends = starts + lengths
    reach = np.maximum.accumulate(ends)
    pw, inv = _power_tables(_HASH_CHUNK)
    slow: list[np.ndarray] = [np.flatnonzero(lengths > _HASH_CHUNK)]
    out = np.zeros(n, dtype=np.uint32)
    i = 0
    while i < n:
        base = int(starts[i])
        j = max(i + 1, int(np.searchsorted(reach, base + _HASH_CHUNK, side="right")))
        extent = int(reach[j - 1]) - base
        if extent > _HASH_CHUNK:  # a single span longer than a chunk: left to the slow path
            i = j
            continue
        local = data[base : base + extent]
        prefix = np.zeros(extent + 1, dtype=np.uint32)
        np.cumsum(local * inv[:extent], dtype=np.uint32, out=prefix[1:])
        a = starts[i:j] - base
        b = ends[i:j] - base
        out[i:j] = (prefix[b] - prefix[a]) * pw[b]
        if extent and local.max() >= 0x80:
            count = np.zeros(extent + 1, dtype=np.int64)
            np.cumsum(local >= 0x80, dtype=np.int64, out=count[1:])
            wide = np.flatnonzero(count[b] != count[a])
            if len(wide):
                slow.append(wide + i)
        i = j
    for k in np.unique(np.concatenate(slow)).tolist():
        s, ln = int(starts[k]), int(lengths[k])
        h32, n16 = _java_utf16(bytes(data[s : s + ln]).decode("utf-8", "replace"))
        out[k] = h32 & 0xFFFFFFFF
        len16[k if order is None else order[k]] = n16
    if order is None:
        hashes = out
    else:
        hashes[order] = out
    return hashes.view(np.int32).astype(np.int64), len16


def _string_parts(arr: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(data bytes, starts, lengths, valid) of a string array (offsets relative to data)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if not pa.types.is_string(arr.type):
        arr = arr.cast(pa.string())
    n = len(arr)
    _, offs_buf, data_buf = arr.buffers()
    offsets = np.frombuffer(offs_buf, dtype=np.int32, count=n + 1, offset=arr.offset * 4).astype(np.int64)
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    valid = arr.is_valid().to_numpy(zero_copy_only=False)
    return data, offsets[:-1], np.diff(offsets), valid


def java_hash_strings(arr: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(hash, UTF-16 length, valid) of every string of an Arrow string array; nulls hash as 0."""
    data, starts, lengths, valid = _string_parts(arr)
    lengths = np.where(valid, lengths, 0)
    hashes, len16 = java_hash_spans(data, starts, lengths)
    return hashes, len16, valid


def split_tokens(arr: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """KEYS split as `String.split(" ")` keeps its non-empty parts: (row, data, starts, lengths)."""
    data, starts, lengths, valid = _string_parts(arr)
    if len(starts) == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, data, empty, empty
    lo = int(starts[0])
    hi = int(starts[-1] + lengths[-1])
    region = data[lo:hi]
    nonspace = region != 0x20
    # a token boundary also falls at every string start / end
    string_start = np.zeros(hi - lo + 1, dtype=bool)
    string_start[(starts - lo)[valid]] = True
    string_start[(starts + lengths - lo)[valid]] = True
    ns = np.concatenate(([False], nonspace, [False]))
    begin = ns[1:-1] & (~ns[:-2] | string_start[:-1])
    finish = ns[1:-1] & (~ns[2:] | string_start[1:])
    tok_start = np.flatnonzero(begin) + lo
    tok_end = np.flatnonzero(finish) + lo + 1
    row = np.searchsorted(starts + lengths, tok_start, side="right")
    keep = valid[np.minimum(row, len(valid) - 1)]
    return row[keep], data, tok_start[keep], (tok_end - tok_start)[keep]


# --- decoded records ------------------------------------------------------------------------------


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
        try:
            return self.topics.index(topic)
        except ValueError:
            return -1

    def find(self, phy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(index, found): the record starting exactly at each physical offset."""
        phy = np.asarray(phy, dtype=np.int64)
        idx = np.searchsorted(self.phy, phy)
        clipped = np.minimum(idx, max(len(self.phy) - 1, 0))
        found = (idx < len(self.phy)) & (self.phy[clipped] == phy) if len(self.phy) else idx < 0
        return clipped, found

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

    def add(self, batch: pa.RecordBatch | pa.Table, *, below: int | None = None) -> None:
        """Add the `ok` rows (below `below`) of a decoded batch; batches come in physical order."""
        if isinstance(batch, pa.Table):
            if batch.num_rows == 0:
                return
            batch = batch.combine_chunks().to_batches()[0]
        status = _indices(batch.column("status"))
        phy = _np(batch.column("physicalOffset"))
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
        cols["phy"].append(_np(batch.column("physicalOffset")))
        cols["size"].append(_np(batch.column("totalSize")))
        cols["topic"].append(mapping[_indices(topic_col)] if len(mapping) else _indices(topic_col))
        cols["qid"].append(_np(batch.column("queueId")))
        cols["qoff"].append(_np(batch.column("queueOffset")))
        cols["sys"].append(_np(batch.column("sysFlag")))
        cols["ts"].append(_np(batch.column("storeTimestamp")))
        cols["tags"].append(batch_tags_codes(batch, self.delay_levels))
        if self.with_keys:
            self.keys.append(batch.column("keys"))
            self.uniq.append(batch.column("uniqKey"))

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
        )


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


def _np(col: pa.Array | pa.ChunkedArray) -> np.ndarray:
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    return col.to_numpy(zero_copy_only=False)


def _indices(col: pa.Array | pa.ChunkedArray) -> np.ndarray:
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    indices = col.indices
    if indices.null_count:
        indices = indices.fill_null(0)
    return indices.to_numpy(zero_copy_only=False)


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
    """The ConsumeQueue tags code of every row (FORMATS §4.3): TAGS hash sign-extended, 0 without TAGS,
    the delivery time for SCHEDULE_TOPIC_XXXX records with a DELAY level > 0."""
    hashes, _, valid = java_hash_strings(batch.column("tags"))
    codes = np.where(valid, hashes, 0).astype(np.int64)
    topic = batch.column("topic")
    dictionary = topic.dictionary.to_pylist()
    if SCHEDULE_TOPIC in dictionary:
        sched = np.flatnonzero(_indices(topic) == dictionary.index(SCHEDULE_TOPIC))
        sched = sched[topic.is_valid().to_numpy(zero_copy_only=False)[sched]]
        if len(sched):
            ts = _np(batch.column("storeTimestamp"))[sched]
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


def _binary_parts(arr: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(data bytes, starts, lengths, valid) of a binary (or string) array."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if not pa.types.is_binary(arr.type):
        arr = arr.cast(pa.binary())
    return _string_parts(arr.view(pa.string()))


def index_key_hashes(records: RecordIndex, rows: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(record row, keyHash) of every index key `IndexService.buildIndex` writes (FORMATS §5.8):
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


# --- commitlog -----------------------------------------------------------------------------------


_FILE_COLUMNS = ("physicalOffset", "totalSize", "physicalOffsetField", "storeTimestamp", "status")


@dataclass
class CommitLogFile:
    """One commitlog file as the checks see it (filled by `store.scan`, or by an audit executor)."""

    name: str  # relative path, e.g. commitlog/00000000000000000000
    start: int
    size: int
    batch: pa.RecordBatch | None  # decode from position 0: ok rows, then the row that stopped the walk
    data_end: int = 0  # position after the last non-zero byte in [stop row, file end), else the stop row
    beyond: pa.RecordBatch | None = None  # records resynchronised after a rejected record
    stop_data_end: int | None = None  # the same inside a rejected record's extent (its written prefix)

    def stop(self) -> tuple[str, int, int] | None:
        """(status, position, totalSize) of the last row, None for an empty file."""
        if self.batch is None or self.batch.num_rows == 0:
            return None
        last = self.batch.num_rows - 1
        status = STATUS_NAMES[int(_indices(self.batch.column("status"))[last])]
        pos = int(_np(self.batch.column("physicalOffset"))[last]) - self.start
        total = int(_np(self.batch.column("totalSize"))[last])
        return status, pos, total

    def slim(self) -> None:
        """Keep only the columns `check_commitlog` reads (drops strings and properties)."""
        if self.batch is not None:
            self.batch = self.batch.select(list(_FILE_COLUMNS))
        if self.beyond is not None:
            self.beyond = self.beyond.select(list(_FILE_COLUMNS))

    def message_count(self) -> int:
        if self.batch is None:
            return 0
        return int(np.count_nonzero(_indices(self.batch.column("status")) == OK))

    def beyond_count(self) -> int:
        if self.beyond is None:
            return 0
        return int(np.count_nonzero(_indices(self.beyond.column("status")) == OK))


@dataclass
class CommitLogVerdict:
    """Where the whole-store walk ends, and why (the broker's valid end from the first file)."""

    valid_end: int
    stop_file: int | None  # index into the file list of the file holding the end
    stop_status: str  # end | blank (after the last file) | a failure status | empty
    stop_position: int
    torn: bool
    records_after: int  # accepted records after the valid end (resynchronised or in later files)


def check_commitlog(
    files: Sequence[CommitLogFile], problems: ProblemList, *, file_size: int | None = None
) -> CommitLogVerdict:
    """File sizes and names, each file's record walk, the valid end and what lies after it."""
    if file_size is None:
        sizes = [f.size for f in files if f.size > 0]
        file_size = sizes[0] if sizes else 0
    for i, f in enumerate(files):
        if f.size == 0:
            if i == len(files) - 1:
                problems.add("commitlog_empty_last_file", f.name, 0, "zero-length last file (5.x deletes it)")
            else:
                problems.add("commitlog_file_size", f.name, 0, "zero-length file before the last one")
            continue
        if f.size != file_size:
            problems.add(
                "commitlog_file_size",
                f.name,
                0,
                f"file size {f.size} differs from the commitlog file size {file_size} (the broker refuses "
                "to start)",
            )
        if i and files[i - 1].size and f.start != files[i - 1].start + files[i - 1].size:
            problems.add(
                "commitlog_file_gap",
                f.name,
                0,
                f"starts at {f.start}, but the previous file ends at "
                f"{files[i - 1].start + files[i - 1].size}",
            )
    for f in files:
        check_file_records(f, problems)

    # the whole-store walk: the first stop that is not a BLANK
    end_at: int | None = None
    for i, f in enumerate(files):
        stop = f.stop()
        if stop is None:
            continue
        if stop[0] != "blank":
            end_at = i
            break
    if end_at is None:
        # every file ends in a BLANK: recovery stops at the last one (its position, not the file end)
        last = next((f for f in reversed(files) if f.stop() is not None), None)
        if last is None:
            return CommitLogVerdict(files[0].start if files else 0, None, "empty", 0, False, 0)
        pos = last.stop()[1]  # type: ignore[index]
        return CommitLogVerdict(last.start + pos, files.index(last), "blank", pos, False, 0)
    f = files[end_at]
    status, pos, total = f.stop()  # type: ignore[misc]
    valid_end = f.start + pos
    later = files[end_at + 1 :]
    later_records = sum(g.message_count() for g in later)
    later_data = [g for g in later if g.message_count() or g.data_end]
    after = f.beyond_count() + later_records
    extent = max(total, 8) if status != "end" else 8
    tail_zero = f.data_end <= pos + extent and not later_data and f.beyond_count() == 0
    torn = status in FAILURE_KIND and tail_zero
    if status == "end":
        if after or later_data:
            problems.add(
                "premature_end",
                f.name,
                pos,
                f"zeros where a record should start (phy {valid_end}), but {after} records follow "
                f"{_where(later_data, f)}; the broker's recovery ends the commitlog here and deletes "
                "the later files",
            )
        elif f.data_end > pos:
            problems.add(
                "nonzero_after_end",
                f.name,
                pos,
                f"non-zero bytes after the end of data (phy {valid_end}) up to position {f.data_end}",
            )
    elif torn:
        written = (f.stop_data_end if f.stop_data_end is not None else f.data_end) - pos
        problems.add(
            "truncated_tail",
            f.name,
            pos,
            f"torn record at phy {valid_end}: {max(written, 0)} of {total} bytes written, the rest "
            f"zero ({status}); the broker's recovery drops it and ends the commitlog here",
        )
    else:
        detail = _failure_detail(status, valid_end, total)
        if after:
            detail += f"; the broker's recovery truncates here and drops {after} later records"
            if later_data:
                detail += f" ({_where(later_data, f)})"
        elif f.data_end > pos + extent:
            detail += f"; non-zero bytes follow up to position {f.data_end}"
        problems.add(FAILURE_KIND.get(status, "size_chain"), f.name, pos, detail)
    return CommitLogVerdict(valid_end, end_at, status, pos, torn, after)


def _where(later: Sequence[CommitLogFile], f: CommitLogFile) -> str:
    if not later:
        return "in this file"
    return f"in this file and {len(later)} later file(s) up to {later[-1].name.rsplit('/', 1)[-1]}"


def _failure_detail(status: str, phy: int, total: int) -> str:
    what = {
        "bad_magic": "illegal magic code",
        "truncated": f"TOTALSIZE {total} runs past the file end or a field past TOTALSIZE",
        "size_mismatch": f"TOTALSIZE {total} does not match the field lengths",
        "crc_mismatch": "body CRC does not match BODYCRC",
        "bad_property": "DELAY of a SCHEDULE_TOPIC_XXXX record is not an integer",
    }.get(status, status)
    return f"record at phy {phy} rejected by the broker's check: {what}"


def check_file_records(f: CommitLogFile, problems: ProblemList) -> None:
    """Per-record facts of one file: PHYSICALOFFSET fields, BLANK size, bytes after a BLANK."""
    batches = [b for b in (f.batch, f.beyond) if b is not None and b.num_rows]
    for batch in batches:
        status = _indices(batch.column("status"))
        phy = _np(batch.column("physicalOffset"))
        field = _np(batch.column("physicalOffsetField"))
        bad = np.flatnonzero((status == OK) & (field != phy))
        if len(bad):
            problems.add_many(
                "phy_offset_field",
                f.name,
                phy[bad] - f.start,
                fmt("PHYSICALOFFSET field ", field[bad], " != position phy ", phy[bad]),
            )
    stop = f.stop()
    if stop is None or stop[0] != "blank":
        return
    _, pos, total = stop
    if total != f.size - pos:
        problems.add(
            "blank_size",
            f.name,
            pos,
            f"BLANK record says {total} bytes, but {f.size - pos} are left in the file",
        )
    if f.data_end > pos + 8:
        problems.add(
            "nonzero_after_blank",
            f.name,
            pos + 8,
            f"non-zero bytes after the BLANK record up to position {f.data_end} (ignored by the broker)",
        )


def recovery_start_normal(file_starts: Sequence[int], cq_max_phy: int | None = None) -> int | None:
    """Index of the file normal recovery starts from: the third-from-last (4.9.x, 5.0-5.3.1), or with
    `cq_max_phy` (5.3.2+) the last file starting at or before maxPhyOffsetOfConsumeQueue."""
    if not file_starts:
        return None
    if cq_max_phy is None:
        return max(0, len(file_starts) - 3)
    idx = [i for i, s in enumerate(file_starts) if s <= cq_max_phy]
    return idx[-1] if idx else 0


def recovery_start_abnormal(first_records: Sequence[tuple[int, int] | None], bound: int) -> int:
    """`recoverAbnormally`: the last file whose first record is a message with 0 < STORETIMESTAMP <=
    bound (checkpoint min timestamp); else the first file. first_records: (magic ok, storeTs) or None."""
    for i in range(len(first_records) - 1, -1, -1):
        fr = first_records[i]
        if fr is not None and 0 < fr[1] <= bound:
            return i
    return 0


# --- consume queues ------------------------------------------------------------------------------


@dataclass
class QueueFacts:
    """What the coverage check needs to know about one queue."""

    min_offset: int
    max_offset: int
    last_phy_end: int  # phy + size of its last unit (0 when empty)


class CqLocator:
    """File and position of ConsumeQueue units given their queue offsets; names are made on demand."""

    def __init__(self, queue_offsets: np.ndarray, topic: str, queue_id: int, file_size: int) -> None:
        self.queue_offsets = queue_offsets
        self.file_size = file_size
        self.prefix = f"consumequeue/{topic}/{queue_id}/"

    @functools.cached_property
    def start(self) -> np.ndarray:
        byte = np.asarray(self.queue_offsets, dtype=np.int64) * CQ_STORE_UNIT_SIZE
        return byte // self.file_size * self.file_size

    @functools.cached_property
    def position(self) -> np.ndarray:
        return np.asarray(self.queue_offsets, dtype=np.int64) * CQ_STORE_UNIT_SIZE - self.start

    def name(self, i: int) -> str:
        return f"{self.prefix}{int(self.start[i]):020d}"

    def names(self, idx: np.ndarray) -> pa.Array:
        starts = self.start[np.asarray(idx, dtype=np.int64)]
        unique, inverse = np.unique(starts, return_inverse=True)
        names = pa.array([f"{self.prefix}{int(s):020d}" for s in unique], pa.string())
        return names.take(pa.array(inverse.astype(np.int64)))


def cq_locations(
    queue_offsets: np.ndarray, topic: str, queue_id: int, file_size: int
) -> tuple[pa.Array, np.ndarray]:
    """(file, position) of units given their queue offsets."""
    loc = CqLocator(queue_offsets, topic, queue_id, file_size)
    return loc.names(np.arange(len(loc.start))), loc.position


def check_consume_queue(
    units: np.ndarray,
    records: RecordIndex,
    problems: ProblemList,
    *,
    topic: str,
    queue_id: int,
    min_offset: int,
    file_size: int,
    commitlog_min: int,
    valid_end: int,
    phy_range: tuple[int, int] | None = None,
) -> np.ndarray:
    """Compare one queue's units (native dtype with queueOffset, from its first file on disk up to its max
    offset) with the records they point at. Returns the record rows the units hit.

    Units below `min_offset` are the deleted prefix (fillers, units of retention-deleted records): counted
    as info. With `phy_range` only units pointing into [lo, hi) are judged (an audit split)."""
    qo = units["queueOffset"].astype(np.int64, copy=False)
    phy = units["phyOffset"].astype(np.int64, copy=False)
    size = units["size"].astype(np.int64)
    tags = units["tagsCode"].astype(np.int64, copy=False)
    n = len(qo)
    loc = CqLocator(qo, topic, queue_id, file_size)
    # `sel` names the judged units: None = the contiguous run [lo, n) (the usual case, no copies), else
    # an index array once a filter has removed some
    sel: np.ndarray | None = None
    if phy_range is None and (n < 2 or bool(np.all(qo[1:] > qo[:-1]))):
        lo = int(np.searchsorted(qo, min_offset))
        expired = np.arange(lo)
    else:
        expired_mask = qo < min_offset
        live_mask = ~expired_mask
        if phy_range is not None:
            inside = (phy >= phy_range[0]) & (phy < phy_range[1])
            expired_mask &= inside
            live_mask &= inside
        expired, lo, sel = np.flatnonzero(expired_mask), 0, np.flatnonzero(live_mask)
    if len(expired):
        e = expired
        fillers = int(np.count_nonzero((phy[e] == 0) & (size[e] == FILLER_SIZE)))
        problems.add(
            "cq_expired_units",
            loc.name(int(e[0])),
            int(loc.position[e[0]]),
            f"{len(e)} units below the min offset {min_offset} (queue offsets {int(qo[e[0]])}.."
            f"{int(qo[e[-1]])}: {len(e) - fillers} point into deleted commitlog files, {fillers} fillers)",
        )

    def pick(arr: np.ndarray) -> np.ndarray:
        return arr[lo:] if sel is None else arr[sel]

    def where_(mask: np.ndarray | None = None) -> np.ndarray:
        """Unit indexes of the judged units (of those where mask is set)."""
        base = np.arange(lo, n) if sel is None else sel
        return base if mask is None else base[mask]

    if (n - lo if sel is None else len(sel)) == 0:
        return np.zeros(0, dtype=np.int64)
    where = f"{topic}/{queue_id}"
    lp, ls = pick(phy), pick(size)
    back = np.flatnonzero(lp[1:] <= lp[:-1]) + 1
    if len(back):
        order_bad = where_()[back]
        problems.add_many(
            "cq_order",
            loc.names(order_bad),
            loc.position[order_bad],
            fmt(
                "unit at queue offset ",
                qo[order_bad],
                " points to phy ",
                phy[order_bad],
                ", not after the previous unit's",
            ),
        )
    outside = (lp < commitlog_min) | (lp + ls > valid_end) | (ls <= 0)
    if outside.any():
        o = where_(outside)
        beyond = o[phy[o] >= valid_end]
        below = o[phy[o] < valid_end]
        if len(beyond):
            problems.add(
                "cq_points_outside",
                loc.name(int(beyond[0])),
                int(loc.position[beyond[0]]),
                f"{where}: {len(beyond)} units from queue offset {int(qo[beyond[0]])} point at or after the "
                f"commitlog's valid end {valid_end} (phy {int(phy[beyond[0]])}..{int(phy[beyond[-1]])}); "
                "the broker's recovery cuts them",
            )
        if len(below):
            problems.add_many(
                "cq_points_outside",
                loc.names(below),
                loc.position[below],
                fmt(
                    f"{where}: unit at queue offset ",
                    qo[below],
                    " (phy ",
                    phy[below],
                    ", size ",
                    size[below],
                    f") is outside the commitlog's data [{commitlog_min}, {valid_end})",
                ),
            )
        sel = where_(~outside)
    ri, found = records.find(pick(phy))
    if not found.all():
        miss = where_(~found)
        problems.add_many(
            "cq_not_record_start",
            loc.names(miss),
            loc.position[miss],
            fmt(
                f"{where}: unit at queue offset ",
                qo[miss],
                " points to phy ",
                phy[miss],
                ", where no accepted record starts",
            ),
        )
        sel, ri = where_(found), ri[found]
    u_qo, u_phy, u_size, u_tags = pick(qo), pick(phy), pick(size), pick(tags)

    def report(kind: str, bad: np.ndarray, *parts: Any) -> None:
        u = where_(bad)
        problems.add_many(kind, loc.names(u), loc.position[u], fmt(*parts))

    r_size = records.size[ri]
    bad = r_size != u_size
    if bad.any():
        report(
            "cq_size_mismatch",
            bad,
            f"{where}: unit at queue offset ",
            u_qo[bad],
            " says size ",
            u_size[bad],
            ", the record at phy ",
            u_phy[bad],
            " has TOTALSIZE ",
            r_size[bad],
        )
    if not topic.startswith("%LMQ%"):  # LMQ queues hold units of records of other topics
        r_topic = records.topic[ri]
        bad = r_topic != records.topic_code(topic)
        if bad.any():
            names = pa.array(records.topics or [""]).take(pa.array(r_topic[bad]))
            report(
                "cq_topic_mismatch",
                bad,
                f"{where}: unit at queue offset ",
                u_qo[bad],
                " points to phy ",
                u_phy[bad],
                " of topic ",
                names,
            )
        r_qid = records.queue_id[ri]
        bad = r_qid != queue_id
        if bad.any():
            report(
                "cq_queue_mismatch",
                bad,
                f"{where}: unit at queue offset ",
                u_qo[bad],
                " points to phy ",
                u_phy[bad],
                " of queue ",
                r_qid[bad],
            )
        r_qo = records.queue_offset[ri]
        bad = r_qo != u_qo
        if bad.any():
            report(
                "cq_queue_offset_mismatch",
                bad,
                f"{where}: unit at queue offset ",
                u_qo[bad],
                " points to phy ",
                u_phy[bad],
                " whose QUEUEOFFSET is ",
                r_qo[bad],
            )
    r_tags = records.tags_code[ri]
    bad = r_tags != u_tags
    if bad.any():
        ext = u_tags <= MAX_ADDR
        if ext.any():
            first = int(where_(ext)[0])
            problems.add(
                "cq_ext_tags",
                loc.name(first),
                int(loc.position[first]),
                f"{where}: {int(ext.sum())} tags codes are ConsumeQueueExt addresses; not compared",
            )
            bad &= ~ext
        if bad.any():
            report(
                "cq_tags_code_mismatch",
                bad,
                f"{where}: unit at queue offset ",
                u_qo[bad],
                " has tags code ",
                u_tags[bad],
                ", the record at phy ",
                u_phy[bad],
                " gives ",
                r_tags[bad],
            )
    return ri


def check_dispatch_coverage(
    records: RecordIndex,
    hits: np.ndarray,
    queues: dict[tuple[str, int], QueueFacts],
    problems: ProblemList,
    *,
    abort: bool,
    rows: np.ndarray | None = None,
    known_topics: set[str] | None = None,
) -> int:
    """Dispatchable records without a ConsumeQueue unit. Returns the dispatch horizon.

    The horizon is maxPhyOffsetOfConsumeQueue (largest phy + size of any queue's last unit). A record at or
    after it was never dispatched: `undispatched`, per queue (a warning after a crash - abnormal recovery
    dispatches it - an error without `abort`: a 5.x normal start never does). A record before it without
    its unit is `cq_missing_unit` - unless its queue has no ConsumeQueue and its topic is not in
    `known_topics` (topics.json): a deleted topic's records stay in the commitlog (`deleted_topic`, info,
    one row per queue). `rows` restricts the judged records (an audit split)."""
    horizon = max((q.last_phy_end for q in queues.values()), default=0)
    hit = np.zeros(len(records), dtype=bool)
    hit[hits] = True
    miss = records.dispatchable() & ~hit
    if rows is not None:
        mask = np.zeros(len(records), dtype=bool)
        mask[rows] = True
        miss &= mask
    sel = np.flatnonzero(miss)
    if len(sel) == 0:
        return horizon
    files, positions = records.locate(records.phy[sel])
    late = records.phy[sel] >= horizon
    severity = WARNING if abort else ERROR
    consequence = (
        "abnormal recovery (abort present) dispatches them"
        if abort
        else "no abort file: a 5.x broker never dispatches them on a normal start (4.9.x does)"
    )
    # undispatched, one row per queue
    late_rows = sel[late]
    if len(late_rows):
        keys = records.topic[late_rows].astype(np.int64) << 32 | records.queue_id[late_rows].astype(np.int64)
        _, first, counts = np.unique(keys, return_index=True, return_counts=True)
        for j, c in zip(np.sort(first).tolist(), counts[np.argsort(first)].tolist(), strict=True):
            r = int(late_rows[j])
            topic, qid = records.topics[records.topic[r]], int(records.queue_id[r])
            members = late_rows[keys == keys[j]]
            shown = ", ".join(str(int(p)) for p in records.phy[members[:5]])
            k = int(np.flatnonzero(sel == r)[0])
            problems.add(
                "undispatched",
                files[k].as_py(),
                int(positions[k]),
                f"{topic}/{qid}: {c} record(s) from queue offset {int(records.queue_offset[r])} after the "
                f"ConsumeQueue end (phy {horizon}) were never dispatched (phy {shown}"
                f"{', ...' if c > 5 else ''}); {consequence}",
                severity,
            )
    early = np.flatnonzero(~late)
    if len(early):
        r = sel[early]
        reasons = []
        gone = np.zeros(len(r), dtype=bool)
        for i, (t, q, qo) in enumerate(
            zip(
                records.topic[r].tolist(),
                records.queue_id[r].tolist(),
                records.queue_offset[r].tolist(),
                strict=True,
            )
        ):
            name = records.topics[t]
            facts = queues.get((name, q))
            if facts is None:
                gone[i] = known_topics is not None and name not in known_topics
                reasons.append(f"{name}/{q}: no ConsumeQueue for the record's queue")
            elif qo >= facts.max_offset:
                reasons.append(
                    f"{name}/{q}: queue offset {qo} is past the queue's max offset {facts.max_offset}"
                )
            elif qo < facts.min_offset:
                reasons.append(
                    f"{name}/{q}: queue offset {qo} is below the queue's min offset {facts.min_offset}"
                )
            else:
                reasons.append(f"{name}/{q}: the unit at queue offset {qo} points elsewhere")
        if gone.any():
            g = np.flatnonzero(gone)
            keys = records.topic[r[g]].astype(np.int64) << 32 | records.queue_id[r[g]].astype(np.int64)
            _, first, counts = np.unique(keys, return_index=True, return_counts=True)
            for j, c in zip(first.tolist(), counts.tolist(), strict=True):
                k = int(early[g[j]])
                rec = int(r[g[j]])
                problems.add(
                    "deleted_topic",
                    files[k].as_py(),
                    int(positions[k]),
                    f"{records.topics[records.topic[rec]]}/{int(records.queue_id[rec])}: {c} record(s) of a "
                    "topic that is not in topics.json and has no ConsumeQueue (a deleted topic)",
                )
        keep = np.flatnonzero(~gone)
        if len(keep):
            problems.add_many(
                "cq_missing_unit",
                files.take(pa.array(early[keep])),
                positions[early[keep]],
                fmt(
                    "record at phy ",
                    records.phy[r[keep]],
                    " has no ConsumeQueue unit: ",
                    pa.array(reasons, pa.string()).take(pa.array(keep)),
                ),
            )
    return horizon


def check_cq_tail(
    units_after: np.ndarray, problems: ProblemList, *, file: str, position: int, where: str
) -> None:
    """Bytes after a queue's last valid unit in its last file: the broker ignores and overwrites them."""
    raw = units_after.view(np.uint8) if units_after.dtype != np.uint8 else units_after
    nz = np.flatnonzero(raw)
    if len(nz):
        problems.add(
            "cq_nonzero_after_end",
            file,
            position + int(nz[0]),
            f"{where}: non-zero bytes after the last valid unit "
            f"(up to position {position + int(nz[-1]) + 1})",
        )


# --- index files ---------------------------------------------------------------------------------


@dataclass
class IndexFileFacts:
    """The reachable entries of one index file, for the coverage check."""

    name: str
    begin_phy: int
    end_phy: int
    entries: int
    phy: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # per entry
    key_hash: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    reachable: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    record_row: np.ndarray | None = None  # RecordIndex row of each entry's phy, -1 (check_index_targets)


def check_index_file(
    header: Any,
    slots: np.ndarray,
    entries: np.ndarray,
    problems: ProblemList,
    *,
    file: str,
    hash_slot_num: int,
    index_num: int,
) -> IndexFileFacts:
    """Header, slot table and chains of one index file, and which entries a lookup reaches.

    `header` has the IndexHeader fields (begin_timestamp, end_timestamp, begin_phy_offset, end_phy_offset,
    hash_slot_count, index_count); `slots` is the big-endian int32 slot view, `entries` the
    `INDEX_ENTRY_DTYPE` view of entries 1 .. indexCount-1. A lookup of hash h starts at slot h % S and
    follows prevIndex while 0 < prev <= indexCount and prev != pos, stopping at a negative time diff
    (FORMATS §5.9); an entry is reachable when the walk of its own key's slot visits it.
    """
    count = header.index_count if header.index_count > 0 else 1
    slot_pos0 = 40
    entry_pos0 = 40 + hash_slot_num * 4

    def entry_at(pos: np.ndarray) -> np.ndarray:
        return entry_pos0 + np.asarray(pos, dtype=np.int64) * 20

    if header.index_count > index_num:
        problems.add(
            "index_header", file, 36, f"indexCount {header.index_count} exceeds maxIndexNum {index_num}"
        )
        count = index_num
    n = count - 1
    kh = entries["keyHash"].astype(np.int64)[:n]
    prev = entries["prevIndex"].astype(np.int64)[:n]
    td = entries["timeDiff"].astype(np.int64)[:n]
    phy = entries["phyOffset"].astype(np.int64)[:n]
    pos = np.arange(1, n + 1, dtype=np.int64)
    facts = IndexFileFacts(file, header.begin_phy_offset, header.end_phy_offset, n)

    # header
    used_slots = int(np.count_nonzero(slots))
    if used_slots != header.hash_slot_count:
        problems.add(
            "index_header",
            file,
            32,
            f"hashSlotCount {header.hash_slot_count} but {used_slots} slots are in use",
            WARNING,
        )
    if header.begin_timestamp > header.end_timestamp:
        problems.add(
            "index_header",
            file,
            0,
            f"beginTimestamp {header.begin_timestamp} is after endTimestamp {header.end_timestamp}",
        )
    if n:
        if header.begin_phy_offset != phy[0]:
            problems.add(
                "index_header",
                file,
                16,
                f"beginPhyOffset {header.begin_phy_offset} is not the first entry's phy {int(phy[0])}",
            )
        if header.end_phy_offset != phy[-1]:
            problems.add(
                "index_header",
                file,
                24,
                f"endPhyOffset {header.end_phy_offset} is not the last entry's phy {int(phy[-1])}",
            )
        back = np.flatnonzero(np.diff(phy) < 0) + 1
        if len(back):
            problems.add_many(
                "index_header",
                file,
                entry_at(pos[back]) + 4,
                fmt("entry ", pos[back], " points to phy ", phy[back], ", before the previous entry's"),
                WARNING,
            )

    # chains: putKey leaves each slot pointing at its newest entry and each entry's prevIndex at the
    # previous entry of its slot. Without broken links or branches the entries form disjoint chains;
    # when every chain's top is its slot's value and no other slot is in use, each used slot holds
    # exactly one chain through all of its entries (no slot-sized arrays needed on this path).
    bad_entry = (kh < 0) | (prev < 0) | (prev >= pos)
    slot = np.where(kh >= 0, kh % hash_slot_num, 0)
    link = np.flatnonzero((prev > 0) & ~bad_entry)
    bad_entry[link[slot[prev[link] - 1] != slot[link]]] = True
    linked = (prev > 0) & ~bad_entry
    indegree = np.bincount(prev[linked], minlength=count)
    branched = np.flatnonzero(indegree > 1)
    tops = np.flatnonzero(indegree[1:] == 0) + 1
    tops = tops[~bad_entry[tops - 1]]
    head_ok = slots[slot[tops - 1]].astype(np.int64) == tops
    structure_ok = (
        not bad_entry.any() and not len(branched) and bool(head_ok.all()) and used_slots == len(tops)
    )
    if not structure_ok:
        sv = slots.astype(np.int64)
        good = ~bad_entry
        newest = np.zeros(hash_slot_num, dtype=np.int64)
        if good.any():
            np.maximum.at(newest, slot[good], pos[good])
        bottoms = np.bincount(slot[good & (prev == 0)], minlength=hash_slot_num)
        present = np.bincount(slot[good], minlength=hash_slot_num) > 0
        bad_slot = (sv != newest) | (sv < 0) | (sv >= count)
        many = np.flatnonzero(present & (bottoms != 1))
        e = np.flatnonzero(bad_entry)
        if len(e):
            problems.add_many(
                "index_chain",
                file,
                entry_at(pos[e]),
                fmt(
                    "entry ",
                    pos[e],
                    " (keyHash ",
                    kh[e],
                    ", prevIndex ",
                    prev[e],
                    ") is not a link of its hash slot's chain",
                ),
            )
        if len(branched):
            problems.add_many(
                "index_chain",
                file,
                entry_at(branched),
                fmt("entry ", branched, " is the prevIndex of several entries"),
            )
        if len(many):
            problems.add_many(
                "index_chain",
                file,
                slot_pos0 + many * 4,
                fmt("hash slot ", many, " has ", bottoms[many], " chain ends instead of one"),
            )
        bad = np.flatnonzero(bad_slot)
        if len(bad):
            problems.add_many(
                "index_chain",
                file,
                slot_pos0 + bad * 4,
                fmt("hash slot ", bad, " holds ", sv[bad], ", but its newest entry is ", newest[bad]),
            )
    neg = np.flatnonzero(td < 0)
    if len(neg):
        problems.add_many(
            "index_chain",
            file,
            entry_at(pos[neg]) + 12,
            fmt("entry ", pos[neg], " has a negative timeDiff ", td[neg], "; lookups stop there"),
        )
    if structure_ok:
        reachable = np.ones(n, dtype=bool)
        if len(neg):
            stop = np.zeros(hash_slot_num, dtype=np.int64)
            np.maximum.at(stop, slot[neg], pos[neg])
            reachable = pos > stop[slot]
    else:
        reachable = _chase(slots.astype(np.int64), kh, prev, td, count, hash_slot_num)
    lost = np.flatnonzero(~reachable)
    if len(lost):
        problems.add(
            "index_unreachable",
            file,
            int(entry_at(pos[lost[0]])),
            f"{len(lost)} of {n} entries are not reachable from their hash slot (first: entry "
            f"{int(pos[lost[0]])}, phy {int(phy[lost[0]])})",
        )
    facts.phy, facts.key_hash, facts.reachable = phy, kh, reachable
    return facts


def _chase(
    sv: np.ndarray, kh: np.ndarray, prev: np.ndarray, td: np.ndarray, count: int, s: int
) -> np.ndarray:
    """Reachability by walking every slot's chain as `selectPhyOffset` does (all chains at once; the last
    few long chains element by element). A prevIndex that does not go down ends a walk."""
    n = len(kh)
    reach = np.zeros(n, dtype=bool)
    slot_ids = np.flatnonzero((sv > 0) & (sv < count))
    cur = sv[slot_ids]
    while len(cur) > 16:
        e = cur - 1
        alive = td[e] >= 0
        cur, slot_ids, e = cur[alive], slot_ids[alive], e[alive]
        reach[e[kh[e] % s == slot_ids]] = True
        nxt = prev[e]
        go = (nxt > 0) & (nxt < cur)
        cur, slot_ids = nxt[go], slot_ids[go]
    for p, sid in zip(cur.tolist(), slot_ids.tolist(), strict=True):
        while True:
            e = p - 1
            if td[e] < 0:
                break
            if kh[e] >= 0 and kh[e] % s == sid:
                reach[e] = True
            q = int(prev[e])
            if not 0 < q < p:
                break
            p = q
    return reach


def check_index_targets(
    facts: IndexFileFacts,
    records: RecordIndex,
    problems: ProblemList,
    *,
    hash_slot_num: int,
    commitlog_min: int,
    valid_end: int,
) -> None:
    """Where one file's entries point (after `check_index_file`): records deleted by retention (info),
    past the valid end (warning), or inside the live commitlog but not at a record start (error).
    Fills `facts.record_row` for the coverage check."""
    phy = facts.phy
    pos0 = 40 + hash_slot_num * 4
    expired = phy < commitlog_min
    beyond = phy >= valid_end
    if expired.any():
        e = np.flatnonzero(expired)
        problems.add(
            "index_expired_entries",
            facts.name,
            pos0 + int(e[0] + 1) * 20,
            f"{len(e)} entries point into deleted commitlog files (phy < {commitlog_min})",
        )
    if beyond.any():
        e = np.flatnonzero(beyond)
        problems.add(
            "index_beyond_end",
            facts.name,
            pos0 + int(e[0] + 1) * 20,
            f"{len(e)} entries point at or after the commitlog's valid end {valid_end} (first phy "
            f"{int(phy[e[0]])})",
        )
    # entries of one message's keys share its phy: look each run up once
    change = np.empty(len(phy), dtype=bool)
    change[:1] = True
    np.not_equal(phy[1:], phy[:-1], out=change[1:])
    ri_u, found_u = records.find(phy[change])
    group = np.cumsum(change) - 1
    ri, found = ri_u[group], found_u[group]
    facts.record_row = np.where(found, ri, -1)
    bad = np.flatnonzero(~found & ~expired & ~beyond)
    if len(bad):
        problems.add(
            "index_points_nowhere",
            facts.name,
            pos0 + int(bad[0] + 1) * 20,
            f"{len(bad)} entries point inside the commitlog where no accepted record starts (first: entry "
            f"{int(bad[0]) + 1}, phy {int(phy[bad[0]])})",
        )


def index_coverage(files: Sequence[IndexFileFacts]) -> tuple[int, int] | None:
    """[first file's beginPhyOffset, last file's endPhyOffset] of the files holding entries."""
    used = [f for f in files if f.entries > 0]
    if not used:
        return None
    return used[0].begin_phy, used[-1].end_phy


@dataclass
class ReachableKeys:
    """(phy, keyHash) of every entry a lookup reaches, over all index files, sorted by phy, and the
    index's coverage: `check_index_coverage`'s input, cut by physical range (the audit's executors)."""

    coverage: tuple[int, int] | None
    phy: np.ndarray
    key_hash: np.ndarray

    @classmethod
    def of(cls, files: Sequence[IndexFileFacts]) -> ReachableKeys:
        phy = np.concatenate([f.phy[f.reachable] for f in files] or [np.zeros(0, np.int64)])
        key_hash = np.concatenate([f.key_hash[f.reachable] for f in files] or [np.zeros(0, np.int64)])
        order = np.argsort(phy, kind="stable")
        return cls(index_coverage(files), phy[order], key_hash[order].astype(np.int32))

    def facts_in(self, lo: int, hi: int) -> list[IndexFileFacts]:
        """The entries pointing into [lo, hi) as one file's facts with the whole index's coverage."""
        if self.coverage is None:
            return []
        i, j = np.searchsorted(self.phy, [lo, hi])
        return [
            IndexFileFacts(
                "reachable entries",
                *self.coverage,
                entries=max(1, len(self.phy)),
                phy=self.phy[i:j],
                key_hash=self.key_hash[i:j].astype(np.int64),
                reachable=np.ones(j - i, dtype=bool),
            )
        ]


# check_index_coverage's rows whose detail starts with a record count (summed over the audit's ranges)
COUNTED_KINDS = ("not_indexed", "index_behind")


def merge_counted(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows of a `COUNTED_KINDS` kind found range by range, as verify reports them for the whole store:
    one row per store and kind, at the first place, with the counts summed. Other rows pass as they are."""
    out = [r for r in rows if r["kind"] not in COUNTED_KINDS]
    merged: dict[tuple[Any, str], dict[str, Any]] = {}
    counted = [r for r in rows if r["kind"] in COUNTED_KINDS]
    for row in sorted(counted, key=lambda r: (r["file"] or "", r["offset"] or 0)):
        key = (row["store"], row["kind"])
        if key not in merged:
            merged[key] = dict(row)
            continue
        first = merged[key]
        count, rest = first["detail"].split(" ", 1)
        first["detail"] = f"{int(count) + int(row['detail'].split(' ', 1)[0])} {rest}"
    return out + list(merged.values())


def check_index_coverage(
    records: RecordIndex,
    files: Sequence[IndexFileFacts],
    problems: ProblemList,
    *,
    cq_horizon: int | None = None,
    rows: np.ndarray | None = None,
) -> int:
    """Every index key of every message inside the index's coverage is reachable (--deep).

    Records before the first file's beginPhyOffset (their index files were deleted with old commitlog
    files) are `not_indexed` (info); records with keys after the last file's endPhyOffset are not indexed
    yet (`index_behind` when the ConsumeQueues already cover them, else part of the undispatched tail).
    Returns how many keys were checked."""
    coverage = index_coverage(files)
    key_rows, key_hash = index_key_hashes(records, rows)
    if len(key_rows) == 0:
        return 0
    key_phy = records.phy[key_rows]
    if coverage is None:
        lo, hi = (int(key_phy.max()) + 1,) * 2
    else:
        lo, hi = coverage
    before = key_phy < lo
    after = key_phy > hi
    if before.any():
        r = key_rows[before]
        files_, positions = records.locate(records.phy[r[:1]])
        problems.add(
            "not_indexed",
            files_[0].as_py(),
            int(positions[0]),
            f"{len(np.unique(r))} records with keys before the first index file's beginPhyOffset {lo} "
            "(their index files were deleted with old commitlog files)",
        )
    if after.any():
        r = np.unique(key_rows[after])
        lagging = r[records.phy[r] < cq_horizon] if cq_horizon is not None else r[:0]
        if len(lagging):
            files_, positions = records.locate(records.phy[lagging[:1]])
            problems.add(
                "index_behind",
                files_[0].as_py(),
                int(positions[0]),
                f"{len(lagging)} records with keys are in the ConsumeQueues but after the index's end "
                f"(endPhyOffset {hi}); a re-dispatch would index them",
            )
    judge = ~before & ~after
    kr, kh, kp = key_rows[judge], key_hash[judge], key_phy[judge]
    if len(kr) == 0:
        return 0
    reach_key = np.concatenate([_reachable_keys(f, records) for f in files] or [np.zeros(0, np.int64)])
    want = kr << 31 | kh
    if len(want) == len(reach_key) and np.array_equal(want, reach_key):
        return len(want)
    ok = np.isin(want, reach_key)
    lost = np.flatnonzero(~ok)
    if len(lost):
        r = kr[lost]
        files_, positions = records.locate(kp[lost])
        problems.add_many(
            "index_key_unreachable",
            files_,
            positions,
            fmt(
                "record at phy ",
                kp[lost],
                ": index key hash ",
                kh[lost],
                " of topic ",
                pa.array(records.topics or [""]).take(pa.array(records.topic[r])),
                " is not reachable through the index",
            ),
        )
    return len(want)


def _reachable_keys(facts: IndexFileFacts, records: RecordIndex) -> np.ndarray:
    """row << 31 | keyHash of the reachable entries that point at a record start."""
    rows = facts.record_row
    if rows is None:
        ri, found = records.find(facts.phy)
        rows = np.where(found, ri, -1)
    keep = facts.reachable & (rows >= 0)
    return rows[keep] << 31 | facts.key_hash[keep]


def check_index_headers_order(files: Sequence[IndexFileFacts], problems: ProblemList) -> None:
    """Consecutive files cover increasing physical ranges."""
    used = [f for f in files if f.entries > 0]
    for a, b in zip(used, used[1:], strict=False):
        if b.begin_phy < a.end_phy:
            problems.add(
                "index_header",
                b.name,
                16,
                f"beginPhyOffset {b.begin_phy} is before the previous file's endPhyOffset {a.end_phy}",
                WARNING,
            )


# --- checkpoint and state ------------------------------------------------------------------------


def check_checkpoint(
    checkpoint: Any,
    problems: ProblemList,
    *,
    abort: bool,
    last_store_ts: int | None,
    dispatched_store_ts: int | None,
    index_files: Sequence[tuple[str, int]] = (),
    file: str = "checkpoint",
) -> None:
    """The checkpoint against the data. `checkpoint` has physic/logics/index_msg_timestamp (None when the
    file is missing); last_store_ts is the newest STORETIMESTAMP before the valid end,
    dispatched_store_ts the newest of a record with a ConsumeQueue unit; index_files are
    (name, endTimestamp)."""
    if abort:
        problems.add(
            "abort_present",
            "abort",
            None,
            "the broker did not shut down cleanly: its next start runs abnormal recovery",
        )
    if checkpoint is None:
        problems.add("checkpoint_missing", file, None, "no checkpoint file (the broker creates a zero one)")
        return
    physic = checkpoint.physic_msg_timestamp
    logics = checkpoint.logics_msg_timestamp
    index = checkpoint.index_msg_timestamp
    if last_store_ts is not None and physic > last_store_ts:
        problems.add(
            "checkpoint_ahead",
            file,
            0,
            f"physicMsgTimestamp {physic} is newer than the newest record ({last_store_ts}): flushed data "
            "is missing",
        )
    if dispatched_store_ts is not None and logics > dispatched_store_ts:
        problems.add(
            "checkpoint_ahead",
            file,
            8,
            f"logicsMsgTimestamp {logics} is newer than the newest dispatched record ({dispatched_store_ts})",
            WARNING,
        )
    if index_files and index > max(ts for _, ts in index_files):
        problems.add(
            "checkpoint_ahead",
            file,
            16,
            f"indexMsgTimestamp {index} is newer than every index file's endTimestamp",
            WARNING,
        )
    if abort:
        dropped = [name for name, ts in index_files if ts > index]
        if dropped:
            problems.add(
                "index_dropped_on_recovery",
                dropped[0],
                None,
                f"{len(dropped)} index file(s) end after indexMsgTimestamp {index}; the broker deletes "
                f"them at its abnormal start ({', '.join(n.rsplit('/', 1)[-1] for n in dropped[:3])})",
            )


__all__ = [
    "ERROR",
    "FAILURE_KIND",
    "INFO",
    "KINDS",
    "PROBLEM_SCHEMA",
    "WARNING",
    "CommitLogFile",
    "CommitLogVerdict",
    "IndexFileFacts",
    "ProblemList",
    "QueueFacts",
    "RecordIndex",
    "RecordIndexBuilder",
    "batch_tags_codes",
    "check_checkpoint",
    "check_commitlog",
    "check_consume_queue",
    "check_cq_tail",
    "check_dispatch_coverage",
    "check_file_records",
    "check_index_coverage",
    "check_index_file",
    "check_index_headers_order",
    "check_index_targets",
    "count_by_severity",
    "CqLocator",
    "cq_locations",
    "fmt",
    "index_coverage",
    "index_key_hashes",
    "java_hash_spans",
    "java_hash_strings",
    "locate",
    "pow31",
    "recovery_start_abnormal",
    "recovery_start_normal",
    "sort_problems",
    "split_tokens",
    "take_rows",
]
