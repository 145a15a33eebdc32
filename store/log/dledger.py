"""DLedger's commitlog (a broker with `enableDLegerCommitLog=true`): its files, its recovery, and the
`CommitLog` reads over it.

* `DLedgerPaths` finds the files: `dledger-<selfId>/` in the store root (`DLedgerConfig.getDefaultPath`),
  its `data/` unless broker.conf's `storePathDLedgerCommitLog` names others (several, split by `,`: DLedger's
  `MultiPathMmapFileList`, with `readOnlyCommitLogStorePaths`), `index/`, `checkpoint`, `currterm`.
* `DLedgerLog` is DLedger's `DLedgerMmapFileStore` read-only: the data and index files (`MmapFileList`:
  every file of every data directory, sorted by name), what makes its load stop the broker, and
  `recovery` - what `DLedgerMmapFileStore.recover` would do (D:DMFS:138-326): the start file, the entry
  walk, where the index units stop agreeing (DLedger rewrites them from there), the end it truncates the
  data to, the files it deletes, the committed index and position from `checkpoint`.
* `DLedgerCommitLog` answers `store.log.commitlog.CommitLog`'s reads as RocketMQ's `DLedgerCommitLog` does:
  a message's physical offset is its entry's pos + 48; in a store switched to DLedger the classic files
  below `dividedCommitlogOffset` (the first data file's offset) are read as a classic commitlog.

File:line references (D: dledger-all-0.3.1.2, R5: rocketmq-all-5.3.3 store/) and the facts the fixtures show:
tests/oracle/DLEDGER.md. Read-only.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np

from formats.dledger import (
    BODY_OFFSET,
    CHECKPOINT_FILE,
    CURRTERM_FILE,
    ENTRY_HEADER,
    ENTRY_PAD,
    ENTRY_REASONS,
    HEADER_SIZE,
    INDEX_FILE_SIZE,
    INDEX_UNIT_SIZE,
    MAGIC_1,
    PAD_MAGIC,
    EntryHeader,
    IndexUnit,
    LedgerCheckpoint,
    entry_header_at,
    index_unit_dtype,
    parse_checkpoint,
    parse_currterm,
)
from formats.errors import FormatError, MqtoolError
from formats.message.commitlog import (
    HEAD_MAX_SIZE,
    BadRecord,
    Blank,
    Corrupt,
    EndOfData,
    Message,
    Record,
    decode_head,
    decode_record,
)
from formats.message.recordcheck import check_record, store_timestamp_at
from store.config.brokerconf import BrokerConfig
from store.io.filereads import StoreFileError, read_file
from store.log.commitlog import CommitLog, OffsetError, RecordHead, WalkEnd
from store.log.mappedfile import MappedFile, MappedFileQueue, is_offset_file_name

DLEDGER_DIR_PREFIX = "dledger-"
MULTI_PATH_SPLITTER = ","  # MessageStoreConfig.MULTI_PATH_SPLITTER, DLedger's splitter (R5:DLC:64-66)


class DLedgerError(MqtoolError):
    """A DLedger store mqtool cannot read as its broker would (ambiguous or missing files)."""


# --- where the files are -------------------------------------------------------------------------


@dataclass(frozen=True)
class DLedgerPaths:
    """Where a DLedger broker keeps its files (`DLedgerConfig`, as `DLedgerCommitLog` configures it)."""

    self_id: str
    home: Path  # ${storePathRootDir}/dledger-<selfId>
    data_dirs: tuple[Path, ...]
    read_only_dirs: tuple[Path, ...] = ()
    configured: bool = False  # storePathDLedgerCommitLog set in broker.conf

    @property
    def index_dir(self) -> Path:
        return self.home / "index"

    @property
    def checkpoint(self) -> Path:
        return self.home / CHECKPOINT_FILE

    @property
    def currterm(self) -> Path:
        return self.home / CURRTERM_FILE

    @property
    def multi_path(self) -> bool:
        return len(self.data_dirs) > 1 or bool(self.read_only_dirs)

    @classmethod
    def find(cls, root: Path, cfg: BrokerConfig) -> DLedgerPaths | None:
        """The DLedger files of the store at `root`: the `dledger-<dLegerSelfId>` directory broker.conf names,
        else the one `dledger-*` directory there; None when the store has none and broker.conf does not turn
        DLedger on. Relative data directories are taken relative to the store root."""
        homes = sorted(p.name for p in _entries(root) if p.name.startswith(DLEDGER_DIR_PREFIX) and p.is_dir())
        self_id = cfg.dLegerSelfId if "dLegerSelfId" in cfg.explicit and cfg.dLegerSelfId else None
        enabled = "enableDLegerCommitLog" in cfg.explicit and cfg.enableDLegerCommitLog
        if self_id is None:
            if not homes:
                if not enabled:
                    return None
                self_id = BrokerConfig.dLegerSelfId or "n0"  # MessageStoreConfig's default
            elif len(homes) > 1:
                raise DLedgerError(
                    f"several DLedger directories ({', '.join(homes)}): give the broker's broker.conf "
                    "(--broker-config, dLegerSelfId) to say which one is this broker's",
                    str(root),
                )
            else:
                self_id = homes[0][len(DLEDGER_DIR_PREFIX) :]
        home = root / f"{DLEDGER_DIR_PREFIX}{self_id}"
        data_path = cfg.storePathDLedgerCommitLog if "storePathDLedgerCommitLog" in cfg.explicit else None
        if not data_path:
            return cls(self_id, home, (home / "data",))
        data_path = data_path.strip()
        if MULTI_PATH_SPLITTER not in data_path:
            return cls(self_id, home, (_under(root, data_path),), configured=True)
        # MultiPathMmapFileList: a set of the split paths (and the read-only ones), every file of each
        dirs = sorted({p for p in data_path.split(MULTI_PATH_SPLITTER)})
        ro = cfg.readOnlyCommitLogStorePaths if "readOnlyCommitLogStorePaths" in cfg.explicit else None
        read_only = sorted({p for p in (ro or "").strip().split(MULTI_PATH_SPLITTER) if p})
        return cls(
            self_id,
            home,
            tuple(_under(root, p) for p in dirs),
            tuple(_under(root, p) for p in read_only if p not in dirs),
            configured=True,
        )


def _under(root: Path, path: str) -> Path:
    p = Path(path)
    return p if p.is_absolute() else root / p


def _entries(directory: Path) -> list[Path]:
    try:
        return [Path(e.path) for e in os.scandir(directory)]
    except OSError:
        return []


def _list_files(directories: tuple[Path, ...], what: str) -> list[MappedFile]:
    """Every file of the directories, sorted by name (`MmapFileList.doLoad`); a directory the broker
    cannot list adds nothing (`File.listFiles()` is null)."""
    files = []
    for directory in directories:
        if not directory.is_dir():
            continue
        try:
            entries = list(os.scandir(directory))
        except OSError as exc:
            raise StoreFileError(f"cannot list {what}: {exc.strerror}", str(directory)) from exc
        for entry in entries:
            try:
                size = entry.stat().st_size
            except OSError as exc:
                raise StoreFileError(f"cannot stat: {exc.strerror}", entry.path) from exc
            start = int(entry.name) if is_offset_file_name(entry.name) else -1
            files.append(MappedFile(Path(entry.path), start, size))
    files.sort(key=lambda f: f.path.name)
    return files


# --- DLedger's file store --------------------------------------------------------------------------


@dataclass
class FileWalk:
    """DLedger's entry walk of one data file from position 0 (or from a kept entry), headers only: the
    kept entries (absolute pos, size, index, term, magic) and where and why it stopped."""

    file: MappedFile
    pos: np.ndarray
    size: np.ndarray
    index: np.ndarray
    term: np.ndarray
    magic: np.ndarray
    reason: str  # a key of formats.dledger.ENTRY_REASONS
    stop: int  # position in the file
    stop_size: int  # the stop's size field (a pad's remaining bytes)

    def __len__(self) -> int:
        return len(self.pos)

    @property
    def end(self) -> int:
        """Absolute offset where the walk of this file ended (a pad: its position)."""
        return self.file.start_offset + self.stop


@dataclass
class DLedgerRecovery:
    """What `DLedgerMmapFileStore.recover` does to the files (D:DMFS:138-326)."""

    start_file: int | None  # index of the data file the walk starts from (None: no data files)
    end: int  # processOffset: the data is truncated here
    stop_file: int | None  # the data file where the walk ended
    stop_position: int  # position in it
    reason: str  # why it ended: a key of ENTRY_REASONS, or "last_pad" (a pad in the last file)
    entries: int  # entries the walk kept
    first_index: int  # the first walked entry's index (-1: none)
    last_index: int  # ledgerEndIndex (-1: none)
    last_term: int  # ledgerEndTerm
    last_end: int  # end of the last kept entry (-1: none)
    begin_index: int  # ledgerBeginIndex: the first data file's first entry's index field
    index_rewrite_from: int | None  # the first entry whose index unit is missing or wrong: rewritten
    index_units_on_disk: int  # units the index files hold below the first zero unit of the walk
    files_deleted: list[str] = field(default_factory=list)  # data files wholly after the end
    index_files_deleted: list[str] = field(default_factory=list)
    exits: str | None = None  # why the broker does not start (System.exit, a failed load), if so
    committed_index: int = -1  # after recovery (checkpoint's committedIndex, clamped)
    committed_pos: int = -1


class DLedgerLog:
    """DLedger's data and index files of one store, read-only (`DLedgerMmapFileStore`)."""

    def __init__(self, paths: DLedgerPaths, file_size: int | None = None) -> None:
        self.paths = paths
        self.files = _list_files(paths.data_dirs + paths.read_only_dirs, "DLedger data files")
        self.index_files = _list_files((paths.index_dir,), "DLedger index files")
        sizes = [f.size for f in self.files]
        self.file_size = file_size or (max(set(sizes), key=sizes.count) if sizes else None)
        self._walks: dict[tuple[int, int, int, int], FileWalk] = {}

    def close(self) -> None:
        for f in self.files + self.index_files:
            f.close()

    # --- load --------------------------------------------------------------------------------------

    def load_problems(self) -> list[tuple[str, int | None, str]]:
        """(file, offset, why) of what stops the broker at load: `MmapFileList.doLoad` (a file of another
        size, or not named by an offset: System.exit), `checkSelf` (adjacent files one file size apart: the
        load fails), the index files likewise (D:MFL:54-72,291-300, D:DMFS:128-143)."""
        out: list[tuple[str, int | None, str]] = []
        for files, size, what in (
            (self.files, self.file_size, "data"),
            (self.index_files, INDEX_FILE_SIZE, "index"),
        ):
            for f in files:
                if f.start_offset < 0:
                    why = f"a {what} file not named by its offset: DLedger's load fails"
                    out.append((str(f.path), None, why))
                elif f.size != size:
                    why = f"{what} file size {f.size} is not the configured {size}"
                    out.append((str(f.path), None, why + ": DLedger's load exits the broker (System.exit)"))
            named = [f for f in files if f.start_offset >= 0]
            for prev, cur in zip(named, named[1:], strict=False):
                gap = cur.start_offset - prev.start_offset
                if size and gap != size:
                    why = f"{what} file starts {gap} bytes after the previous one, not {size}"
                    out.append((str(cur.path), None, why + ": DLedger's checkSelf fails: no load"))
        return out

    @property
    def data_files(self) -> list[MappedFile]:
        """The data files the log is read from (named by their offsets)."""
        return [f for f in self.files if f.start_offset >= 0]

    # --- reads --------------------------------------------------------------------------------------

    def walk(self, f: MappedFile, start: int = 0, prev_index: int = -1, prev_term: int = -1) -> FileWalk:
        """DLedger's entry walk of data file `f` from the entry boundary `start` (compiled; cached)."""
        key = (f.start_offset, start, prev_index, prev_term)
        if key not in self._walks:
            from formats.columnar.entries import entry_chain

            chain = entry_chain(f.buffer(), f.start_offset, start, prev_index, prev_term)
            self._walks[key] = FileWalk(
                f, chain.pos, chain.size, chain.index, chain.term, chain.magic, chain.reason, chain.stop,
                chain.stop_size,
            )  # fmt: skip
        return self._walks[key]

    def index_units_at(self, indexes: np.ndarray) -> np.ndarray:
        """The index units of the given entry indexes (any order, any values) as a structured array (magic,
        pos, size, index, term), all -1 where no index file holds the unit."""
        indexes = np.asarray(indexes, dtype=np.int64)
        dtype = index_unit_dtype()
        out = np.full(len(indexes), -1, dtype=[(n, "<i8") for n in dtype.names])
        for f in self.index_files:
            if f.start_offset < 0 or f.start_offset % INDEX_UNIT_SIZE or f.size < INDEX_UNIT_SIZE:
                continue
            first = f.start_offset // INDEX_UNIT_SIZE
            inside = (indexes >= first) & (indexes < first + f.size // INDEX_UNIT_SIZE)
            if not inside.any():
                continue
            units = np.frombuffer(f.buffer(), dtype=dtype, count=f.size // INDEX_UNIT_SIZE)
            picked = units[indexes[inside] - first]
            for name in dtype.names:
                out[name][inside] = picked[name]
        return out

    def index_unit(self, index: int) -> IndexUnit | None:
        unit = self.index_units_at(np.array([index]))[0]
        if unit["pos"] == -1 and unit["magic"] == -1:
            return None
        return IndexUnit(*(int(unit[n]) for n in ("magic", "pos", "size", "index", "term")))

    def checkpoint(self) -> LedgerCheckpoint | None:
        """DLedger's checkpoint as `loadCheckPoint` reads it (None when absent); FormatError where recovery
        would throw."""
        text = _read_text(self.paths.checkpoint)
        return None if text is None else parse_checkpoint(text, str(self.paths.checkpoint))

    def currterm(self) -> tuple[int | None, str | None]:
        text = _read_text(self.paths.currterm)
        return (None, None) if text is None else parse_currterm(text)

    # --- recovery ------------------------------------------------------------------------------------

    @cached_property
    def recovery(self) -> DLedgerRecovery:
        """What DLedger's recover would do (see `DLedgerRecovery`)."""
        files = self.data_files
        units_on_disk = self._units_on_disk()
        if not files:
            return DLedgerRecovery(None, 0, None, 0, "end", 0, -1, -1, -1, -1, -1, None, units_on_disk,
                                   index_files_deleted=[f.name for f in self.index_files])  # fmt: skip
        start = self._start_file(files)
        prev_index, prev_term = -1, -1
        first_index = -1
        rewrite: int | None = None
        kept = 0
        last_end = -1
        i = start
        while True:
            w = self.walk(files[i], 0, prev_index, prev_term)
            if len(w):
                if first_index == -1:
                    first_index = int(w.index[0])
                if rewrite is None:
                    rewrite = self._first_unit_mismatch(w)
                kept += len(w)
                prev_index, prev_term = int(w.index[-1]), int(w.term[-1])
                last_end = int(w.pos[-1] + w.size[-1])
            if w.reason == ENTRY_PAD:
                if i + 1 < len(files):
                    i += 1
                    continue
                end, reason = files[i].end_offset, "last_pad"
            else:
                end, reason = w.end, w.reason
            break
        last = files[-1]
        exits = None
        if self.file_size and last.start_offset - end > self.file_size:
            exits = (
                f"the data ends at {end}, more than a file before the last data file {last.name}: DLedger's "
                "recovery exits the broker (System.exit) rather than truncate that much"
            )
        begin = self._begin_index(files[0]) if prev_index != -1 else -1
        recovery = DLedgerRecovery(
            start, end, i, end - files[i].start_offset, reason, kept, first_index, prev_index, prev_term,
            last_end, begin, rewrite, units_on_disk,
            files_deleted=[f.name for f in files if f.start_offset > end],
            index_files_deleted=[f.name for f in self.index_files
                                 if f.start_offset > (prev_index + 1) * INDEX_UNIT_SIZE],
            exits=exits,
        )  # fmt: skip
        self._commit(recovery)
        return recovery

    def _units_on_disk(self) -> int:
        """Index units before the first all-zero unit (what the files hold written)."""
        total = 0
        for f in self.index_files:
            if f.start_offset < 0 or not f.size:
                continue
            from store.log.scan import data_extents

            extents = data_extents(f.path, 0, f.size)
            end = extents[-1][1] if extents else 0
            raw = np.frombuffer(f.read(0, end), dtype=np.uint8)
            whole = len(raw) // INDEX_UNIT_SIZE
            units = raw[: whole * INDEX_UNIT_SIZE].reshape(whole, INDEX_UNIT_SIZE)
            zero = np.flatnonzero(~units.any(axis=1))
            if len(zero):
                return total + int(zero[0])
            total += f.size // INDEX_UNIT_SIZE
        return total

    def _start_file(self, files: list[MappedFile]) -> int:
        """From the third-last data file backwards, the first whose first entry passes (D:DMFS:150-197);
        file 0 when none does."""
        i = max(len(files) - 3, 0)
        while i > 0:
            raw = files[i].read(0, BODY_OFFSET)
            if len(raw) == BODY_OFFSET:
                h = EntryHeader(*ENTRY_HEADER.unpack(raw))
                if (
                    h.magic != PAD_MAGIC
                    and h.magic >= MAGIC_1  # the upper bound is not checked here (`MAGIC_1 <= CURRENT_MAGIC`)
                    and h.size > HEADER_SIZE
                    and h.pos == files[i].start_offset
                    and h.body_size + BODY_OFFSET == h.size
                    and self._unit_agrees(h)
                ):
                    return i
            i -= 1
        return 0

    def _unit_agrees(self, header: EntryHeader) -> bool:
        if header.index < 0:
            return False
        unit = self.index_unit(header.index)
        return unit is not None and unit == header.unit()

    def _first_unit_mismatch(self, w: FileWalk) -> int | None:
        """The index of the first entry of `w` whose unit is missing or differs, None when all agree."""
        first = int(w.index[0])
        if (np.diff(w.index) != 1).any() or first < 0:
            return first  # DLedger compares unit by unit; consecutive indexes are checked by the walk
        units = self.index_units_at(w.index)
        bad = (
            (units["magic"] != w.magic)
            | (units["pos"] != w.pos)
            | (units["size"] != w.size)
            | (units["index"] != w.index)
            | (units["term"] != w.term)
        )
        hits = np.flatnonzero(bad)
        return None if not len(hits) else int(w.index[hits[0]])

    def _begin_index(self, first: MappedFile) -> int:
        """`reviseLedgerBeginIndex`: the index field of the first data file's first entry."""
        raw = first.read(8, 8)
        return int.from_bytes(raw, "big", signed=True) if len(raw) == 8 else -1

    def _commit(self, r: DLedgerRecovery) -> None:
        """`updateCommittedIndex` from the checkpoint (D:DMFS:314-325,589-610): -1, or below the begin
        index, is ignored; past the end it is clamped; committedPos from the entry's index unit."""
        try:
            cp = self.checkpoint()
        except FormatError as exc:
            r.exits = r.exits or exc.message
            return
        if cp is None or cp.committed_index is None or r.last_index == -1:
            return
        value = cp.committed_index
        if value == -1 or value < r.begin_index:
            return
        value = min(value, r.last_index)
        if r.index_rewrite_from is not None and value >= r.index_rewrite_from:
            walked = self._walked_entry(r, value)
            if walked is None:
                return
            pos, size = walked
        else:
            unit = self.index_unit(value)
            if unit is None:
                return
            pos, size = unit.pos, unit.size
        r.committed_index, r.committed_pos = value, pos + size

    def _walked_entry(self, r: DLedgerRecovery, index: int) -> tuple[int, int] | None:
        for key, w in self._walks.items():
            if len(w) and w.index[0] <= index <= w.index[-1] and key[1] == 0:
                k = int(np.searchsorted(w.index, index))
                if k < len(w) and w.index[k] == index:
                    return int(w.pos[k]), int(w.size[k])
        return None


# DLedger's checkpoint and currterm are a few properties lines; a larger file is not one
PROPERTIES_MAX_READ = 1 << 20


def _read_text(path: Path) -> str | None:
    """A properties file as DLedger's `IOUtils.file2String` reads it (None when it does not exist), through
    the store's one reader (`store.io.filereads`): a FIFO or a huge file there is refused, naming it."""
    try:
        return read_file(path, PROPERTIES_MAX_READ, "DLedger properties file").decode("utf-8", "replace")
    except FileNotFoundError:
        return None


# --- RocketMQ's DLedgerCommitLog ----------------------------------------------------------------------


class DLedgerCommitLog(CommitLog):
    """The commitlog of a DLedger broker as RocketMQ's `DLedgerCommitLog` reads it: the classic files below
    `dividedCommitlogOffset` (a store switched to DLedger), then DLedger's entries, each message at its
    entry's pos + 48. The same reads as `CommitLog`."""

    def __init__(self, root: Path, paths: DLedgerPaths, *, file_size: int | None = None) -> None:
        self.log = DLedgerLog(paths, file_size)
        classic = MappedFileQueue.open(Path(root) / "commitlog")
        data = self.log.data_files
        divided = data[0].start_offset if data else None
        # classic files the broker reads: those below the divided offset (all of them before the first
        # DLedger data file is made)
        below = [f for f in classic.files if divided is None or f.start_offset < divided]
        self.classic = CommitLog(classic.directory, MappedFileQueue(classic.directory, below))
        super().__init__(
            paths.data_dirs[0], MappedFileQueue(paths.data_dirs[0], [*self.classic.files, *data])
        )
        self.paths = paths

    def close(self) -> None:
        self.log.close()
        self.classic.close()

    # --- files and offsets ----------------------------------------------------------------------

    @property
    def divided_offset(self) -> int:
        """`dividedCommitlogOffset`: the first data file's offset (R5:DLC:295), or when there is none yet the
        end of the last classic file (`setRecoverPosition`, R5:DLC:397-427); -1 with neither."""
        data = self.log.data_files
        if data:
            return data[0].start_offset
        files = self.classic.files
        return files[-1].end_offset if files else -1

    def is_dledger_offset(self, offset: int) -> bool:
        data = self.log.data_files
        return bool(data) and offset >= data[0].start_offset

    @property
    def files(self) -> list[MappedFile]:
        return list(self.queue.files)

    @property
    def file_size(self) -> int | None:
        return self.log.file_size or self.classic.file_size

    @property
    def min_offset(self) -> int:
        """`DLedgerCommitLog.getMinOffset` (R5:DLC:161-172): the classic files' when there are any, else the
        first data file's."""
        if self.classic.files:
            return self.classic.min_offset
        data = self.log.data_files
        return data[0].start_offset if data else 0

    @cached_property
    def max_offset(self) -> int:
        """Where the messages end once the broker serves what its recovery kept: the end of the last kept
        entry (a leader commits its ledger end, R5 DLedgerRoleChangeHandler:74-92); without entries the
        first data file's offset (`getMaxOffset`), or the classic end before the first DLedger start."""
        r = self.log.recovery
        if r.last_end >= 0:
            return r.last_end
        data = self.log.data_files
        if data:
            return data[0].start_offset
        return self.classic.max_offset

    @property
    def recovery_start_offset(self) -> int | None:
        r = self.log.recovery
        if r.start_file is None:
            return self.classic.recovery_start_offset
        return self.log.data_files[r.start_file].start_offset

    # --- walking ------------------------------------------------------------------------------------

    def _check_boundary(self, f: MappedFile, pos: int, check_crc: bool) -> None:
        if not self.is_dledger_offset(f.start_offset):
            self.classic._check_boundary(f, pos, check_crc)
            return
        entry = pos - BODY_OFFSET
        header = entry_header_at(f.read(entry, BODY_OFFSET), f.start_offset + entry) if entry >= 0 else None
        if header is None:
            raise OffsetError(
                f"physical offset {f.start_offset + pos} is not the message of a DLedger entry (a message "
                "starts 48 bytes into its entry, whose header names its own position)",
                str(f.path),
                pos,
            )
        if f.start_offset + entry >= self.log.recovery.end:
            raise OffsetError(
                f"physical offset {f.start_offset + pos} lies after the end of the DLedger entries "
                f"({self.log.recovery.end})",
                str(f.path),
                pos,
            )

    def _dledger_walk(self, f: MappedFile) -> FileWalk:
        """The entry walk of data file `f` from its start, with the index and term of the file before it
        (DLedger checks them across files)."""
        data = self.log.data_files
        k = data.index(f)
        prev_index, prev_term = -1, -1
        for g in data[:k]:
            w = self.log.walk(g, 0, prev_index, prev_term)
            if len(w):
                prev_index, prev_term = int(w.index[-1]), int(w.term[-1])
        return self.log.walk(f, 0, prev_index, prev_term)

    def iter_records(
        self, from_offset: int | None = None, check_crc: bool = True, accept_v2: bool = True
    ) -> Iterator[Record]:
        """Records from `from_offset` (default: the first file) in physical order: the classic part as
        `CommitLog.iter_records` walks it (its last BLANK hands over to the DLedger files), then per kept
        entry its message (a `Corrupt` with the check's reason where the broker's check rejects it: DLedger
        keeps the entry and the walk goes on), a Blank per pad; the last item is where DLedger's walk ends."""
        data = self.log.data_files
        if from_offset is None or not self.is_dledger_offset(from_offset):
            if self.classic.files:
                for record in self.classic.iter_records(from_offset, check_crc, accept_v2):
                    if isinstance(record, EndOfData) and data and "BLANK" in record.reason:
                        break  # the classic log's last BLANK: the DLedger files follow
                    yield record
                    if isinstance(record, (BadRecord, EndOfData)) and not data:
                        return
                    # (the dispatch skips the rest of a classic file it cannot read: the DLedger files follow)
            from_offset = None
        if not data:
            if not self.classic.files:
                yield EndOfData(0, "the commitlog has no files")
            return
        if from_offset is None:
            first, skip_to = 0, None
        else:
            f = self.queue.find(from_offset)
            if f is None or f not in data:
                self._file_for(from_offset)  # raises
                raise OffsetError(f"physical offset {from_offset} is outside the DLedger data files")
            self._check_boundary(f, from_offset - f.start_offset, check_crc)
            first, skip_to = data.index(f), from_offset - BODY_OFFSET
        for f in data[first:]:
            w = self._dledger_walk(f)
            buf = f.buffer()
            path = str(f.path)
            for pos in w.pos.tolist():
                if skip_to is not None and pos < skip_to:
                    continue
                rel = pos - f.start_offset + BODY_OFFSET
                record = decode_record(
                    buf, rel, f.start_offset, check_crc=check_crc, accept_v2=accept_v2, file=path
                )
                if not isinstance(record, Message):
                    record = _kept(record, pos + BODY_OFFSET)
                yield record
            skip_to = None
            if w.reason == ENTRY_PAD:
                yield Blank(w.end, w.stop_size)
                continue
            yield EndOfData(w.end, f"DLedger's walk ends here: {ENTRY_REASONS.get(w.reason, w.reason)}")
            return
        yield EndOfData(data[-1].end_offset, "the last DLedger data file ends with a pad and no file follows")

    # `jobs` is taken as CommitLog takes it; DLedger's walk runs in one process (each entry's checks need
    # the previous entry's index and term)
    def stop_record(
        self, from_offset: int | None = None, check_crc: bool = True, *, jobs: int = 1
    ) -> EndOfData | BadRecord:
        """Where DLedger's recovery ends the data, and why (`from_offset` is ignored: DLedger's recovery
        decides; the classic part ends at the divided offset)."""
        data = self.log.data_files
        if not data:
            return self.classic.stop_record(from_offset, check_crc, jobs=jobs)
        r = self.log.recovery
        why = "the last data file ends with a pad" if r.reason == "last_pad" else ENTRY_REASONS[r.reason]
        return EndOfData(r.end, f"DLedger's recovery ends the data here: {why}")

    def walk_end(
        self,
        from_offset: int | None = None,
        *,
        check_crc: bool = False,
        accept_v2: bool = True,
        jobs: int = 1,
    ) -> WalkEnd:
        data = self.log.data_files
        if not data:
            return self.classic.walk_end(from_offset, check_crc=check_crc, accept_v2=accept_v2, jobs=jobs)
        r = self.log.recovery
        return WalkEnd(r.end, r.reason, self.last_record(), data[r.stop_file or 0], r.stop_position)

    def valid_end(self, from_offset: int | None = None, check_crc: bool = True) -> int:
        return self.stop_record(from_offset, check_crc).physical_offset

    # --- random access ------------------------------------------------------------------------------

    def read_message_at(self, phy_offset: int, size: int | None = None, check_crc: bool = True) -> Message:
        _, f = self._file_for(phy_offset)
        if self.is_dledger_offset(f.start_offset):
            self._check_boundary(f, phy_offset - f.start_offset, False)
        return super().read_message_at(phy_offset, size, check_crc)

    def pickup_store_timestamp(self, offset: int, size: int) -> int:
        if not (offset >= self.min_offset and offset + size <= self.max_offset):
            return -1
        _, f = self._file_for(offset)
        head = decode_head(f.read(offset - f.start_offset, HEAD_MAX_SIZE))
        return -1 if head is None else head["storeTimestamp"]

    def store_time_at(self, phy_offset: int, size: int | None = None) -> int | None:
        f = self.queue.find(phy_offset)
        if f is None or phy_offset < self.min_offset:
            return None
        if self.is_dledger_offset(f.start_offset):
            entry = phy_offset - BODY_OFFSET - f.start_offset
            if entry < 0 or entry_header_at(f.read(entry, BODY_OFFSET), f.start_offset + entry) is None:
                return None
        head = f.read(phy_offset - f.start_offset, 76)
        return store_timestamp_at(head, len(head), 0, size)

    def first_record(self) -> RecordHead | None:
        if self.classic.files:
            return self.classic.first_record()
        data = self.log.data_files
        for f in data:
            w = self._dledger_walk(f)
            if len(w):
                return self._head(f, int(w.pos[0]))
            if w.reason != ENTRY_PAD:
                return None
        return None

    def last_record(self, *, jobs: int = 1) -> RecordHead | None:
        r = self.log.recovery
        if r.last_end < 0:
            return self.classic.last_record(jobs=jobs)
        data = self.log.data_files
        for f in reversed(data[: (r.stop_file or 0) + 1]):
            w = self._dledger_walk(f)
            if len(w):
                return self._head(f, int(w.pos[-1]))
        return None

    def _head(self, f: MappedFile, entry_pos: int) -> RecordHead | None:
        rel = entry_pos - f.start_offset + BODY_OFFSET
        _, total, fields = check_record(f.buffer(), f.size, rel, False, True)
        return RecordHead.of(f.start_offset + rel, total, fields) if fields is not None else None

    def message_positions(self, f: MappedFile) -> np.ndarray:
        """Physical offsets of the messages of data file `f`'s kept entries (pos + 48)."""
        return self._dledger_walk(f).pos + BODY_OFFSET


def _kept(record: Record, phy: int) -> Record:
    """A rejected message of an entry DLedger keeps: reported, the walk goes on."""
    reason = getattr(record, "reason", record.kind)
    note = "; DLedger keeps the entry (its recovery does not check bodies) and the walk goes on"
    if isinstance(record, BadRecord):
        return Corrupt(phy, reason + note, record.total_size, record.available, record.written, record.header)
    return Corrupt(phy, f"no message record here ({reason}){note}", None, 0, 0, None)


__all__ = [
    "DLEDGER_DIR_PREFIX",
    "DLedgerCommitLog",
    "DLedgerError",
    "DLedgerLog",
    "DLedgerPaths",
    "DLedgerRecovery",
    "FileWalk",
]
