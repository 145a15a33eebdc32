"""Java `String.hashCode` over Arrow string columns, vectorised (index key hashes need it)."""

from __future__ import annotations

import functools

import numpy as np
import pyarrow as pa

from formats.java.hash import java_string_hash

# bytes of string data hashed per step: the power tables are built for one chunk in every process that
# hashes (at 4 MiB that was 0.14 s of a verify worker's start, and its temporaries left the cache)
_HASH_CHUNK = 1 << 18
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
