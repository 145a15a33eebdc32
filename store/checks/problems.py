"""The problems table (`PROBLEM_SCHEMA`, `ProblemList`), the kinds and their default severities."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from formats.columnar.decoder import STATUS_NAMES

PROBLEM_SCHEMA = pa.schema(
    [
        pa.field("store", pa.string()),
        pa.field("file", pa.string()),
        pa.field("offset", pa.int64()),
        pa.field("kind", pa.string(), nullable=False),
        pa.field("severity", pa.string(), nullable=False),
        pa.field("detail", pa.string(), nullable=False),
    ]
)

ERROR, WARNING, INFO = "error", "warning", "info"
SEVERITY_ORDER = {ERROR: 0, WARNING: 1, INFO: 2}

# kind -> default severity (a call may override it, e.g. undispatched without `abort`)
KINDS: dict[str, str] = {
    # commitlog
    "commitlog_unreadable": ERROR,
    "commitlog_file_size": ERROR,
    "commitlog_file_gap": ERROR,
    "commitlog_empty_last_file": INFO,
    "bad_magic": ERROR,
    "size_chain": ERROR,
    "crc_mismatch": ERROR,
    "bad_property": ERROR,
    "truncated_tail": ERROR,
    "premature_end": ERROR,
    "phy_offset_field": ERROR,
    "nonzero_after_end": WARNING,
    "blank_size": WARNING,
    "nonzero_after_blank": INFO,
    # DLedger commitlog (store/checks/dledger.py)
    "dledger_file": ERROR,
    "dledger_exit": ERROR,
    "dledger_entry": ERROR,
    "dledger_torn_tail": ERROR,
    "dledger_body_size": ERROR,
    "dledger_index_unit": ERROR,
    "dledger_checkpoint": ERROR,
    "dledger_uncommitted": WARNING,
    "dledger_pad": WARNING,
    "nonzero_after_pad": INFO,
    "illegal_topic": ERROR,
    "illegal_lmq_name": ERROR,
    # consume queues
    "cq_file": ERROR,
    "cq_not_checked": WARNING,
    "cq_order": ERROR,
    "cq_points_outside": ERROR,
    "cq_not_record_start": ERROR,
    "cq_size_mismatch": ERROR,
    "cq_topic_mismatch": ERROR,
    "cq_queue_mismatch": ERROR,
    "cq_queue_offset_mismatch": ERROR,
    "cq_tags_code_mismatch": ERROR,
    "cq_missing_unit": ERROR,
    "lmq_unit_not_named": ERROR,
    "lmq_queue_offset_mismatch": ERROR,
    "lmq_missing_unit": ERROR,
    "cq_nonzero_after_end": WARNING,
    "cq_dirty_files": WARNING,
    "cq_expired_units": INFO,
    "cq_ext_tags": INFO,
    # BatchCQ topics (batchconsumequeue/)
    "bcq_file": ERROR,
    "bcq_points_outside": ERROR,
    "bcq_not_record_start": ERROR,
    "bcq_unit_mismatch": ERROR,
    "bcq_offset_gap": ERROR,
    "bcq_inner_num": ERROR,
    "bcq_queue_type": ERROR,
    "undispatched": WARNING,
    "unconfirmed": WARNING,  # controller mode's tail past the confirm offset (store.log.confirm)
    "past_confirm": INFO,
    "deleted_topic": INFO,
    "orphan_topic": WARNING,  # store/checks/orphans.py
    "orphan_queue": WARNING,
    "orphan_offsets": INFO,  # mqtool/verify.py, by offsets prune's rules
    # compaction topics (compaction/, store/checks/compaction.py)
    "compaction_sanity": ERROR,
    "compaction_not_served": ERROR,
    "compaction_dir": ERROR,
    "compaction_unit_mismatch": ERROR,
    "compaction_order": ERROR,
    "compaction_no_keys": ERROR,
    "compaction_duplicate_key": ERROR,
    "compaction_tombstone_kept": WARNING,
    "compaction_leftover": WARNING,
    "compaction_checkpoint": WARNING,
    # the tiered store's tree against its metadata (store.checks.tiered)
    "tiered_layout": ERROR,
    "tiered_metadata": ERROR,
    "tiered_segment_missing": ERROR,
    "tiered_segment_size": ERROR,
    "tiered_segment_gap": ERROR,
    "tiered_segment_unlisted": WARNING,
    "tiered_cq_unit": ERROR,
    "tiered_message": ERROR,  # a tiered COMMIT_LOG segment's walk stops at a message (audit's scan)
    # index
    "index_file": ERROR,
    "index_header": ERROR,
    "index_chain": ERROR,
    "index_unreachable": ERROR,
    "index_points_nowhere": ERROR,
    "index_key_unreachable": ERROR,
    "index_beyond_end": WARNING,
    "index_behind": WARNING,
    "index_dropped_on_recovery": WARNING,
    "index_expired_entries": INFO,
    "not_indexed": INFO,
    # the 5.x timer wheel (store.checks.timer)
    "timer_file": ERROR,
    "timer_log_cut": ERROR,
    "timer_unit_target": ERROR,
    "timer_expired_units": INFO,
    "timer_slot_misplaced": ERROR,
    "timer_slot_chain": ERROR,
    "timer_slot_count": WARNING,
    "timer_check_ahead": ERROR,
    "timer_reenqueue": WARNING,
    "timer_recovery": INFO,
    # checkpoint, state
    "checkpoint_missing": WARNING,
    "checkpoint_unreadable": ERROR,
    "checkpoint_ahead": ERROR,
    "controller_load": ERROR,  # a confirm offset the controller-mode load fails on (store.log.confirm)
    "abort_present": WARNING,
    "broker_running": WARNING,
    "layout_unsupported": ERROR,
    "recovery": INFO,
    "more": INFO,
}

FAILURE_KIND = {
    "bad_magic": "bad_magic",
    "truncated": "size_chain",
    "size_mismatch": "size_chain",
    "crc_mismatch": "crc_mismatch",
    "bad_property": "bad_property",
}
_STATUS = {name: code for code, name in enumerate(STATUS_NAMES)}
OK, BLANK, END = _STATUS["ok"], _STATUS["blank"], _STATUS["end"]


def _as_string_array(value: Any, n: int) -> pa.Array:
    if isinstance(value, pa.ChunkedArray):
        value = value.combine_chunks()
    if isinstance(value, pa.Array):
        return value.cast(pa.string())
    if isinstance(value, str) or value is None:
        return pa.array([arrow_text(value)] * n, pa.string())
    return pa.array([arrow_text(v) for v in value], pa.string())


def fmt(*parts: Any) -> pa.Array:
    """Vectorised text: strings are repeated, numpy/Arrow arrays are formatted element-wise."""
    arrays: list[Any] = []
    n = None
    for p in parts:
        if isinstance(p, str):
            arrays.append(arrow_text(p))
            continue
        arr = p if isinstance(p, pa.Array | pa.ChunkedArray) else pa.array(np.asarray(p))
        arr = arr.cast(pa.string())
        n = len(arr)
        arrays.append(arr)
    if n is None:
        return pa.array(["".join(arrays)], pa.string())
    return pc.binary_join_element_wise(*arrays, "")


def arrow_text(value: str | None) -> str | None:
    """A string Arrow (UTF-8) holds: a file name that is not UTF-8 (its bytes as lone surrogates) or a
    lone surrogate from a JSON escape is written as its backslash escape."""
    if value is None:
        return None
    try:
        value.encode("utf-8")
        return value
    except UnicodeEncodeError:
        return value.encode("utf-8", "backslashreplace").decode("utf-8")


class ProblemList:
    """Collects problem rows; vectorised groups go in as arrays, single rows as tuples.

    `max_rows` caps each `add_many` call: the first rows are kept and one `more` row counts the rest.
    """

    def __init__(self, store: str | None = None, max_rows: int | None = 1000) -> None:
        self.store = store
        self.max_rows = max_rows
        self._rows: list[tuple[str | None, int | None, str, str, str]] = []
        self._tables: list[pa.Table] = []

    def add(
        self, kind: str, file: str | None, offset: int | None, detail: str, severity: str | None = None
    ) -> None:
        at = None if offset is None else int(offset)
        self._rows.append((arrow_text(file), at, kind, severity or KINDS[kind], arrow_text(detail)))

    def add_many(
        self,
        kind: str,
        files: Any,
        offsets: np.ndarray | Sequence[int],
        details: Any,
        severity: str | None = None,
    ) -> None:
        offsets = np.asarray(offsets, dtype=np.int64)
        n = len(offsets)
        if n == 0:
            return
        files_arr = _as_string_array(files, n)
        details_arr = _as_string_array(details, n)
        keep = n if self.max_rows is None else min(n, self.max_rows)
        sev = severity or KINDS[kind]
        self._tables.append(
            pa.table(
                {
                    "store": pa.array([self.store] * keep, pa.string()),
                    "file": files_arr.slice(0, keep),
                    "offset": pa.array(offsets[:keep]),
                    "kind": pa.array([kind] * keep, pa.string()),
                    "severity": pa.array([sev] * keep, pa.string()),
                    "detail": details_arr.slice(0, keep),
                },
                schema=PROBLEM_SCHEMA,
            )
        )
        if keep < n:
            last_file = files_arr[n - 1].as_py()
            self.add(
                "more",
                last_file,
                int(offsets[n - 1]),
                f"{n - keep} more {kind} problems like the above ({sev}); the last one is here",
                sev,
            )

    def extend(self, table: pa.Table) -> None:
        if table.num_rows:
            self._tables.append(table.cast(PROBLEM_SCHEMA))

    def __len__(self) -> int:
        return len(self._rows) + sum(t.num_rows for t in self._tables)

    def table(self) -> pa.Table:
        parts = list(self._tables)
        if self._rows:
            files, offsets, kinds, sevs, details = zip(*self._rows, strict=True)
            parts.append(
                pa.table(
                    {
                        "store": pa.array([self.store] * len(kinds), pa.string()),
                        "file": pa.array(files, pa.string()),
                        "offset": pa.array(offsets, pa.int64()),
                        "kind": pa.array(kinds, pa.string()),
                        "severity": pa.array(sevs, pa.string()),
                        "detail": pa.array(details, pa.string()),
                    },
                    schema=PROBLEM_SCHEMA,
                )
            )
        if not parts:
            return PROBLEM_SCHEMA.empty_table()
        return pa.concat_tables(parts)


def sort_problems(table: pa.Table) -> pa.Table:
    """Problems by file, then offset (rows without a file first)."""
    if table.num_rows == 0:
        return table
    return table.sort_by([("file", "ascending"), ("offset", "ascending"), ("kind", "ascending")])


def count_by_severity(table: pa.Table) -> dict[str, int]:
    counts = {ERROR: 0, WARNING: 0, INFO: 0}
    # value_counts, not group_by: a group_by imports pyarrow's query engine (acero, ~25 ms per command)
    for row in pc.value_counts(table.column("severity")).to_pylist():
        counts[row["values"]] = row["counts"]
    return counts
