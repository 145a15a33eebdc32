"""Many revive bodies (`ck`, `ack`, `bAck`) at once, as columns: the fast twin of `formats.pop.bodies`'s
parsers.

The bodies the broker writes are `JSON.toJSONString`'s compact form: keys in alphabetical order, numbers
plain, strings mostly printable ASCII. A numba kernel (formats/pop/_kernels.py) reads exactly that form -
the kind's known keys in that order, each at most once, no whitespace, integers within a Java long
without a leading zero (ints: within an int), strings of printable ASCII without quote or
backslash, lists of such integers - into number arrays, string positions and list items. Every body it
refuses (other key orders or spellings, whitespace, escapes, nulls, long names, wider numbers,
out-of-range ints, non-ASCII, garbage) goes to the reference parser (`PopCheckPoint.parse` /
`AckMsg.parse`), so the result is the reference's, row for row: tests/test_pop_columns.py property-tests
the two against each other, and the pair is registered in `formats.twins`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from formats.errors import FormatError
from formats.pop.bodies import AckMsg, PopCheckPoint
from formats.twins import parser_twin

CK, ACK, BATCH_ACK = 0, 1, 2  # kinds: the record's tag
NUMBERS = ("bm", "it", "n", "pt", "q", "ro", "so", "ao")
TEXTS = ("bn", "c", "rp", "t")


def _keys(fields: list[tuple[str, str]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    from formats.pop import _value_types as v

    kinds = {"long": v.LONG, "int": v.INT, "text": v.TEXT, "ints": v.INT_LIST, "longs": v.LONG_LIST,
             "ignored": v.IGNORED_LONG}  # fmt: skip
    raw = [name.encode() for name, _ in fields]
    offsets = np.concatenate([[0], np.cumsum([len(r) for r in raw])]).astype(np.int64)
    table = np.frombuffer(b"".join(raw), np.uint8)
    return table, offsets, np.array([kinds[t] for _, t in fields], np.int64)


# the keys in `toJSONString`'s order, with their value types
CK_KEYS = [("bm", "int"), ("bn", "text"), ("c", "text"), ("d", "ints"), ("it", "long"), ("n", "int"),
           ("pt", "long"), ("q", "int"), ("reviveTime", "ignored"), ("ro", "long"), ("rp", "text"),
           ("so", "long"), ("t", "text")]  # fmt: skip
ACK_KEYS = [("ao", "long"), ("aol", "longs"), ("bn", "text"), ("c", "text"), ("pt", "long"), ("q", "int"),
            ("so", "long"), ("t", "text")]  # fmt: skip


@dataclass
class IntLists:
    """A list<long> column as numpy: row i is values[starts[i]:starts[i] + lens[i]], absent where lens -1."""

    starts: np.ndarray
    lens: np.ndarray
    values: np.ndarray

    def row(self, i: int) -> list[int] | None:
        return (
            None if self.lens[i] < 0 else self.values[self.starts[i] : self.starts[i] + self.lens[i]].tolist()
        )


@dataclass
class ReviveBodies:
    """Parsed bodies aligned with the input: `ok` where the body parsed (else `error` holds the reference's
    one-line message); numbers 0 where absent (as the reader leaves them), texts null where absent, the
    lists (`d` of a checkpoint, `aol` of a batch ack) absent where the body has none. `n` is narrowed to a
    Java byte."""

    kind: np.ndarray
    ok: np.ndarray
    fast: np.ndarray  # parsed by the pattern (else by the reference parser)
    error: dict[int, str]
    numbers: dict[str, np.ndarray]
    texts: dict[str, pa.Array]
    d: IntLists
    aol: IntLists

    def __len__(self) -> int:
        return len(self.kind)

    def parsed(self, i: int) -> PopCheckPoint | AckMsg | str:
        """Row i as the reference gives it: the object, or the error message."""
        if not self.ok[i]:
            return self.error[i]
        num = {k: int(v[i]) for k, v in self.numbers.items()}
        text = {k: v[i].as_py() for k, v in self.texts.items()}
        if self.kind[i] == CK:
            return PopCheckPoint(
                num["so"], num["pt"], num["it"], num["bm"], num["n"], num["q"], text["t"], text["c"],
                num["ro"], self.d.row(i), text["bn"], text["rp"],
            )  # fmt: skip
        batch = self.kind[i] == BATCH_ACK
        return AckMsg(
            num["ao"], num["so"], text["c"], text["t"], num["q"], num["pt"], text["bn"],
            (self.aol.row(i) or []) if batch else None,
        )  # fmt: skip


class _ListBuilder:
    """Collects list rows (fast ones in bulk, reference ones one by one) into an IntLists."""

    def __init__(self, n: int) -> None:
        self.starts = np.zeros(n, np.int64)
        self.lens = np.full(n, -1, np.int64)
        self.parts: list[np.ndarray] = []
        self.size = 0

    def bulk_at(self, rows: np.ndarray, starts: np.ndarray, lens: np.ndarray, values: np.ndarray) -> None:
        self.starts[rows] = self.size + starts
        self.lens[rows] = lens
        self.parts.append(values)
        self.size += len(values)

    def one(self, i: int, values: list[int] | None) -> None:
        if values is None:
            self.lens[i] = -1
            return
        self.starts[i], self.lens[i] = self.size, len(values)
        self.parts.append(np.array(values, np.int64))
        self.size += len(values)

    def build(self) -> IntLists:
        return IntLists(self.starts, self.lens, np.concatenate([np.zeros(0, np.int64), *self.parts]))


def _reference(body: bytes, kind: int) -> PopCheckPoint | AckMsg | str:
    try:
        if kind == CK:
            return PopCheckPoint.parse(body)
        return AckMsg.parse(body, batch=kind == BATCH_ACK)
    except FormatError as exc:
        return exc.message


def _fast(bodies: pa.Array, kind: np.ndarray, rows: np.ndarray, fields, numbers, texts, lists) -> np.ndarray:
    """The kernel over the bodies of `rows` (one kind's keys): fills the columns there, gives which parsed."""
    from formats.columnar.kernels import kernel
    from formats.columnar.properties import strings_at

    sub = bodies.take(pa.array(rows))
    offsets = np.frombuffer(sub.buffers()[1], np.int32, count=len(sub) + 1, offset=4 * sub.offset)
    offsets = offsets.astype(np.int64)
    data = sub.buffers()[2]
    buf = np.frombuffer(data, np.uint8) if data is not None and data.size else np.zeros(1, np.uint8)
    table, key_offsets, types = _keys(fields)
    m, nk = len(rows), len(fields)
    ok = np.zeros(m, np.bool_)
    nums = np.zeros((nk, m), np.int64)
    tpos, tlen = np.full((nk, m), -1, np.int64), np.full((nk, m), -1, np.int64)
    lstart, llen = np.zeros(m, np.int64), np.full(m, -1, np.int64)
    values = np.zeros(len(buf) // 2 + 1, np.int64)
    kernel("pop_parse")(buf, offsets, table, key_offsets, types, ok, nums, tpos, tlen, lstart, llen, values)
    for slot, (name, kind_of_value) in enumerate(fields):
        if name in numbers:
            numbers[name][rows] = nums[slot]
        elif name in texts:
            texts[name] = pc.replace_with_mask(
                texts[name], _mask(len(kind), rows), strings_at(buf, tpos[slot], tlen[slot])
            )
        elif kind_of_value in ("ints", "longs"):
            used = int((lstart + np.maximum(llen, 0)).max(initial=0))
            lists["d" if name == "d" else "aol"].bulk_at(rows, lstart, llen, values[:used])
    return ok


def parse_bodies(bodies: pa.Array, kind: np.ndarray) -> ReviveBodies:
    """The bodies (binary, non-null) parsed as `kind` says (CK, ACK or BATCH_ACK per row)."""
    n = len(bodies)
    kind = np.asarray(kind, np.int8)
    bodies = bodies.cast(pa.binary())
    numbers = {name: np.zeros(n, np.int64) for name in NUMBERS}
    texts: dict[str, pa.Array] = {name: pa.nulls(n, pa.string()) for name in TEXTS}
    lists = {"d": _ListBuilder(n), "aol": _ListBuilder(n)}
    fast = np.zeros(n, bool)
    for fields, rows in ((CK_KEYS, np.flatnonzero(kind == CK)), (ACK_KEYS, np.flatnonzero(kind != CK))):
        if len(rows):
            fast[rows] = _fast(bodies, kind, rows, fields, numbers, texts, lists)
    numbers["n"] = (numbers["n"] + 128) % 256 - 128  # a Java byte
    ok = fast.copy()
    error: dict[int, str] = {}
    slow = np.flatnonzero(~fast)
    if len(slow):
        patch: dict[str, list] = {name: [] for name in TEXTS}
        for i, body in zip(slow.tolist(), bodies.take(pa.array(slow)).to_pylist(), strict=True):
            got = _reference(body, int(kind[i]))
            if isinstance(got, str):
                ok[i] = False
                error[i] = got
                for values in patch.values():
                    values.append(None)
                continue
            ok[i] = True
            if isinstance(got, PopCheckPoint):
                fields = {
                    "so": got.start_offset,
                    "pt": got.pop_time,
                    "it": got.invisible_time,
                    "bm": got.bit_map,
                    "n": got.num,
                    "q": got.queue_id,
                    "ro": got.revive_offset,
                }
                strings = {"bn": got.broker_name, "c": got.cid, "rp": got.re_put_times, "t": got.topic}
                lists["d"].one(i, got.queue_offset_diff)
                lists["aol"].one(i, None)
            else:
                fields = {"ao": got.ack_offset, "so": got.start_offset, "pt": got.pop_time, "q": got.queue_id}
                strings = {"bn": got.broker_name, "c": got.consumer_group, "rp": None, "t": got.topic}
                lists["d"].one(i, None)
                lists["aol"].one(i, got.ack_offset_list)
            for name, value in fields.items():
                numbers[name][i] = value
            for name, value in strings.items():
                patch[name].append(value)
        mask = _mask(n, slow)
        for name in TEXTS:
            values = [None if v is None else _arrow_text(v) for v in patch[name]]
            texts[name] = pc.replace_with_mask(texts[name], mask, pa.array(values, pa.string()))
    return ReviveBodies(kind, ok, fast, error, numbers, texts, lists["d"].build(), lists["aol"].build())


def _arrow_text(value: str) -> str:
    """A string Arrow can hold: a lone surrogate (a JSON escape like \\ud800) becomes U+FFFD, as Java's
    UTF-8 encoder writes it when the name is used."""
    return value if value.isascii() else "".join("\ufffd" if 0xD800 <= ord(c) < 0xE000 else c for c in value)


def _mask(n: int, rows: np.ndarray) -> pa.Array:
    out = np.zeros(n, bool)
    out[rows] = True
    return pa.array(out)


def _parse_one(body: bytes, kind: int) -> PopCheckPoint | AckMsg | str:
    """The twin on one body (what the property test compares with the reference)."""
    return parse_bodies(pa.array([body], pa.binary()), np.array([kind])).parsed(0)


for _kind, _name in ((CK, "PopCheckPoint body"), (ACK, "AckMsg body"), (BATCH_ACK, "BatchAckMsg body")):
    parser_twin(
        _name,
        lambda body, kind=_kind: _reference(body, kind),
        lambda body, kind=_kind: _parse_one(body, kind),
    )


__all__ = ["ACK", "ACK_KEYS", "BATCH_ACK", "CK", "CK_KEYS", "IntLists", "ReviveBodies", "parse_bodies"]
