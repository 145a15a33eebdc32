"""CommitLog checks: the walk across files, each file's records, where recovery would start."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from formats.columnar.decoder import FAILURE_STATUSES, column_values, dictionary_indices
from store.checks.problems import FAILURE_KIND, OK, ProblemList, fmt
from store.log.scan import CommitLogFile


@dataclass
class CommitLogVerdict:
    """Where the whole-store walk ends, and why (the broker's valid end from the first file)."""

    valid_end: int
    stop_file: int | None  # index into the file list of the file holding the end
    stop_status: str  # end | blank (after the last file) | a failure status | empty
    stop_position: int
    torn: bool
    records_after: int  # accepted records after the valid end (resynchronised or in later files)


def check_commitlog(
    files: Sequence[CommitLogFile], problems: ProblemList, *, file_size: int | None = None
) -> CommitLogVerdict:
    """File sizes and names, each file's record walk, the valid end and what lies after it."""
    if file_size is None:
        sizes = [f.size for f in files if f.size > 0]
        file_size = sizes[0] if sizes else 0
    for i, f in enumerate(files):
        if f.size == 0:
            if i == len(files) - 1:
                problems.add("commitlog_empty_last_file", f.name, 0, "zero-length last file (5.x deletes it)")
            else:
                problems.add("commitlog_file_size", f.name, 0, "zero-length file before the last one")
            continue
        if f.size != file_size:
            problems.add(
                "commitlog_file_size",
                f.name,
                0,
                f"file size {f.size} differs from the commitlog file size {file_size} (the broker refuses "
                "to start)",
            )
        if i and files[i - 1].size and f.start != files[i - 1].start + files[i - 1].size:
            problems.add(
                "commitlog_file_gap",
                f.name,
                0,
                f"starts at {f.start}, but the previous file ends at "
                f"{files[i - 1].start + files[i - 1].size}",
            )
    for f in files:
        check_file_records(f, problems)

    # the whole-store walk: the first stop that is not a BLANK
    end_at: int | None = None
    for i, f in enumerate(files):
        stop = f.stop()
        if stop is None:
            continue
        if stop[0] != "blank":
            end_at = i
            break
    if end_at is None:
        # every file ends in a BLANK: recovery stops at the last one (its position, not the file end)
        last = next((f for f in reversed(files) if f.stop() is not None), None)
        if last is None:
            return CommitLogVerdict(files[0].start if files else 0, None, "empty", 0, False, 0)
        pos = last.stop()[1]  # type: ignore[index]
        return CommitLogVerdict(last.start + pos, files.index(last), "blank", pos, False, 0)
    f = files[end_at]
    status, pos, total = f.stop()  # type: ignore[misc]
    valid_end = f.start + pos
    later = files[end_at + 1 :]
    later_records = sum(g.message_count() for g in later)
    later_data = [g for g in later if g.message_count() or g.data_end]
    after = f.beyond_count() + later_records
    extent = max(total, 8) if status != "end" else 8
    tail_zero = f.data_end <= pos + extent and not later_data and f.beyond_count() == 0
    torn = status in FAILURE_STATUSES and tail_zero
    if status == "end":
        if after or later_data:
            problems.add(
                "premature_end",
                f.name,
                pos,
                f"zeros where a record should start (phy {valid_end}), but {after} records follow "
                f"{_where(later_data, f)}; the broker's recovery ends the commitlog here and deletes "
                "the later files",
            )
        elif f.data_end > pos:
            problems.add(
                "nonzero_after_end",
                f.name,
                pos,
                f"non-zero bytes after the end of data (phy {valid_end}) up to position {f.data_end}",
            )
    elif torn:
        written = (f.stop_data_end if f.stop_data_end is not None else f.data_end) - pos
        problems.add(
            "truncated_tail",
            f.name,
            pos,
            f"torn record at phy {valid_end}: {max(written, 0)} of {total} bytes written, the rest "
            f"zero ({status}); the broker's recovery drops it and ends the commitlog here",
        )
    else:
        detail = _failure_detail(status, valid_end, total)
        if after:
            detail += f"; the broker's recovery truncates here and drops {after} later records"
            if later_data:
                detail += f" ({_where(later_data, f)})"
        elif f.data_end > pos + extent:
            detail += f"; non-zero bytes follow up to position {f.data_end}"
        problems.add(FAILURE_KIND.get(status, "size_chain"), f.name, pos, detail)
    return CommitLogVerdict(valid_end, end_at, status, pos, torn, after)


def _where(later: Sequence[CommitLogFile], f: CommitLogFile) -> str:
    if not later:
        return "in this file"
    return f"in this file and {len(later)} later file(s) up to {later[-1].name.rsplit('/', 1)[-1]}"


def _failure_detail(status: str, phy: int, total: int) -> str:
    what = {
        "bad_magic": "illegal magic code",
        "truncated": f"TOTALSIZE {total} runs past the file end or a field past TOTALSIZE",
        "size_mismatch": f"TOTALSIZE {total} does not match the field lengths",
        "crc_mismatch": "body CRC does not match BODYCRC",
        "bad_property": "DELAY of a SCHEDULE_TOPIC_XXXX record is not an integer",
    }.get(status, status)
    return f"record at phy {phy} rejected by the broker's check: {what}"


def check_file_records(f: CommitLogFile, problems: ProblemList) -> None:
    """Per-record facts of one file: PHYSICALOFFSET fields, BLANK size, bytes after a BLANK."""
    batches = [b for b in (f.batch, f.beyond) if b is not None and b.num_rows]
    for batch in batches:
        status = dictionary_indices(batch.column("status"))
        phy = column_values(batch.column("physicalOffset"))
        field = column_values(batch.column("physicalOffsetField"))
        bad = np.flatnonzero((status == OK) & (field != phy))
        if len(bad):
            problems.add_many(
                "phy_offset_field",
                f.name,
                phy[bad] - f.start,
                fmt("PHYSICALOFFSET field ", field[bad], " != position phy ", phy[bad]),
            )
    stop = f.stop()
    if stop is None or stop[0] != "blank":
        return
    _, pos, total = stop
    if total != f.size - pos:
        problems.add(
            "blank_size",
            f.name,
            pos,
            f"BLANK record says {total} bytes, but {f.size - pos} are left in the file",
        )
    if f.data_end > pos + 8:
        problems.add(
            "nonzero_after_blank",
            f.name,
            pos + 8,
            f"non-zero bytes after the BLANK record up to position {f.data_end} (ignored by the broker)",
        )
