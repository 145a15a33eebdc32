"""Checks of a compaction topic's queue (`compaction/`): pure functions over what `storefiles` read.

What the broker's start refuses or skips (`store.kv.compaction.CompactionLog.load_problems`: files that
`MappedFileQueue.load` rejects, `.delete` leftovers, log and CQ files that do not pair up by name -
`sanityCheck`, 5.3.3 CompactionLog.java:1045-1059), and what a compaction leaves (CompactionLog.java:
322-336, 641-705): every live unit points at a record of its queue offset and size in the compaction log,
queue offsets increase, and up to the position-checkpoint's offset of the queue (what the last compaction
covered) one live record per key - the key is the MD5 of the whole KEYS string
(`formats.compaction.offset_map_key`) - and no tombstone (a record with an empty body is dropped there).
Records after that offset have not been compacted yet: keys repeat and tombstones stay.
"""

from __future__ import annotations

from dataclasses import dataclass

from formats.compaction import offset_map_key
from store.checks.problems import ProblemList


@dataclass(frozen=True)
class ServedRecord:
    """A live compaction CQ unit and what its record in the compaction log says (None fields: unreadable)."""

    cq_file: str  # relative to the store root
    cq_position: int
    queue_offset: int
    log_offset: int
    size: int
    record_queue_offset: int | None
    record_physical_offset: int | None
    record_size: int | None
    keys: str | None
    body_length: int | None
    error: str | None = None


def check_compacted_queue(
    where: str, records: list[ServedRecord], compacted_to: int, problems: ProblemList
) -> dict[str, int]:
    """Judge one queue's live units and records; returns counts for the summary."""
    last = None
    seen: dict[bytes, int] = {}
    duplicates = tombstones = 0
    for r in records:
        if r.error is not None:
            problems.add("compaction_unit_mismatch", r.cq_file, r.cq_position,
                         f"{where} queue offset {r.queue_offset}: its record at compaction log offset "
                         f"{r.log_offset} cannot be read: {r.error}")  # fmt: skip
            continue
        wrong = []
        if r.record_queue_offset != r.queue_offset:
            wrong.append(f"QUEUEOFFSET {r.record_queue_offset}")
        if r.record_physical_offset != r.log_offset:
            wrong.append(f"PHYSICALOFFSET {r.record_physical_offset}")
        if r.record_size != r.size:
            wrong.append(f"TOTALSIZE {r.record_size} (unit size {r.size})")
        if wrong:
            problems.add("compaction_unit_mismatch", r.cq_file, r.cq_position,
                         f"{where} queue offset {r.queue_offset}: the record at compaction log offset "
                         f"{r.log_offset} says {', '.join(wrong)}")  # fmt: skip
        if last is not None and r.queue_offset <= last:
            problems.add("compaction_order", r.cq_file, r.cq_position,
                         f"{where}: queue offset {r.queue_offset} after {last}")  # fmt: skip
        last = r.queue_offset
        if not r.keys or not r.keys.strip():
            problems.add("compaction_no_keys", r.cq_file, r.cq_position,
                         f"{where} queue offset {r.queue_offset}: a record without KEYS, which the broker "
                         "never puts into a compaction log")  # fmt: skip
            continue
        if r.queue_offset > compacted_to:
            continue
        key = offset_map_key(r.keys)
        if key in seen:
            duplicates += 1
            problems.add("compaction_duplicate_key", r.cq_file, r.cq_position,
                         f"{where}: key {r.keys!r} live at queue offsets {seen[key]} and {r.queue_offset}, "
                         f"both at or below the compacted position {compacted_to}")  # fmt: skip
        seen[key] = r.queue_offset
        if r.body_length == 0:
            tombstones += 1
            problems.add("compaction_tombstone_kept", r.cq_file, r.cq_position,
                         f"{where} queue offset {r.queue_offset}: a tombstone (empty body) at or below the "
                         f"compacted position {compacted_to}, which the compaction drops")  # fmt: skip
    return {
        "live": len(records),
        "compactedKeys": len(seen),
        "duplicateKeys": duplicates,
        "tombstones": tombstones,
    }


def check_load_problems(
    where: str, file: str, load_problems: list[tuple[str, str]], problems: ProblemList
) -> None:
    """What the broker's start makes of the queue's files: `start fails` (the store does not load) or
    `not served` (the queue's CompactionLog is not opened: every pull is NO_MATCHED_LOGIC_QUEUE)."""
    for effect, message in load_problems:
        kind = "compaction_sanity" if effect == "start fails" else "compaction_not_served"
        problems.add(kind, file, None, f"{where}: {message}")


__all__ = ["ServedRecord", "check_compacted_queue", "check_load_problems"]
