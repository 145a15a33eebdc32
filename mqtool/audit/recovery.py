"""Where the broker's recovery walk of a store ends, from the STOP rows of its splits: a BLANK moves on to
the next file, the first record the broker rejects is the truncation point (`recovery_cut`), and each
file's walk as `store.checks.CommitLogFile`s for `check_commitlog` (`file_summaries`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mqtool.audit.plan import CommitLogFile, Split, StorePlan, relative_path

CLEAN_ENDS = ("blank", "end")


@dataclass
class SplitStop:
    """What one range's walk found (its STOP row: `mqtool.audit.session.spark._walk_facts`)."""

    seq: int
    status: str | None  # None: the range ended at a record boundary
    records: int
    bytes: int
    facts: dict[str, Any]


@dataclass
class Cut:
    """Where the recovery walk of one store ends, and which ranges lie before it."""

    valid_seqs: list[int]
    end_offset: int  # physical offset where valid data ends
    kind: str  # end | blank | a failure status | none
    file: CommitLogFile | None


def recovery_cut(plan: StorePlan, splits: list[Split], stops: dict[int, SplitStop]) -> Cut:
    """Walk the files in order: a BLANK moves on to the next file; anything else ends the walk there.

    The ranges before the end (up to the one holding it) are the valid ones; later ranges decoded records
    the broker's recovery would truncate, and are left out of every figure.
    """
    by_file: dict[int, list[Split]] = {}
    for s in splits:
        if s.store == plan.index:
            by_file.setdefault(s.file_index, []).append(s)
    if any(f.entries for f in plan.files):
        return _dledger_cut(plan, by_file)
    valid: list[int] = []
    files = [(i, f) for i, f in enumerate(plan.files) if f.size > 0]
    for n, (file_index, f) in enumerate(files):
        stop: SplitStop | None = None
        for s in by_file.get(file_index, []):
            valid.append(s.seq)
            if stops[s.seq].status is not None:
                stop = stops[s.seq]
                break
        if stop is not None and stop.status == "blank":
            if n < len(files) - 1:
                continue
            return Cut(valid, f.start_offset + f.size, "blank", f)
        if stop is None:  # records run to the very end of the file: the next read fails there
            return Cut(valid, f.start_offset + f.size, "none", f)
        return Cut(valid, f.start_offset + int(stop.facts["pos"]), stop.status or "none", f)
    end = plan.files[-1].start_offset + plan.files[-1].size if plan.files else 0
    return Cut(valid, end, "empty", None)


def _dledger_cut(plan: StorePlan, by_file: dict[int, list[Split]]) -> Cut:
    """A DLedger commitlog ends where DLedger's recovery ends its data (`store.log.dledger`): the classic
    files below the divided offset and the data files up to that end are valid."""
    recovery = plan.store.commitlog.log.recovery
    valid = [s.seq for i, f in enumerate(plan.files) if not f.entries or f.start_offset < recovery.end
             for s in by_file.get(i, [])]  # fmt: skip
    data = [f for f in plan.files if f.entries]
    stop = next((f for f in data if f.start_offset <= recovery.end < f.start_offset + f.size), data[-1])
    kind = "end" if recovery.reason in ("end", "last_pad", "pad") else recovery.reason
    return Cut(valid, recovery.end, kind, stop)


def file_summaries(plan: StorePlan, splits: list[Split], stops: dict[int, SplitStop], *, first_rows: bool):
    """Per commitlog file, what `store.log.scan.scan_file` would have found, assembled from the ranges' walk
    facts, as `store.checks.CommitLogFile`s for `check_commitlog` (with `first_rows`, a one-row batch
    of each file's first record for the recovery-start rule)."""
    from store.log.scan import CommitLogFile

    class FileSummary(CommitLogFile):
        """A commitlog file known by its walk facts, not its records."""

        def __init__(self, name, start, size, stop, messages, beyond, batch=None):
            super().__init__(name, start, size, batch)
            self._stop, self._messages, self._beyond = stop, messages, beyond

        def stop(self):
            return self._stop

        def message_count(self):
            return self._messages

        def beyond_count(self):
            return self._beyond

    import pyarrow as pa

    by_file: dict[int, list[Split]] = {}
    for s in splits:
        if s.store == plan.index:
            by_file.setdefault(s.file_index, []).append(s)
    out = []
    for file_index, f in enumerate(plan.files):
        name = relative_path(plan, f)
        messages, stop, last_ok, first = 0, None, None, None
        stop_facts: dict[str, Any] = {}
        for s in by_file.get(file_index, []):
            st = stops[s.seq]
            messages += st.records
            if "first" in st.facts:
                first = st.facts["first"]
            if "lastOk" in st.facts:
                last_ok = st.facts["lastOk"]
            if st.status is not None:
                stop = (st.status, int(st.facts["pos"]), int(st.facts["total"]))
                stop_facts = st.facts
                break
        if stop is None and last_ok is not None:
            stop = ("ok", int(last_ok[0]), int(last_ok[1]))
        batch = None
        if first_rows and first is not None:
            batch = pa.RecordBatch.from_pydict(
                {
                    "status": pa.array([first[0]], pa.string()),
                    "storeTimestamp": pa.array([first[1]], pa.int64()),
                }
            )
        summary = FileSummary(
            name, f.start_offset, f.size, stop, messages, int(stop_facts.get("beyond", 0)), batch
        )
        summary.data_end = int(stop_facts.get("dataEnd", 0))
        summary.stop_data_end = stop_facts.get("stopDataEnd")
        out.append(summary)
    return out
