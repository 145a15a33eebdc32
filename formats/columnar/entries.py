"""Columnar decoding of DLedger data files: one file's entries -> one pyarrow RecordBatch, one row per entry.

The DLedger twin of `formats.columnar.decoder.decode_range`, over the compiled walk of
formats/columnar/_entry_kernels.py: it walks entries as DLedger's recovery does (formats/dledger.py) and
checks each entry's message at pos + 48 as the broker's dispatch does. Rows:

* one per kept entry: the message columns of `decoder.MESSAGE_SCHEMA` (physicalOffset = entry pos + 48,
  `status` the record check's verdict on the message: `ok`, or a failure status - the walk goes on, since
  DLedger keeps the entry), and the entry's columns (ENTRY_FIELDS, `entryStatus` `ok`);
* when the walk ends before the range's end, one last row at the entry position where it ended:
  `entryStatus` says why (a key of `formats.dledger.ENTRY_REASONS`: `pad`, `end`, or what DLedger's
  recovery stops at), `status` is `blank` for a pad (totalSize = the pad's remaining bytes) and `end`
  otherwise.

`entry_chain` is the headers-only walk (where DLedger's recovery ends a file, and the kept entries' pos,
size, index, term and magic for the index-unit comparison).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from formats.columnar.decoder import (
    _MIN_RECORD_SIZE,
    _OUTPUTS,
    HOST_SPILL_MIN,
    _as_array,
    _batch_of_walk,
    _strings,
    _take,
)
from formats.dledger import BODY_OFFSET, ENTRY_REASONS

ENTRY_STATUS_NAMES = tuple(["ok", *ENTRY_REASONS])  # the kernel's E_* codes, in order
_ENTRY_STATUS_DICTIONARY = _strings(ENTRY_STATUS_NAMES)
ENTRY_FIELDS = [
    pa.field("entryPos", pa.int64(), nullable=False),
    pa.field("entryIndex", pa.int64(), nullable=False),
    pa.field("entryTerm", pa.int64(), nullable=False),
    pa.field("entrySize", pa.int32(), nullable=False),
    pa.field("entryMagic", pa.int32(), nullable=False),
    pa.field("entryBodySize", pa.int32(), nullable=False),
    pa.field("entryStatus", pa.dictionary(pa.int8(), pa.string()), nullable=False),
]
_MIN_ENTRY_SIZE = BODY_OFFSET + _MIN_RECORD_SIZE


@dataclass
class EntryWalk:
    """A decoded range of one data file: the batch, and the last kept entry's index and term (what the
    next range's walk continues from)."""

    batch: pa.RecordBatch
    last_index: int
    last_term: int


def decode_entries(
    buf,
    base_offset: int,
    start: int = 0,
    end: int | None = None,
    *,
    check_crc: bool = False,
    with_body: bool = False,
    accept_v2: bool = True,
    prev_index: int = -1,
    prev_term: int = -1,
) -> EntryWalk:
    """Decode the entries that start in [start, end) of one DLedger data file (`buf` = the whole file, its
    first byte at data offset `base_offset`; `start` an entry boundary). `prev_index` / `prev_term`: the
    entry before `start` (-1 at the log's first entry), for DLedger's index and term checks."""
    from formats.columnar.kernels import kernel, tables

    b = _as_array(buf)
    if b.shape[0] >= 2**31:
        raise ValueError("a DLedger data file buffer larger than 2 GiB is not supported")
    stop = b.shape[0] if end is None else min(int(end), b.shape[0])
    span = max(stop - int(start), 0)
    cap = span // _MIN_ENTRY_SIZE + 8
    sizes = {"keys": span // 16 + 64, "tags": span // 32 + 64, "uniqKey": span // 8 + 64}
    sizes["body"] = span + 64 if with_body else 64
    out = [_take(name, dtype, shape(cap), axis) for name, (dtype, shape, axis) in _OUTPUTS.items()]
    e64 = np.empty((3, cap), dtype=np.int64)
    e32 = np.empty((4, cap), dtype=np.int32)
    data = [_take(name, np.uint8, (size,), 0) for name, size in sizes.items()]
    result = kernel("walk_entries")(
        b,
        int(base_offset),
        int(start),
        stop,
        bool(check_crc),
        bool(accept_v2),
        bool(with_body),
        HOST_SPILL_MIN,
        int(prev_index),
        int(prev_term),
        *tables(),
        *out,
        e64,
        e32,
        *data,
    )
    del out, data
    n = int(result[0])
    e64, e32, last_index, last_term = result[21:25]
    batch = _batch_of_walk(b, int(base_offset), result[:21], list(sizes), with_body)
    del result
    columns = [
        e64[0, :n].copy(),
        e64[1, :n].copy(),
        e64[2, :n].copy(),
        e32[0, :n].copy(),
        e32[1, :n].copy(),
        e32[2, :n].copy(),
    ]
    arrays = [pa.array(c) for c in columns]
    status = pa.Array.from_buffers(pa.int8(), n, [None, pa.py_buffer(e32[3, :n].astype(np.int8))])
    arrays.append(pa.DictionaryArray.from_arrays(status, _ENTRY_STATUS_DICTIONARY))
    fields = list(batch.schema) + ENTRY_FIELDS
    batch = pa.RecordBatch.from_arrays([*batch.columns, *arrays], schema=pa.schema(fields))
    return EntryWalk(batch, int(last_index), int(last_term))


def entry_status_names(batch: pa.RecordBatch) -> list[str]:
    """The entryStatus column as plain strings."""
    return batch.column("entryStatus").cast(pa.string()).to_pylist()


def entry_status_codes(batch: pa.RecordBatch) -> np.ndarray:
    """The entryStatus column's codes (indexes into ENTRY_STATUS_NAMES)."""
    col = batch.column("entryStatus")
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    return np.frombuffer(col.indices.buffers()[1], dtype=np.int8, count=len(col), offset=col.offset)


@dataclass
class EntryChain:
    """DLedger's recovery walk of one data file, headers only: the kept entries (absolute pos, size,
    index, term, magic; in order) and where and why it stopped (`reason`: a key of ENTRY_REASONS; `size`:
    the stop's size field, the pad's remaining bytes for a pad)."""

    pos: np.ndarray
    size: np.ndarray
    index: np.ndarray
    term: np.ndarray
    magic: np.ndarray
    reason: str
    stop: int  # position in the file
    stop_size: int

    def __len__(self) -> int:
        return len(self.pos)


def entry_chain(
    buf, base_offset: int, start: int = 0, prev_index: int = -1, prev_term: int = -1
) -> EntryChain:
    """Walk one data file's entry headers from the boundary `start` as DLedger's recovery does."""
    from formats.columnar.kernels import kernel

    b = _as_array(buf)
    cap = max(b.shape[0] - int(start), 0) // (BODY_OFFSET + 1) + 1
    outs = [np.empty(cap, dtype=np.int64) for _ in range(4)] + [np.empty(cap, dtype=np.int32)]
    count, status, stop, stop_size = kernel("entry_chain")(
        b, int(base_offset), int(start), int(prev_index), int(prev_term), *outs
    )
    count = int(count)
    pos, size, index, term, magic = (o[:count] for o in outs)
    reason = ENTRY_STATUS_NAMES[int(status)]
    return EntryChain(pos, size, index, term, magic, reason, int(stop), int(stop_size))


__all__ = [
    "ENTRY_FIELDS",
    "ENTRY_STATUS_NAMES",
    "EntryChain",
    "EntryWalk",
    "decode_entries",
    "entry_chain",
    "entry_status_codes",
    "entry_status_names",
]
