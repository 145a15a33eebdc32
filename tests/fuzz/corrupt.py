"""Corruption generators: turn a copy of a real store into one corrupted input.

A `Corruption` is a picklable list of small file-system operations (`Op`s) with a description; `apply`
performs them on a store root. `generate(kind, layout, rng)` draws one corruption of a file type from the
strategies of that type; the fast CI subset cycles through every strategy, the long mode draws at random.
The map of the pristine store (`StoreLayout`: every file, every commitlog record and its fields, the
ConsumeQueue units, the index geometry, the config texts) is read here with `struct` alone, so the
corruptions do not depend on the code under test.

File types (`KINDS`):

* `commitlog` — truncation at every kind of boundary (file, record, field, inside a field), bit flips
  and interesting values in every header field, sizes and magic codes (V1/V2/BLANK/garbage), property
  separators and values, body bytes, zeroed or garbage ranges, file size changes, gaps between files.
* `consumequeue` — units pointing anywhere (negative, mid-record, at a blank, past the end, huge), sizes
  and tags codes of every kind, zeroed, swapped and duplicated units, truncation at and inside units,
  missing/extra/misnamed files, odd queue directories.
* `index` — header fields (counts, slot count, times, offsets), hash slots pointing anywhere, entries
  whose chains loop or leave the file, truncation at header/slot/entry boundaries, odd file names.
* `checkpoint` — garbage, truncation at every field, huge and negative values, a wrong size.
* `config` — fastjson files (and their `.bak`) with syntax errors, wrong types, huge numbers, missing
  tables, odd encodings, deep nesting; empty, blank and `null` files.
* `layout` — empty files, directories where files should be (and files where directories should be),
  missing parts, symlink loops, stray files, permission denied, `lock`/`abort` oddities.
* `timerlog`, `timerwheel`, `timercheck` (5.x stores where the real timer wheel ran) — timerlog units
  with every field at interesting values, bit flips, blanks in odd places, truncation at and inside units,
  prevPos links that loop or jump into another slot's chain, units pointing at other or no commitlog
  records, missing/extra/misnamed files; wheel slots pointing anywhere (into other slots' chains, inside
  units, past the log), wrong counts, slots at a wrong index or with another slot's time, a wheel of the
  wrong length; timercheck garbage, truncation, a read time far ahead or behind, queue offsets and the
  flush position past the ConsumeQueue's and the timerlog's end.
* `rocksdb` (RocksDB-mode stores: `consumequeue/`, `config/consumerOffsets`, ... are RocksDB databases) —
  CURRENT missing or pointing nowhere, SST files truncated, bit-flipped or removed, MANIFEST truncated or
  garbage, the WAL with garbage appended, a database with other column families in its place.
* `dledger` (stores with a DLedger commitlog, `dledger-<selfId>/`) — every field of the 48-byte entry headers
  at interesting values and bit flips, pads garbled, removed, misplaced or with a wrong size, the message
  inside an entry broken while its header stays right, data files truncated at and inside entries, grown,
  removed, renamed or joined by stray files, index units with wrong fields, zeroed or missing, the index
  file truncated or replaced, DLedger's `checkpoint` and `currterm` with garbage, odd numbers or missing.
* `pop` (stores with a POP revive topic) — the `ck`, `ack` and `bAck` bodies of revive records garbled
  (cut, garbage, deep nesting, wrong types, numbers past their Java range, bitmaps wider than `n`, diff
  lists shorter or longer than `n`, long key names, whitespace, escapes, lone surrogates), their TAGS
  swapped or removed (each such record rewritten whole, with its CRC, after the last record and its
  ConsumeQueue unit pointed at it), and the revive group's offsets beyond or before the revive queues.
* `compaction` (store-compaction, compacted by the real 5.3.3 CompactionLog) — compaction log records
  with header fields at interesting values and bit flips, compaction CQ units with every field at
  interesting values, zeroed or bit-flipped, log and CQ files removed, truncated, grown, renamed, copied to
  `.delete`, left in `compacting/`, emptied or turned into directories, queue directories with odd names or
  without their CQ directory, and the position-checkpoint garbled (syntax, types, huge numbers, removed).
* `trace` (stores with a trace topic, store-trace-b) — trace message bodies mutated as
  `tests/fuzz/trace_bodies.py` mutates them (separators cut, added, moved; edge values in fields; record
  types swapped; records repeated or dropped; invalid UTF-8), recompressed when the record is compressed or
  left as garbage under the compressed flag, and their KEYS removed or changed (each record rewritten whole
  after the last record, its ConsumeQueue unit pointed at the copy).
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import shutil
import stat
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

TIMER_KINDS = ("timerlog", "timerwheel", "timercheck")
ROCKSDB_KIND = "rocksdb"  # RocksDB-mode stores: the consume queue and config databases
POP_KINDS = ("pop",)
TRACE_KINDS = ("trace",)
FILE_KINDS = ("commitlog", "consumequeue", "index", "checkpoint", "config", "layout")
DLEDGER_KIND = (
    "dledger"  # a DLedger commitlog's files: data entries and pads, index units, checkpoint, currterm
)
# issue 26's families (tests/fuzz/hostile.py): hostile names, size outliers, special files, unwritable
# targets of the write commands
COMPACTION_KINDS = ("compaction",)  # compaction topics' logs, CQs and position-checkpoint (compaction/)
HOSTILE_KINDS = ("names", "sizes", "special", "unwritable")
WRITE_KINDS = ("unwritable",)  # run write commands (--execute), each on a copy of its own
KINDS = (
    *FILE_KINDS, *TIMER_KINDS, ROCKSDB_KIND, *POP_KINDS, DLEDGER_KIND, *TRACE_KINDS, *COMPACTION_KINDS,
    *HOSTILE_KINDS,
)  # fmt: skip

MAGIC_V1 = 0xDAA320A7
MAGIC_V2 = 0xDAA320AB
BLANK_MAGIC = 0xCBD43194
BORNHOST_V6_FLAG = 0x10
STOREHOST_V6_FLAG = 0x20

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1

CONFIG_FILES = (
    "consumerOffset.json",
    "delayOffset.json",
    "topics.json",
    "subscriptionGroup.json",
    "messageRequestMode.json",
)

# --- operations ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Op:
    """One change to one path (relative to the store root)."""

    action: str  # write, truncate, append, replace, remove, mkdir, symlink, chmod, fifo, socket, rename
    path: str
    offset: int = 0
    data: bytes = b""
    size: int = 0
    target: str = ""
    mode: int = 0


def _remove(p: Path) -> None:
    if p.is_symlink() or p.is_file() or (p.exists() and not p.is_dir()):
        p.unlink()
    elif p.is_dir():
        shutil.rmtree(p)


def apply_op(root: Path, op: Op) -> None:
    p = root / op.path
    if op.action == "write":
        with open(p, "r+b") as fh:
            fh.seek(op.offset)
            fh.write(op.data)
    elif op.action == "truncate":
        os.truncate(p, op.size)
    elif op.action == "append":
        with open(p, "ab") as fh:
            fh.write(op.data)
    elif op.action == "replace":  # the whole file's content (created when missing)
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p)
        elif p.is_symlink() or (os.path.lexists(p) and not p.is_file()):
            p.unlink()
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(op.data)
    elif op.action == "remove":
        _remove(p)
    elif op.action == "mkdir":  # a directory (with one file inside) where a file should be
        _remove(p)
        p.mkdir(parents=True)
        (p / "00000000000000000000").write_bytes(b"\0" * 20)
    elif op.action == "symlink":
        _remove(p)
        os.symlink(op.target, p)
    elif op.action == "chmod":
        os.chmod(p, op.mode)
    elif op.action == "fifo":
        _remove(p)
        os.mkfifo(p)
    elif op.action == "socket":  # bound by a relative name: a socket path is at most 107 bytes
        import socket

        _remove(p)
        cwd = os.getcwd()
        sock = socket.socket(socket.AF_UNIX)
        try:
            os.chdir(p.parent)
            sock.bind(p.name)
        finally:
            os.chdir(cwd)
            sock.close()
    elif op.action == "rename":
        os.rename(p, root / op.target)
    else:  # pragma: no cover - a bug in a generator
        raise ValueError(op.action)


@dataclass(frozen=True)
class Corruption:
    """A corrupted input: what was done (one line), to which file type, as operations."""

    kind: str
    strategy: str
    description: str
    ops: tuple[Op, ...]
    focus: str = ""  # the file the commands should look at (a cq queue, an index file, a config name)
    reads: str = ""  # the file type whose commands read what changed (hostile families), else `kind`

    def apply(self, root: Path) -> None:
        for op in self.ops:
            apply_op(root, op)

    def __str__(self) -> str:
        return f"[{self.kind}/{self.strategy}] {self.description}"


def restore_permissions(root: Path) -> None:
    """Make every path under root writable again (so it can be removed after a chmod corruption); a file
    hard-linked to a fuzz base keeps the base's mode."""
    for dirpath, dirnames, filenames in os.walk(root, topdown=True, followlinks=False):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            with contextlib.suppress(OSError):
                st = p.lstat()
                if stat.S_ISLNK(st.st_mode) or (stat.S_ISREG(st.st_mode) and st.st_nlink > 1):
                    continue
                os.chmod(p, stat.S_IMODE(st.st_mode) | (0o700 if stat.S_ISDIR(st.st_mode) else 0o600))
    with contextlib.suppress(OSError):
        os.chmod(root, 0o755)


# --- the map of a pristine store ----------------------------------------------------------------


@dataclass
class Record:
    """One commitlog record: its file, position and fields (name -> (position in file, length))."""

    file: str
    pos: int
    total: int
    kind: str  # message or blank
    fields: dict[str, tuple[int, int]] = field(default_factory=dict)
    props: bytes = b""


@dataclass
class StoreLayout:
    """What a pristine store holds, as plain data."""

    root: Path
    commitlog_files: list[tuple[str, int]]  # (relative path, size)
    records: list[Record]
    cq_files: list[tuple[str, int]]
    index_files: list[tuple[str, int]]
    index_geometry: tuple[int, int] | None  # (hashSlotNum, indexNum)
    config_texts: dict[str, bytes]  # relative path -> bytes (incl. .bak)
    has_checkpoint: bool
    all_files: list[str]
    all_dirs: list[str]
    timer_files: list[tuple[str, int]] = field(default_factory=list)  # timerlog/*, timerwheel, timercheck
    timer_units: int = 0  # units in the first timerlog file before the zeros
    timer_slots: list[int] = field(default_factory=list)  # indexes of the non-empty wheel slots
    dledger_home: str = ""  # dledger-<selfId> when the store has a DLedger commitlog
    dledger_data: list[tuple[str, int]] = field(default_factory=list)  # data files (relative path, size)
    dledger_entries: list[tuple[str, int, int, int]] = field(default_factory=list)  # (file, pos, size, index)
    dledger_pads: list[tuple[str, int]] = field(default_factory=list)  # (file, pos)
    dledger_index: list[tuple[str, int]] = field(default_factory=list)  # index files
    compaction_log: list[tuple[str, int]] = field(default_factory=list)  # compaction/compactionLog files
    compaction_cq: list[tuple[str, int]] = field(default_factory=list)  # compaction/compactionCq files
    compaction_records: list[Record] = field(default_factory=list)  # records of the compaction logs
    compaction_units: list[tuple[str, int]] = field(default_factory=list)  # (CQ file, position) of each unit
    cache: dict[str, bytes] = field(default_factory=dict, repr=False, compare=False)  # pristine bytes

    @property
    def commitlog_end(self) -> int:
        if not self.records:
            return 0
        last = self.records[-1]
        return int(Path(last.file).name) + last.pos + last.total


def _u32(buf: bytes, pos: int) -> int:
    return struct.unpack_from(">I", buf, pos)[0]


def _i32(buf: bytes, pos: int) -> int:
    return struct.unpack_from(">i", buf, pos)[0]


def record_fields(buf: bytes, pos: int) -> dict[str, tuple[int, int]] | None:
    """Field positions of the message record at `pos` (None when it is not a whole message)."""
    if pos + 8 > len(buf):
        return None
    total, magic = _i32(buf, pos), _u32(buf, pos + 4)
    if magic not in (MAGIC_V1, MAGIC_V2) or total <= 0 or pos + total > len(buf):
        return None
    sys_flag = _i32(buf, pos + 36)
    born = 20 if sys_flag & BORNHOST_V6_FLAG else 8
    store = 20 if sys_flag & STOREHOST_V6_FLAG else 8
    f: dict[str, tuple[int, int]] = {}
    p = pos

    def take(name: str, n: int) -> None:
        nonlocal p
        f[name] = (p, n)
        p += n

    for name, n in (
        ("totalSize", 4),
        ("magicCode", 4),
        ("bodyCRC", 4),
        ("queueId", 4),
        ("flag", 4),
        ("queueOffset", 8),
        ("physicalOffset", 8),
        ("sysFlag", 4),
        ("bornTimestamp", 8),
        ("bornHost", born),
        ("storeTimestamp", 8),
        ("storeHost", store),
        ("reconsumeTimes", 4),
        ("preparedTransactionOffset", 8),
        ("bodyLength", 4),
    ):
        take(name, n)
    body_len = _i32(buf, p - 4)
    take("body", max(0, body_len))
    topic_width = 2 if magic == MAGIC_V2 else 1
    if p + topic_width > len(buf):
        return None
    topic_len = int.from_bytes(buf[p : p + topic_width], "big", signed=True)
    take("topicLength", topic_width)
    take("topic", max(0, topic_len))
    if p + 2 > len(buf):
        return None
    props_len = struct.unpack_from(">h", buf, p)[0]
    take("propertiesLength", 2)
    take("properties", max(0, props_len))
    return f


def _files(root: Path, sub: str) -> list[tuple[str, int]]:
    base = root / sub
    if not base.is_dir():
        return []
    out = []
    for dirpath, _dirs, files in sorted(os.walk(base)):
        for name in sorted(files):
            p = Path(dirpath) / name
            out.append((str(p.relative_to(root)), p.stat().st_size))
    return out


def map_store(root: Path, index_geometry: tuple[int, int] | None = None) -> StoreLayout:
    """Read the layout of a pristine store (records walked as the broker writes them).

    The index geometry (maxHashSlotNum, maxIndexNum) is not stored in the files: give it, or it is taken
    from the first of several index files (every file but the last is full: indexCount = maxIndexNum).
    """
    root = Path(root)
    commitlog = [(p, s) for p, s in _files(root, "commitlog") if Path(p).name.isdigit()]
    records: list[Record] = []
    for rel, size in commitlog:
        buf = (root / rel).read_bytes()
        pos = 0
        while pos + 8 <= size:
            total, magic = _i32(buf, pos), _u32(buf, pos + 4)
            if magic == BLANK_MAGIC:
                records.append(
                    Record(rel, pos, total, "blank", {"totalSize": (pos, 4), "magicCode": (pos + 4, 4)})
                )
                break
            fields = record_fields(buf, pos)
            if fields is None:
                break
            start, n = fields["properties"]
            records.append(Record(rel, pos, total, "message", fields, buf[start : start + n]))
            pos += total
    index = [(p, s) for p, s in _files(root, "index")]
    geometry = index_geometry
    if geometry is None and len(index) > 1:
        num = _i32((root / index[0][0]).read_bytes()[:40], 36)
        rest = index[0][1] - 40 - num * 20
        if num > 1 and rest > 0 and rest % 4 == 0:
            geometry = (rest // 4, num)
    configs = {}
    for rel, _size in _files(root, "config"):
        configs[rel] = (root / rel).read_bytes()
    timer_files = _files(root, "timerlog")
    timer_units, timer_slots = 0, []
    if timer_files:
        log = (root / timer_files[0][0]).read_bytes()
        while (timer_units + 1) * 52 <= len(log) and _i32(log, timer_units * 52) == 52:
            timer_units += 1
    for rel in ("timerwheel", "config/timercheck"):
        if (root / rel).is_file():
            timer_files.append((rel, (root / rel).stat().st_size))
    if (root / "timerwheel").is_file():
        wheel = (root / "timerwheel").read_bytes()
        timer_slots = [i // 32 for i in range(0, len(wheel), 32) if wheel[i : i + 24].strip(b"\0")]
    dledger = _map_dledger(root)
    compaction = _map_compaction(root)
    all_files, all_dirs = [], []
    for dirpath, dirs, files in os.walk(root):
        rel = Path(dirpath).relative_to(root)
        all_dirs.extend(str(rel / d) for d in dirs)
        all_files.extend(str(rel / f) for f in files)
    return StoreLayout(
        root=root,
        commitlog_files=commitlog,
        records=records,
        cq_files=_files(root, "consumequeue"),
        index_files=index,
        index_geometry=geometry,
        config_texts=configs,
        has_checkpoint=(root / "checkpoint").is_file(),
        all_files=sorted(all_files),
        all_dirs=sorted(all_dirs),
        timer_files=timer_files,
        timer_units=timer_units,
        timer_slots=timer_slots,
        **dledger,
        **compaction,
    )


def _map_compaction(root: Path) -> dict:
    """compaction/'s log and CQ files, the records of each log file (up to its BLANK) and each CQ unit."""
    logs = _files(root, "compaction/compactionLog")
    cqs = _files(root, "compaction/compactionCq")
    records: list[Record] = []
    for rel, size in logs:
        buf = (root / rel).read_bytes()
        pos = 0
        while pos + 8 <= size:
            fields = record_fields(buf, pos)
            if fields is None:
                break
            records.append(Record(rel, pos, _i32(buf, pos), "message", fields))
            pos += _i32(buf, pos)
    units = []
    for rel, size in cqs:
        buf = (root / rel).read_bytes()
        units.extend((rel, pos) for pos in range(0, size - size % 46, 46) if buf[pos : pos + 46].strip(b"\0"))
    return {
        "compaction_log": logs,
        "compaction_cq": cqs,
        "compaction_records": records,
        "compaction_units": units,
    }


def _map_dledger(root: Path) -> dict:
    """The DLedger files of a pristine store: data files walked entry by entry (magic 1, size, index at +8,
    a pad -1 ends a file), index files."""
    homes = sorted(p.name for p in root.iterdir() if p.name.startswith("dledger-") and p.is_dir())
    if not homes:
        return {}
    home = homes[0]
    data = [(p, s) for p, s in _files(root, f"{home}/data") if Path(p).name.isdigit()]
    entries, pads = [], []
    for rel, size in data:
        buf = (root / rel).read_bytes()
        pos = 0
        while pos + 8 <= size:
            magic, length = _i32(buf, pos), _i32(buf, pos + 4)
            if magic == -1:
                pads.append((rel, pos))
                break
            if magic != 1 or length <= 48 or pos + length > size:
                break
            entries.append((rel, pos, length, struct.unpack_from(">q", buf, pos + 8)[0]))
            pos += length
    return {
        "dledger_home": home,
        "dledger_data": data,
        "dledger_entries": entries,
        "dledger_pads": pads,
        "dledger_index": _files(root, f"{home}/index"),
    }


# --- interesting values ---------------------------------------------------------------------------

INT_VALUES = (
    0,
    1,
    -1,
    2,
    7,
    19,
    20,
    21,
    40,
    255,
    256,
    4095,
    4096,
    65535,
    65536,
    2**24,
    2**30,
    INT_MAX,
    INT_MIN,
)
LONG_VALUES = (*INT_VALUES, 2**32, 2**40, 2**53 + 1, LONG_MAX, LONG_MIN, LONG_MAX - 1, -(2**40))


def _pack(value: int, width: int) -> bytes:
    return (value & ((1 << (8 * width)) - 1)).to_bytes(width, "big")


def interesting(rng: random.Random, width: int, near: tuple[int, ...] = ()) -> bytes:
    """A value for a field of `width` bytes: a boundary, a value near a given one, or random bits."""
    choice = rng.random()
    if choice < 0.5:
        pool = INT_VALUES if width <= 4 else LONG_VALUES
        value = rng.choice(pool)
    elif choice < 0.8 and near:
        value = rng.choice(near) + rng.choice((-21, -20, -8, -4, -1, 1, 4, 8, 20, 21, 4096, -4096))
    else:
        return bytes(rng.getrandbits(8) for _ in range(width))
    return _pack(value, width)


def bitflip(data: bytes, rng: random.Random, flips: int = 1) -> bytes:
    out = bytearray(data)
    for _ in range(flips):
        if out:
            i = rng.randrange(len(out))
            out[i] ^= 1 << rng.randrange(8)
    return bytes(out)


# --- generators -----------------------------------------------------------------------------------

Strategy = Callable[[StoreLayout, random.Random], Corruption | None]


def _c(kind: str, strategy: str, description: str, *ops: Op, focus: str = "") -> Corruption:
    return Corruption(kind, strategy, description, tuple(ops), focus)


def _read(layout: StoreLayout, rel: str) -> bytes:
    """A pristine file's bytes (read once)."""
    if rel not in layout.cache:
        layout.cache[rel] = (layout.root / rel).read_bytes()
    return layout.cache[rel]


def _messages(layout: StoreLayout) -> list[Record]:
    return [r for r in layout.records if r.kind == "message"]


# commitlog ----------------------------------------------------------------------------------------


def cl_truncate_boundary(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    """Truncate a commitlog file at a record start, inside a field, or at a field boundary."""
    if not layout.records:
        return None
    rec = rng.choice(layout.records)
    where = rng.random()
    if where < 0.3:
        at, what = rec.pos, "record start"
    elif where < 0.5:
        at, what = rec.pos + rec.total, "record end"
    else:
        name, (pos, n) = rng.choice(list(rec.fields.items()))
        at = pos + (rng.randrange(n + 1) if n else 0)
        what = f"field {name} (+{at - pos})"
    return _c(
        "commitlog",
        "truncate-boundary",
        f"truncate {rec.file} at {at} ({what})",
        Op("truncate", rec.file, size=at),
    )


def cl_truncate_anywhere(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    rel, size = rng.choice(layout.commitlog_files)
    at = rng.choice((0, 1, 4, 8, size // 2, size - 1, rng.randrange(size + 1)))
    return _c("commitlog", "truncate-anywhere", f"truncate {rel} to {at} bytes", Op("truncate", rel, size=at))


def cl_field_value(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    """An interesting value in one header field of one record (sizes, magic, offsets, flags, times)."""
    msgs = _messages(layout)
    if not msgs:
        return None
    rec = rng.choice(msgs)
    names = [n for n in rec.fields if n not in ("body", "topic", "properties")]
    name = rng.choice(names)
    pos, n = rec.fields[name]
    if name == "magicCode" and rng.random() < 0.6:
        data = _pack(rng.choice((MAGIC_V1, MAGIC_V2, BLANK_MAGIC, 0, 0xFFFFFFFF)), 4)
    elif name == "totalSize" and rng.random() < 0.5:
        data = _pack(
            rng.choice((rec.total - 1, rec.total + 1, rec.total + 20, 8, 7, 0, -8, 4 * 1024 * 1024, 2**30)), 4
        )
    elif name == "sysFlag" and rng.random() < 0.5:
        data = _pack(
            _i32(_read(layout, rec.file), pos)
            ^ rng.choice((0x1, 0x4, 0x8, 0xC, 0x10, 0x20, 0x30, 0x40, 0x80, 0x700)),
            4,
        )
    else:
        data = interesting(rng, n, (rec.total, rec.pos))
    return _c(
        "commitlog",
        "field-value",
        f"{rec.file} record @{rec.pos}: {name} := {data.hex()}",
        Op("write", rec.file, offset=pos, data=data),
    )


def cl_bitflip_header(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    msgs = _messages(layout)
    if not msgs:
        return None
    rec = rng.choice(msgs)
    name = rng.choice([n for n in rec.fields if n not in ("body", "properties")])
    pos, n = rec.fields[name]
    if n == 0:
        return None
    old = _read(layout, rec.file)[pos : pos + n]
    new = bitflip(old, rng, rng.choice((1, 1, 2, 3)))
    return _c(
        "commitlog",
        "bitflip-header",
        f"{rec.file} record @{rec.pos}: bit flips in {name} ({old.hex()} -> {new.hex()})",
        Op("write", rec.file, offset=pos, data=new),
    )


def cl_body(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    msgs = [r for r in _messages(layout) if r.fields["body"][1] > 0]
    if not msgs:
        return None
    rec = rng.choice(msgs)
    pos, n = rec.fields["body"]
    at = pos + rng.randrange(n)
    old = _read(layout, rec.file)[at : at + 1]
    return _c(
        "commitlog",
        "body",
        f"{rec.file} record @{rec.pos}: body byte {at - pos} flipped",
        Op("write", rec.file, offset=at, data=bitflip(old, rng)),
    )


def cl_properties(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    """Property separators swapped, removed or doubled; values replaced (same length) with garbage."""
    msgs = [r for r in _messages(layout) if r.props]
    if not msgs:
        return None
    rec = rng.choice(msgs)
    pos, n = rec.fields["properties"]
    props = bytearray(rec.props)
    seps = [i for i, b in enumerate(props) if b in (1, 2)]
    mode = rng.choice(("separator", "separator", "value", "value", "bytes"))
    if mode == "separator" and seps:
        i = rng.choice(seps)
        props[i] = rng.choice([b for b in (1, 2, 0, 0x3D, 0x20, 0xFF) if b != props[i]])
        what = f"separator at +{i} -> {props[i]:#x}"
    elif mode == "value":
        pairs = [m for m in re.finditer(rb"([^\x01\x02]+)\x01([^\x01\x02]*)", bytes(props))]
        if not pairs:
            return None
        m = rng.choice(pairs)
        a, b = m.span(2)
        width = b - a
        repl = rng.choice(
            (
                b"9" * width,
                b"-" + b"9" * (width - 1),
                b"-1".ljust(width, b" "),
                b"x" * width,
                b"\xff" * width,
                b"\x01" * width,
                b"\x02" * width,
                b" " * width,
                b"0" * width,
                b"1e99".ljust(width, b"9"),
                bytes(rng.getrandbits(8) for _ in range(width)),
            )
        )[:width]
        props[a:b] = repl
        what = f"value of {m.group(1)[:30]!r} -> {bytes(repl)[:30]!r}"
    else:
        i = rng.randrange(len(props))
        props[i] = rng.getrandbits(8)
        what = f"byte +{i} -> {props[i]:#x}"
    return _c(
        "commitlog",
        "properties",
        f"{rec.file} record @{rec.pos}: properties {what}",
        Op("write", rec.file, offset=pos, data=bytes(props)),
    )


def cl_range(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    """Zeros, 0xFF or random bytes over a range (a record's head, a whole record, across two)."""
    if not layout.records:
        return None
    rec = rng.choice(layout.records)
    start = rec.pos + rng.choice((0, 0, 4, 8, rng.randrange(max(1, rec.total))))
    length = rng.choice((1, 4, 8, 20, 64, rec.total, rec.total * 2, 4096))
    size = dict(layout.commitlog_files)[rec.file]
    length = max(1, min(length, size - start))
    fill = rng.choice(("zeros", "ff", "random"))
    data = {"zeros": bytes(length), "ff": b"\xff" * length}.get(fill) or bytes(
        rng.getrandbits(8) for _ in range(length)
    )
    return _c(
        "commitlog",
        "range",
        f"{rec.file}: {length} bytes of {fill} at {start}",
        Op("write", rec.file, offset=start, data=data),
    )


def cl_blank(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    """Fake or damaged BLANK markers: mid-file, with odd sizes; a real one removed."""
    blanks = [r for r in layout.records if r.kind == "blank"]
    if blanks and rng.random() < 0.4:
        rec = rng.choice(blanks)
        data = rng.choice((bytes(8), _pack(rng.choice((0, 1, -1, 8, INT_MAX)), 4) + _pack(BLANK_MAGIC, 4)))
        return _c(
            "commitlog",
            "blank",
            f"{rec.file}: BLANK at {rec.pos} -> {data.hex()}",
            Op("write", rec.file, offset=rec.pos, data=data),
        )
    msgs = _messages(layout)
    if not msgs:
        return None
    rec = rng.choice(msgs)
    total = rng.choice((rec.total, 8, 0, -1, 12, INT_MAX, 4))
    return _c(
        "commitlog",
        "blank",
        f"{rec.file}: BLANK marker (size {total}) over the record at {rec.pos}",
        Op("write", rec.file, offset=rec.pos, data=_pack(total, 4) + _pack(BLANK_MAGIC, 4)),
    )


def cl_files(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    """File-level damage: a size that differs, a file missing in the middle, a stray name, a new file."""
    rel, size = rng.choice(layout.commitlog_files)
    d = str(Path(rel).parent)
    choice = rng.randrange(7)
    if choice == 0:
        return _c(
            "commitlog", "files", f"{rel} grows by 4096 zero bytes", Op("append", rel, data=bytes(4096))
        )
    if choice == 1:
        return _c(
            "commitlog", "files", f"{rel} grows by 3 garbage bytes", Op("append", rel, data=b"\x12\x34\x56")
        )
    if choice == 2 and len(layout.commitlog_files) > 2:
        mid = layout.commitlog_files[len(layout.commitlog_files) // 2][0]
        return _c("commitlog", "files", f"{mid} removed (a gap)", Op("remove", mid))
    if choice == 3:
        return _c("commitlog", "files", f"{rel} removed", Op("remove", rel))
    if choice == 4:
        return _c(
            "commitlog", "files", "stray file in commitlog/", Op("replace", f"{d}/stray.txt", data=b"hello")
        )
    if choice == 5:
        name = f"{d}/{int(Path(rel).name) + rng.choice((1, size // 2, size * 7)):020d}"
        return _c("commitlog", "files", f"misnamed copy {name}", Op("replace", name, data=_read(layout, rel)))
    last_rel, last_size = layout.commitlog_files[-1]
    name = f"{d}/{int(Path(last_rel).name) + last_size:020d}"
    data = rng.choice((bytes(last_size), _read(layout, layout.commitlog_files[0][0])))
    return _c("commitlog", "files", f"an extra file {name} after the last", Op("replace", name, data=data))


# consumequeue ---------------------------------------------------------------------------------


def _cq_unit(layout: StoreLayout, rng: random.Random) -> tuple[str, int, int] | None:
    """A (file, position, unit count) of a written unit in some ConsumeQueue file."""
    files = [(p, s) for p, s in layout.cq_files if s >= 20]
    if not files:
        return None
    rel, size = rng.choice(files)
    data = _read(layout, rel)
    written = [i for i in range(size // 20) if data[i * 20 : i * 20 + 20] != bytes(20)]
    i = rng.choice(written) if written and rng.random() < 0.9 else rng.randrange(size // 20)
    return rel, i * 20, len(written)


def _cq_focus(rel: str) -> str:
    parts = Path(rel).parts  # consumequeue/<topic>/<queue>/<file>
    return f"{parts[1]}/{parts[2]}" if len(parts) >= 4 else ""


def cq_phy_offset(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    """A unit's phyOffset pointing anywhere."""
    pick = _cq_unit(layout, rng)
    if pick is None:
        return None
    rel, pos, _ = pick
    end = layout.commitlog_end
    starts = [int(Path(r.file).name) + r.pos for r in layout.records]
    first = int(Path(layout.commitlog_files[0][0]).name) if layout.commitlog_files else 0
    options = [
        -1,
        -20,
        0,
        first,
        end,
        end + 1,
        end + 10**6,
        LONG_MAX,
        LONG_MIN,
        2**40,
        first - 1,
    ]
    if starts:
        s = rng.choice(starts)
        options += [s, s + 1, s + 4, s + 8, s - 1]
    blanks = [int(Path(r.file).name) + r.pos for r in layout.records if r.kind == "blank"]
    if blanks:
        options.append(rng.choice(blanks))
    value = rng.choice(options) if rng.random() < 0.85 else rng.randrange(-(2**40), 2**40)
    return _c(
        "consumequeue",
        "phy-offset",
        f"{rel} unit @{pos}: phyOffset := {value}",
        Op("write", rel, offset=pos, data=_pack(value, 8)),
        focus=_cq_focus(rel),
    )


def cq_size(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    pick = _cq_unit(layout, rng)
    if pick is None:
        return None
    rel, pos, _ = pick
    old = _i32(_read(layout, rel), pos + 8)
    value = rng.choice((0, -1, 1, 7, 8, old - 1, old + 1, old * 2, INT_MAX, INT_MIN, 2**30, 4 * 1024 * 1024))
    return _c(
        "consumequeue",
        "size",
        f"{rel} unit @{pos}: size {old} := {value}",
        Op("write", rel, offset=pos + 8, data=_pack(value, 4)),
        focus=_cq_focus(rel),
    )


def cq_tags_code(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    pick = _cq_unit(layout, rng)
    if pick is None:
        return None
    rel, pos, _ = pick
    data = interesting(rng, 8)
    return _c(
        "consumequeue",
        "tags-code",
        f"{rel} unit @{pos}: tagsCode := {data.hex()}",
        Op("write", rel, offset=pos + 12, data=data),
        focus=_cq_focus(rel),
    )


def cq_unit_bytes(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    """Whole units: zeroed (a hole), 0xFF, random, bit flips, swapped with or copied from another."""
    pick = _cq_unit(layout, rng)
    if pick is None:
        return None
    rel, pos, _ = pick
    data = _read(layout, rel)
    unit = data[pos : pos + 20]
    mode = rng.choice(("zero", "ff", "random", "flip", "swap", "copy", "filler"))
    if mode == "zero":
        new = bytes(20)
    elif mode == "ff":
        new = b"\xff" * 20
    elif mode == "random":
        new = bytes(rng.getrandbits(8) for _ in range(20))
    elif mode == "flip":
        new = bitflip(unit, rng, rng.choice((1, 2, 4)))
    elif mode == "filler":
        new = _pack(0, 8) + _pack(INT_MAX, 4) + _pack(0, 8)
    else:
        other = rng.randrange(len(data) // 20) * 20
        new = data[other : other + 20]
        if mode == "swap":
            return _c(
                "consumequeue",
                "unit-bytes",
                f"{rel}: units @{pos} and @{other} swapped",
                Op("write", rel, offset=pos, data=new),
                Op("write", rel, offset=other, data=unit),
                focus=_cq_focus(rel),
            )
    return _c(
        "consumequeue",
        "unit-bytes",
        f"{rel} unit @{pos}: {mode} -> {new.hex()}",
        Op("write", rel, offset=pos, data=new),
        focus=_cq_focus(rel),
    )


def cq_truncate(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    files = [(p, s) for p, s in layout.cq_files]
    if not files:
        return None
    rel, size = rng.choice(files)
    at = rng.choice(
        (
            0,
            1,
            19,
            20,
            21,
            size - 20,
            size - 1,
            size // 2,
            (rng.randrange(size // 20 + 1)) * 20,
            rng.randrange(size + 1),
        )
    )
    at = max(0, min(at, size))
    return _c(
        "consumequeue",
        "truncate",
        f"truncate {rel} to {at}",
        Op("truncate", rel, size=at),
        focus=_cq_focus(rel),
    )


def cq_files(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    """Missing, extra, misnamed, odd-size files; odd queue and topic directories."""
    if not layout.cq_files:
        return None
    rel, size = rng.choice(layout.cq_files)
    qdir = str(Path(rel).parent)
    tdir = str(Path(rel).parent.parent)
    choice = rng.randrange(9)
    if choice == 0:
        return _c("consumequeue", "files", f"{rel} removed", Op("remove", rel), focus=_cq_focus(rel))
    if choice == 1:
        return _c(
            "consumequeue",
            "files",
            f"{rel} grows by 7 bytes",
            Op("append", rel, data=b"\x01" * 7),
            focus=_cq_focus(rel),
        )
    if choice == 2:
        name = f"{qdir}/{int(Path(rel).name) + size * rng.choice((1, 2, 5, 1000)):020d}"
        return _c(
            "consumequeue",
            "files",
            f"an extra file {name}",
            Op("replace", name, data=_read(layout, rel)),
            focus=_cq_focus(rel),
        )
    if choice == 3:
        name = f"{qdir}/{int(Path(rel).name) + rng.choice((1, 7, 20)):020d}"
        return _c(
            "consumequeue",
            "files",
            f"{rel} renamed to {name}",
            Op("rename", rel, target=name),
            focus=_cq_focus(rel),
        )
    if choice == 4:
        return _c(
            "consumequeue",
            "files",
            f"stray file in {qdir}",
            Op("replace", f"{qdir}/notes.txt", data=b"x"),
            focus=_cq_focus(rel),
        )
    if choice == 5:
        q = rng.choice(("abc", "-1", "99999999999999999999", "2147483648", "007", " 1"))
        return _c(
            "consumequeue",
            "files",
            f"queue directory {tdir}/{q}",
            Op("replace", f"{tdir}/{q}/00000000000000000000", data=_read(layout, rel)),
        )
    if choice == 6:
        return _c(
            "consumequeue",
            "files",
            f"a file where queue directory {qdir} was",
            Op("replace", qdir, data=b"\0" * 20),
            focus=_cq_focus(rel),
        )
    if choice == 7:
        return _c(
            "consumequeue", "files", f"a file where topic directory {tdir} was", Op("replace", tdir, data=b"")
        )
    return _c("consumequeue", "files", f"{rel} is empty", Op("truncate", rel, size=0), focus=_cq_focus(rel))


# index --------------------------------------------------------------------------------------------

HEADER_FIELDS = (
    ("beginTimestamp", 0, 8),
    ("endTimestamp", 8, 8),
    ("beginPhyOffset", 16, 8),
    ("endPhyOffset", 24, 8),
    ("hashSlotCount", 32, 4),
    ("indexCount", 36, 4),
)


def _index_pick(layout: StoreLayout, rng: random.Random) -> tuple[str, int, bytes] | None:
    if not layout.index_files:
        return None
    rel, size = rng.choice(layout.index_files)
    return rel, size, _read(layout, rel)


def ix_header(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    pick = _index_pick(layout, rng)
    if pick is None:
        return None
    rel, _size, data = pick
    name, pos, n = rng.choice(HEADER_FIELDS)
    slots, num = layout.index_geometry or (0, 0)
    old = int.from_bytes(data[pos : pos + n], "big", signed=True)
    if rng.random() < 0.5:
        data_new = _pack(
            rng.choice((0, 1, -1, old + 1, old - 1, slots, num, num + 1, INT_MAX, INT_MIN, old * 1000)), n
        )
    else:
        data_new = interesting(rng, n, (old,))
    return _c(
        "index",
        "header",
        f"{rel}: {name} {old} := {int.from_bytes(data_new, 'big', signed=True)}",
        Op("write", rel, offset=pos, data=data_new),
        focus=Path(rel).name,
    )


def ix_slot(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    pick = _index_pick(layout, rng)
    if pick is None or layout.index_geometry is None:
        return None
    rel, _size, data = pick
    slots, num = layout.index_geometry
    used = [i for i in range(slots) if _i32(data, 40 + 4 * i)]
    slot = rng.choice(used) if used and rng.random() < 0.8 else rng.randrange(slots)
    count = _i32(data, 36)
    value = rng.choice(
        (
            0,
            -1,
            1,
            count,
            count + 1,
            num - 1,
            num,
            num + 1,
            INT_MAX,
            INT_MIN,
            rng.randrange(-1000, 2 * num + 2),
        )
    )
    return _c(
        "index",
        "slot",
        f"{rel}: hash slot {slot} := {value}",
        Op("write", rel, offset=40 + 4 * slot, data=_pack(value, 4)),
        focus=Path(rel).name,
    )


def ix_entry(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    """An entry's keyHash, phyOffset, timeDiff or prevIndex: loops, chains leaving the file, any offset."""
    pick = _index_pick(layout, rng)
    if pick is None or layout.index_geometry is None:
        return None
    rel, _size, data = pick
    slots, num = layout.index_geometry
    count = max(1, _i32(data, 36))
    i = rng.randrange(1, max(2, min(count, num)))
    base = 40 + slots * 4 + i * 20
    name, off, n = rng.choice(
        (
            ("keyHash", 0, 4),
            ("phyOffset", 4, 8),
            ("timeDiff", 12, 4),
            ("prevIndex", 16, 4),
            ("prevIndex", 16, 4),
        )
    )
    if name == "prevIndex":
        value = rng.choice((i, i + 1, count - 1, count, num, num + 1, -1, INT_MAX, INT_MIN, 0))
        raw = _pack(value, 4)
    elif name == "phyOffset":
        raw = _pack(
            rng.choice((-1, 0, layout.commitlog_end, layout.commitlog_end + 1, LONG_MAX, LONG_MIN, 2**40)), 8
        )
    elif name == "timeDiff":
        raw = _pack(rng.choice((-1, INT_MAX, INT_MIN, 0, 10**9)), 4)
    else:
        raw = interesting(rng, 4)
    if base + off + n > len(data):
        return None
    return _c(
        "index",
        "entry",
        f"{rel}: entry {i} {name} := {int.from_bytes(raw, 'big', signed=True)}",
        Op("write", rel, offset=base + off, data=raw),
        focus=Path(rel).name,
    )


def ix_cycle(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    """A hash chain that loops: the slot's head entry points (through prevIndex) back to itself."""
    pick = _index_pick(layout, rng)
    if pick is None or layout.index_geometry is None:
        return None
    rel, _size, data = pick
    slots, _num = layout.index_geometry
    used = [_i32(data, 40 + 4 * s) for s in range(slots) if _i32(data, 40 + 4 * s) > 0]
    if not used:
        return None
    head = rng.choice(used)
    # walk the chain to its last entry, make that one point back at the head
    seen, cur = [], head
    entries = 40 + slots * 4
    while cur > 0 and cur not in seen and entries + cur * 20 + 20 <= len(data) and len(seen) < 1000:
        seen.append(cur)
        cur = _i32(data, entries + cur * 20 + 16)
    tail = seen[-1]
    return _c(
        "index",
        "cycle",
        f"{rel}: entry {tail}.prevIndex := {head} (a loop of {len(seen)})",
        Op("write", rel, offset=entries + tail * 20 + 16, data=_pack(head, 4)),
        focus=Path(rel).name,
    )


def ix_truncate(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    pick = _index_pick(layout, rng)
    if pick is None:
        return None
    rel, size, _data = pick
    slots, _num = layout.index_geometry or (0, 0)
    at = rng.choice(
        (
            0,
            1,
            8,
            32,
            36,
            39,
            40,
            41,
            40 + slots * 4,
            40 + slots * 4 + 20,
            size - 20,
            size - 1,
            rng.randrange(size + 1),
        )
    )
    at = max(0, min(at, size))
    return _c(
        "index", "truncate", f"truncate {rel} to {at}", Op("truncate", rel, size=at), focus=Path(rel).name
    )


def ix_files(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    pick = _index_pick(layout, rng)
    if pick is None:
        return None
    rel, size, data = pick
    choice = rng.randrange(7)
    if choice == 0:
        return _c("index", "files", f"{rel} grows by 20 bytes", Op("append", rel, data=bytes(20)))
    if choice == 1:
        return _c("index", "files", f"{rel} removed", Op("remove", rel))
    if choice == 2:
        name = rng.choice(
            ("99999999999999999999", "00000000000000000", "-1", "2024060100000000x", "9223372036854775808")
        )
        return _c(
            "index",
            "files",
            f"copy named index/{name}",
            Op("replace", f"index/{name}", data=data),
            focus=name,
        )
    if choice == 3:
        return _c(
            "index",
            "files",
            f"{rel}: random bytes over the slot table",
            Op("write", rel, offset=40, data=bytes(rng.getrandbits(8) for _ in range(min(256, size - 40)))),
            focus=Path(rel).name,
        )
    if choice == 4:
        return _c(
            "index",
            "files",
            f"{rel}: every byte 0xFF",
            Op("replace", rel, data=b"\xff" * size),
            focus=Path(rel).name,
        )
    if choice == 5:
        return _c(
            "index",
            "files",
            f"{rel}: bit flips",
            Op("replace", rel, data=bitflip(data, rng, 8)),
            focus=Path(rel).name,
        )
    return _c(
        "index",
        "files",
        "a new empty index file",
        Op("replace", "index/20991231235959999", data=b""),
        focus="20991231235959999",
    )


# checkpoint ------------------------------------------------------------------------------------------

CP_FIELDS = (
    "physicMsgTimestamp",
    "logicsMsgTimestamp",
    "indexMsgTimestamp",
    "masterFlushedOffset",
    "confirmPhyOffset",
)


def cp_field(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    i = rng.randrange(5)
    value = rng.choice(
        (
            0,
            -1,
            1,
            LONG_MAX,
            LONG_MIN,
            2**53,
            253402300800000,
            253402300799999,
            -62135596800001,
            10**18,
            layout.commitlog_end + 1,
        )
    )
    return _c(
        "checkpoint",
        "field",
        f"checkpoint {CP_FIELDS[i]} := {value}",
        Op("write", "checkpoint", offset=8 * i, data=_pack(value, 8)),
    )


def cp_garbage(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    mode = rng.choice(("random", "ff", "flip", "zero", "text"))
    if mode == "random":
        data = bytes(rng.getrandbits(8) for _ in range(4096))
    elif mode == "ff":
        data = b"\xff" * 4096
    elif mode == "flip":
        data = bitflip(_read(layout, "checkpoint"), rng, rng.choice((1, 3, 16)))
    elif mode == "zero":
        data = bytes(4096)
    else:
        data = (b"not a checkpoint\n" * 300)[:4096]
    return _c("checkpoint", "garbage", f"checkpoint: {mode}", Op("replace", "checkpoint", data=data))


def cp_size(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    at = rng.choice((0, 1, 7, 8, 16, 24, 32, 39, 40, 41, 4095, rng.randrange(4097)))
    if rng.random() < 0.25:
        extra = rng.choice((1, 4096, 100000))
        return _c(
            "checkpoint",
            "size",
            f"checkpoint grows by {extra}",
            Op("append", "checkpoint", data=bytes(extra)),
        )
    return _c("checkpoint", "size", f"truncate checkpoint to {at}", Op("truncate", "checkpoint", size=at))


# config -----------------------------------------------------------------------------------------------

_TOKEN = re.compile(
    rb'"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|true|false|null|[{}\[\]:,]|[A-Za-z_$][\w$]*'
)


def _tokens(text: bytes) -> list[re.Match[bytes]]:
    return list(_TOKEN.finditer(text))


def _value_span(text: bytes, toks: list[re.Match[bytes]], i: int) -> tuple[int, int]:
    """Span of the JSON value starting at token i (a scalar, or a bracketed value to its match)."""
    t = toks[i].group()
    if t not in (b"{", b"["):
        return toks[i].span()
    depth = 0
    for j in range(i, len(toks)):
        g = toks[j].group()
        if g in (b"{", b"["):
            depth += 1
        elif g in (b"}", b"]"):
            depth -= 1
            if depth == 0:
                return toks[i].start(), toks[j].end()
    return toks[i].start(), len(text)


def _config_pick(
    layout: StoreLayout, rng: random.Random, bak: bool | None = None
) -> tuple[str, bytes] | None:
    names = [p for p in layout.config_texts if Path(p).name.split(".bak")[0] in CONFIG_FILES]
    if bak is False:
        names = [p for p in names if not p.endswith(".bak")]
    if not names:
        return None
    # mostly the live file; sometimes its .bak (the fallback)
    live = [p for p in names if not p.endswith(".bak")]
    rel = rng.choice(live) if live and rng.random() < 0.85 else rng.choice(names)
    return rel, layout.config_texts[rel]


def _config_focus(rel: str) -> str:
    return Path(rel).name.removesuffix(".bak")


def cfg_syntax(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    pick = _config_pick(layout, rng)
    if pick is None:
        return None
    rel, text = pick
    toks = _tokens(text)
    mode = rng.randrange(13)
    if mode == 0 and toks:  # truncate at a token boundary
        t = rng.choice(toks)
        at = rng.choice((t.start(), t.end(), (t.start() + t.end()) // 2))
        new, what = text[:at], f"truncated at {at}"
    elif mode == 1:
        at = rng.randrange(len(text) + 1)
        new, what = text[:at], f"truncated at {at}"
    elif mode == 2 and toks:  # delete a token
        t = rng.choice(toks)
        new, what = text[: t.start()] + text[t.end() :], f"token {t.group()[:20]!r} at {t.start()} deleted"
    elif mode == 3:  # insert a structural character
        at = rng.randrange(len(text) + 1)
        ch = rng.choice((b"{", b"}", b"[", b"]", b'"', b":", b",", b"\\", b"'", b"/", b"#"))
        new, what = text[:at] + ch + text[at:], f"{ch!r} inserted at {at}"
    elif mode == 4:  # swap a bracket
        spots = [i for i, b in enumerate(text) if b in b"{}[]"]
        if not spots:
            return None
        i = rng.choice(spots)
        other = {ord("{"): b"[", ord("}"): b"]", ord("["): b"{", ord("]"): b"}"}[text[i]]
        new, what = text[:i] + other + text[i + 1 :], f"bracket at {i} swapped"
    elif mode == 5:  # bad escapes and control characters inside a string
        strings = [t for t in toks if t.group().startswith(b'"')]
        if not strings:
            return None
        t = rng.choice(strings)
        bad = rng.choice(
            (b"\\x41", b"\\u12", b"\\ud800", b"\\", b"\n", b"\x00", b"\x1b", b"\\uZZZZ", b"\\U0001F600")
        )
        at = t.start() + 1
        new, what = text[:at] + bad + text[at:], f"{bad!r} inside the string at {t.start()}"
    elif mode == 6:  # invalid UTF-8 and a BOM
        at = rng.randrange(len(text) + 1)
        junk = rng.choice((b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xef\xbb\xbf"))
        if junk == b"\xef\xbb\xbf" and rng.random() < 0.5:
            at = 0
        new, what = text[:at] + junk + text[at:], f"{junk!r} inserted at {at}"
    elif mode == 7:  # trailing garbage
        tail = rng.choice((b"}", b"x", b",", b"{}", b"\x00", b" // comment"))
        new, what = text + tail, f"trailing {tail!r}"
    elif mode == 8:  # deep nesting
        depth = rng.choice((200, 1000, 5000, 100000))
        opener = rng.choice((b"[", b'{"a":'))
        new, what = opener * depth, f"{depth} nested {opener!r}"
    elif mode == 9:  # unterminated string
        strings = [t for t in toks if t.group().startswith(b'"')]
        if not strings:
            return None
        t = rng.choice(strings)
        new, what = text[: t.end() - 1], f"string at {t.start()} left open (file ends)"
    elif mode == 10:  # random byte
        at = rng.randrange(max(1, len(text)))
        b = bytes([rng.getrandbits(8)])
        new, what = text[:at] + b + text[at + 1 :], f"byte at {at} := {b!r}"
    elif mode == 11:  # duplicated key / value
        strings = [t for t in toks if t.group().startswith(b'"')]
        if not strings:
            return None
        t = rng.choice(strings)
        new, what = text[: t.end()] + b":1," + text[t.start() :], f"key {t.group()[:20]!r} duplicated"
    else:  # single quotes, unquoted words
        new, what = text.replace(b'"', b"'", rng.randrange(1, 6)), "some double quotes replaced by single"
    return _c("config", "syntax", f"{rel}: {what}", Op("replace", rel, data=new), focus=_config_focus(rel))


_WRONG = (
    b'"x"',
    b'""',
    b'"-1"',
    b"true",
    b"false",
    b"null",
    b"[]",
    b"{}",
    b"[1,2]",
    b'{"a":1}',
    b"1.5",
    b"-0",
    b"0",
    b'"\\u0000"',
    b'"2024-01-01"',
)
_HUGE = (
    b"9223372036854775807",
    b"9223372036854775808",
    b"-9223372036854775809",
    b"2147483648",
    b"-2147483649",
    b"123456789012345678901234567890",
    b"1e400",
    b"-1e400",
    b"1e-400",
    b"1E+2",
    b"0x10",
    b"NaN",
    b"Infinity",
    b"-Infinity",
    b"00012",
    b"1.0",
    b"-1",
    b"99999999999999999999999999999999999999999999999999999999999999",
)


def cfg_wrong_type(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    pick = _config_pick(layout, rng)
    if pick is None:
        return None
    rel, text = pick
    toks = _tokens(text)
    values = [
        i
        for i, t in enumerate(toks)
        if t.group() not in (b"}", b"]", b":", b",")
        and not (i + 1 < len(toks) and toks[i + 1].group() == b":")  # not a key
    ]
    if not values:
        return None
    i = rng.choice(values)
    a, b = _value_span(text, toks, i)
    repl = rng.choice(_WRONG)
    return _c(
        "config",
        "wrong-type",
        f"{rel}: value {text[a:b][:24]!r} at {a} := {repl!r}",
        Op("replace", rel, data=text[:a] + repl + text[b:]),
        focus=_config_focus(rel),
    )


def cfg_key(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    """Keys: an odd key (non-numeric queue id, huge, empty, unquoted), or a table key renamed."""
    pick = _config_pick(layout, rng)
    if pick is None:
        return None
    rel, text = pick
    toks = _tokens(text)
    keys = [i for i, t in enumerate(toks) if i + 1 < len(toks) and toks[i + 1].group() == b":"]
    if not keys:
        return None
    t = toks[rng.choice(keys)]
    repl = rng.choice(
        (
            b'""',
            b'"x"',
            b"-1",
            b"2147483648",
            b'"99999999999999999999"',
            b"abc",
            b"1.5",
            b'"%RETRY%"',
            b"null",
            b"true",
            b'"a@b"',
        )
    )
    return _c(
        "config",
        "key",
        f"{rel}: key {t.group()[:24]!r} at {t.start()} := {repl!r}",
        Op("replace", rel, data=text[: t.start()] + repl + text[t.end() :]),
        focus=_config_focus(rel),
    )


def cfg_huge_number(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    pick = _config_pick(layout, rng)
    if pick is None:
        return None
    rel, text = pick
    nums = [t for t in _tokens(text) if re.fullmatch(rb"-?\d.*", t.group())]
    if not nums:
        return None
    t = rng.choice(nums)
    repl = rng.choice(_HUGE)
    return _c(
        "config",
        "huge-number",
        f"{rel}: number {t.group()!r} at {t.start()} := {repl!r}",
        Op("replace", rel, data=text[: t.start()] + repl + text[t.end() :]),
        focus=_config_focus(rel),
    )


def cfg_missing_table(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    """A top-level (or second-level) key removed with its value, or its value emptied / replaced."""
    pick = _config_pick(layout, rng)
    if pick is None:
        return None
    rel, text = pick
    toks = _tokens(text)
    depth, entries = 0, []
    for i, t in enumerate(toks):
        g = t.group()
        if g in (b"{", b"["):
            depth += 1
        elif g in (b"}", b"]"):
            depth -= 1
        elif depth in (1, 2) and i + 1 < len(toks) and toks[i + 1].group() == b":":
            entries.append(i)
    if not entries:
        return None
    i = rng.choice(entries)
    a = toks[i].start()
    _, b = _value_span(text, toks, i + 2)
    mode = rng.choice(("remove", "empty-object", "empty-array", "null", "string"))
    if mode == "remove":
        rest = text[b:].lstrip()
        if rest.startswith(b","):
            b = len(text) - len(rest) + 1
        new = text[:a] + text[b:]
    else:
        value = {"empty-object": b"{}", "empty-array": b"[]", "null": b"null", "string": b'"table"'}[mode]
        new = text[: toks[i + 2].start()] + value + text[b:]
    return _c(
        "config",
        "missing-table",
        f"{rel}: {toks[i].group()[:30]!r} {mode}",
        Op("replace", rel, data=new),
        focus=_config_focus(rel),
    )


def cfg_whole(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    """The whole file: empty, blank, null, [], {}, a scalar, binary, and both file and .bak broken."""
    pick = _config_pick(layout, rng, bak=False)
    if pick is None:
        return None
    rel, _text = pick
    content = rng.choice(
        (
            b"",
            b" \n\t",
            b"null",
            b"[]",
            b"{}",
            b'"x"',
            b"123",
            b"true",
            b"\x00" * 64,
            b"\xff\xfe{",
            b"{",
            b"[1,2,3]",
            b'{"offsetTable":{}}',
        )
    )
    ops = [Op("replace", rel, data=content)]
    what = f"{rel} := {content[:20]!r}"
    if rng.random() < 0.5:
        bak = rel + ".bak"
        bak_content = rng.choice((b"", b"{", b"garbage", b"null"))
        ops.append(Op("replace", bak, data=bak_content) if rng.random() < 0.8 else Op("remove", bak))
        what += f" and {bak} := {bak_content!r}"
    return _c("config", "whole", what, *ops, focus=_config_focus(rel))


# layout ---------------------------------------------------------------------------------------------


def lay_empty_file(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    rel = rng.choice(layout.all_files)
    return _c("layout", "empty-file", f"{rel} is empty", Op("truncate", rel, size=0))


def lay_dir_for_file(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    rel = rng.choice(layout.all_files + ["checkpoint", "lock", "abort", "config/consumerOffset.json"])
    return _c("layout", "dir-for-file", f"a directory where {rel} should be", Op("mkdir", rel))


def lay_file_for_dir(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    rel = rng.choice(layout.all_dirs + ["commitlog", "consumequeue", "index", "config"])
    return _c(
        "layout",
        "file-for-dir",
        f"a file where directory {rel} should be",
        Op("replace", rel, data=b"x" * rng.choice((0, 1, 20))),
    )


def lay_missing(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    rel = rng.choice(
        layout.all_files + layout.all_dirs + ["commitlog", "consumequeue", "index", "config", "checkpoint"]
    )
    return _c("layout", "missing", f"{rel} removed", Op("remove", rel))


def lay_permission(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    rel = rng.choice(
        layout.all_files
        + layout.all_dirs
        + ["commitlog", "consumequeue", "index", "config", "checkpoint", "lock"]
    )
    mode = rng.choice((0o000, 0o000, 0o200, 0o100 if rel in layout.all_dirs else 0o000))
    return _c("layout", "permission", f"chmod {mode:o} {rel}", Op("chmod", rel, mode=mode))


def lay_symlink(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    rel = rng.choice(layout.all_files + layout.all_dirs + ["checkpoint", "commitlog", "index"])
    mode = rng.choice(("loop", "dangling", "dev-zero", "root"))
    if mode == "loop":
        target = Path(rel).name
    elif mode == "dangling":
        target = "/nonexistent/mqtool-fuzz"
    elif mode == "dev-zero":
        target = "/dev/zero"
    else:
        target = "/"
    return _c("layout", "symlink", f"{rel} -> {target} ({mode})", Op("symlink", rel, target=target))


def lay_lock_abort(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    choice = rng.randrange(6)
    if choice == 0:
        return _c(
            "layout", "lock-abort", "abort present (crashed last run)", Op("replace", "abort", data=b"")
        )
    if choice == 1:
        return _c("layout", "lock-abort", "lock missing", Op("remove", "lock"))
    if choice == 2:
        return _c("layout", "lock-abort", "abort is a directory", Op("mkdir", "abort"))
    if choice == 3:
        return _c("layout", "lock-abort", "lock is a directory", Op("mkdir", "lock"))
    if choice == 4:
        return _c("layout", "lock-abort", "lock is garbage", Op("replace", "lock", data=b"\xff" * 100))
    return _c("layout", "lock-abort", "lock unreadable", Op("chmod", "lock", mode=0))


def lay_stray(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    where = rng.choice(("commitlog", "index", "config", "consumequeue", "."))
    name = rng.choice(("README", "00000000000000000000.tmp", ".hidden", "12345", "x" * 200, "ünïcödé", "a b"))
    return _c(
        "layout", "stray", f"stray file {where}/{name}", Op("replace", f"{where}/{name}", data=b"stray")
    )


def lay_fifo(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    rel = rng.choice(
        [p for p in layout.all_files if not p.startswith("consumequeue")]
        + ["checkpoint", "config/consumerOffset.json"]
    )
    return _c("layout", "fifo", f"a FIFO where {rel} should be", Op("fifo", rel))


# timer (5.x timer wheel): three file types, timerlog, timerwheel and timercheck ----------------------

TIMER_LOG = "timerlog/00000000000000000000"
TIMER_CHECK = "config/timercheck"
TIMER_WHEEL = "timerwheel"
TIMER_QUEUE = "consumequeue/rmq_sys_wheel_timer/0/00000000000000000000"
TIMER_WHEEL_SLOTS = 2 * 7 * 86400  # the file holds the 7-day wheel twice
TIMER_WHEEL_SIZE = TIMER_WHEEL_SLOTS * 32
# a unit: size int, prevPos long, magic int, currWriteTimeMs long, delayedTime int, offsetPy long, sizePy int,
# hashCodeOfRealTopic int, reserved long
TIMER_UNIT_FIELDS = (
    ("size", 0, 4),
    ("prevPos", 4, 8),
    ("magic", 12, 4),
    ("currWriteTimeMs", 16, 8),
    ("delayedTime", 24, 4),
    ("offsetPy", 28, 8),
    ("sizePy", 36, 4),
    ("hash", 40, 4),
)
TIMER_SLOT_FIELDS = (
    ("timeSecs", 0, 8),
    ("firstPos", 8, 8),
    ("lastPos", 16, 8),
    ("num", 24, 4),
    ("magic", 28, 4),
)
# timercheck: lastReadTimeMs, lastTimerLogFlushPos, lastTimerQueueOffset, masterTimerQueueOffset, dataVersion
TIMER_CHECK_FIELDS = (
    "lastReadTimeMs",
    "lastTimerLogFlushPos",
    "lastTimerQueueOffset",
    "masterTimerQueueOffset",
    "stateVersion",
    "timestamp",
    "counter",
)
TIMER_BLANK = (16).to_bytes(4, "big") + bytes(8) + BLANK_MAGIC.to_bytes(4, "big")
DAY_MS = 86_400_000


def _has_timer(layout: StoreLayout) -> bool:
    return layout.timer_units > 0 and (layout.root / TIMER_WHEEL).is_file()


def _wheel_slot(layout: StoreLayout, slot: int) -> tuple[int, int, int, int, int]:
    """(timeSecs, firstPos, lastPos, num, magic) of a pristine wheel slot."""
    return struct.unpack_from(">qqqii", _read(layout, TIMER_WHEEL), slot * 32)


def _timer_chains(layout: StoreLayout) -> dict[int, list[int]]:
    """Each non-empty slot's chain in the pristine timerlog: lastPos, then each unit's prevPos."""
    log = _read(layout, TIMER_LOG)
    end = layout.timer_units * 52
    chains = {}
    for slot in layout.timer_slots:
        pos, out = _wheel_slot(layout, slot)[2], []
        while 0 <= pos < end and pos % 52 == 0 and pos not in out:
            out.append(pos)
            pos = struct.unpack_from(">q", log, pos + 4)[0]
        chains[slot] = out
    return chains


def _odd_position(layout: StoreLayout, rng: random.Random) -> int:
    """A timerlog position: a unit's, inside a unit, the blank after the last, past the file, negative."""
    end = layout.timer_units * 52
    return rng.choice(
        (
            rng.randrange(layout.timer_units) * 52,
            rng.randrange(layout.timer_units) * 52 + rng.choice((1, 4, 12, 51)),
            end,
            end + 52,
            1 << 20,
            (1 << 20) - 16,
            -52,
            -2,
            LONG_MAX,
        )
    )


# timerlog


def tm_log_field(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    if not _has_timer(layout):
        return None
    unit = rng.randrange(layout.timer_units)
    name, at, width = rng.choice(TIMER_UNIT_FIELDS)
    near = (52, unit * 52, (unit + 1) * 52, 0xF, 1, 3, 5, 7) if name in ("size", "prevPos", "magic") else ()
    data = interesting(rng, width, near)
    return _c(
        "timerlog",
        "log-field",
        f"timerlog unit {unit} {name} := {data.hex()}",
        Op("write", TIMER_LOG, offset=unit * 52 + at, data=data),
    )


def tm_log_bytes(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    if not _has_timer(layout):
        return None
    log = _read(layout, TIMER_LOG)
    end = layout.timer_units * 52
    mode = rng.choice(("flip", "blank", "zero", "garbage", "truncate"))
    if mode == "flip":
        lo = rng.randrange(max(end, 1))
        flipped = bitflip(log[lo : lo + 52], rng, rng.choice((1, 2, 8)))
        what, op = f"timerlog: bit flips at {lo}", Op("write", TIMER_LOG, offset=lo, data=flipped)
    elif mode == "blank":
        at = rng.randrange(layout.timer_units + 1) * 52 + rng.choice((0, 0, 0, 1, 16))
        what, op = f"timerlog: a blank at {at}", Op("write", TIMER_LOG, offset=at, data=TIMER_BLANK)
    elif mode == "zero":
        at = rng.randrange(layout.timer_units) * 52
        what, op = f"timerlog: unit at {at} zeroed", Op("write", TIMER_LOG, offset=at, data=bytes(52))
    elif mode == "garbage":
        at = rng.randrange(max(end, 1))
        data = bytes(rng.getrandbits(8) for _ in range(rng.choice((4, 52, 200))))
        what, op = f"timerlog: garbage at {at}", Op("write", TIMER_LOG, offset=at, data=data)
    else:
        size = rng.choice((0, 1, 16, 51, 52, 53, end - 1, end, end + 7, rng.randrange(end + 1)))
        what, op = f"truncate the timerlog to {size}", Op("truncate", TIMER_LOG, size=max(size, 0))
    return _c("timerlog", "log-bytes", what, op)


def tm_log_chain(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    """prevPos links that make a slot's chain loop (to itself, to a newer unit of the chain), jump into
    another slot's chain, or point inside a unit, at the end blank or past the file."""
    if not _has_timer(layout):
        return None
    chains = [c for c in _timer_chains(layout).values() if c]
    chain = rng.choice(chains)
    i = rng.randrange(len(chain))
    unit = chain[i]
    mode = rng.choice(("self", "newer", "other-chain", "odd"))
    if mode == "self":
        target = unit
    elif mode == "newer":
        target = chain[rng.randrange(i + 1)]
    elif mode == "other-chain":
        target = rng.choice(rng.choice(chains))
    else:
        target = _odd_position(layout, rng)
    return _c(
        "timerlog",
        "log-chain",
        f"timerlog unit at {unit} prevPos := {target} ({mode})",
        Op("write", TIMER_LOG, offset=unit + 4, data=_pack(target, 8)),
    )


def tm_log_target(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    """A unit's message (offsetPy, sizePy) moved onto another record, inside one, a blank, past the end."""
    if not _has_timer(layout):
        return None
    unit = rng.randrange(layout.timer_units) * 52
    records = layout.records
    rec = rng.choice(records) if records else None
    base = int(Path(rec.file).name) + rec.pos if rec else 0
    choice = rng.randrange(5)
    if choice == 0 and rec:
        offset, size, what = base, rec.total, "another record"
    elif choice == 1 and rec:
        offset, size, what = base + rng.choice((1, 4, 8, 20)), rec.total, "inside a record"
    elif choice == 2:
        offset, size, what = layout.commitlog_end, rng.choice((0, 52, 200)), "the commitlog end"
    elif choice == 3 and rec:
        offset, size, what = base, rng.choice((0, 1, 7, rec.total - 1, rec.total + 1, INT_MAX, -1)), "a size"
    else:
        offset, size, what = rng.choice(LONG_VALUES), rng.choice((52, 200, INT_MAX)), "anywhere"
    data = _pack(offset, 8) + _pack(size, 4)
    return _c(
        "timerlog",
        "log-target",
        f"timerlog unit at {unit} offsetPy/sizePy := {offset}/{size} ({what})",
        Op("write", TIMER_LOG, offset=unit + 28, data=data),
    )


def tm_log_files(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    if not _has_timer(layout):
        return None
    choice = rng.randrange(6)
    if choice == 0:
        return _c("timerlog", "files", "no timerlog directory", Op("remove", "timerlog"))
    if choice == 1:
        return _c(
            "timerlog", "files", "a stray file in timerlog/", Op("replace", "timerlog/notes.txt", data=b"x")
        )
    if choice == 2:
        size = rng.choice((52, 1048576, 2 * 1048576))
        log = _read(layout, TIMER_LOG)
        data = log[: rng.choice((0, 52, 104, len(log)))]
        return _c(
            "timerlog",
            "files",
            f"a second timerlog file at {size}",
            Op("replace", f"timerlog/{size:020d}", data=data),
        )
    if choice == 3:
        return _c("timerlog", "files", "the timerlog file is empty", Op("truncate", TIMER_LOG, size=0))
    if choice == 4:
        name = rng.choice(("00000000000000000052", "00000000000001048576", "x"))
        return _c(
            "timerlog",
            "files",
            f"the timerlog file renamed {name}",
            Op("rename", TIMER_LOG, target=f"timerlog/{name}"),
        )
    return _c("timerlog", "files", "timerlog is a file", Op("replace", "timerlog", data=b"\0" * 52))


# timerwheel


def tm_wheel_slot(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    if not _has_timer(layout):
        return None
    slot = (
        rng.choice(layout.timer_slots)
        if layout.timer_slots and rng.random() < 0.8
        else rng.randrange(TIMER_WHEEL_SLOTS)
    )
    name, at, width = rng.choice(TIMER_SLOT_FIELDS)
    near = (0, -1, layout.timer_units * 52, (layout.timer_units - 1) * 52, 26, slot, slot + TIMER_WHEEL_SLOTS)
    data = interesting(rng, width, near)
    return _c(
        "timerwheel",
        "wheel-slot",
        f"wheel slot {slot} {name} := {data.hex()}",
        Op("write", TIMER_WHEEL, offset=slot * 32 + at, data=data),
    )


def tm_wheel_chain(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    """A slot's first/last unit moved into another slot's chain, inside a unit, past the log; its count
    off by one or far off."""
    if not _has_timer(layout) or not layout.timer_slots:
        return None
    chains = _timer_chains(layout)
    slot = rng.choice(layout.timer_slots)
    others = [p for s, c in chains.items() if s != slot for p in c]
    field_name = rng.choice(("lastPos", "firstPos", "both", "num"))
    if field_name == "num":
        num = _wheel_slot(layout, slot)[3]
        value = rng.choice((num + 1, num - 1, 0, -1, num * 2, INT_MAX, layout.timer_units + 1))
        return _c(
            "timerwheel",
            "wheel-chain",
            f"wheel slot {slot} num := {value}",
            Op("write", TIMER_WHEEL, offset=slot * 32 + 24, data=_pack(value, 4)),
        )
    target = rng.choice(others) if others and rng.random() < 0.6 else _odd_position(layout, rng)
    at, data = {
        "lastPos": (16, _pack(target, 8)),
        "firstPos": (8, _pack(target, 8)),
        "both": (8, _pack(target, 8) * 2),
    }[field_name]
    return _c(
        "timerwheel",
        "wheel-chain",
        f"wheel slot {slot} {field_name} := {target}",
        Op("write", TIMER_WHEEL, offset=slot * 32 + at, data=data),
    )


def tm_wheel_misplaced(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    """Slots at a wrong index: moved or copied one slot on, to the other half of the file, far away; two
    slots swapped; a slot's time set to another slot's."""
    if not _has_timer(layout) or not layout.timer_slots:
        return None
    wheel = _read(layout, TIMER_WHEEL)
    slot = rng.choice(layout.timer_slots)
    entry = wheel[slot * 32 : slot * 32 + 32]
    mode = rng.choice(("move", "copy", "swap", "time"))
    if mode == "swap" and len(layout.timer_slots) > 1:
        other = rng.choice([s for s in layout.timer_slots if s != slot])
        return _c(
            "timerwheel",
            "wheel-misplaced",
            f"wheel slots {slot} and {other} swapped",
            Op("write", TIMER_WHEEL, offset=slot * 32, data=wheel[other * 32 : other * 32 + 32]),
            Op("write", TIMER_WHEEL, offset=other * 32, data=entry),
        )
    if mode == "time":
        other = rng.choice(layout.timer_slots)
        secs = _wheel_slot(layout, other)[0] + rng.choice((0, 1, -1, 86400 * 7, -86400 * 7, 86400 * 14))
        return _c(
            "timerwheel",
            "wheel-misplaced",
            f"wheel slot {slot} timeSecs := {secs}",
            Op("write", TIMER_WHEEL, offset=slot * 32, data=_pack(secs, 8)),
        )
    to = rng.choice((slot + 1, slot - 1, slot + TIMER_WHEEL_SLOTS // 2, rng.randrange(TIMER_WHEEL_SLOTS)))
    to %= TIMER_WHEEL_SLOTS
    ops = [Op("write", TIMER_WHEEL, offset=to * 32, data=entry)]
    if mode == "move" and to != slot:
        ops.insert(0, Op("write", TIMER_WHEEL, offset=slot * 32, data=bytes(32)))
    what = "moved" if mode == "move" else "copied"
    return _c("timerwheel", "wheel-misplaced", f"wheel slot {slot} {what} to index {to}", *ops)


def tm_wheel_size(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    if not _has_timer(layout):
        return None
    choice = rng.randrange(5)
    if choice == 0:
        size = rng.choice((0, 1, 31, 32, TIMER_WHEEL_SIZE - 1, rng.randrange(TIMER_WHEEL_SIZE)))
        return _c(
            "timerwheel",
            "wheel-size",
            f"truncate the wheel to {size}",
            Op("truncate", TIMER_WHEEL, size=size),
        )
    if choice == 1:
        return _c(
            "timerwheel", "wheel-size", "the wheel grows by 32", Op("append", TIMER_WHEEL, data=bytes(32))
        )
    if choice == 2:
        return _c("timerwheel", "wheel-size", "no timerwheel", Op("remove", TIMER_WHEEL))
    if choice == 3:
        return _c("timerwheel", "wheel-size", "timerwheel unreadable", Op("chmod", TIMER_WHEEL, mode=0))
    return _c("timerwheel", "wheel-size", "timerwheel is a directory", Op("mkdir", TIMER_WHEEL))


# timercheck


def _timer_queue_units(layout: StoreLayout) -> int:
    """Units in the pristine ConsumeQueue of rmq_sys_wheel_timer queue 0 (before the zeros)."""
    if not (layout.root / TIMER_QUEUE).is_file():
        return 0
    cq = _read(layout, TIMER_QUEUE)
    n = 0
    while (n + 1) * 20 <= len(cq) and cq[n * 20 : n * 20 + 20].strip(b"\0"):
        n += 1
    return n


def _has_timercheck(layout: StoreLayout) -> bool:
    return _has_timer(layout) and (layout.root / TIMER_CHECK).is_file()


def tm_check(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    if not _has_timercheck(layout):
        return None
    choice = rng.randrange(4)
    if choice == 0:
        i = rng.randrange(7)
        data = interesting(rng, 8, (layout.timer_units * 52, 0, -1, 10**13))
        return _c(
            "timercheck",
            "check",
            f"timercheck {TIMER_CHECK_FIELDS[i]} := {data.hex()}",
            Op("write", TIMER_CHECK, offset=8 * i, data=data),
        )
    if choice == 1:
        size = rng.choice((0, 1, 8, 55, 56, 57, 4095))
        return _c(
            "timercheck", "check", f"truncate timercheck to {size}", Op("truncate", TIMER_CHECK, size=size)
        )
    if choice == 2:
        return _c(
            "timercheck",
            "check",
            "timercheck garbage",
            Op("replace", TIMER_CHECK, data=bytes(rng.getrandbits(8) for _ in range(4096))),
        )
    return _c("timercheck", "check", "no timercheck", Op("remove", TIMER_CHECK))


def tm_check_read_time(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    """lastReadTimeMs far ahead or behind (days, the wheel's 7 days, years), a slot off, not a whole
    second, before the epoch."""
    if not _has_timercheck(layout):
        return None
    now = struct.unpack_from(">q", _read(layout, TIMER_CHECK), 0)[0]
    delta = rng.choice(
        (
            1,
            -1,
            999,
            -1000,
            1000,
            DAY_MS,
            -DAY_MS,
            7 * DAY_MS,
            -7 * DAY_MS,
            7 * DAY_MS + 1000,
            14 * DAY_MS,
            3650 * DAY_MS,
            -3650 * DAY_MS,
            -now,
            -now - 1000,
        )
    )
    value = now + delta if rng.random() < 0.9 else rng.choice((LONG_MAX, LONG_MIN, LONG_MAX - 1000))
    return _c(
        "timercheck",
        "check-read-time",
        f"timercheck lastReadTimeMs := {value} ({now}{delta:+d})",
        Op("write", TIMER_CHECK, offset=0, data=_pack(value, 8)),
    )


def tm_check_queue(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    """The queue offsets (lastTimerQueueOffset, masterTimerQueueOffset) and the timerlog flush position
    past the ConsumeQueue's or the timerlog's end, at it, below it, negative."""
    if not _has_timercheck(layout):
        return None
    units = _timer_queue_units(layout)
    log_end = layout.timer_units * 52
    i = rng.choice((1, 2, 2, 3, 3))
    near = (log_end, log_end - 52, log_end + 52, log_end + 1) if i == 1 else (units, units - 1, units + 1)
    value = rng.choice((*near, 0, -1, units * 20, INT_MAX + 1, LONG_MAX))
    what = f"timercheck {TIMER_CHECK_FIELDS[i]} := {value}"
    ops = [Op("write", TIMER_CHECK, offset=8 * i, data=_pack(value, 8))]
    if rng.random() < 0.3 and i in (2, 3):  # both queue offsets together
        j = 5 - i
        ops.append(Op("write", TIMER_CHECK, offset=8 * j, data=_pack(value, 8)))
        what += f" and {TIMER_CHECK_FIELDS[j]} too"
    return _c("timercheck", "check-queue", f"{what} (queue has {units} units, log {log_end} bytes)", *ops)


# rocksdb ----------------------------------------------------------------------------------------------


def rocksdb_dirs(layout: StoreLayout) -> list[str]:
    """The store's RocksDB database directories (those with a CURRENT file)."""
    return sorted({str(Path(f).parent) for f in layout.all_files if Path(f).name == "CURRENT"})


def _rdb_files(layout: StoreLayout, rng: random.Random, pick) -> tuple[str, list[str]] | None:
    dirs = rocksdb_dirs(layout)
    if not dirs:
        return None
    d = rng.choice(dirs)
    files = [f for f in layout.all_files if str(Path(f).parent) == d and pick(Path(f).name)]
    return (d, files) if files else None


def _size(layout: StoreLayout, rel: str) -> int:
    return (layout.root / rel).stat().st_size


def rdb_current(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    found = _rdb_files(layout, rng, lambda n: n == "CURRENT")
    if found is None:
        return None
    rel = found[1][0]
    choice = rng.randrange(4)
    if choice == 0:
        return _c("rocksdb", "current", f"{rel} removed", Op("remove", rel))
    if choice == 1:
        return _c("rocksdb", "current", f"{rel} empty", Op("truncate", rel, size=0))
    data = rng.choice((b"MANIFEST-999999\n", b"MANIFEST-000005", b"\xff" * 16, b"../../etc/passwd\n"))
    return _c("rocksdb", "current", f"{rel} := {data!r}", Op("replace", rel, data=data))


def rdb_sst_truncate(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    found = _rdb_files(layout, rng, lambda n: n.endswith(".sst"))
    if found is None:
        return None
    rel = rng.choice(found[1])
    size = _size(layout, rel)
    to = rng.choice((0, 1, size // 2, size - 1, size - 48, rng.randrange(max(size, 1))))
    return _c(
        "rocksdb",
        "sst-truncate",
        f"{rel} truncated to {max(to, 0)} of {size}",
        Op("truncate", rel, size=max(to, 0)),
    )


def rdb_sst_bytes(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    found = _rdb_files(layout, rng, lambda n: n.endswith(".sst"))
    if found is None:
        return None
    rel = rng.choice(found[1])
    size = _size(layout, rel)
    pos = rng.choice((0, size - 48, size - 8, rng.randrange(max(size, 1))))
    pos = min(max(pos, 0), max(size - 1, 0))
    data = bytes(rng.randrange(256) for _ in range(rng.choice((1, 4, 16))))[: size - pos]
    return _c(
        "rocksdb",
        "sst-bytes",
        f"{rel} bytes at {pos} := {data.hex()}",
        Op("write", rel, offset=pos, data=data),
    )


def rdb_sst_missing(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    found = _rdb_files(layout, rng, lambda n: n.endswith(".sst"))
    if found is None:
        return None
    rel = rng.choice(found[1])
    return _c("rocksdb", "sst-missing", f"{rel} removed", Op("remove", rel))


def rdb_manifest(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    found = _rdb_files(layout, rng, lambda n: n.startswith("MANIFEST-"))
    if found is None:
        return None
    rel = rng.choice(found[1])
    size = _size(layout, rel)
    if rng.random() < 0.5:
        to = rng.choice((0, 7, size // 2, size - 1))
        return _c("rocksdb", "manifest", f"{rel} truncated to {to}", Op("truncate", rel, size=to))
    pos = rng.randrange(max(size, 1))
    data = bytes(rng.randrange(256) for _ in range(8))[: max(size - pos, 0)]
    return _c(
        "rocksdb",
        "manifest",
        f"{rel} bytes at {pos} := {data.hex()}",
        Op("write", rel, offset=pos, data=data),
    )


def rdb_wal(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    found = _rdb_files(layout, rng, lambda n: n.endswith(".log"))
    if found is None:
        return None
    rel = rng.choice(found[1])
    data = bytes(rng.randrange(256) for _ in range(rng.choice((1, 7, 32, 300))))
    return _c("rocksdb", "wal", f"{rel} + {len(data)} garbage bytes", Op("append", rel, data=data))


def rdb_other_database(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    dirs = rocksdb_dirs(layout)
    if len(dirs) < 2:
        return None
    victim, other = rng.sample(dirs, 2)
    return _c(
        "rocksdb",
        "other-database",
        f"{victim} replaced by {other} (other column families)",
        Op("remove", victim),
        Op("rename", other, target=victim),
    )


# POP: the revive topic's records ---------------------------------------------------------------------

REVIVE_TOPIC_PREFIX = b"rmq_sys_REVIVE_LOG_"
POP_NUMBERS = (0, -1, 1, 7, 31, 32, 33, 127, 128, 255, 256, -129, INT_MAX, INT_MAX + 1, INT_MIN, INT_MIN - 1,
               LONG_MAX, LONG_MAX + 1, LONG_MIN, LONG_MIN - 1, 10**30)  # fmt: skip
POP_ODD_VALUES = ('"x"', '"12"', "null", "true", "1.5", "1e3", "-0", "[]", "{}", '"\\ud800"', "[1,[2]]")


def _revive_records(layout: StoreLayout) -> list[Record]:
    out = []
    for r in _messages(layout):
        at, n = r.fields["topic"]
        if _read(layout, r.file)[at : at + n].startswith(REVIVE_TOPIC_PREFIX):
            out.append(r)
    return out


def _field_bytes(layout: StoreLayout, r: Record, name: str) -> bytes:
    at, n = r.fields[name]
    return _read(layout, r.file)[at : at + n]


def _pop_value(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.5:
        return str(rng.choice(POP_NUMBERS))
    if roll < 0.8:
        return rng.choice(POP_ODD_VALUES)
    return "[" + ",".join(str(rng.choice(POP_NUMBERS)) for _ in range(rng.randint(0, 40))) + "]"


def _pop_body(body: bytes, rng: random.Random) -> tuple[bytes, str]:
    """A mutated ck / ack / bAck body and what was done."""
    import json

    try:
        doc = json.loads(body)
    except ValueError:
        doc = {}
    mode = rng.choice(("value", "value", "wide", "list", "key", "form", "cut", "garbage", "nest"))
    if mode == "cut":
        cut = rng.randrange(len(body) + 1)
        return body[:cut], f"body cut at {cut}"
    if mode == "garbage":
        data = rng.choice((b"", b"{}", b"null", b"[]", b'"x"', b"\xff\xfe{", b"{\"t\":\"\xc3\"}",
                           bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 60)))))  # fmt: skip
        return data, f"body := {data[:40]!r}"
    if mode == "nest":
        depth = rng.choice((100, 1000, 5000))
        key = rng.choice(("d", "aol", "t", "so"))
        data = ('{"' + key + '":' + "[" * depth + "]" * depth + "}").encode()
        return data, f"body: {key} nested {depth} deep"
    if not isinstance(doc, dict) or not doc:
        return body[::-1], "body reversed"
    keys = list(doc)
    if mode == "value":
        key = rng.choice(keys + ["n", "bm", "so", "ao", "q", "pt", "it"])
        value = _pop_value(rng)
        doc[key] = "\x00"  # a placeholder the raw value replaces
        text = json.dumps(doc, separators=(",", ":")).replace('"\\u0000"', value, 1)
        return text.encode(), f"body {key} := {value}"
    if mode == "wide":  # a bitmap wider than n, n past the diff list, or the other way round
        doc["bm"] = rng.choice((-1, INT_MAX, 1 << 20, 3))
        doc["n"] = rng.choice((0, 1, 2, 31, 32, 33, 127, -1, -128))
        if rng.random() < 0.5 and "d" in doc:
            doc["d"] = doc["d"][: rng.randint(0, len(doc["d"]))] or [0]
        return json.dumps(doc, separators=(",", ":")).encode(), f"body bm {doc['bm']} n {doc['n']}"
    if mode == "list":
        key = rng.choice(("d", "aol"))
        doc[key] = [rng.choice((0, 1, 2, -1, 5, INT_MAX, INT_MAX + 1, LONG_MAX, 10**20)) for _ in range(
            rng.choice((0, 1, 3, 40, 200)))]  # fmt: skip
        return json.dumps(doc, separators=(",", ":")).encode(), f"body {key} := {len(doc[key])} odd offsets"
    if mode == "key":
        key = rng.choice(keys)
        new = rng.choice(("ackOffset", "startOffset", "consumerGroup", "queueId", "x", key, "", "aol"))
        text = json.dumps(doc, separators=(",", ":")).replace(json.dumps(key) + ":", json.dumps(new) + ":", 1)
        return text.encode(), f"body key {key} -> {new!r}"
    # form: whitespace, key order, escapes, non-ASCII
    items = list(doc.items())
    rng.shuffle(items)
    separators = rng.choice(((",", ":"), (", ", " : ")))
    text = json.dumps(dict(items), separators=separators, ensure_ascii=rng.random() < 0.5)
    if rng.random() < 0.5:
        text = text.replace('":"', '":"\\u00e9\\t', 1)
    return text.encode("utf-8", "surrogatepass"), "body in another form"


Change = tuple[Record, bytes | None, bytes | None]  # a record, its new body, its new properties


def _rewrite_records(layout: StoreLayout, changes: list[Change]) -> list[Op]:
    """Each record again with a new body and/or properties (valid CRC and sizes), after the last record of
    the last commitlog file, and its ConsumeQueue unit pointed at the new copy."""
    import zlib

    last = layout.commitlog_files[-1]
    base = int(Path(last[0]).name)
    at = layout.commitlog_end - base
    ops = []
    for r, body, props in changes:
        raw = _read(layout, r.file)[r.pos : r.pos + r.total]
        rel = {k: (p - r.pos, n) for k, (p, n) in r.fields.items()}
        head = bytearray(raw[: rel["body"][0]])
        old_body = raw[rel["body"][0] : rel["body"][0] + rel["body"][1]]
        body = old_body if body is None else body
        topic = raw[rel["topicLength"][0] : rel["propertiesLength"][0]]
        if props is None:
            props = _field_bytes(layout, r, "properties")
        record = head + body + topic + struct.pack(">h", len(props)) + props
        struct.pack_into(">i", record, 0, len(record))
        struct.pack_into(">i", record, rel["bodyCRC"][0], zlib.crc32(body) & 0x7FFFFFFF)
        struct.pack_into(">q", record, rel["physicalOffset"][0], base + at)
        struct.pack_into(">i", record, rel["bodyLength"][0], len(body))
        if at + len(record) > last[1]:
            break
        ops.append(Op("write", last[0], offset=at, data=bytes(record)))
        queue = struct.unpack_from(">i", raw, rel["queueId"][0])[0]
        offset = struct.unpack_from(">q", raw, rel["queueOffset"][0])[0]
        name = _field_bytes(layout, r, "topic").decode()
        cq = f"consumequeue/{name}/{queue}/00000000000000000000"
        ops.append(Op("write", cq, offset=offset * 20, data=struct.pack(">qi", base + at, len(record))))
        at += len(record)
    return ops


def pop_bodies(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    records = _revive_records(layout)
    if not records:
        return None
    picked = rng.sample(records, min(len(records), rng.choice((1, 1, 2, 3))))
    changes, what = [], []
    for r in picked:
        body, desc = _pop_body(_field_bytes(layout, r, "body"), rng)
        changes.append((r, body, None))
        what.append(desc)
    return _c("pop", "bodies", "revive record " + "; ".join(what), *_rewrite_records(layout, changes))


def pop_tags(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    records = _revive_records(layout)
    if not records:
        return None
    r = rng.choice(records)
    props = _field_bytes(layout, r, "properties")
    tag = rng.choice((b"ck", b"ack", b"bAck", b"", b"CK", b"ck\x01x", None))
    parts = [p for p in props.split(b"\x02") if p and not p.startswith(b"TAGS\x01")]
    if tag is not None:
        parts.insert(rng.randrange(len(parts) + 1), b"TAGS\x01" + tag)
    new = b"\x02".join(parts) + b"\x02"
    body = _pop_body(_field_bytes(layout, r, "body"), rng)[0] if rng.random() < 0.3 else None
    return _c("pop", "tags", f"revive record TAGS := {tag!r}", *_rewrite_records(layout, [(r, body, new)]))


def pop_revive_offset(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    rel = "config/consumerOffset.json"
    text = layout.config_texts.get(rel)
    if text is None or b"CID_RMQ_SYS_REVIVE_GROUP" not in text or not _revive_records(layout):
        return None
    value = rng.choice((-1, -2, 1, 2, 5, 7, 1000, INT_MAX, LONG_MAX, LONG_MIN))
    queue = rng.choice((0, 1, 2, 3, 6, 7, 8, -1))
    key = b'CID_RMQ_SYS_REVIVE_GROUP":{'
    at = text.index(key) + len(key)
    data = text[:at] + f"{queue}:{value},".encode() + text[at:]
    return _c("pop", "revive-offset", f"revive group offset of queue {queue} := {value}",
              Op("replace", rel, data=data))  # fmt: skip


# dledger --------------------------------------------------------------------------------------------

DL_HEADER_FIELDS = (
    ("magic", 0, 4), ("size", 4, 4), ("index", 8, 8), ("term", 16, 8), ("pos", 24, 8), ("channel", 32, 4),
    ("chainCrc", 36, 4), ("bodyCrc", 40, 4), ("bodySize", 44, 4),
)  # fmt: skip


def _dl_entry(layout: StoreLayout, rng: random.Random) -> tuple[str, int, int, int] | None:
    if not layout.dledger_entries:
        return None
    # the last entries more often: DLedger's recovery walks the last three files
    entries = layout.dledger_entries
    if rng.random() < 0.6:
        return entries[-1 - rng.randrange(min(len(entries), 40))]
    return rng.choice(entries)


def dl_header_field(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    picked = _dl_entry(layout, rng)
    if picked is None:
        return None
    rel, pos, size, index = picked
    name, at, width = rng.choice(DL_HEADER_FIELDS)
    base = int(Path(rel).name)
    near = {"size": (size,), "index": (index, 0), "pos": (base + pos, 0), "bodySize": (size - 48,)}.get(
        name, (0, 1)
    )
    value = interesting(rng, width, near)
    return _c(DLEDGER_KIND, "dl_header_field", f"{rel} entry {index} {name} := {value.hex()}",
              Op("write", rel, pos + at, value))  # fmt: skip


def dl_header_bitflip(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    picked = _dl_entry(layout, rng)
    if picked is None:
        return None
    rel, pos, _size, index = picked
    header = _read(layout, rel)[pos : pos + 48]
    return _c(DLEDGER_KIND, "dl_header_bitflip", f"{rel} entry {index}: header bits flipped",
              Op("write", rel, pos, bitflip(header, rng, rng.randint(1, 3))))  # fmt: skip


def dl_message(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    """The record inside an entry broken, its header right: DLedger keeps the entry."""
    picked = _dl_entry(layout, rng)
    if picked is None:
        return None
    rel, pos, size, index = picked
    at = pos + 48
    choice = rng.randrange(5)
    if choice == 0:  # TOTALSIZE
        op = Op("write", rel, at, interesting(rng, 4, (size - 48,)))
    elif choice == 1:  # MAGICCODE
        op = Op("write", rel, at + 4, rng.choice((_pack(MAGIC_V2, 4), _pack(BLANK_MAGIC, 4), bytes(4),
                                                   interesting(rng, 4))))  # fmt: skip
    elif choice == 2:  # PHYSICALOFFSET field
        op = Op("write", rel, at + 28, interesting(rng, 8, (int(Path(rel).name) + at,)))
    elif choice == 3:  # a body or property byte
        op = Op("write", rel, at + rng.randrange(90, max(91, size - 48)), bytes([rng.getrandbits(8)]))
    else:  # the record zeroed
        op = Op("write", rel, at, bytes(size - 48))
    return _c(DLEDGER_KIND, "dl_message", f"{rel} entry {index}: its message broken ({choice})", op)


def dl_pad(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    choice = rng.randrange(5)
    if layout.dledger_pads and choice < 4:
        rel, pos = rng.choice(layout.dledger_pads)
        if choice == 0:
            op = Op("write", rel, pos, interesting(rng, 4, (-1, 0, 1)))
            what = "magic"
        elif choice == 1:
            op = Op("write", rel, pos + 4, interesting(rng, 4, (0, 8)))
            what = "size"
        elif choice == 2:
            op = Op("write", rel, pos, bytes(8))
            what = "zeroed"
        else:
            op = Op(
                "write", rel, pos + 8 + rng.randrange(16), bytes(rng.getrandbits(8) or 1 for _ in range(8))
            )
            what = "garbage after it"
        return _c(DLEDGER_KIND, "dl_pad", f"{rel} pad at {pos}: {what}", op)
    picked = _dl_entry(layout, rng)
    if picked is None:
        return None
    rel, pos, _size, index = picked
    size = dict(layout.dledger_data)[rel]
    return _c(DLEDGER_KIND, "dl_pad", f"{rel}: a pad in place of entry {index}",
              Op("write", rel, pos, _pack(-1, 4) + _pack(rng.choice((size - pos, 8, 0, -1)), 4)))  # fmt: skip


def dl_truncate(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    picked = _dl_entry(layout, rng)
    if picked is None or not layout.dledger_data:
        return None
    rel, pos, size, index = picked
    choice = rng.randrange(5)
    if choice == 0:
        at = pos
    elif choice == 1:
        at = pos + rng.randrange(1, 48)
    elif choice == 2:
        at = pos + rng.randrange(48, size)
    elif choice == 3:
        garbage = bytes(rng.getrandbits(8) for _ in range(rng.choice((1, 8, 48, 4096))))
        return _c(DLEDGER_KIND, "dl_truncate", f"{rel} grown by garbage", Op("append", rel, data=garbage))
    else:
        at = 0
    return _c(
        DLEDGER_KIND,
        "dl_truncate",
        f"{rel} cut at {at} (entry {index} at {pos})",
        Op("truncate", rel, size=at),
    )


def dl_index(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    if not layout.dledger_index or not layout.dledger_entries:
        return None
    rel = layout.dledger_index[0][0]
    _file, _pos, _size, index = _dl_entry(layout, rng) or layout.dledger_entries[-1]
    at = index * 32
    choice = rng.randrange(6)
    if choice == 0:
        name, off, width = rng.choice((("magic", 0, 4), ("pos", 4, 8), ("size", 12, 4), ("index", 16, 8),
                                       ("term", 24, 8)))  # fmt: skip
        return _c(DLEDGER_KIND, "dl_index", f"{rel} unit {index} {name}",
                  Op("write", rel, at + off, interesting(rng, width, (index, 0))))  # fmt: skip
    if choice == 1:
        return _c(DLEDGER_KIND, "dl_index", f"{rel} units from {index} zeroed",
                  Op("write", rel, at, bytes(32 * rng.randint(1, 40))))  # fmt: skip
    if choice == 2:
        return _c(
            DLEDGER_KIND,
            "dl_index",
            f"{rel} cut at {at}",
            Op("truncate", rel, size=at + rng.choice((0, 7, 32))),
        )
    if choice == 3:
        return _c(DLEDGER_KIND, "dl_index", f"{rel} removed", Op("remove", rel))
    if choice == 4:
        garbage = bytes(rng.getrandbits(8) for _ in range(rng.choice((0, 31, 64, 4096))))
        return _c(DLEDGER_KIND, "dl_index", f"{rel} replaced by garbage", Op("replace", rel, data=garbage))
    garbage = bytes(rng.getrandbits(8) for _ in range(32))
    return _c(
        DLEDGER_KIND,
        "dl_index",
        f"{rel} a unit after the last entry",
        Op("write", rel, (index + 1) * 32, garbage),
    )


_NUMBERS = ("0", "-1", "-2", "1", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
            "99999999999999999999", "abc", "", " ", "1e3", "0x10", "+5", "\\u0031", "١٢", "5 ")  # fmt: skip


def _properties_text(rng: random.Random, keys: tuple[str, ...], near: int) -> bytes:
    lines = []
    for key in keys:
        if rng.random() < 0.15:
            continue
        value = rng.choice((*_NUMBERS, str(near), str(near - 1), str(near + 1)))
        sep = rng.choice(("=", ":", " ", "=", "="))
        lines.append(f"{key}{sep}{value}")
    if rng.random() < 0.2:
        lines.append(rng.choice(("#comment", "!x", "garbage", "=", "committedIndex")))
    rng.shuffle(lines)
    text = "\n".join(lines) + rng.choice(("\n", "", "\r\n"))
    return text.encode("utf-8")


def dl_checkpoint(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    if not layout.dledger_home:
        return None
    home = layout.dledger_home
    last = layout.dledger_entries[-1][3] if layout.dledger_entries else 0
    name = rng.choice(("checkpoint", "checkpoint", "currterm"))
    rel = f"{home}/{name}"
    choice = rng.randrange(4)
    if choice == 0:
        keys = ("committedIndex", "endIndex") if name == "checkpoint" else ("currTerm", "voteLeader")
        data = _properties_text(rng, keys, last if name == "checkpoint" else 0)
        return _c(DLEDGER_KIND, "dl_checkpoint", f"{rel} := {data[:60]!r}", Op("replace", rel, data=data))
    if choice == 1:
        return _c(DLEDGER_KIND, "dl_checkpoint", f"{rel} removed", Op("remove", rel))
    if choice == 2:
        data = bytes(rng.getrandbits(8) for _ in range(rng.choice((1, 16, 300))))
        return _c(DLEDGER_KIND, "dl_checkpoint", f"{rel} garbage", Op("replace", rel, data=data))
    return _c(DLEDGER_KIND, "dl_checkpoint", f"{rel} a directory", Op("mkdir", rel))


def dl_files(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    if not layout.dledger_data:
        return None
    home = layout.dledger_home
    rel, size = rng.choice(layout.dledger_data)
    name = Path(rel).name
    choice = rng.randrange(7)
    if choice == 0:
        return _c(DLEDGER_KIND, "dl_files", f"{rel} removed", Op("remove", rel))
    if choice == 1:
        target = f"{home}/data/{int(name) + rng.choice((1, size, 2 * size * 10)):020d}"
        return _c(DLEDGER_KIND, "dl_files", f"{rel} renamed to {target}", Op("rename", rel, target=target))
    if choice == 2:
        stray = f"{home}/data/{rng.choice(('x', '0000', name + '.bak'))}"
        return _c(
            DLEDGER_KIND,
            "dl_files",
            "a stray file in the data directory",
            Op("replace", stray, data=bytes(8)),
        )
    if choice == 3:
        last = max(int(Path(p).name) for p, _ in layout.dledger_data)
        return _c(DLEDGER_KIND, "dl_files", "an empty data file after the last",
                  Op("replace", f"{home}/data/{last + size:020d}", data=b""))  # fmt: skip
    if choice == 4:
        return _c(DLEDGER_KIND, "dl_files", f"{home}/data a file", Op("replace", f"{home}/data", data=b"x"))
    if choice == 5:
        return _c(DLEDGER_KIND, "dl_files", f"{rel} a directory", Op("mkdir", rel))
    return _c(DLEDGER_KIND, "dl_files", f"{home}/index removed", Op("remove", f"{home}/index"))


# trace: the trace topic's records -----------------------------------------------------------------------

TRACE_TOPIC = b"RMQ_SYS_TRACE_TOPIC"
COMPRESSED_FLAG = 0x1


def _trace_records(layout: StoreLayout) -> list[Record]:
    out = []
    for r in _messages(layout):
        at, n = r.fields["topic"]
        if _read(layout, r.file)[at : at + n] == TRACE_TOPIC:
            out.append(r)
    return out


def trace_bodies(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    import zlib

    from .trace_bodies import mutate

    records = _trace_records(layout)
    if not records:
        return None
    changes, what = [], []
    for r in rng.sample(records, min(len(records), rng.choice((1, 1, 2)))):
        stored = _field_bytes(layout, r, "body")
        at, _n = r.fields["sysFlag"]
        compressed = struct.unpack_from(">i", _read(layout, r.file), at)[0] & COMPRESSED_FLAG
        if compressed and rng.random() < 0.3:
            changes.append((r, stored[: rng.randrange(len(stored) + 1)] + b"\x00garbage", None))
            what.append("compressed body garbled")
            continue
        body = zlib.decompress(stored) if compressed else stored
        new = mutate(body, rng)
        changes.append((r, zlib.compress(new, 5) if compressed else new, None))
        what.append(f"body := {new[:40]!r}")
    return _c("trace", "bodies", "trace message " + "; ".join(what), *_rewrite_records(layout, changes))


def trace_keys(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    records = _trace_records(layout)
    if not records:
        return None
    r = rng.choice(records)
    props = _field_bytes(layout, r, "properties")
    keys = rng.choice((None, b"", b" ", b"x y", b"\xff", b" ".join([b"k"] * 500)))
    parts = [p for p in props.split(b"\x02") if p and not p.startswith(b"KEYS\x01")]
    if keys is not None:
        parts.insert(rng.randrange(len(parts) + 1), b"KEYS\x01" + keys)
    new = b"\x02".join(parts) + b"\x02"
    return _c(
        "trace", "keys", f"trace message KEYS := {keys!r:.40}", *_rewrite_records(layout, [(r, None, new)])
    )


# compaction ---------------------------------------------------------------------------------------

CMP_UNIT_FIELDS = (
    ("phyOffset", 0, 8), ("size", 8, 4), ("tagsCode", 12, 8), ("storeTime", 20, 8), ("msgBaseOffset", 28, 8),
    ("batchSize", 36, 2), ("compactedOffset", 38, 4), ("reserved", 42, 4),
)  # fmt: skip


def _cmp_focus(rel: str) -> str:
    """`<topic>/<queueId>` of a compaction file (the queue the commands look at)."""
    parts = Path(rel).parts
    return f"{parts[2]}/{parts[3]}" if len(parts) > 4 else ""


def cmp_record(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    """A compaction log record: a header field at an interesting value, or header bits flipped."""
    if not layout.compaction_records:
        return None
    rec = rng.choice(layout.compaction_records)
    if rng.random() < 0.3:
        start = rec.pos
        data = bitflip(_read(layout, rec.file)[start : start + 64], rng, rng.choice((1, 2, 5)))
        return _c(
            "compaction",
            "cmp_record",
            f"{rec.file} record @{rec.pos}: header bits flipped",
            Op("write", rec.file, offset=start, data=data),
            focus=_cmp_focus(rec.file),
        )
    name = rng.choice([n for n in rec.fields if n not in ("body", "topic", "properties")])
    pos, n = rec.fields[name]
    data = interesting(rng, n, (rec.total, rec.pos))
    return _c(
        "compaction",
        "cmp_record",
        f"{rec.file} record @{rec.pos}: {name} := {data.hex()}",
        Op("write", rec.file, offset=pos, data=data),
        focus=_cmp_focus(rec.file),
    )


def cmp_unit(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    """A compaction CQ unit: a field at an interesting value, zeroed, or its bits flipped."""
    if not layout.compaction_units:
        return None
    rel, pos = rng.choice(layout.compaction_units)
    choice = rng.randrange(5)
    if choice == 0:
        return _c(
            "compaction",
            "cmp_unit",
            f"{rel} unit @{pos} zeroed",
            Op("write", rel, offset=pos, data=bytes(46)),
            focus=_cmp_focus(rel),
        )
    if choice == 1:
        data = bitflip(_read(layout, rel)[pos : pos + 46], rng, rng.choice((1, 3)))
        return _c(
            "compaction",
            "cmp_unit",
            f"{rel} unit @{pos} bits flipped",
            Op("write", rel, offset=pos, data=data),
            focus=_cmp_focus(rel),
        )
    name, at, n = rng.choice(CMP_UNIT_FIELDS)
    data = interesting(rng, n)
    return _c(
        "compaction",
        "cmp_unit",
        f"{rel} unit @{pos}: {name} := {data.hex()}",
        Op("write", rel, offset=pos + at, data=data),
        focus=_cmp_focus(rel),
    )


def cmp_files(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    """Log and CQ files and directories: removed, truncated, grown, renamed, `.delete` copies, leftovers in
    `compacting/`, empty files, directories in their place, odd queue directories."""
    files = layout.compaction_log + layout.compaction_cq
    if not files:
        return None
    rel, size = rng.choice(files)
    parent = str(Path(rel).parent)
    focus = _cmp_focus(rel)
    choice = rng.randrange(11)
    if choice == 0:
        return _c("compaction", "cmp_files", f"{rel} removed", Op("remove", rel), focus=focus)
    if choice == 1:
        cut = rng.choice((0, 1, 45, 46, size // 2, size - 1))
        return _c(
            "compaction", "cmp_files", f"{rel} cut to {cut}", Op("truncate", rel, size=cut), focus=focus
        )
    if choice == 2:
        return _c(
            "compaction",
            "cmp_files",
            f"{rel} grown",
            Op("append", rel, data=bytes(rng.choice((1, 46, 4096)))),
            focus=focus,
        )
    if choice == 3:
        return _c(
            "compaction",
            "cmp_files",
            f"{rel} renamed to .delete",
            Op("rename", rel, target=rel + ".delete"),
            focus=focus,
        )
    if choice == 4:
        return _c(
            "compaction",
            "cmp_files",
            f"a .delete copy of {rel}",
            Op("replace", rel + ".delete", data=_read(layout, rel)),
            focus=focus,
        )
    if choice == 5:
        return _c(
            "compaction",
            "cmp_files",
            f"{rel} copied into compacting/",
            Op("replace", f"{parent}/compacting/{Path(rel).name}", data=_read(layout, rel)),
            focus=focus,
        )
    if choice == 6:
        return _c("compaction", "cmp_files", f"{rel} a directory", Op("mkdir", rel), focus=focus)
    if choice == 7:
        name = f"{int(Path(rel).name) + rng.choice((1, size, 46)):020d}"
        return _c(
            "compaction",
            "cmp_files",
            f"{rel} renamed to {name}",
            Op("rename", rel, target=f"{parent}/{name}"),
            focus=focus,
        )
    if choice == 8:
        odd = rng.choice(("x", "-1", "2147483648", "01", "+1", " 1"))
        top = "compaction/" + rng.choice(("compactionLog", "compactionCq"))
        return _c(
            "compaction",
            "cmp_files",
            f"a queue directory named {odd!r}",
            Op("replace", f"{top}/CompactTopicA/{odd}/00000000000000000000", data=bytes(46)),
        )
    if choice == 9:
        return _c("compaction", "cmp_files", f"{parent} removed", Op("remove", parent), focus=focus)
    return _c("compaction", "cmp_files", f"{rel} emptied", Op("replace", rel, data=b""), focus=focus)


def cmp_checkpoint(layout: StoreLayout, rng: random.Random) -> Corruption | None:
    """compaction/position-checkpoint (and its .bak): syntax, types, numbers past a long, removed."""
    if not layout.compaction_log:
        return None
    rel = rng.choice(
        (
            "compaction/position-checkpoint",
            "compaction/position-checkpoint",
            "compaction/position-checkpoint.bak",
        )
    )
    value = rng.choice(
        (
            "-1",
            "0",
            "41",
            "9223372036854775807",
            "9223372036854775808",
            '"x"',
            "null",
            "[]",
            "{}",
            "1.5",
            "true",
            "1e3",
        )
    )
    choice = rng.randrange(5)
    if choice == 0:
        data = f'{{"queueOffsetMap":{{"CompactTopicA_0":{value},"CompactTopicB_0":22}}}}'.encode()
    elif choice == 1:
        data = rng.choice((b"", b"{", b"[1]", b"null", b'{"queueOffsetMap":7}', b"\xff\xfe", b"{" * 5000))
    elif choice == 2:
        return _c("compaction", "cmp_checkpoint", f"{rel} removed", Op("remove", rel))
    elif choice == 3:
        return _c("compaction", "cmp_checkpoint", f"{rel} a directory", Op("mkdir", rel))
    else:
        data = bytes(rng.getrandbits(8) for _ in range(rng.choice((1, 64, 600))))
    return _c("compaction", "cmp_checkpoint", f"{rel} := {data[:60]!r}", Op("replace", rel, data=data))


STRATEGIES: dict[str, tuple[Strategy, ...]] = {
    "commitlog": (
        cl_truncate_boundary,
        cl_truncate_anywhere,
        cl_field_value,
        cl_bitflip_header,
        cl_body,
        cl_properties,
        cl_range,
        cl_blank,
        cl_files,
    ),
    "consumequeue": (cq_phy_offset, cq_size, cq_tags_code, cq_unit_bytes, cq_truncate, cq_files),
    "index": (ix_header, ix_slot, ix_entry, ix_cycle, ix_truncate, ix_files),
    "checkpoint": (cp_field, cp_garbage, cp_size),
    "timerlog": (tm_log_field, tm_log_bytes, tm_log_chain, tm_log_target, tm_log_files),
    "timerwheel": (tm_wheel_slot, tm_wheel_chain, tm_wheel_misplaced, tm_wheel_size),
    "timercheck": (tm_check, tm_check_read_time, tm_check_queue),
    "pop": (pop_bodies, pop_tags, pop_revive_offset),
    "dledger": (
        dl_header_field,
        dl_header_bitflip,
        dl_message,
        dl_pad,
        dl_truncate,
        dl_index,
        dl_checkpoint,
        dl_files,
    ),  # fmt: skip
    "trace": (trace_bodies, trace_keys),
    "compaction": (cmp_record, cmp_unit, cmp_files, cmp_checkpoint),
    "config": (cfg_syntax, cfg_wrong_type, cfg_key, cfg_huge_number, cfg_missing_table, cfg_whole),
    "layout": (
        lay_empty_file,
        lay_dir_for_file,
        lay_file_for_dir,
        lay_missing,
        lay_permission,
        lay_symlink,
        lay_lock_abort,
        lay_stray,
        lay_fifo,
    ),
    "rocksdb": (
        rdb_current,
        rdb_sst_truncate,
        rdb_sst_bytes,
        rdb_sst_missing,
        rdb_manifest,
        rdb_wal,
        rdb_other_database,
    ),
}


from .hostile import HOSTILE_STRATEGIES  # noqa: E402 - its strategies build on this module's pieces

STRATEGIES.update(HOSTILE_STRATEGIES)


def strategy_names(kind: str) -> list[str]:
    return [s.__name__ for s in STRATEGIES[kind]]


class NoCorruption(ValueError):
    """No strategy of a kind applies to a store (it lacks every file the kind corrupts)."""


def generate(kind: str, layout: StoreLayout, rng: random.Random, strategy: int | None = None) -> Corruption:
    """One corruption of file type `kind` (a given strategy by index, else a random one)."""
    strategies = STRATEGIES[kind]
    for attempt in range(50):
        chosen = (
            strategies[strategy % len(strategies)]
            if strategy is not None and attempt < 10
            else rng.choice(strategies)
        )
        result = chosen(layout, rng)
        if result is not None and result.ops:
            return result
    raise NoCorruption(f"no {kind} corruption applies to {layout.root}")


# broker.conf (not a store file: read with --broker-config) ----------------------------------------------

# Written into the copy's root; the commands get --broker-config <store>/broker.conf.
BROKER_CONF = "broker.conf"
# Per key mqtool reads: (values the broker's parser takes - small, odd, at the limits; values it does not).
BROKER_CONF_VALUES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "mappedFileSizeCommitLog": (
        ("1", "7", "4096", "16384", "65536", "2147483647", "+16384", " 16384 ", "0016384"),
        ("0", "-1", "2147483648", "99999999999999999999", "16k", "1e3", "0x10", "", "1_0", "16384\\"),
    ),
    "mappedFileSizeConsumeQueue": (
        ("20", "40", "120", "200", "7", "21", "2147483640"),  # the broker rounds up to whole 20-byte units
        ("0", "-20", "abc", "", "2147483647"),  # ... which is then past a Java int
    ),
    "maxHashSlotNum": (("1", "8", "16", "1000", "65536"), ("0", "-1", "2147483647", "4294967296", "TRUE")),
    "maxIndexNum": (("1", "2", "30", "40", "65536"), ("0", "-1", "536870912", "\u0663\u0660x")),
    "messageDelayLevel": (
        (
            "1s",
            "1s 5s",
            "0s 0s 0s",
            "",
            "1d 2d 3d",
            "106751991167d 1s",
            "1s  5m",
            "1s\t5m 2h",
            "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h 3h 4h",
            "\u0663s 1m",
        ),
        ("1s 2x", "106751991168d", "99999999999999999999d", "\u00b2s", "1S", "s", "-1s", "\x00", "1s,5s"),
    ),
    "transactionCheckMax": (("0", "-1", "1", "15", "2147483647"), ("abc", "1.5", "2147483648")),
    "enabledAppendPropCRC": (("true", "TRUE", "false", "1", ""), ()),
    "storePathRootDir": (("", "/nonexistent", "relative/dir", "\x00", "x" * 300), ()),
}
BROKER_CONF_EXTRA = (b"", b"# comment", b"! comment", b"garbage line", b"=value without key", b"key=a=b",
                     b"\xff\xfe\x00bad utf-8", b"brokerName = broker-a", b"maxIndexNum")  # fmt: skip


def broker_conf(rng: random.Random) -> Corruption:
    """A broker.conf of 1-3 keys mqtool reads (mostly values the broker takes, sometimes not), with odd
    lines, separators, line ends and a BOM, as a `Corruption` that writes it into the store copy."""
    lines = []
    for key in rng.sample(sorted(BROKER_CONF_VALUES), rng.randint(1, 3)):
        good, bad = BROKER_CONF_VALUES[key]
        value = rng.choice(bad if bad and rng.random() < 0.2 else good)
        sep = rng.choice(("=", "=", ": ", " = ", "\t"))
        lines.append(f"{key}{sep}{value}".encode("utf-8", "surrogatepass"))
    lines.insert(rng.randint(0, len(lines)), rng.choice(BROKER_CONF_EXTRA))
    data = rng.choice((b"\n", b"\r\n", b"\r")).join(lines)
    if rng.random() < 0.1:
        data = b"\xef\xbb\xbf" + data  # a BOM: the first key is then not the key
    return Corruption(
        "broker_conf", "garbage", f"broker.conf {data!r}", (Op("replace", BROKER_CONF, data=data),)
    )
