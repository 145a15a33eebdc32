"""Checkpoint and store-state checks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from store.checks.problems import WARNING, ProblemList


def check_checkpoint(
    checkpoint: Any,
    problems: ProblemList,
    *,
    abort: bool,
    last_store_ts: int | None,
    dispatched_store_ts: int | None,
    index_files: Sequence[tuple[str, int]] = (),
    file: str = "checkpoint",
) -> None:
    """The checkpoint against the data. `checkpoint` has physic/logics/index_msg_timestamp (None when the
    file is missing); last_store_ts is the newest STORETIMESTAMP before the valid end,
    dispatched_store_ts the newest of a record with a ConsumeQueue unit; index_files are
    (name, endTimestamp)."""
    if abort:
        problems.add(
            "abort_present",
            "abort",
            None,
            "the broker did not shut down cleanly: its next start runs abnormal recovery",
        )
    if checkpoint is None:
        problems.add("checkpoint_missing", file, None, "no checkpoint file (the broker creates a zero one)")
        return
    physic = checkpoint.physic_msg_timestamp
    logics = checkpoint.logics_msg_timestamp
    index = checkpoint.index_msg_timestamp
    if last_store_ts is not None and physic > last_store_ts:
        problems.add(
            "checkpoint_ahead",
            file,
            0,
            f"physicMsgTimestamp {physic} is newer than the newest record ({last_store_ts}): flushed data "
            "is missing",
        )
    if dispatched_store_ts is not None and logics > dispatched_store_ts:
        problems.add(
            "checkpoint_ahead",
            file,
            8,
            f"logicsMsgTimestamp {logics} is newer than the newest dispatched record ({dispatched_store_ts})",
            WARNING,
        )
    if index_files and index > max(ts for _, ts in index_files):
        problems.add(
            "checkpoint_ahead",
            file,
            16,
            f"indexMsgTimestamp {index} is newer than every index file's endTimestamp",
            WARNING,
        )
    if abort:
        dropped = [name for name, ts in index_files if ts > index]
        if dropped:
            problems.add(
                "index_dropped_on_recovery",
                dropped[0],
                None,
                f"{len(dropped)} index file(s) end after indexMsgTimestamp {index}; the broker deletes "
                f"them at its abnormal start ({', '.join(n.rsplit('/', 1)[-1] for n in dropped[:3])})",
            )
