"""Spark side of `mqtool audit`: the session, and what executors run on each commitlog byte range.

Executors import this module, so at module level it imports only the standard library, numpy, pyarrow and
our `formats`/`store` packages (pyspark is imported inside the session helpers, which run on the driver).

One task = one split (a byte range of one commitlog file, a row of `SPLIT_SCHEMA`). `scan_partition` is the
`mapInArrow` function: for each split it mmaps the file, decodes the records that *start* in the range
with `formats.columnar.decode_resync` (which finds the first record boundary on its own, so the driver
never looks for boundaries), cuts after the first row that is not `ok` (as `join_splits` does), and
returns partial aggregates as rows of `PARTIAL_SCHEMA`, one `kind` per audit:

* QUEUE — per topic, queueId and transaction type (`key` 0..3): n, bytes (TOTALSIZE), lo/hi first and
  last store time, qlo/qhi first and last queue offset, extra = body bytes;
* RATE — per topic and time bucket (`key` = storeTimestamp // bucketMs): n, bytes;
* BODY — per topic and body size class (`key` 0 = empty, else the bit length): n, bytes = body bytes;
* RETRY — per %RETRY%/%DLQ% topic and reconsumeTimes (`key`): n, bytes;
* DUP_UNIQ / DUP_KEY — per split and hash bucket (`key`: the top 4 bits): arrays hashes/counts/firsts/
  lasts = FNV-1a 64 of topic NUL UNIQ_KEY (or of each KEYS entry), how many of the split's messages carry
  it, first and last physical offset. `merge_duplicates` merges one bucket of all splits (Spark
  shuffles the arrays whole, by bucket) with numpy;
* STOP — one row per split: n / bytes of its ok records, `key` the stopping status (-1: none), detail a
  JSON object of the walk facts the driver's `check_commitlog` needs (the stopping row, the last non-zero
  byte, records a resync finds after a rejected record, the newest dispatched store time);
* PROBLEM — a finding of the shared verify checks: file, lo = offset, text = kind, severity, detail.

Checks run here, per split, with the very code `mqtool verify` runs (`store.checks`): PHYSICALOFFSET
fields, ConsumeQueue units pointing into the split against its records (`check_consume_queue` with
`phy_range`), records without their unit (`check_dispatch_coverage`), and index entries pointing into the
split where no record starts (`check_index_targets`). Whole-store checks (the walk across files, units and
entries outside the data, index chains, checkpoint) run on the driver (`mqtool.audit`).

Only the partial aggregates go back to Spark (shipping every decoded row was 1.2-2x slower here). With
an output directory, the split also writes its message metadata rows (no bodies) as one Parquet file
`messages/part-<store>-<seq>.parquet` (written beside, then renamed: a retried task rewrites the same
file), so message rows never travel through the JVM either.
"""

from __future__ import annotations

import contextlib
import json
import mmap
import os
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from formats.columnar import STATUS_NAMES, STATUS_OK, decode_resync
from formats.names import DLQ_PREFIX, RETRY_PREFIX

if TYPE_CHECKING:
    from store.checks import ReachableKeys

# --- kinds of partial rows -------------------------------------------------------------------------

QUEUE, RATE, BODY, RETRY, DUP_UNIQ, DUP_KEY, STOP, PROBLEM = range(8)
KIND_NAMES = ("queue", "rate", "body", "retry", "dup_uniq", "dup_key", "stop", "problem")
NO_STOP = -1  # STOP row of a split whose records all passed (it ends at a record boundary)


SPLIT_FIELDS = (
    ("seq", pa.int32(), "int"),
    ("store", pa.int32(), "int"),
    ("path", pa.string(), "string"),
    ("root", pa.string(), "string"),
    ("base", pa.int64(), "bigint"),
    ("start", pa.int64(), "bigint"),
    ("end", pa.int64(), "bigint"),
    ("bucketMs", pa.int64(), "bigint"),
    ("checkCrc", pa.bool_(), "boolean"),
    ("fileIndex", pa.int32(), "int"),
    ("fileSize", pa.int64(), "bigint"),
    ("output", pa.string(), "string"),
    ("label", pa.string(), "string"),
)
SPLIT_SCHEMA = pa.schema([(name, t) for name, t, _ in SPLIT_FIELDS])

PARTIAL_FIELDS = (
    ("seq", pa.int32(), "int"),
    ("store", pa.int32(), "int"),
    ("kind", pa.int32(), "int"),
    ("topic", pa.string(), "string"),
    ("queueId", pa.int32(), "int"),
    ("key", pa.int64(), "bigint"),
    ("n", pa.int64(), "bigint"),
    ("bytes", pa.int64(), "bigint"),
    ("lo", pa.int64(), "bigint"),
    ("hi", pa.int64(), "bigint"),
    ("qlo", pa.int64(), "bigint"),
    ("qhi", pa.int64(), "bigint"),
    ("extra", pa.int64(), "bigint"),
    ("text", pa.string(), "string"),
    ("severity", pa.string(), "string"),
    ("detail", pa.string(), "string"),
    ("file", pa.string(), "string"),
    ("hashes", pa.list_(pa.int64()), "array<bigint>"),
    ("counts", pa.list_(pa.int64()), "array<bigint>"),
    ("firsts", pa.list_(pa.int64()), "array<bigint>"),
    ("lasts", pa.list_(pa.int64()), "array<bigint>"),
)
PARTIAL_SCHEMA = pa.schema([(name, t) for name, t, _ in PARTIAL_FIELDS])
PARTIAL_DDL = ", ".join(f"{name} {ddl}" for name, _, ddl in PARTIAL_FIELDS)

# Message metadata rows written with --output (MESSAGE_SCHEMA without body position and status).
MESSAGE_COLUMNS = (
    "physicalOffset",
    "totalSize",
    "magicCode",
    "bodyCRC",
    "queueId",
    "flag",
    "queueOffset",
    "physicalOffsetField",
    "sysFlag",
    "bornTimestamp",
    "bornHost",
    "storeTimestamp",
    "storeHost",
    "reconsumeTimes",
    "preparedTransactionOffset",
    "bodyLength",
    "topic",
    "properties",
    "keys",
    "tags",
    "uniqKey",
)

TRAN_TYPE_MASK = 0xC  # MessageSysFlag.TRANSACTION_ROLLBACK_TYPE: getTransactionValue(sysFlag)


@dataclass(frozen=True)
class SplitTask:
    """One split as the driver planned it (a row of SPLIT_SCHEMA)."""

    seq: int
    store: int
    path: str
    root: str
    base: int
    start: int
    end: int
    bucketMs: int  # noqa: N815 (the Spark column name)
    checkCrc: bool  # noqa: N815
    fileIndex: int  # noqa: N815
    fileSize: int  # noqa: N815
    output: str | None
    label: str


@dataclass(frozen=True)
class CqFile:
    """One ConsumeQueue file as the driver saw it: its valid units and the range of offsets they hit."""

    path: str
    first_queue_offset: int
    units: int
    min_phy: int  # fillers left out; min_phy > max_phy when there is none
    max_phy: int


@dataclass(frozen=True)
class QueueContext:
    topic: str
    queue_id: int
    min_offset: int
    max_offset: int
    file_size: int
    files: tuple[CqFile, ...]


@dataclass(frozen=True)
class IndexContext:
    path: str
    name: str  # relative to the store root
    hash_slot_num: int
    entry_offset: int  # byte position of entry 1
    entries: int  # used entries (indexCount - 1)


@dataclass
class StoreContext:
    """What the executors' checks need to know about a store besides their split (sent with the job)."""

    label: str
    file_starts: list[int]
    file_names: list[str]
    delay_levels: tuple[int, ...]
    commitlog_min: int
    abort: bool
    queues: list[QueueContext] = field(default_factory=list)
    facts: dict[tuple[str, int], tuple[int, int, int]] = field(default_factory=dict)  # min, max, last end
    index_files: list[IndexContext] = field(default_factory=list)
    max_rows: int = 1000
    checks: bool = True
    index_keys: ReachableKeys | None = None  # with --deep: every key's reachability is checked


# --- FNV-1a 64 over Arrow strings, vectorised ------------------------------------------------------

FNV_OFFSET = np.uint64(0xCBF29CE484222325)
FNV_PRIME = np.uint64(0x100000001B3)


def fnv1a64(data: bytes, h: int = int(FNV_OFFSET)) -> int:
    """FNV-1a 64 of `data` continuing from state `h` (the pure-Python reference of `hash_strings`)."""
    for byte in data:
        h = ((h ^ byte) * int(FNV_PRIME)) & 0xFFFFFFFFFFFFFFFF
    return h


def key_hash(topic: str, key: str) -> int:
    """The signed 64-bit hash the executors compute for (topic, key): FNV-1a 64 of topic NUL key."""
    h = fnv1a64(topic.encode("utf-8") + b"\x00" + key.encode("utf-8"))
    return h - (1 << 64) if h >= 1 << 63 else h


def hash_strings(arr: pa.Array, seed: np.ndarray | None = None) -> np.ndarray:
    """FNV-1a 64 (uint64) of every value of a non-null string array, each continuing from `seed[i]`.

    Strings are processed longest first, one byte position at a time over the rows still that long,
    so the cost is one vectorised step per byte of the longest string.
    """
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if arr.type == pa.large_string():
        arr = arr.cast(pa.string())
    n = len(arr)
    h = np.full(n, FNV_OFFSET, dtype=np.uint64) if seed is None else seed.astype(np.uint64, copy=True)
    if n == 0:
        return h
    bufs = arr.buffers()
    offsets = np.frombuffer(bufs[1], dtype=np.int32)[arr.offset : arr.offset + n + 1].astype(np.int64)
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    lengths = np.diff(offsets)
    order = np.argsort(-lengths, kind="stable")
    starts = offsets[:-1][order]
    sorted_len = lengths[order]
    hs = h[order]
    longest = int(sorted_len[0])
    active = np.searchsorted(-sorted_len, -np.arange(longest), side="left")
    with np.errstate(over="ignore"):
        for j in range(longest):
            m = int(active[j])
            hs[:m] ^= data[starts[:m] + j]
            hs[:m] *= FNV_PRIME
    h[order] = hs
    return h


def _topic_seeds(dictionary: pa.Array) -> np.ndarray:
    """Per topic dictionary entry: the FNV state after `topic NUL`."""
    h = hash_strings(dictionary.fill_null(""))
    with np.errstate(over="ignore"):
        return (h ^ np.uint64(0)) * FNV_PRIME


# --- one split -------------------------------------------------------------------------------------


def _open_file(path: str) -> tuple[object, int]:
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size == 0:
            return b"", 0
        return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ), size


def _close(buf: object) -> None:
    if isinstance(buf, mmap.mmap):
        with contextlib.suppress(BufferError):  # a view is still alive somewhere: the GC unmaps it later
            buf.close()


def _rows(columns: dict[str, list | pa.Array | np.ndarray], count: int) -> pa.RecordBatch:
    arrays = []
    for column in PARTIAL_SCHEMA:
        value = columns.get(column.name)
        if value is None:
            arrays.append(pa.nulls(count, column.type))
        elif isinstance(value, pa.Array | pa.ChunkedArray):
            arrays.append(value.cast(column.type) if value.type != column.type else value)
        else:
            arrays.append(pa.array(value, column.type))
    arrays = [a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a for a in arrays]
    return pa.RecordBatch.from_arrays(arrays, schema=PARTIAL_SCHEMA)


def _const(value, count: int, kind: pa.DataType) -> pa.Array:
    return pa.array(np.full(count, value), kind) if count else pa.array([], kind)


def _grouped(task: SplitTask, kind: int, table: pa.Table, keys: list[str], aggs: list, names: dict):
    """group_by(keys).aggregate(aggs) as partial rows; `names` maps result columns to partial columns."""
    if table.num_rows == 0:
        return None
    out = table.group_by(keys, use_threads=False).aggregate(aggs)
    count = out.num_rows
    cols: dict[str, object] = {
        "seq": _const(task.seq, count, pa.int32()),
        "store": _const(task.store, count, pa.int32()),
        "kind": _const(kind, count, pa.int32()),
    }
    for src, dst in names.items():
        cols[dst] = out.column(src)
    return _rows(cols, count)


def scan_split(task: SplitTask, context: StoreContext | None = None) -> list[pa.RecordBatch]:
    """Decode one split and return its partial rows (see the module docstring)."""
    buf, size = _open_file(task.path)
    try:
        data = np.frombuffer(buf, dtype=np.uint8) if size else np.zeros(0, np.uint8)
        batch = decode_resync(buf, task.base, task.start, min(task.end, size), check_crc=task.checkCrc)
        codes = batch.column("status").indices.to_numpy(zero_copy_only=False)
        bad = np.flatnonzero(codes != STATUS_OK)
        cut = int(bad[0]) if bad.size else batch.num_rows
        ok = batch.slice(0, cut)
        facts = _walk_facts(task, batch, ok, cut, bad.size > 0, data, size)
        del data
    finally:
        _close(buf)
    out: list[pa.RecordBatch] = []
    if ok.num_rows:
        out.extend(b for b in _aggregates(task, ok) if b is not None)
    if context is not None and context.checks:
        # units and index entries at or after a stop that ends the data are the driver's to judge; a
        # BLANK only ends the file: what points into it is judged here (no record starts there)
        ends_data = facts["status"] not in (None, "blank")
        stop_phy = task.base + facts["pos"] if ends_data else None
        problems, dispatched = _checks(task, context, ok, stop_phy)
        facts["dispatchedMaxTs"] = dispatched
        out.extend(problems)
    out.insert(0, _stop_row(task, ok, facts))
    if task.output and ok.num_rows:
        write_message_rows(task, ok)
    return out


def _last_nonzero(data: np.ndarray, start: int, end: int) -> int:
    from store.scan import last_nonzero

    return last_nonzero(data, start, end)


def _walk_facts(task, batch, ok, cut, stopped, data, size) -> dict:
    """What `store.scan.scan_file` records about a file's walk, for the part of it in this split."""
    facts: dict = {"status": None, "records": ok.num_rows}
    if ok.num_rows:
        facts["maxTs"] = int(pc.max(ok.column("storeTimestamp")).as_py())
        last = ok.num_rows - 1
        facts["lastOk"] = [
            int(ok.column("physicalOffset")[last].as_py()) - task.base,
            int(ok.column("totalSize")[last].as_py()),
        ]
    if task.start == 0 and batch.num_rows:
        facts["first"] = [batch.column("status")[0].as_py(), int(batch.column("storeTimestamp")[0].as_py())]
    if not stopped:
        return facts
    status = STATUS_NAMES[int(batch.column("status").indices[cut].as_py())]
    pos = int(batch.column("physicalOffset")[cut].as_py()) - task.base
    total = int(batch.column("totalSize")[cut].as_py())
    facts.update(status=status, pos=pos, total=total)
    facts["dataEnd"] = _last_nonzero(data, pos, size)
    if status not in ("ok", "blank", "end"):
        extent = min(max(total, 8), size - pos)
        facts["stopDataEnd"] = _last_nonzero(data, pos, pos + extent)
        if facts["dataEnd"] > pos + extent:
            facts["beyond"] = _ok_count(decode_resync(data, task.base, pos + 1, check_crc=task.checkCrc))
    elif status == "end" and facts["dataEnd"] > pos:
        facts["beyond"] = _ok_count(decode_resync(data, task.base, pos + 1, check_crc=task.checkCrc))
    return facts


def _ok_count(batch: pa.RecordBatch) -> int:
    return int(np.count_nonzero(batch.column("status").indices.to_numpy(zero_copy_only=False) == STATUS_OK))


def _stop_row(task: SplitTask, ok: pa.RecordBatch, facts: dict) -> pa.RecordBatch:
    sizes = ok.column("totalSize").to_numpy()
    status = facts["status"]
    return _rows(
        {
            "seq": [task.seq],
            "store": [task.store],
            "kind": [STOP],
            "key": [NO_STOP if status is None else STATUS_NAMES.index(status)],
            "n": [ok.num_rows],
            "bytes": [int(sizes.sum(dtype=np.int64))],
            "text": [status],
            "file": [task.path],
            "detail": [json.dumps(facts)],
        },
        1,
    )


def _aggregates(task: SplitTask, ok: pa.RecordBatch) -> list[pa.RecordBatch | None]:
    topic_col = ok.column("topic")
    topics = topic_col.dictionary
    t_idx = topic_col.indices
    topic_names = topics.take(t_idx)
    size = ok.column("totalSize")
    store_ts = ok.column("storeTimestamp")
    body = ok.column("bodyLength")
    sys_flag = ok.column("sysFlag").to_numpy()
    body_np = body.to_numpy()
    _, exponent = np.frexp(body_np.astype(np.float64))
    size_class = np.where(body_np > 0, exponent, 0).astype(np.int64)
    table = pa.table(
        {
            "topic": topic_names,
            "queueId": ok.column("queueId"),
            "tran": pa.array(((sys_flag & TRAN_TYPE_MASK) >> 2).astype(np.int64)),
            "size": size.cast(pa.int64()),
            "ts": store_ts,
            "qo": ok.column("queueOffset"),
            "body": body.cast(pa.int64()),
            "bucket": pa.array(store_ts.to_numpy() // task.bucketMs),
            "class": pa.array(size_class),
            "reconsume": ok.column("reconsumeTimes").cast(pa.int64()),
        }
    )
    out = [
        _grouped(
            task,
            QUEUE,
            table,
            ["topic", "queueId", "tran"],
            [
                ("size", "count"),
                ("size", "sum"),
                ("ts", "min"),
                ("ts", "max"),
                ("qo", "min"),
                ("qo", "max"),
                ("body", "sum"),
            ],
            {
                "topic": "topic",
                "queueId": "queueId",
                "tran": "key",
                "size_count": "n",
                "size_sum": "bytes",
                "ts_min": "lo",
                "ts_max": "hi",
                "qo_min": "qlo",
                "qo_max": "qhi",
                "body_sum": "extra",
            },
        ),
        _grouped(
            task,
            RATE,
            table,
            ["topic", "bucket"],
            [("size", "count"), ("size", "sum")],
            {"topic": "topic", "bucket": "key", "size_count": "n", "size_sum": "bytes"},
        ),
        _grouped(
            task,
            BODY,
            table,
            ["topic", "class"],
            [("body", "count"), ("body", "sum")],
            {"topic": "topic", "class": "key", "body_count": "n", "body_sum": "bytes"},
        ),
    ]
    retry_topic = pc.or_(pc.starts_with(topics, RETRY_PREFIX), pc.starts_with(topics, DLQ_PREFIX))
    is_retry = pc.fill_null(retry_topic.take(t_idx), False)
    if pc.any(is_retry).as_py():
        out.append(
            _grouped(
                task,
                RETRY,
                table.filter(is_retry),
                ["topic", "reconsume"],
                [("size", "count"), ("size", "sum")],
                {"topic": "topic", "reconsume": "key", "size_count": "n", "size_sum": "bytes"},
            )
        )
    seeds = _topic_seeds(topics)
    row_seeds = seeds[t_idx.to_numpy(zero_copy_only=False)]
    phy = ok.column("physicalOffset").to_numpy()
    out.append(_dup_uniq(task, ok.column("uniqKey"), row_seeds, phy))
    out.append(_dup_keys(task, ok.column("keys"), row_seeds, phy))
    return out


DUP_BUCKETS = 16  # rows per split and kind: the hashes' top 4 bits; Spark shuffles whole arrays by bucket


def group_hashes(h: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(hash, messages, first phy, last phy) per distinct hash, sorted by hash; a message counts once."""
    order = np.lexsort((p, h))
    h, p = h[order], p[order]
    distinct = np.ones(len(h), dtype=bool)
    distinct[1:] = (h[1:] != h[:-1]) | (p[1:] != p[:-1])
    h, p = h[distinct], p[distinct]
    starts = np.flatnonzero(np.r_[True, h[1:] != h[:-1]])
    ends = np.r_[starts[1:], len(h)]
    return h[starts], ends - starts, p[starts], p[ends - 1]


def _bucket_of(h: np.ndarray) -> np.ndarray:
    return (h.view(np.uint64) >> np.uint64(60)).astype(np.int64)


def _dup_row(task: SplitTask, kind: int, hashes: np.ndarray, phy: np.ndarray) -> pa.RecordBatch | None:
    if hashes.size == 0:
        return None
    h, counts, firsts, lasts = group_hashes(hashes.view(np.int64), phy.astype(np.int64))
    buckets = _bucket_of(h)
    order = np.argsort(buckets, kind="stable")
    present, sizes = np.unique(buckets, return_counts=True)
    offsets = np.r_[0, np.cumsum(sizes)].astype(np.int32)

    def lists(values: np.ndarray) -> pa.Array:
        return pa.ListArray.from_arrays(pa.array(offsets), pa.array(values[order].astype(np.int64)))

    count = len(present)
    return _rows(
        {
            "seq": _const(task.seq, count, pa.int32()),
            "store": _const(task.store, count, pa.int32()),
            "kind": _const(kind, count, pa.int32()),
            "key": pa.array(present),
            "n": pa.array(sizes),
            "hashes": lists(h),
            "counts": lists(counts),
            "firsts": lists(firsts),
            "lasts": lists(lasts),
        },
        count,
    )


def duplicates_merger(top: int):
    """The applyInArrow function (a plain closure: PySpark cannot infer the UDF type of a partial)."""

    def merge(table):
        return merge_duplicates(top, table)

    return merge


DUP_RESULT_DDL = (
    "store int, kind int, bucket bigint, h bigint, messages bigint, firstPhyOffset bigint, "
    "lastPhyOffset bigint, groups bigint, groupMessages bigint"
)


def merge_duplicates(top: int, table: pa.Table) -> pa.Table:
    """groupBy(store, kind, bucket).applyInArrow: merge the splits' hash arrays of one bucket; return the
    bucket's `top` most repeated hashes, each row carrying the bucket's totals (hashes in more than one
    message, and how many messages they are in)."""

    def flat(name: str) -> np.ndarray:
        return pc.list_flatten(table.column(name)).to_numpy()

    h, c, f, last = flat("hashes"), flat("counts"), flat("firsts"), flat("lasts")
    store, kind, bucket = (table.column(k)[0].as_py() for k in ("store", "kind", "key"))
    order = np.argsort(h, kind="stable")
    h, c, f, last = h[order], c[order], f[order], last[order]
    starts = np.flatnonzero(np.r_[True, h[1:] != h[:-1]]) if len(h) else np.zeros(0, np.int64)
    if len(starts):
        counts = np.add.reduceat(c, starts)
        firsts = np.minimum.reduceat(f, starts)
        lasts = np.maximum.reduceat(last, starts)
        hs = h[starts]
    else:
        counts = firsts = lasts = hs = np.zeros(0, np.int64)
    dup = np.flatnonzero(counts > 1)
    groups, messages = len(dup), int(counts[dup].sum())
    chosen = dup[np.lexsort((firsts[dup], -counts[dup]))[:top]]
    n = len(chosen)
    return pa.table(
        {
            "store": pa.array([store] * n, pa.int32()),
            "kind": pa.array([kind] * n, pa.int32()),
            "bucket": pa.array([bucket] * n, pa.int64()),
            "h": pa.array(hs[chosen], pa.int64()),
            "messages": pa.array(counts[chosen], pa.int64()),
            "firstPhyOffset": pa.array(firsts[chosen], pa.int64()),
            "lastPhyOffset": pa.array(lasts[chosen], pa.int64()),
            "groups": pa.array([groups] * n, pa.int64()),
            "groupMessages": pa.array([messages] * n, pa.int64()),
        }
    )


def _dup_uniq(task: SplitTask, uniq: pa.Array, seeds: np.ndarray, phy: np.ndarray):
    present = np.flatnonzero(uniq.is_valid().to_numpy(zero_copy_only=False))
    if present.size == 0:
        return None
    values = uniq.take(pa.array(present)) if present.size < len(uniq) else uniq
    return _dup_row(task, DUP_UNIQ, hash_strings(values, seeds[present]), phy[present])


def _dup_keys(task: SplitTask, keys: pa.Array, seeds: np.ndarray, phy: np.ndarray):
    """Every non-empty KEYS entry (split on spaces, as the index does) of every message."""
    if keys.null_count == len(keys):
        return None
    lists = pc.split_pattern(keys, " ")
    parents = pc.list_parent_indices(lists).to_numpy(zero_copy_only=False)
    flat = pc.list_flatten(lists)
    keep = np.flatnonzero(pc.binary_length(flat).to_numpy(zero_copy_only=False) > 0)
    if keep.size == 0:
        return None
    flat = flat.take(pa.array(keep))
    parents = parents[keep]
    return _dup_row(task, DUP_KEY, hash_strings(flat, seeds[parents]), phy[parents])


# --- the shared verify checks (store/checks/) ------------------------------------------------

_SPLIT_KINDS_DROPPED = {"index_expired_entries", "index_beyond_end"}  # judged once by the driver
NATIVE_UNITS = np.dtype([("queueOffset", "i8"), ("phyOffset", "i8"), ("size", "i4"), ("tagsCode", "i8")])


def _units_in_range(queue: QueueContext, lo: int, hi: int) -> np.ndarray:
    """The queue's live units (queue offset >= min) whose phyOffset lies in [lo, hi)."""
    from formats.consumequeue import CQ_UNIT_DTYPE

    parts = []
    for f in queue.files:
        if f.max_phy < lo or f.min_phy >= hi or f.min_phy > f.max_phy:
            continue
        with open(f.path, "rb") as fh:
            mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            view = np.frombuffer(mm, dtype=CQ_UNIT_DTYPE, count=f.units)
            phy = view["phyOffset"]
            qo = f.first_queue_offset + np.arange(f.units, dtype=np.int64)
            sel = np.flatnonzero((phy >= lo) & (phy < hi) & (qo >= queue.min_offset))
            if sel.size:
                out = np.empty(len(sel), dtype=NATIVE_UNITS)
                out["queueOffset"] = qo[sel]
                out["phyOffset"] = phy[sel]
                out["size"] = view["size"][sel]
                out["tagsCode"] = view["tagsCode"][sel]
                parts.append(out)
            del view, phy
        finally:
            _close(mm)
    return np.concatenate(parts) if parts else np.zeros(0, NATIVE_UNITS)


def _checks(
    task: SplitTask, ctx: StoreContext, ok: pa.RecordBatch, stop_phy: int | None
) -> tuple[list[pa.RecordBatch], int | None]:
    """Run the verify checks of store/checks/ that concern this split's records.

    Returns PROBLEM rows and the newest store time of a record that has its ConsumeQueue unit.
    """
    from formats.indexfile import INDEX_ENTRY_DTYPE
    from store import checks

    problems = checks.ProblemList(ctx.label, max_rows=ctx.max_rows)
    name = ctx.file_names[task.fileIndex]
    checks.check_file_records(checks.CommitLogFile(name, task.base, task.fileSize, ok), problems)
    deep = ctx.index_keys is not None
    records = checks.RecordIndex.from_batches(
        [ok], ctx.file_starts, ctx.file_names, delay_levels=ctx.delay_levels, with_keys=deep
    )
    lo = task.base + task.start
    # units at or after this split's stop are the driver's (outside the data); those before it are ours
    valid_end = stop_phy if stop_phy is not None else 1 << 62
    hi = min(task.base + task.end, valid_end)
    hits = []
    for q in ctx.queues:
        try:
            units = _units_in_range(q, lo, hi)
        except OSError as exc:
            problems.add("cq_file", f"consumequeue/{q.topic}/{q.queue_id}", None, f"cannot read: {exc}")
            continue
        if len(units):
            hits.append(
                checks.check_consume_queue(
                    units,
                    records,
                    problems,
                    topic=q.topic,
                    queue_id=q.queue_id,
                    min_offset=q.min_offset,
                    file_size=q.file_size,
                    commitlog_min=ctx.commitlog_min,
                    valid_end=valid_end,
                    phy_range=(lo, hi),
                )
            )
    all_hits = np.concatenate(hits) if hits else np.zeros(0, dtype=np.int64)
    facts = {k: checks.QueueFacts(*v) for k, v in ctx.facts.items()}
    horizon = checks.check_dispatch_coverage(records, all_hits, facts, problems, abort=ctx.abort)
    if deep:
        reach = ctx.index_keys.facts_in(lo, hi)
        checks.check_index_coverage(records, reach, problems, cq_horizon=horizon)
    dispatched = int(records.store_ts[all_hits].max()) if len(all_hits) else None
    for ix in ctx.index_files:
        if ix.entries <= 0:
            continue
        with open(ix.path, "rb") as fh:
            mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            entries = np.frombuffer(mm, dtype=INDEX_ENTRY_DTYPE, count=ix.entries, offset=ix.entry_offset)
            facts_ix = checks.IndexFileFacts(
                ix.name, 0, 0, ix.entries, phy=entries["phyOffset"].astype(np.int64)
            )
            checks.check_index_targets(
                facts_ix,
                records,
                problems,
                hash_slot_num=ix.hash_slot_num,
                commitlog_min=lo,
                valid_end=hi,
            )
            del entries
        finally:
            _close(mm)
    table = problems.table()
    if table.num_rows:
        keep = pc.invert(pc.is_in(table.column("kind"), pa.array(sorted(_SPLIT_KINDS_DROPPED))))
        table = table.filter(keep)
    if table.num_rows == 0:
        return [], dispatched
    count = table.num_rows
    row = _rows(
        {
            "seq": _const(task.seq, count, pa.int32()),
            "store": _const(task.store, count, pa.int32()),
            "kind": _const(PROBLEM, count, pa.int32()),
            "file": table.column("file").combine_chunks(),
            "lo": table.column("offset").combine_chunks(),
            "text": table.column("kind").combine_chunks(),
            "severity": table.column("severity").combine_chunks(),
            "detail": table.column("detail").combine_chunks(),
        },
        count,
    )
    return [row], dispatched


# --- message rows (--output) ----------------------------------------------------------------------


def message_file(output: str, store: int, seq: int) -> Path:
    return Path(output) / "messages" / f"part-{store:03d}-{seq:06d}.parquet"


def write_message_rows(task: SplitTask, ok: pa.RecordBatch) -> Path:
    """The split's message metadata (no bodies) as one Parquet file, written atomically."""
    import pyarrow.parquet as pq

    table = pa.Table.from_batches([ok.select(list(MESSAGE_COLUMNS))])
    table = table.add_column(0, "store", pa.array([task.label] * table.num_rows, pa.string()))
    target = message_file(task.output, task.store, task.seq)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")
    pq.write_table(table, tmp)
    os.replace(tmp, target)
    return target


# --- the mapInArrow function -----------------------------------------------------------------------


def scan_partition(
    contexts: dict[int, StoreContext], splits: list[dict], batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """mapInArrow over `spark.range(len(splits))` (bind `contexts` and the split rows with
    functools.partial): split numbers in, partial rows out. The splits travel in the function itself, so
    the input is a JVM-only range and no Python stage has to turn driver rows into Spark rows first."""
    for batch in batches:
        for i in batch.column(0).to_pylist():
            task = SplitTask(**splits[i])
            yield from scan_split(task, contexts.get(task.store))


# --- the session (driver only) ---------------------------------------------------------------------

_LOG4J = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n
# Spark sets the shell's level from this logger; when it is configured and equal to the root level, Spark
# does not print "Setting default log level to ..." on every start
logger.shell.name = org.apache.spark.api.python.PythonGatewayServer
logger.shell.level = error
"""


def _quiet_log_config() -> str:
    import tempfile

    path = Path(tempfile.gettempdir()) / f"mqtool-log4j2-{os.getuid()}.properties"
    if not path.exists() or path.read_text() != _LOG4J:
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(_LOG4J)
        os.replace(tmp, path)
    return str(path)


def active_session():
    """The SparkSession already running in this process (under spark-submit, or a test's), else None.
    Seen from any thread: the audit starts its session in a helper thread, where getActiveSession (per
    thread) finds nothing, and taking over another's session as our own would stop it at the end."""
    from pyspark.sql import SparkSession

    session = SparkSession.getActiveSession()
    if session is not None:
        return session
    try:
        return SparkSession.active()  # the active or default session of the process
    except Exception:  # PySparkRuntimeError NO_ACTIVE_OR_DEFAULT_SESSION
        return None


def under_spark_submit() -> bool:
    """True in a Python driver that spark-submit launched (its JVM is already running and configured)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


# the JVM's notice for the incubator module Spark 4 always adds (--add-modules=jdk.incubator.vector)
_JVM_NOTICE = b"WARNING: Using incubator modules:"


def _launch_driver_jvm(settings: dict[str, str]) -> None:
    """Start the driver JVM (the py4j gateway) as PySpark would, with `settings`, but with its stderr read
    by a thread that drops the JVM's incubator-module notice and passes every other line on."""
    import subprocess
    import threading

    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None:
        return
    conf = SparkConf(loadDefaults=False).setAll(list(settings.items()))
    gateway = launch_gateway(conf, popen_kwargs={"stderr": subprocess.PIPE})
    threading.Thread(
        target=_pass_stderr, args=(gateway.proc.stderr,), name="mqtool-jvm-stderr", daemon=True
    ).start()
    SparkContext._ensure_initialized(gateway=gateway, conf=conf)


def _pass_stderr(stream) -> None:
    for line in iter(stream.readline, b""):
        if not line.startswith(_JVM_NOTICE):
            with contextlib.suppress(Exception):  # our stderr closed or replaced: the line is lost
                sys.stderr.write(line.decode("utf-8", "replace"))
                sys.stderr.flush()


def start_session(
    master: str = "local[*]",
    app_name: str = "mqtool audit",
    conf: dict | None = None,
    create_class_archive: bool = False,
):
    """Reuse the active session; under spark-submit take its configuration as given (--master, memory,
    PYSPARK_PYTHON); else start one on `master` with quiet logs, no UI, Python workers running this
    interpreter and the driver JVM on the class-data archive (`mqtool.audit.cds`) when there is one.
    With `create_class_archive` and no archive yet, the JVM writes one as it exits: end such a session
    with `stop_session`. Returns (session, started_here)."""
    session = active_session()
    if session is not None:
        return session, False
    if under_spark_submit():
        from pyspark.sql import SparkSession

        builder = SparkSession.builder.appName(app_name).config(
            "spark.sql.execution.arrow.pyspark.enabled", "true"
        )
        session = builder.getOrCreate()
        return session, True
    local = master.startswith("local")
    if local or "PYSPARK_PYTHON" not in os.environ:
        os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    if local:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    from mqtool.audit import cds as spark_cds

    global _creating_archive
    log = f"-Dlog4j.configurationFile=file:{_quiet_log_config()} -Dlog4j2.level=error"
    archive = spark_cds.class_archive(create=create_class_archive)
    settings = {
        "spark.master": master,
        "spark.app.name": app_name,
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.shuffle.partitions": "8",
        "spark.driver.extraJavaOptions": f"{log} {archive.java_options()}" if archive else log,
        "spark.executor.extraJavaOptions": log,
    }
    if local:
        settings["spark.driver.memory"] = "2g"
    settings.update({key: str(value) for key, value in (conf or {}).items()})
    _launch_driver_jvm(settings)
    builder = SparkSession.builder
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    _creating_archive = archive if archive is not None and archive.creating is not None else None
    return session, True


_creating_archive = None  # the class archive the running JVM writes at exit (start_session)


def stop_session(session) -> None:
    """Stop a session start_session started; when its JVM is writing the class archive, end the JVM and
    wait for the archive (only the first audit on a machine does)."""
    global _creating_archive
    session.stop()
    archive, _creating_archive = _creating_archive, None
    if archive is not None:
        from mqtool.audit import cds as spark_cds

        if spark_cds.stop_jvm():  # a JVM still running may still be writing: leave its file alone
            archive.finish()


__all__ = [
    "KIND_NAMES",
    "PARTIAL_DDL",
    "PARTIAL_SCHEMA",
    "SPLIT_SCHEMA",
    "CqFile",
    "IndexContext",
    "QueueContext",
    "SplitTask",
    "StoreContext",
    "active_session",
    "fnv1a64",
    "group_hashes",
    "hash_strings",
    "duplicates_merger",
    "merge_duplicates",
    "key_hash",
    "message_file",
    "scan_partition",
    "scan_split",
    "start_session",
    "stop_session",
    "under_spark_submit",
    "write_message_rows",
]
