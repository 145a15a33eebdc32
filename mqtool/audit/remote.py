"""The audit over stores and outputs named by URL (`store.io.remote`): what an executor reads of a split, and
the output directory on object storage.

A split of a remote commitlog file is decoded from `store.io.remote.file_array`: an array of the file's size
(zero pages cost nothing until touched) holding [start, end) plus a tail for the records that start in
the split and end after it. The decoder then sees file positions, so its blank check (a blank reaches the
file's end) and resync work as on a mapped file. When a row reaches past what was read, or the split held
bytes but no record start was confirmed (a record longer than the tail), more is read and the split is
decoded again; a split that stops (blank, end of data, a rejected record) reads the rest of its file, as
the walk facts (`mqtool.audit.scan._walk_facts`) look at every byte after the stop.

Executors import this module: at module level only the standard library, numpy, pyarrow and `store.io.remote`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa

from formats.columnar.decoder import STATUS_OK, decode_resync
from store.io import remote

TAIL = 256 << 10  # read past a split's end: the records that start in it usually end within this
HEADER = 96  # a record's fixed fields: a row reaching past filled bytes is re-read


def decode_split(url: str, size: int, base: int, start: int, end: int, check_crc: bool):
    """(file array, decoded batch, filled end) of the records that start in [start, end) of a remote file."""
    end = min(end, size)
    hi = min(size, end + TAIL)
    data = remote.file_array(url, size, start, hi)
    while True:
        batch = decode_resync(data, base, start, end, check_crc=check_crc)
        reach = _reach(batch, base)
        need = hi
        if reach > hi:
            need = reach + TAIL
        elif batch.num_rows == 0 and data[start:end].any():
            need = hi + max(TAIL, hi - start)  # a record start may lie in a record longer than the tail
        if need <= hi or hi >= size:
            return data, batch, hi
        need = min(size, need)
        remote.fill(data, url, hi, need)
        hi = need


def _reach(batch: pa.RecordBatch, base: int) -> int:
    """The furthest file position the rows needed (a record's end, or its fixed fields)."""
    if batch.num_rows == 0:
        return 0
    pos = batch.column("physicalOffset").to_numpy() - base
    total = batch.column("totalSize").to_numpy().astype(np.int64)
    return int((pos + np.maximum(total, HEADER)).max())


def fill_rest(data: np.ndarray, url: str, hi: int) -> None:
    """Read the file from `hi` to its end (the walk facts of a stopping split look at all of it)."""
    if hi < len(data):
        remote.fill(data, url, hi, len(data))


def first_times(url: str, size: int, base: int, start: int, window: int) -> list[int]:
    """First and last store time of the ok records that start in [start, start+window) (the plan's span)."""
    _, batch, _ = decode_split(url, size, base, start, start + window, False)
    status = batch.column("status").indices.to_numpy(zero_copy_only=False)
    times = batch.column("storeTimestamp").to_numpy()[status == STATUS_OK]
    return [int(t) for t in times[:1]] + [int(t) for t in times[-1:]]


def read_array(url: str, offset: int, count: int, dtype) -> np.ndarray:
    """`count` items of `dtype` at `offset` of a remote file (ConsumeQueue units, index entries)."""
    dtype = np.dtype(dtype)
    raw = remote.read_range(url, offset, count * dtype.itemsize)
    return np.frombuffer(raw, dtype=dtype, count=len(raw) // dtype.itemsize)


# --- the output directory on object storage -------------------------------------------------------


def prepare_output(url: str, marker: str, is_marker: Callable[[bytes], bool]) -> None:
    """The output URL must hold nothing, or an earlier audit's output (its `marker` file, whose first
    bytes `is_marker` knows; its message files go)."""
    from mqtool.audit.plan import AuditError

    files = remote.list_files(url) or {}
    if files and (marker not in files or not is_marker(remote.read_range(remote.join(url, marker), 0, 64))):
        raise AuditError(
            "--output is not empty and holds no earlier audit; choose a new directory", remote.redact(url)
        )
    if any(name.startswith("messages/") for name in files):
        remote.delete_tree(remote.join(url, "messages"))


def write_table(table: pa.Table, url: str) -> None:
    import pyarrow.parquet as pq

    fs, path = remote.resolve(url)
    try:
        pq.write_table(table, path, filesystem=fs)
    except Exception as exc:
        raise remote.failure("write", url, exc) from None


def delete_file(url: str) -> None:
    import pyarrow.fs as pafs

    fs, path = remote.resolve(url)
    if fs.get_file_info(path).type == pafs.FileType.File:
        fs.delete_file(path)
