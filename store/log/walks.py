"""Each commitlog file's walk from its first byte, remembered: one pass over the log answers every later
question about where the broker's walk stops.

The broker's recovery walks a file from position 0 with `checkMessageAndReturnSize` until a record it
rejects (5.3.3 CommitLog.java:663-710, `recoverNormally`; :761-800 `recoverAbnormally`): a BLANK moves on to
the next file, anything else ends the log. A walk from the start of any file is therefore the files' own
walks from position 0 chained: the first file that does not end in a BLANK (or the last file) holds the
stop. Whatever walks whole files - verify's ranged decode, the ranged size-chain walk - records what it
found here (`FileWalk`), and `CommitLog.walk_end` / `tail_positions` answer from it instead of reading the
files again; what was not recorded is walked as before.

A walk without the body CRC check takes the same steps as the checked one up to the first record whose CRC
does not match (the CRC comparison is the only step the unchecked walk leaves out), so a checked walk that
stopped for any other reason stands for the unchecked one too. The store is read-only meanwhile (read
commands never write, and a store held by a running broker is named as such).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

CRC_MISMATCH = "crc_mismatch"
TAIL_KEPT = (
    1024  # positions of a file's last accepted records a whole-file walk keeps (bundle's last records)
)


@dataclass(frozen=True)
class FileWalk:
    """One file walked from position 0 with the broker's record check: the status and position of the
    record that stopped it (`formats.columnar.decoder.STATUS_NAMES`, never "ok"), the position of the last
    accepted record (-1: none), and - when the walker counted them - how many records it accepted and the
    positions of the last `TAIL_KEPT` of them, oldest first."""

    status: str
    position: int
    last: int
    count: int | None = None
    tail: tuple[int, ...] = ()

    def tail_of(self, keep: int) -> list[int] | None:
        """Positions of the last `keep` accepted records, oldest first; None when not all were kept."""
        if self.count is None or (keep > len(self.tail) and self.count > len(self.tail)):
            return None
        return list(self.tail[-keep:]) if keep > 0 else []


@dataclass(frozen=True)
class ChainEnd:
    """Where a walk from the start of a file stops, from the recorded walks alone: the file holding the
    stop (an index into the files) and its walk, and (file index, position) of the last accepted record on
    the way."""

    file_index: int
    walk: FileWalk
    last: tuple[int, int] | None


@dataclass(frozen=True)
class ChainResume:
    """How far the recorded walks take a walk from the start of a file: on from position `position` of
    file `file_index` it must walk itself; (file index, position) of the last accepted record before."""

    file_index: int
    position: int
    last: tuple[int, int] | None


@dataclass
class FileWalks:
    """The walks recorded for one commitlog's files, by (file start offset, file size) and the check they
    were walked with (CRC checked or not, V2 records accepted or not)."""

    known: dict[tuple[bool, bool], dict[tuple[int, int], FileWalk]] = field(default_factory=dict)

    def record(
        self, start_offset: int, size: int, walk: FileWalk, *, check_crc: bool, accept_v2: bool
    ) -> None:
        if walk.status == "ok":
            raise ValueError("a file's walk ends in a stop, never in an accepted record")
        self.known.setdefault((check_crc, accept_v2), {})[(start_offset, size)] = walk

    def _get(self, start_offset: int, size: int, check_crc: bool, accept_v2: bool) -> FileWalk | None:
        return self.known.get((check_crc, accept_v2), {}).get((start_offset, size))

    def walk_of(self, start_offset: int, size: int, *, check_crc: bool, accept_v2: bool) -> FileWalk | None:
        """The file's walk with this check, or the CRC-checked one standing for an unchecked walk (see the
        module docstring); None when neither was recorded."""
        walk = self._get(start_offset, size, check_crc, accept_v2)
        if walk is None and not check_crc:
            checked = self._get(start_offset, size, True, accept_v2)
            if checked is not None and checked.status != CRC_MISMATCH:
                walk = checked
        return walk

    def crc_stop(self, start_offset: int, size: int, *, accept_v2: bool) -> FileWalk | None:
        """The file's CRC-checked walk when it stopped at a record whose body CRC does not match: an
        unchecked walk takes the same steps up to there and goes on from that record."""
        checked = self._get(start_offset, size, True, accept_v2)
        return checked if checked is not None and checked.status == CRC_MISMATCH else None

    def chain(
        self, files: Sequence, start_index: int, *, check_crc: bool, accept_v2: bool
    ) -> ChainEnd | ChainResume:
        """The walk from the start of `files[start_index]` (objects with `start_offset` and `size`) put
        together from the recorded file walks: on past a file that ends in a BLANK, to the first stop that
        is not one or the last file; or, where a file on the way was not recorded (or an unchecked walk
        meets a CRC mismatch), where the walk must go on by itself."""
        last = None
        for index in range(start_index, len(files)):
            f = files[index]
            walk = self.walk_of(f.start_offset, f.size, check_crc=check_crc, accept_v2=accept_v2)
            if walk is None:
                crc = None if check_crc else self.crc_stop(f.start_offset, f.size, accept_v2=accept_v2)
                if crc is None:
                    return ChainResume(index, 0, last)
                return ChainResume(index, crc.position, (index, crc.last) if crc.last >= 0 else last)
            if walk.last >= 0:
                last = (index, walk.last)
            if walk.status != "blank" or index == len(files) - 1:
                return ChainEnd(index, walk, last)
        raise IndexError(f"no file {start_index} among {len(files)}")


def joined_tail(tails: Sequence[Sequence[int]]) -> tuple[int, ...]:
    """The last TAIL_KEPT positions of ranges walked in order, from each range's last TAIL_KEPT (the last
    TAIL_KEPT of the whole walk lie in those)."""
    if not tails:
        return ()
    joined = np.concatenate([np.asarray(t, dtype=np.int64) for t in tails])  # no Python step per position
    return tuple(joined[-TAIL_KEPT:].tolist())


__all__ = ["TAIL_KEPT", "ChainEnd", "ChainResume", "FileWalk", "FileWalks", "joined_tail"]
