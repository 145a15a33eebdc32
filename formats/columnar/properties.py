"""Named PROPERTIES values of many records at once (the compiled kernels of
formats/columnar/_property_kernels.py, loaded on first use through formats/columnar/kernels.py): the
columnar decoder gives KEYS, TAGS and UNIQ_KEY; readers that need other keys (the timer's TIMER_OUT_MS,
REAL_TOPIC, ...) take them from the raw PROPERTIES here, by the rules of
`formats.message.properties.decode_properties` (property-tested against it in tests/test_property_columns.py).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa


def _kernel(name: str):
    from formats.columnar.kernels import kernel

    return kernel(name)


def property_positions(
    buf: np.ndarray, starts: np.ndarray, lens: np.ndarray, names: Sequence[str]
) -> tuple[np.ndarray, np.ndarray]:
    """For records whose PROPERTIES are buf[starts[r]:starts[r] + lens[r]]: where each named property's
    value sits in buf, and its length (-1 when absent); arrays of shape (len(names), records)."""
    encoded = [name.encode() for name in names]
    offsets = np.zeros(len(encoded) + 1, np.int64)
    np.cumsum([len(e) for e in encoded], out=offsets[1:])
    table = np.frombuffer(b"".join(encoded), np.uint8)
    n = len(starts)
    pos = np.empty((len(names), n), np.int64)
    ln = np.empty((len(names), n), np.int64)
    starts = np.ascontiguousarray(starts, np.int64)
    _kernel("find_values")(buf, starts, np.ascontiguousarray(lens, np.int64), table, offsets, pos, ln)
    return pos, ln


def property_strings(
    buf: np.ndarray, starts: np.ndarray, lens: np.ndarray, names: Sequence[str]
) -> dict[str, pa.Array]:
    """Each named property's value as a string column (null when absent; ill-formed UTF-8 read with
    U+FFFD, as Java does)."""
    pos, ln = property_positions(buf, starts, lens, names)
    return {name: strings_at(buf, pos[i], ln[i]) for i, name in enumerate(names)}


def strings_at(buf: np.ndarray, pos: np.ndarray, lens: np.ndarray) -> pa.Array:
    """buf[pos[r]:pos[r] + lens[r]] as a string column, null where lens[r] is -1."""
    arr, bad = _gathered(buf, pos, lens, pa.string())
    if len(bad):
        from formats.columnar.decoder import _strings

        raw = arr.view(pa.binary()).to_pylist()
        arr = _strings([None if v is None else v.decode("utf-8", "replace") for v in raw])
    return arr


def bytes_at(buf: np.ndarray, pos: np.ndarray, lens: np.ndarray) -> pa.Array:
    """buf[pos[r]:pos[r] + lens[r]] as a binary column (the bytes as they are), null where lens[r] is -1."""
    return _gathered(buf, pos, lens, pa.binary())[0]


def _gathered(
    buf: np.ndarray, pos: np.ndarray, lens: np.ndarray, kind: pa.DataType
) -> tuple[pa.Array, np.ndarray]:
    """The gathered values as a `kind` column, and the rows that are not well-formed UTF-8."""
    n = len(pos)
    pos, lens = np.ascontiguousarray(pos, np.int64), np.ascontiguousarray(lens, np.int64)
    offsets = np.empty(n + 1, np.int32)
    data = np.empty(max(int(lens[lens > 0].sum()), 1), np.uint8)
    bad = _kernel("gather")(buf, pos, lens, offsets, data)
    valid = lens >= 0
    validity = None if valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(kind, n, [validity, pa.py_buffer(offsets), pa.py_buffer(data)]), bad


def plain_longs(values: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """The values of a string column that are an optional '-' and 1-18 ASCII digits, as int64, and
    which rows are (1: digits, 2: '-' and digits); other rows (0, 0) follow the caller's own rules."""
    arr = values.cast(pa.string()) if values.type != pa.string() else values
    n = len(arr)
    offsets = np.frombuffer(arr.buffers()[1], np.int32, count=n + 1, offset=arr.offset * 4).astype(np.int64)
    data = arr.buffers()[2]
    buf = np.frombuffer(data, np.uint8) if data is not None and data.size else np.zeros(1, np.uint8)
    lens = np.diff(offsets)
    if arr.null_count:
        lens[~_valid(arr)] = -1
    return plain_longs_at(buf, offsets[:-1].copy(), lens)


def plain_longs_at(buf: np.ndarray, pos: np.ndarray, lens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`plain_longs` of the values buf[pos[r]:pos[r] + lens[r]] (lens -1: absent)."""
    pos, lens = np.ascontiguousarray(pos, np.int64), np.ascontiguousarray(lens, np.int64)
    out = np.empty(len(pos), np.int64)
    plain = np.empty(len(pos), np.uint8)
    _kernel("plain_longs")(buf, pos, lens, out, plain)
    return out, plain


def _valid(arr: pa.Array) -> np.ndarray:
    """The validity of an Arrow array as a bool array."""
    bitmap = arr.buffers()[0]
    if bitmap is None:
        return np.ones(len(arr), bool)
    bits = np.unpackbits(np.frombuffer(bitmap, np.uint8), bitorder="little")
    return bits[arr.offset : arr.offset + len(arr)].astype(bool)


__all__ = [
    "bytes_at",
    "plain_longs",
    "plain_longs_at",
    "property_positions",
    "property_strings",
    "strings_at",
]
