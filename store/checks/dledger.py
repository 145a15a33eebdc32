"""DLedger commitlog checks: what DLedger's recovery checks of each data file (pos field, size chain,
consecutive indexes, non-decreasing terms, index units agreeing with the entries, every file its configured
size: `DLedgerMmapFileStore.load`/`recover`, D:DMFS:128-326), the broker's record check of each entry's
message at +48, and where DLedger's recovery truncates. Pure functions over `store.log.scan.DataFileScan`s
and numpy arrays; `store.checks.storefiles` feeds them from a store.

DLedger keeps an entry whose message the broker's check rejects (its recovery never reads bodies): such a
message is an error, but not a truncation point. Only an entry DLedger's walk stops at, in the files its
recovery walks (from the third-last), ends the log; a bad entry in an earlier file is never seen by the
recovery and is reported as such. Facts and file:line references: tests/oracle/DLEDGER.md.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from formats.columnar.decoder import STATUS_NAMES
from formats.dledger import ENTRY_REASONS
from store.checks.problems import ERROR, FAILURE_KIND, INFO, OK, WARNING, ProblemList, fmt
from store.log.scan import DataFileScan

# what the broker's dispatch (ReputMessageService over DLedgerCommitLog.checkMessageAndReturnSize, CRC off)
# does with a kept entry whose message fails the check (R5 DefaultMessageStore.java:2885-2927)
_DISPATCH = {
    "crc_mismatch": "the dispatch does not check CRCs and dispatches it",
    "size_mismatch": "the dispatch skips it (by its TOTALSIZE + 48)",
    "bad_magic": "the dispatch skips the rest of its data file",
    "truncated": "the dispatch skips the rest of its data file",
    "bad_property": "the dispatch skips the rest of its data file",
}


@dataclass
class DLedgerVerdict:
    """Where DLedger's recovery ends the data, and what it keeps."""

    valid_end: int  # processOffset: the data is truncated here
    last_end: int  # end of the last kept entry (-1: none)
    entries: int  # entries kept
    stop_status: str  # why the walk ended (ENTRY_REASONS key or last_pad)
    records_after: int  # entries after the end (the recovery drops them)
    messages_rejected: int = 0
    summary: dict[str, Any] = field(default_factory=dict)


def check_dledger_log(
    scans: Sequence[DataFileScan],
    recovery: Any,
    problems: ProblemList,
    *,
    file_size: int | None,
    load_problems: Sequence[tuple[str, int | None, str]] = (),
    units: Callable[[np.ndarray], np.ndarray] | None = None,
    checkpoint: Any = None,
    checkpoint_error: str | None = None,
    names: dict[str, str] | None = None,
    messages: bool = True,
) -> DLedgerVerdict:
    """Every check of the DLedger data files (`scans`, in file order, each walked from position 0),
    `recovery` (`store.log.dledger.DLedgerRecovery`), the load's problems, `units` (entry indexes -> their
    index units, a structured array, -1 where no index file holds one), DLedger's checkpoint. `messages`:
    also each entry's message (the audit's executors check those themselves)."""
    names = names or {}
    for path, offset, why in load_problems:
        problems.add("dledger_file", names.get(path, path), offset, why)
    if recovery.exits:
        problems.add("dledger_exit", None, None, f"the broker does not start: {recovery.exits}")
    start_file = recovery.start_file or 0
    rejected = 0
    for k, scan in enumerate(scans):
        rejected += check_entry_messages(scan, problems) if messages else 0
        _check_stop(scans, k, start_file, recovery, problems)
    entries = [s.entries() for s in scans]
    _check_units(entries, units, recovery, problems, scans)
    _check_commit(recovery, checkpoint, checkpoint_error, problems, scans)
    after = 0
    for ent in entries:
        if ent and len(ent["entryPos"]):
            after += int(np.count_nonzero(ent["entryPos"] >= recovery.end))
    return DLedgerVerdict(recovery.end, recovery.last_end, recovery.entries, recovery.reason, after, rejected)


def check_entry_messages(scan: DataFileScan, problems: ProblemList) -> int:
    """Each kept entry's message: the broker's record check, its TOTALSIZE against the entry's bodySize,
    its PHYSICALOFFSET field against pos + 48."""
    ent = scan.entries()
    if not ent or not len(ent["entryPos"]):
        return 0
    phy = ent["physicalOffset"]
    status = ent["status"]
    bad = np.flatnonzero(status != OK)
    for i in bad.tolist():
        name = STATUS_NAMES[int(status[i])]
        problems.add(
            FAILURE_KIND.get(name, "size_chain"),
            scan.name,
            int(phy[i]) - scan.start,
            f"the message of entry {int(ent['entryIndex'][i])} (phy {int(phy[i])}) is rejected by the "
            f"broker's check ({name}); DLedger keeps the entry (its recovery does not read bodies) and "
            f"{_DISPATCH.get(name, 'the dispatch skips it')}",
        )
    ok = status == OK
    size = np.flatnonzero(ok & (ent["totalSize"] != ent["entryBodySize"]))
    if len(size):
        problems.add_many(
            "dledger_body_size",
            scan.name,
            phy[size] - scan.start,
            fmt(
                "entry ", ent["entryIndex"][size], ": bodySize ", ent["entryBodySize"][size],
                " but its message's TOTALSIZE is ", ent["totalSize"][size],
                ": the dispatch steps by TOTALSIZE + 48 and leaves the entries' chain",
            ),
        )  # fmt: skip
    field_bad = np.flatnonzero(ok & (ent["physicalOffsetField"] != phy))
    if len(field_bad):
        problems.add_many(
            "phy_offset_field",
            scan.name,
            phy[field_bad] - scan.start,
            fmt("PHYSICALOFFSET field ", ent["physicalOffsetField"][field_bad], " != entry pos + 48 = ",
                phy[field_bad]),
        )  # fmt: skip
    return len(bad)


def _check_stop(
    scans: Sequence[DataFileScan], k: int, start_file: int, recovery: Any, problems: ProblemList
) -> None:
    """Where the walk of file k stopped: a pad (its size, bytes after it), zeros, or an entry DLedger's walk
    rejects - in the files its recovery walks, the truncation point."""
    scan = scans[k]
    if not scan.size:
        return
    reason, pos, size = scan.stop()
    later = scans[k + 1 :]
    if reason == "pad":
        if size != scan.size - pos:
            left = scan.size - pos
            problems.add(
                "dledger_pad", scan.name, pos, f"the pad says {size} bytes, but {left} are left (ignored)"
            )
        if scan.data_end > pos + 8:
            why = f"non-zero bytes after the pad up to position {scan.data_end} (ignored by DLedger)"
            problems.add("nonzero_after_pad", scan.name, pos + 8, why)
        return
    later_entries = sum(s.last_index != -1 and len(s.entries().get("entryPos", ())) > 0 for s in later)
    later_kept = sum(len(s.entries().get("entryPos", ())) for s in later)
    seen = k >= start_file
    phy = scan.start + pos
    if reason == "end":
        if later_kept:
            detail = (
                f"size 0 where an entry should start (data offset {phy}), but {later_kept} entries follow in "
                f"{later_entries} later file(s)"
            )
            if seen:
                detail += "; DLedger's recovery ends the data here and truncates the later files"
            else:
                detail += (
                    f"; DLedger's recovery starts at a later file ({scans[start_file].name}) and does not "
                    "see it; the broker's dispatch skips the rest of this file"
                )
            problems.add("dledger_entry", scan.name, pos, detail)
        elif scan.data_end > pos and (k == len(scans) - 1 or seen):
            problems.add(
                "nonzero_after_end",
                scan.name,
                pos,
                f"non-zero bytes after the end of the entries (data offset {phy}) up to position "
                f"{scan.data_end} (DLedger's truncation leaves them; the next append overwrites them)",
            )
        return
    # an entry DLedger's walk rejects
    why = ENTRY_REASONS.get(reason, reason)
    extent = max(size, 48) if 0 < size <= scan.size - pos else 48
    written_after = scan.data_end > pos + extent
    if seen:
        if later_kept or written_after:
            detail = (
                f"entry at data offset {phy} rejected by DLedger's recovery ({why}); the recovery truncates "
                f"the data here and drops what follows ({later_kept} entries in later files"
                + (f", non-zero bytes in this file up to position {scan.data_end}" if written_after else "")
                + ")"
            )
            problems.add("dledger_entry", scan.name, pos, detail)
        else:
            problems.add(
                "dledger_torn_tail",
                scan.name,
                pos,
                f"torn entry at data offset {phy} ({why}), zeros after it: DLedger's recovery drops it and "
                "ends the data here",
            )
    else:
        problems.add(
            "dledger_entry",
            scan.name,
            pos,
            f"entry at data offset {phy} rejected by DLedger's walk ({why}); DLedger's recovery starts at "
            f"a later file ({scans[start_file].name}) and does not see it: the entries after it in this file "
            "are not DLedger's (DLedgerMmapFileStore.get fails there); the broker's dispatch reads messages "
            "at +48 and skips what it cannot read",
        )


def _check_units(
    entries: Sequence[dict[str, np.ndarray]],
    units_at: Callable[[np.ndarray], np.ndarray] | None,
    recovery: Any,
    problems: ProblemList,
    scans: Sequence[DataFileScan],
) -> None:
    """Each kept entry's index unit (magic, pos, size, index, term) against the entry: from the first
    mismatch in the recovered range DLedger rewrites them (a warning); before that range nothing repairs a
    wrong unit (`DLedgerMmapFileStore.get` of that index fails: an error)."""
    if units_at is None:
        return
    for scan, ent in zip(scans, entries, strict=True):
        if not ent or not len(ent["entryPos"]):
            continue
        idx = ent["entryIndex"]
        u = units_at(idx)
        bad = (
            (u["magic"] != ent["entryMagic"])
            | (u["pos"] != ent["entryPos"])
            | (u["size"] != ent["entrySize"])
            | (u["index"] != idx)
            | (u["term"] != ent["entryTerm"])
        )
        bad &= ent["entryPos"] < recovery.end
        hits = np.flatnonzero(bad)
        if not len(hits):
            continue
        rewritten = recovery.index_rewrite_from
        repaired = idx[hits] >= rewritten if rewritten is not None else np.zeros(len(hits), bool)
        fixed = hits[repaired]
        broken = hits[~repaired]
        if len(fixed):
            problems.add(
                "dledger_index_unit",
                scan.name,
                int(ent["entryPos"][fixed[0]]) - scan.start,
                f"the index units of {len(fixed)} entries from {int(idx[fixed[0]])} are missing or differ "
                f"from their entries; DLedger's recovery rewrites every unit from entry {rewritten} on",
                WARNING,
            )
        if len(broken):
            problems.add(
                "dledger_index_unit",
                scan.name,
                int(ent["entryPos"][broken[0]]) - scan.start,
                f"the index units of {len(broken)} entries from {int(idx[broken[0]])} are missing or differ "
                "from their entries, before the range DLedger's recovery compares: "
                "DLedgerMmapFileStore.get of those indexes fails or reads another entry",
                ERROR,
            )


def _check_commit(
    recovery: Any, checkpoint: Any, error: str | None, problems: ProblemList, scans: Sequence[DataFileScan]
) -> None:
    """DLedger's checkpoint against what the recovery keeps."""
    where = "dledger checkpoint"
    if error is not None:
        problems.add("dledger_checkpoint", where, None, error)
        return
    if recovery.last_index == -1:
        return
    if checkpoint is None or checkpoint.committed_index is None:
        problems.add(
            "dledger_uncommitted",
            where,
            None,
            f"no committed index in DLedger's checkpoint: after load the store serves nothing of the "
            f"{recovery.entries}+ kept entries until a leader commits them (one peer: at its start)",
            INFO,
        )
        return
    if recovery.committed_index < recovery.last_index:
        problems.add(
            "dledger_uncommitted",
            where,
            None,
            f"committed index {recovery.committed_index} (data offset {recovery.committed_pos}) is below the "
            f"last kept entry {recovery.last_index} (ends at {recovery.last_end}): the store serves those "
            "entries once a leader commits them (a one-peer group at its start; in a larger group a new "
            "leader may truncate them)",
        )
    elif checkpoint.committed_index > recovery.last_index:
        problems.add(
            "dledger_uncommitted",
            where,
            None,
            f"the checkpoint's committed index {checkpoint.committed_index} is past the last kept entry "
            f"{recovery.last_index}: DLedger clamps it (entries a peer committed are missing here)",
        )


def dledger_recovery_row(
    scans: Sequence[DataFileScan],
    recovery: Any,
    problems: ProblemList,
    *,
    abort: bool,
    redispatch_file: int | None,
) -> dict[str, Any]:
    """The info row: where DLedger's recovery walks from and where it ends the data, what it rewrites and
    deletes, and with `abort` where 5.x re-dispatches from."""
    if recovery.start_file is None or not scans:
        why = "DLedger has no data files: its recovery truncates the index to 0"
        problems.add("recovery", None, None, why)
        return {"mode": "dledger", "startFile": None, "end": recovery.end}
    start = scans[recovery.start_file]
    stop = scans[recovery.stop_file or 0]
    why = "a pad in the last data file" if recovery.reason == "last_pad" else ENTRY_REASONS[recovery.reason]
    detail = (
        f"DLedger's recovery walks from {start.name} and ends the data at {recovery.end} ({stop.name} "
        f"position {recovery.stop_position}: {why}); ledger end index {recovery.last_index}"
    )
    if recovery.index_rewrite_from is not None:
        detail += f"; it rewrites the index units from entry {recovery.index_rewrite_from}"
    if recovery.files_deleted:
        detail += f"; it deletes data files {', '.join(recovery.files_deleted)}"
    if abort and redispatch_file is not None:
        detail += (
            "; abort present: 5.x re-dispatches ConsumeQueues and index from "
            f"{scans[redispatch_file].name} to the end of the entries"
        )
    problems.add("recovery", stop.name, recovery.stop_position, detail)
    return {
        "mode": "dledger" + (" (abort present)" if abort else ""),
        "startFile": start.name,
        "end": recovery.end,
        "lastIndex": recovery.last_index,
        "committedIndex": recovery.committed_index,
        "committedPos": recovery.committed_pos,
        "indexRewriteFrom": recovery.index_rewrite_from,
        "redispatchFile": scans[redispatch_file].name if abort and redispatch_file is not None else None,
    }


__all__ = ["DLedgerVerdict", "check_dledger_log", "check_entry_messages", "dledger_recovery_row"]
