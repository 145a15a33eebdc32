"""Columnar CommitLog decoding: one commitlog byte range -> one pyarrow RecordBatch, one row per record.

The fast path for whole-store scans of CommitLog files. A compiled kernel
(formats/columnar/_columnar_kernels.py, from the ahead-of-time extension or numba's JIT:
formats/columnar/kernels.py, loaded on first use only) walks the records exactly as the broker's recovery
does (`CommitLog.checkMessageAndReturnSize`, `recoverNormally`): it applies
`CommitLog.checkMessageAndReturnSize` at every boundary and stops at the first record it would reject.

Rows and statuses (column `status`, dictionary of STATUS_NAMES):

* `ok` — an accepted message record; every column is filled.
* `blank` — the end-of-file blank record (`BLANK_MAGIC_CODE`, `DefaultAppendMessageCallback.doAppend`); the
  walk stops there (the rest of the file is unused).
* `end` — zeros where a record should start (TOTALSIZE 0, MAGICCODE 0): the end of written data.
* `bad_magic`, `truncated` (a read runs past the buffer, or TOTALSIZE exceeds what is left),
  `size_mismatch` (inconsistent or negative lengths, or TOTALSIZE != the length formula), `crc_mismatch`
  (only with check_crc), `bad_property` (DELAY of a SCHEDULE_TOPIC_XXXX record is not an int, which
  makes the broker's check throw) — a record the broker rejects; its row ends the result.

So the last row tells why the walk stopped (none when a range ends at a valid record boundary). In rows
other than `ok`, physicalOffset, totalSize and magicCode are always set; the fixed header fields (up to
bodyLength, bodyOffset) are set when the header lies inside the buffer and are 0 otherwise; topic, hosts,
properties, keys, tags, uniqKey and body are null.

Columns (MESSAGE_SCHEMA): physicalOffset is the record's position (file start + offset in the buffer);
physicalOffsetField is the PHYSICALOFFSET stored in it (the broker does not compare them). bodyOffset is
the body's position inside the buffer (slice it as buf[bodyOffset:bodyOffset + bodyLength]). topic,
bornHost and storeHost are dictionary-encoded; hosts are "a.b.c.d:port" or "[v6]:port" (RFC 5952 form);
with hosts=False (a reader that never looks at them) both are null, and building their dictionaries is
skipped. keys, tags and uniqKey are the values the broker's property parser gives (last occurrence wins,
`MessageDecoder.string2messageProperties`),
null when absent. Strings are UTF-8; invalid sequences become U+FFFD, as Java's decoder does.
`properties` (the raw PROPERTIES bytes) is a binary_view column pointing into `buf` itself: no copy, and
the batch keeps `buf` alive. Cast it to pa.binary() where a compute kernel lacks view support, and before
Arrow IPC (e.g. Spark mapInArrow), which would otherwise ship the whole referenced file buffer. `body`
(with_body=True) is a copied binary column. A V2 record (5.1.0+) is accepted unless accept_v2=False
(4.9.x brokers treat V2 as an illegal magic code).

Speed: decode files in parallel in processes (the ahead-of-time kernels hold the GIL). Output arrays are
reused by later decodes once no batch refers to them (`release_buffers` drops them).

Splits (Spark byte ranges): `decode_resync` starts at the first record boundary at/after `start`, found by
magic-code search and confirmed by the full record check plus the record's own PHYSICALOFFSET field (a
blank is confirmed by its size reaching the buffer end). A record belongs to the split it starts in; at the
split end the walk hands over exactly to where the next split's resync will start. Splits decode records
past the point where the whole-file walk stops (the broker would truncate there), so combine them with
`join_splits`, which cuts after the first row that is not `ok`; the result equals the whole-file decode.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from formats.message.msgid import host_str

STATUS_NAMES = (
    "ok",
    "blank",
    "end",
    "bad_magic",
    "truncated",
    "size_mismatch",
    "crc_mismatch",
    "bad_property",
)
STATUS_OK, STATUS_BLANK, STATUS_END = 0, 1, 2
# the statuses of a record the broker's check rejects (the walk stops there; recovery truncates)
FAILURE_STATUSES = frozenset(STATUS_NAMES[3:])

_DICT_STRING = pa.dictionary(pa.int32(), pa.string())
_STATUS_TYPE = pa.dictionary(pa.int8(), pa.string())


def column_values(col: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A decoded column's values as numpy (one chunk)."""
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    return col.to_numpy(zero_copy_only=False)


def dictionary_indices(col: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A dictionary column's indices as numpy (`status`: indices into STATUS_NAMES; nulls read as 0)."""
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    indices = col.indices
    if indices.null_count:
        indices = indices.fill_null(0)
    return indices.to_numpy(zero_copy_only=False)


def _strings(values: Sequence[str | None]) -> pa.Array:
    """A string array built from buffers (`pa.array` on Python objects would import pandas)."""
    raw = [b"" if v is None else v.encode("utf-8", "surrogatepass") for v in values]
    offsets = np.zeros(len(raw) + 1, dtype=np.int32)
    np.cumsum(np.array([len(r) for r in raw], dtype=np.int32), out=offsets[1:])
    valid = np.array([v is not None for v in values], dtype=bool)
    validity = None if valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(
        pa.string(), len(raw), [validity, pa.py_buffer(offsets), pa.py_buffer(b"".join(raw))]
    )


_STATUS_DICTIONARY = _strings(STATUS_NAMES)

MESSAGE_SCHEMA = pa.schema(
    [
        pa.field("physicalOffset", pa.int64(), nullable=False),
        pa.field("totalSize", pa.int32(), nullable=False),
        pa.field("magicCode", pa.int32(), nullable=False),
        pa.field("bodyCRC", pa.int32(), nullable=False),
        pa.field("queueId", pa.int32(), nullable=False),
        pa.field("flag", pa.int32(), nullable=False),
        pa.field("queueOffset", pa.int64(), nullable=False),
        pa.field("physicalOffsetField", pa.int64(), nullable=False),
        pa.field("sysFlag", pa.int32(), nullable=False),
        pa.field("bornTimestamp", pa.int64(), nullable=False),
        pa.field("bornHost", _DICT_STRING),
        pa.field("storeTimestamp", pa.int64(), nullable=False),
        pa.field("storeHost", _DICT_STRING),
        pa.field("reconsumeTimes", pa.int32(), nullable=False),
        pa.field("preparedTransactionOffset", pa.int64(), nullable=False),
        pa.field("bodyOffset", pa.int64(), nullable=False),
        pa.field("bodyLength", pa.int32(), nullable=False),
        pa.field("topic", _DICT_STRING),
        pa.field("properties", pa.binary_view()),
        pa.field("keys", pa.string()),
        pa.field("tags", pa.string()),
        pa.field("uniqKey", pa.string()),
        pa.field("status", _STATUS_TYPE, nullable=False),
    ]
)
BODY_FIELD = pa.field("body", pa.binary())
MESSAGE_SCHEMA_WITH_BODY = MESSAGE_SCHEMA.append(BODY_FIELD)

# kernel column layout (mirrors _columnar_kernels; kept here so this module does not import numba)
_C64 = {
    "physicalOffset": 0,
    "queueOffset": 1,
    "physicalOffsetField": 2,
    "bornTimestamp": 3,
    "storeTimestamp": 4,
    "preparedTransactionOffset": 5,
    "bodyOffset": 6,
}
_C32 = {
    "totalSize": 0,
    "magicCode": 1,
    "bodyCRC": 2,
    "queueId": 3,
    "flag": 4,
    "sysFlag": 5,
    "reconsumeTimes": 6,
    "bodyLength": 7,
}
_C64_BORN_KEY = 7  # not a column: a spilled walk's IPv4 born hosts as 8-byte keys (_kernel_base)
_C32_TOPIC, _C32_BORNHOST, _C32_STOREHOST = 8, 9, 10
_VAR = {"properties": 0, "keys": 1, "tags": 2, "uniqKey": 3, "body": 4}
_VALID_DICT_BIT = 1 << 5
# born hosts: past this many distinct values (and more than a quarter of the rows) the walk stops
# interning them and a hash pass builds their dictionary (see _kernel_base.SPILLED); 0 = from the start
HOST_SPILL_MIN = 1 << 12


def walk_stop(
    buf, start: int = 0, *, check_crc: bool = True, accept_v2: bool = True, keep: int = 1
) -> tuple[str, int, list[int]]:
    """Where a walk of one commitlog file from `start` (a record boundary) stops, without decoding columns:
    (status name, position of the stopping record, positions of the last `keep` accepted records, oldest
    first). The same stop as `decode_range`'s last row."""
    from formats.columnar.kernels import kernel, tables

    ring = np.zeros(max(1, keep), dtype=np.int64)
    status, pos, count = kernel("walk_stop")(
        _as_array(buf), int(start), bool(check_crc), bool(accept_v2), *tables(), ring
    )
    count, size = int(count), len(ring)
    kept = [int(ring[i % size]) for i in range(max(0, count - size), count)]
    return STATUS_NAMES[int(status)], int(pos), kept[-keep:] if keep else []


def decode_range(
    buf,
    base_offset: int,
    start: int = 0,
    end: int | None = None,
    *,
    check_crc: bool = False,
    with_body: bool = False,
    accept_v2: bool = True,
    hosts: bool = True,
) -> pa.RecordBatch:
    """Decode the records that start in [start, end) of one commitlog file.

    buf holds the file's bytes (mmap, memoryview, bytes; whole file, so that the broker's "bytes
    remaining" checks see the real file end); its first byte has physical offset base_offset. `start` must
    be a record boundary. See the module docstring for rows, statuses and the hand-over at `end`.
    """
    return _decode(buf, base_offset, start, end, check_crc, with_body, accept_v2, resync=False, hosts=hosts)


def decode_resync(
    buf,
    base_offset: int,
    start: int,
    end: int | None = None,
    *,
    check_crc: bool = False,
    with_body: bool = False,
    accept_v2: bool = True,
    hosts: bool = True,
) -> pa.RecordBatch:
    """Like decode_range, for a split that may start mid-record: begins at the first boundary >= start.

    Position 0 is always a boundary (a record never spans files), so a split at 0 is decoded from there.
    """
    return _decode(
        buf, base_offset, start, end, check_crc, with_body, accept_v2, resync=start > 0, hosts=hosts
    )


def walk_chain(
    buf,
    base_offset: int,
    start: int,
    end: int | None = None,
    *,
    resync: bool = False,
    check_crc: bool = False,
    accept_v2: bool = True,
) -> tuple[str, int, int]:
    """Walk one commitlog file's size chain with the broker's check (`CommitLog.checkMessageAndReturnSize`)
    as its recovery walks, over the records that start in [start, end) (default: to the file's end): from
    the record boundary `start`, or with resync from the first boundary at or after it, as decode_resync
    starts. Returns (status, position, position of the last accepted record or -1): the first record not
    accepted (a STATUS_NAMES name), or "handover" and where the next range's resync takes over (the
    ranges of a file walked in order give its whole walk, as splits do). The compiled twin of the struct
    walk `store.log.commitlog.CommitLog.walk_end` makes on small spans."""
    from formats.columnar.kernels import kernel, tables

    b = _as_array(buf)
    stop = b.shape[0] if end is None else int(end)
    status, at, last, _ = kernel("walk_chain")(
        b, int(base_offset), int(start), stop, bool(resync), bool(check_crc), bool(accept_v2), *tables()
    )
    return ("handover" if status < 0 else STATUS_NAMES[int(status)]), int(at), int(last)


def join_splits(batches: Sequence[pa.RecordBatch]) -> pa.Table:
    """Concatenate the batches of consecutive splits of one file, cut after the first row not `ok`."""
    pieces = []
    for batch in batches:
        codes = _status_codes(batch)
        stops = np.flatnonzero(codes != STATUS_OK)
        if stops.size:
            pieces.append(batch.slice(0, int(stops[0]) + 1))
            break
        pieces.append(batch)
    schema = batches[0].schema if batches else MESSAGE_SCHEMA
    return pa.Table.from_batches(pieces, schema=schema)


def status_names(batch: pa.RecordBatch | pa.Table) -> list[str]:
    """The status column as plain strings."""
    return batch.column("status").cast(pa.string()).to_pylist()


def _status_codes(batch: pa.RecordBatch) -> np.ndarray:
    col = batch.column("status")
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    return _int8_values(col.indices)


def _int8_values(arr: pa.Array) -> np.ndarray:
    """A null-free int8 Arrow array as a numpy view (pyarrow's to_numpy imports pandas: ~0.5 s)."""
    return np.frombuffer(arr.buffers()[1], dtype=np.int8, count=len(arr), offset=arr.offset)


def _as_array(buf) -> np.ndarray:
    if isinstance(buf, np.ndarray):
        return buf.view(np.uint8).reshape(-1)
    return np.frombuffer(buf, dtype=np.uint8)


# Output arrays of earlier decodes, reused once no Arrow array refers to them any more: first touches of
# fresh memory cost ~1 ns per byte here, a third of a whole decode. Two sets, so that a loop that still
# holds the previous file's batch while decoding the next one alternates between them.
_POOL: dict[str, list[np.ndarray]] = {}
_POOL_SETS = 2
_MIN_RECORD_SIZE = 91  # smallest valid record: bounds the rows a range can hold
# Outputs: name -> (dtype, shape given the row capacity, axis of the capacity)
_OUTPUTS = {
    "c64": (np.int64, lambda cap: (len(_C64) + 1, cap), 1),
    "c32": (np.int32, lambda cap: (len(_C32) + 3, cap), 1),
    "offs": (np.int32, lambda cap: (len(_VAR), cap + 1), 1),
    "pviews": (np.uint8, lambda cap: (cap, 16), 0),
    "status": (np.int8, lambda cap: (cap,), 0),
    "valid": (np.uint8, lambda cap: (cap,), 0),
    "bad": (np.uint8, lambda cap: (cap,), 0),
}


def release_buffers() -> None:
    """Drop the output arrays kept for reuse by the next decode."""
    _POOL.clear()


def _fits(arr: np.ndarray, dtype, shape: tuple[int, ...], axis: int) -> bool:
    return (
        arr.dtype == dtype
        and arr.ndim == len(shape)
        and all(
            have >= want if k == axis else have == want
            for k, (have, want) in enumerate(zip(arr.shape, shape, strict=True))
        )
    )


def _take(name: str, dtype, shape: tuple[int, ...], axis: int) -> np.ndarray:
    pooled = _POOL.setdefault(name, [])
    # references to a free array: the pool list, the loop variable, getrefcount's argument
    for arr in pooled:
        if sys.getrefcount(arr) <= 3 and _fits(arr, dtype, shape, axis):
            return arr
    fresh = np.empty(shape, dtype=dtype)
    _keep(name, fresh)
    return fresh


def _keep(name: str, fresh: np.ndarray) -> None:
    """Pool `fresh`, in place of an array some batch still holds (or the oldest)."""
    pooled = _POOL.setdefault(name, [])
    if any(arr is fresh for arr in pooled):
        return
    if len(pooled) < _POOL_SETS:
        pooled.append(fresh)
        return
    busy = [k for k, arr in enumerate(pooled) if sys.getrefcount(arr) > 3]
    pooled[busy[0] if busy else 0] = fresh


def _decode(
    buf, base_offset, start, end, check_crc, with_body, accept_v2, resync, hosts=True
) -> pa.RecordBatch:
    from formats.columnar.kernels import kernel, tables

    b = _as_array(buf)
    if b.shape[0] >= 2**31:
        # positions are int32 in Arrow views and offsets; the broker's files are MappedByteBuffers,
        # which cannot exceed 2 GiB either
        raise ValueError("a commitlog file buffer larger than 2 GiB is not supported")
    stop = b.shape[0] if end is None else min(int(end), b.shape[0])
    span = max(stop - int(start), 0)
    cap = span // _MIN_RECORD_SIZE + 8
    sizes = {"keys": span // 16 + 64, "tags": span // 32 + 64, "uniqKey": span // 8 + 64}
    sizes["body"] = span + 64 if with_body else 64
    out = [_take(name, dtype, shape(cap), axis) for name, (dtype, shape, axis) in _OUTPUTS.items()]
    out += [_take(name, np.uint8, (size,), 0) for name, size in sizes.items()]
    result = kernel("walk")(
        b,
        int(base_offset),
        int(start),
        stop,
        bool(check_crc),
        bool(accept_v2),
        bool(resync),
        bool(with_body),
        HOST_SPILL_MIN,
        *tables(),
        *out,
    )
    del out
    return _batch_of_walk(b, int(base_offset), result, list(sizes), with_body, hosts)


def _batch_of_walk(
    b: np.ndarray, base_offset: int, result: tuple, sizes: list[str], with_body: bool, hosts: bool = True
):
    """The RecordBatch of a walk kernel's result tuple (walk's layout: rows, the output arrays, used, the
    topic and host tables, touch, spilled); the output arrays go back to the pool."""
    n = int(result[0])
    a = dict(zip([*_OUTPUTS, *sizes], result[1:12], strict=True))
    for name, arr in a.items():
        _keep(name, arr)  # arrays the walk had to grow
    used, t_reps, t_n, h_reps, h_n, g_reps, g_n = result[12:19]
    spilled = bool(result[20])
    del result
    if int(used.max(initial=0)) >= 2**31:
        raise OverflowError("a variable-length column exceeds 2 GiB; decode a smaller range")

    valid = a["valid"][:n]
    dict_valid = _bitmap(valid & _VALID_DICT_BIT)
    topics = _strings([_utf8(b[o : o + ln]) for o, ln, _ in t_reps[:t_n]])
    if not hosts:
        born_hosts = store_hosts = None
    elif spilled:
        born_hosts = _spilled_born_hosts(b, int(base_offset), a, n, h_reps[:h_n])
        store_hosts = _hosts(b, g_reps[:g_n])
    else:
        born_hosts = _hosts(b, h_reps[:h_n])
        store_hosts = _hosts(b, g_reps[:g_n])
    columns: dict[str, pa.Array] = {}
    for name, row in _C64.items():
        columns[name] = pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(a["c64"][row, :n])])
    for name, row in _C32.items():
        columns[name] = pa.Array.from_buffers(pa.int32(), n, [None, pa.py_buffer(a["c32"][row, :n])])
    for name, row, dictionary in (
        ("topic", _C32_TOPIC, topics),
        ("bornHost", _C32_BORNHOST, born_hosts),
        ("storeHost", _C32_STOREHOST, store_hosts),
    ):
        if dictionary is None:
            columns[name] = pa.nulls(n, _DICT_STRING)
            continue
        indices = pa.Array.from_buffers(pa.int32(), n, [dict_valid, pa.py_buffer(a["c32"][row, :n])])
        columns[name] = pa.DictionaryArray.from_arrays(indices, dictionary)
    # zero copy: the views point into the file buffer, which the array keeps alive
    views = [_bitmap(valid & (1 << _VAR["properties"])), pa.py_buffer(a["pviews"][:n]), pa.py_buffer(b)]
    columns["properties"] = pa.Array.from_buffers(pa.binary_view(), n, views)
    for name in ("keys", "tags", "uniqKey", "body"):
        if name == "body" and not with_body:
            continue
        row = _VAR[name]
        kind = pa.binary() if name == "body" else pa.string()
        data = a[name][: used[row]]
        buffers = [_bitmap(valid & (1 << row)), pa.py_buffer(a["offs"][row, : n + 1]), pa.py_buffer(data)]
        arr = pa.Array.from_buffers(kind, n, buffers)
        if name != "body" and np.any(a["bad"][:n] & (1 << row)):
            arr = _redecode(arr)
        columns[name] = arr
    indices = pa.Array.from_buffers(pa.int8(), n, [None, pa.py_buffer(a["status"][:n])])
    columns["status"] = pa.DictionaryArray.from_arrays(indices, _STATUS_DICTIONARY)
    schema = MESSAGE_SCHEMA_WITH_BODY if with_body else MESSAGE_SCHEMA
    return pa.RecordBatch.from_arrays([columns[f.name] for f in schema], schema=schema)


def _bitmap(bits: np.ndarray) -> pa.Buffer | None:
    """Arrow validity bitmap of the non-zero entries, None when all are valid."""
    mask = bits != 0
    if mask.all():
        return None
    return pa.py_buffer(np.packbits(mask, bitorder="little"))


def _utf8(raw: np.ndarray) -> str:
    return raw.tobytes().decode("utf-8", "replace")


def _redecode(arr: pa.Array) -> pa.Array:
    """Replace ill-formed UTF-8 in a string array (built unchecked from raw bytes) with U+FFFD."""
    raw = arr.view(pa.binary()).to_pylist()
    return _strings([None if v is None else v.decode("utf-8", "replace") for v in raw])


def _spilled_born_hosts(b: np.ndarray, base: int, a: dict, n: int, reps: np.ndarray) -> pa.Array:
    """The born-host dictionary of a walk that stopped interning them (a host per message, about): a
    compiled hash pass over every row's host makes the dictionary (the IPv4 hosts in the order rows first
    show them, then the IPv6 ones) and rewrites the rows' indices in place; then the texts of the distinct
    hosts. No Python runs per row."""
    from formats.columnar.kernels import kernel

    c32, c64 = a["c32"], a["c64"]
    has_host = (a["valid"][:n] & _VALID_DICT_BIT) != 0
    indices = c32[_C32_BORNHOST, :n]
    phys = c64[_C64["physicalOffset"], :n]
    sysflags = c32[_C32["sysFlag"], :n]
    keys = c64[_C64_BORN_KEY, :n]
    values4, reps6 = kernel("spilled_host_dictionary")(b, base, phys, indices, sysflags, has_host, reps, keys)
    offsets, text = kernel("ipv4_key_texts")(values4)
    buffers = [None, pa.py_buffer(offsets), pa.py_buffer(text)]
    hosts = pa.Array.from_buffers(pa.string(), len(values4), buffers)
    if not len(reps6):
        return hosts
    return pa.concat_arrays([hosts, _hosts(b, reps6)])


# IPv4-mapped IPv6 addresses print as ::ffff:a.b.c.d from Python 3.13 on, as hex groups before
_MAPPED_DOTTED = "." in host_str(bytes(10) + b"\xff\xff" + bytes(4), 0)


def _hosts(b: np.ndarray, reps: np.ndarray) -> pa.Array:
    """The distinct hosts (rows of offset, length, hash into `b`) as strings, formatted by a compiled
    kernel (`host_str`'s text): a store whose producers connect briefly has a host per message."""
    from formats.columnar.kernels import kernel

    if len(reps) == 0:
        return _strings([])
    offsets, text = kernel("host_texts")(b, np.ascontiguousarray(reps, dtype=np.int64), _MAPPED_DOTTED)
    return pa.Array.from_buffers(pa.string(), len(reps), [None, pa.py_buffer(offsets), pa.py_buffer(text)])
