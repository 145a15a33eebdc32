"""Where the broker's recovery starts walking a queue of mapped files: one rule for every walk imitating it.

* Normal recovery of the commitlog in 4.9.8 and 5.0-5.3.1 (`CommitLog.recoverNormally`, 4.9.8
  CommitLog.java:215 `mappedFiles.size() - 3`) and every consume queue's `recover()` (`ConsumeQueue.recover`,
  5.3.3 ConsumeQueue.java:127; BatchConsumeQueue the same) start at the third-from-last file and take the
  files before it as whole.
* 5.3.2+ starts the commitlog at the last file that begins at or before the consume queues' max physical
  offset (5.3.3 CommitLog.java:327-340, `recoverNormally(maxPhyOffsetOfConsumeQueue)`).
* Abnormal recovery (`recoverAbnormally`, 5.3.3 CommitLog.java:712-730) starts at the last file whose first
  record is a message stored at or before the checkpoint's min time, else at the first file.

Pure functions of file lists: `store.log.commitlog`, the appender, the ConsumeQueue writer, the unit queues'
recover walk (`store.log.mappedfile`) and the checks (`store.checks.storefiles`, the audit) all ask here.
"""

from __future__ import annotations

from collections.abc import Sequence

FILES_WALKED = 3  # the files a normal recovery walks: the third-from-last to the last


def recovery_start_normal(file_starts: Sequence[int], cq_max_phy: int | None = None) -> int | None:
    """Index of the file normal recovery starts from (None without files): the third-from-last (4.9.x,
    5.0-5.3.1, every consume queue), or with `cq_max_phy` (5.3.2+ commitlog) the last file starting at or
    before maxPhyOffsetOfConsumeQueue."""
    if not file_starts:
        return None
    if cq_max_phy is None:
        return max(0, len(file_starts) - FILES_WALKED)
    idx = [i for i, s in enumerate(file_starts) if s <= cq_max_phy]
    return idx[-1] if idx else 0


def recovery_start_abnormal(first_records: Sequence[tuple[int, int] | None], bound: int) -> int:
    """`recoverAbnormally`: the last file whose first record is a message with 0 < STORETIMESTAMP <=
    bound (checkpoint min timestamp); else the first file. first_records: (magic ok, storeTs) or None."""
    for i in range(len(first_records) - 1, -1, -1):
        fr = first_records[i]
        if fr is not None and 0 < fr[1] <= bound:
            return i
    return 0
