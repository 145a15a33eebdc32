"""The IndexService side of a key or id query: read and confirm the hits, say how far the index covers
the commitlog, and scan the tail it does not cover.

The index files' hits are read from the commitlog and confirmed on the message itself (as
`DefaultMessageStore.queryMessage` reads `IndexService.queryOffset`'s offsets), counting hash collisions,
hits deleted by retention and unreadable hits. The newest index file's endPhyOffset is compared with the
first commitlog record after it that the dispatcher would have indexed; a lagging index (a crash before
dispatch, an index rebuilt late) is reported, and the uncovered tail of the commitlog can be searched
directly. Nothing here writes into the store.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from formats.errors import MqtoolError
from formats.message.commitlog import STOPS, Message, read_prelude
from formats.structs import BLANK_MAGIC, MESSAGE_MAGICS
from store.index.indexservice import MAX_MSGS_NUM_BATCH
from store.log.mappedfile import offset_to_file_name
from store.storedir import Store

# --- index coverage ------------------------------------------------------------------------------


@dataclass
class IndexCoverage:
    """How far the index files cover the commitlog."""

    index_end_phy_offset: int | None  # newest index file's endPhyOffset (None: no index files)
    index_end_timestamp: int | None
    first_unindexed_offset: int | None  # first record after the index end the dispatcher would index
    commitlog_end: int | None  # where the commitlog data ends (exact when `end_exact`)
    end_exact: bool = True
    error: str | None = None  # why coverage could not be established
    # controller mode (`Store.served_end`): where the broker's dispatch ends (the recovered confirm offset, or
    # the consume queues' end past it), and the unconfirmed bytes after it, which the broker neither indexes
    # nor serves (not "behind", and never scanned)
    served_end: int | None = None
    unconfirmed_bytes: int = 0

    @property
    def behind(self) -> bool:
        return self.first_unindexed_offset is not None

    @property
    def uncovered_bytes(self) -> int | None:
        if self.first_unindexed_offset is None or self.commitlog_end is None:
            return None
        return max(0, self.commitlog_end - self.first_unindexed_offset)

    def to_json(self) -> dict[str, Any]:
        return {
            "indexEndPhyOffset": self.index_end_phy_offset,
            "indexEndTimestamp": self.index_end_timestamp,
            "firstUnindexedOffset": self.first_unindexed_offset,
            "commitlogEnd": self.commitlog_end,
            "indexBehind": self.behind,
            "uncoveredBytes": self.uncovered_bytes,
            "error": self.error,
            "servedEnd": self.served_end,
            "unconfirmedBytes": self.unconfirmed_bytes,
        }


def _data_end(store: Store, offset: int) -> int:
    """Where the records starting at `offset` end, by following TOTALSIZE (no checks: a quick bound); on a
    DLedger commitlog where DLedger's recovery ends the entries."""
    from store.log.dledger import DLedgerCommitLog

    if isinstance(store.commitlog, DLedgerCommitLog) and store.commitlog.is_dledger_offset(offset):
        return store.commitlog.log.recovery.end
    files = store.commitlog.files
    index = next((i for i, f in enumerate(files) if f.start_offset <= offset < f.end_offset), None)
    if index is None:
        return offset
    pos = offset - files[index].start_offset
    while True:
        f = files[index]
        buf = f.buffer()
        size = len(buf)
        while pos + 8 <= size:
            total, magic = read_prelude(buf, pos)
            if magic in MESSAGE_MAGICS and 0 < total <= size - pos:
                pos += total
                continue
            if magic == BLANK_MAGIC and index + 1 < len(files):
                break
            return f.start_offset + pos
        else:
            return f.start_offset + pos
        index += 1
        pos = 0


def index_coverage(store: Store) -> IndexCoverage:
    """Compare the newest index file's endPhyOffset with the commitlog records after it.

    Walks the commitlog from the index end to the first record that has index keys (UNIQ_KEY or KEYS,
    not a rolled-back transaction): on a healthy store that is just the last record.
    """
    commitlog = store.commitlog
    headers = [h for _, h in store.index_service.headers()]
    indexed_any = any(h.effective_index_count > 1 for h in headers)
    end_phy = headers[-1].end_phy_offset if headers else None
    end_ts = headers[-1].end_timestamp if headers else None
    skip = indexed_any and end_phy is not None and end_phy >= commitlog.min_offset
    start = end_phy if skip else commitlog.min_offset
    coverage = IndexCoverage(end_phy, end_ts, None, None)
    if not commitlog.files:
        coverage.commitlog_end = 0
        return coverage
    served = None if store.confirm is None else store.served_end
    if served is not None:
        coverage.served_end = served
        coverage.unconfirmed_bytes = max(0, store.confirm.max_offset - served)
    try:
        for record in commitlog.iter_records(start):
            if isinstance(record, Message):
                if skip and record.physical_offset == end_phy:
                    continue
                if served is not None and record.physical_offset + record.total_size > served:
                    coverage.commitlog_end = served  # the broker indexes no further
                    return coverage
                if record.index_keys():
                    coverage.first_unindexed_offset = record.physical_offset
                    coverage.commitlog_end = _data_end(store, record.physical_offset)
                    coverage.end_exact = False
                    return coverage
            elif isinstance(record, STOPS):
                coverage.commitlog_end = record.physical_offset
                return coverage
    except MqtoolError as exc:
        coverage.error = f"cannot follow the commitlog from the index end {start}: {exc}"
    return coverage


# --- scanning ------------------------------------------------------------------------------------


@dataclass
class ScanOutcome:
    messages: list[Message]
    start: int
    end: int  # where the broker's walk stops (the valid end)
    stop_reason: str


def scan_commitlog(
    store: Store,
    start: int,
    match: Callable[[Message], bool],
    *,
    advance: Callable[[int], None] | None = None,
) -> ScanOutcome:
    """Every message from `start` (a record boundary) to the valid end for which `match` is true; in
    controller mode to where the broker's dispatch ends (`Store.served_end`: it serves nothing past it)."""
    found: list[Message] = []
    last = start
    served = None if store.confirm is None else store.served_end
    for record in store.commitlog.iter_records(start):
        if advance is not None:
            advance(record.physical_offset - last)
            last = record.physical_offset
        if (
            served is not None
            and isinstance(record, Message)
            and record.physical_offset + record.total_size > served
        ):
            why = "the confirm offset: the unconfirmed tail after it is not served (controller mode)"
            return ScanOutcome(found, start, record.physical_offset, why)
        if isinstance(record, Message):
            if match(record):
                found.append(record)
        elif isinstance(record, STOPS):
            return ScanOutcome(found, start, record.physical_offset, record.reason)
    raise AssertionError("iter_records always ends with a stop")  # pragma: no cover


def scan_tail(
    store: Store,
    coverage: IndexCoverage,
    scan_from: int | None,
    match: Callable[[Message], bool],
    advance: Callable[[int], None] | None,
) -> ScanOutcome | None:
    start = scan_from if scan_from is not None else coverage.first_unindexed_offset
    if start is None:
        return None
    outcome = scan_commitlog(store, start, match, advance=advance)
    if scan_from is None:
        coverage.commitlog_end, coverage.end_exact = outcome.end, True
    return outcome


# --- reading hits --------------------------------------------------------------------------------


@dataclass
class HitReport:
    """What became of the physical offsets an index walk returned."""

    raw_hits: int = 0
    dropped_collisions: int = 0
    deleted: int = 0  # hits below the commitlog's min offset (removed by retention)
    unreadable: list[str] = field(default_factory=list)  # hits where no valid message starts
    # why hits were unreadable, each cause once: cause -> the hits' physical offsets
    causes: dict[str, list[int]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "rawHits": self.raw_hits,
            "droppedCollisions": self.dropped_collisions,
            "deletedHits": self.deleted,
            "unreadableHits": list(self.unreadable),
        }

    def add_unreadable(self, offset: int, cause: str, detail: str) -> None:
        self.unreadable.append(f"{offset}: {detail}")
        self.causes.setdefault(cause, []).append(offset)


def unreadable_cause(store: Store, offset: int) -> str:
    """The cause of an unreadable hit, in words shared by every hit it applies to (one note per cause): a
    missing commitlog file between present ones (not retention, which deletes from the start), past the
    last file, or no valid message at the offset."""
    commitlog = store.commitlog
    gap = commitlog.missing_file(offset)
    if gap is not None:
        return (
            f"commitlog file {offset_to_file_name(gap[0])} [{gap[0]}, {gap[1]}), which is missing while the "
            "files before and after it are present (removed or lost, not deleted by retention)"
        )
    files = commitlog.files
    if not files:
        return "a commitlog with no files"
    if offset >= files[-1].end_offset:
        return f"past the end of the last commitlog file ({files[-1].end_offset})"
    return "the commitlog where no valid message starts"


def read_hits(
    store: Store,
    offsets: list[int],
    confirm: Callable[[Message], bool],
    report: HitReport,
    limit: int | None = None,
    seen: set[int] | None = None,
) -> tuple[list[Message], bool]:
    """Read and confirm hits in the order given; stop after `limit` confirmed. (messages, truncated)."""
    commitlog = store.commitlog
    seen = set() if seen is None else seen
    out: list[Message] = []
    for i, offset in enumerate(offsets):
        if offset in seen:
            continue
        if limit is not None and len(out) >= limit:
            return out, any(o not in seen for o in offsets[i:])
        seen.add(offset)
        if offset < commitlog.min_offset:
            report.deleted += 1
            continue
        try:
            msg = commitlog.read_message_at(offset)
        except MqtoolError as exc:
            report.add_unreadable(offset, unreadable_cause(store, offset), str(exc))
            continue
        if confirm(msg):
            out.append(msg)
        else:
            report.dropped_collisions += 1
    return out, False


# --- notes ----------------------------------------------------------------------------------------


def hit_notes(hits: HitReport, capped: bool, truncated: bool) -> list[str]:
    notes = []
    if hits.dropped_collisions:
        n = hits.dropped_collisions
        notes.append(
            f"{n} hash collision{'s' if n != 1 else ''} dropped (index hits whose message does not carry "
            "the key)"
        )
    if hits.deleted:
        notes.append(f"{hits.deleted} index hit(s) point to commitlog data already deleted by retention")
    for cause, offsets in hits.causes.items():
        shown = ", ".join(str(o) for o in sorted(offsets)[:3]) + (", ..." if len(offsets) > 3 else "")
        notes.append(f"{len(offsets)} index hit(s) point into {cause}: physical offset(s) {shown}")
    if capped:
        notes.append(
            f"the index returned {hits.raw_hits} raw hits: a live broker would have returned at most "
            f"{MAX_MSGS_NUM_BATCH}"
        )
    if truncated:
        notes.append("--max stopped the answer: more index hits were not read (the newest are shown)")
    return notes


def unconfirmed_note(coverage: IndexCoverage | None, messages: list[Message]) -> str | None:
    """A note naming the messages shown that lie past a controller-mode confirm offset (found by an index
    entry written before a crash, or read by offset as viewMessage reads it): HA may truncate them."""
    if coverage is None or coverage.served_end is None:
        return None
    past = [m.physical_offset for m in messages if m.physical_offset + m.total_size > coverage.served_end]
    if not past:
        return None
    shown = ", ".join(str(p) for p in past[:5]) + (", ..." if len(past) > 5 else "")
    return (
        f"unconfirmed: {len(past)} message(s) (phy {shown}) lie past the confirm offset "
        f"{coverage.served_end} (controller mode): HA may truncate them; consumers are not served them "
        "until they are confirmed"
    )


def coverage_notes(
    coverage: IndexCoverage, scanned: ScanOutcome | None, scan_requested: bool = False
) -> list[str]:
    notes = []
    if scan_requested and scanned is None and not coverage.behind and coverage.error is None:
        upto = "whole commitlog" if coverage.served_end is None else "commitlog up to the confirm offset"
        notes.append(f"the index covers the {upto}: nothing to scan")
    if coverage.error:
        notes.append(coverage.error)
    if coverage.behind:
        end = coverage.commitlog_end
        approx = "" if coverage.end_exact else "about "
        covered = (
            "there are no index files"
            if coverage.index_end_phy_offset is None
            else f"the index covers up to physical offset {coverage.index_end_phy_offset}"
        )
        text = (
            f"{covered}, but the commitlog goes on to {end}: {approx}{coverage.uncovered_bytes} bytes from "
            f"{coverage.first_unindexed_offset} are not indexed"
        )
        if scanned is None:
            text += " — rerun with --scan to search them"
        notes.append(text)
    if coverage.served_end is not None and coverage.unconfirmed_bytes:
        notes.append(
            f"controller mode: the {coverage.unconfirmed_bytes} bytes after the confirm offset "
            f"{coverage.served_end} are the unconfirmed tail, which the broker neither indexes nor "
            "serves (--scan stops there; `dump commitlog` shows them)"
        )
    if scanned is not None:
        n = len(scanned.messages)
        notes.append(
            f"scanned the commitlog from {scanned.start} to {scanned.end} ({scanned.stop_reason}): "
            f"{n} matching message{'s' if n != 1 else ''}"
        )
    return notes
