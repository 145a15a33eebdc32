"""DLedger's index rebuilt from its data: every kept entry's 32-byte unit (magic, pos, size, index, term) at
index * 32 of the index files, as `DLedgerMmapFileStore.recover` rewrites them from the first unit that is
missing or differs (D:DMFS:250-282, `DLedgerEntryCoder.encodeIndex`) - here for every entry from the ledger's
first, also those before the files its recovery walks (a wrong unit there is never repaired by the broker,
and `DLedgerMmapFileStore.get` of its index fails).

`plan_dledger_index` compares the units the entries give with the files; `write_dledger_index` writes each
index file that differs as a new sparse file (167,772,160 bytes, `DLedgerConfig.mappedFileSizeForEntryIndex`)
beside it and renames it over the old one (atomic per file; units of indexes no kept entry has - none after
the last, before the first - are copied from the old file, as DLedger leaves them). The caller holds the store
lock (`mqtool.safety.write_guard`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from formats.dledger import INDEX_FILE_SIZE, INDEX_UNIT_SIZE, index_unit_dtype
from formats.errors import MqtoolError
from store.io.filewrites import create_sparse_file, fsync_dir, pwrite_all, temp_path, write_done
from store.log.dledger import DLedgerCommitLog
from store.log.mappedfile import offset_to_file_name
from store.log.scan import data_extents

UNITS_PER_FILE = INDEX_FILE_SIZE // INDEX_UNIT_SIZE


class DLedgerIndexError(MqtoolError):
    """DLedger's index cannot be rebuilt from these entries."""


@dataclass
class IndexFileDiff:
    """One index file: `same`, `differs` (from `first_difference`, an entry index) or `new`."""

    name: str
    status: str
    first_difference: int | None = None
    units: int = 0  # units the entries give in this file


@dataclass
class DLedgerIndexPlan:
    """The units the kept entries give, and how the index files compare."""

    first_index: int  # -1: no entry
    last_index: int
    entries: int
    rewrite_from: int | None  # where DLedger's own recovery would start rewriting
    files: list[IndexFileDiff] = field(default_factory=list)
    _units: dict[int, np.ndarray] = field(default_factory=dict, repr=False)  # index -> unit rows

    @property
    def changes(self) -> bool:
        return any(f.status != "same" for f in self.files)


def _entry_units(commitlog: DLedgerCommitLog) -> np.ndarray:
    """The units of every entry DLedger's walk keeps, file by file from the first (up to its recovery's
    end), sorted by index (an index a walk gave twice keeps its first)."""
    log = commitlog.log
    end = log.recovery.end
    dtype = index_unit_dtype()
    parts = []
    prev = (-1, -1)
    for f in log.data_files:
        if f.start_offset >= end and f.start_offset > 0:
            break
        walk = log.walk(f, 0, *prev)
        keep = walk.pos < end
        units = np.zeros(int(keep.sum()), dtype=dtype)
        for name, values in (("magic", walk.magic), ("pos", walk.pos), ("size", walk.size),
                             ("index", walk.index), ("term", walk.term)):  # fmt: skip
            units[name] = values[keep]
        parts.append(units)
        prev = (int(walk.index[-1]), int(walk.term[-1])) if len(walk) and walk.reason == "pad" else (-1, -1)
    units = np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)
    units = units[units["index"] >= 0]
    units = units[np.argsort(units["index"], kind="stable")]
    return units[np.r_[True, np.diff(units["index"]) != 0]] if len(units) else units


def plan_dledger_index(commitlog: DLedgerCommitLog) -> DLedgerIndexPlan:
    """The units the entries give, file by file, against the index files on disk."""
    log = commitlog.log
    units = _entry_units(commitlog)
    recovery = log.recovery
    if not len(units):
        return DLedgerIndexPlan(-1, -1, 0, recovery.index_rewrite_from)
    first, last = int(units["index"][0]), int(units["index"][-1])
    if last - first + 1 != len(units) or first != recovery.begin_index:
        raise DLedgerIndexError(
            f"the kept entries' indexes are not one run from the ledger's begin index {recovery.begin_index} "
            f"(entries {first} .. {last}, {len(units)} of them): DLedger's index cannot hold them so",
            str(commitlog.paths.index_dir),
        )
    plan = DLedgerIndexPlan(first, last, len(units), recovery.index_rewrite_from)
    on_disk = {f.start_offset: f for f in log.index_files if f.start_offset >= 0}
    file_of = units["index"] // UNITS_PER_FILE
    for k in np.unique(file_of).tolist():
        mine = units[file_of == k]
        plan._units[k] = mine
        start = k * INDEX_FILE_SIZE
        name = offset_to_file_name(start)
        f = on_disk.get(start)
        if f is None:
            plan.files.append(IndexFileDiff(name, "new", int(mine["index"][0]), len(mine)))
            continue
        current = log.index_units_at(mine["index"])
        differs = np.zeros(len(mine), bool)
        for column in ("magic", "pos", "size", "index", "term"):
            differs |= current[column] != mine[column]
        hits = np.flatnonzero(differs)
        status = "same" if not len(hits) and f.size == INDEX_FILE_SIZE else "differs"
        first = int(mine["index"][hits[0]]) if len(hits) else None
        plan.files.append(IndexFileDiff(name, status, first, len(mine)))
    return plan


def write_dledger_index(commitlog: DLedgerCommitLog, plan: DLedgerIndexPlan, scratch: Path) -> list[str]:
    """Write every index file of `plan` that is not the same; returns their names."""
    index_dir = commitlog.paths.index_dir
    index_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for diff in plan.files:
        if diff.status == "same":
            continue
        k = int(diff.name) // INDEX_FILE_SIZE
        units = plan._units[k]
        target = index_dir / diff.name
        tmp = temp_path(scratch, f"dledger-index-{diff.name}")
        kept = []  # what DLedger leaves: the written parts of the old file (units no kept entry gives)
        if target.is_file():
            with open(target, "rb") as fh:
                for lo, hi in data_extents(target, 0, min(target.stat().st_size, INDEX_FILE_SIZE)):
                    kept.append((lo, os.pread(fh.fileno(), hi - lo, lo)))
        create_sparse_file(tmp, INDEX_FILE_SIZE, scratch, kept)
        fd = os.open(tmp, os.O_WRONLY)
        try:
            base = k * UNITS_PER_FILE
            raw = units.astype(index_unit_dtype()).tobytes()  # big-endian, 32 bytes a unit
            # runs of consecutive indexes in one write each
            idx = units["index"]
            breaks = np.flatnonzero(np.diff(idx) != 1) + 1
            for lo, hi in zip([0, *breaks.tolist()], [*breaks.tolist(), len(idx)], strict=True):
                chunk = raw[lo * INDEX_UNIT_SIZE : hi * INDEX_UNIT_SIZE]
                pwrite_all(fd, chunk, (int(idx[lo]) - base) * INDEX_UNIT_SIZE)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
        write_done()
        written.append(diff.name)
    if written:
        fsync_dir(index_dir)
    return written


__all__ = [
    "DLedgerIndexError",
    "DLedgerIndexPlan",
    "IndexFileDiff",
    "plan_dledger_index",
    "write_dledger_index",
]
