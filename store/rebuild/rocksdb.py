"""`rebuild --dry-run` on a RocksDB-mode store: the consume queues rebuilt from the commitlog (as files, in
the staging directory) against the units the broker keeps in RocksDB, queue by queue.

Only the comparison: mqtool writes no RocksDB consume queue (`rebuild --execute` is refused there).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from store.queue.consumequeue import ConsumeQueue
from store.rebuild.build import BuildResult, QueueDiff
from store.rocksdb.consumequeue import RocksDBConsumeQueueStore

_FIELDS = ("queueOffset", "phyOffset", "size", "tagsCode")


def compare_rocksdb_queues(root: Path, result: BuildResult) -> list[QueueDiff]:
    """Each queue in RocksDB or in the rebuild: same, differs (first differing offset), new or removed."""
    old = RocksDBConsumeQueueStore(root, commitlog_min_offset=result.commitlog_min_offset)
    try:
        old_queues = set(old.queues())
        diffs = []
        for topic, queue_id in sorted(old_queues | set(result.queues)):
            new = result.queues.get((topic, queue_id))
            was = old.open(topic, queue_id) if (topic, queue_id) in old_queues else None
            diff = QueueDiff(
                topic,
                queue_id,
                "same",
                was.min_offset if was else None,
                was.max_offset if was else None,
                new.min_offset if new else None,
                new.max_offset if new else None,
                0,
                len(new.files) if new else 0,
            )
            if new is None:
                diff.status = "removed"
            elif was is None:
                diff.status = "new"
            else:
                rebuilt = ConsumeQueue(
                    result.staging, topic, queue_id, commitlog_min_offset=result.commitlog_min_offset
                )
                try:
                    diff.first_difference = _first_difference(was.units(), rebuilt.units())
                finally:
                    rebuilt.close()
                if diff.first_difference is not None or (diff.old_min, diff.old_max) != (
                    diff.new_min,
                    diff.new_max,
                ):
                    diff.status = "differs"
            diffs.append(diff)
        return diffs
    finally:
        old.close()


def _first_difference(a: np.ndarray, b: np.ndarray) -> int | None:
    """The first queue offset where the two unit runs ([min, max) each) differ, None when equal."""
    n = min(len(a), len(b))
    same = np.ones(n, dtype=bool)
    for name in _FIELDS:
        same &= a[name][:n] == b[name][:n]
    if not same.all():
        return int(a["queueOffset"][int(np.argmin(same))])
    if len(a) != len(b):
        longer = a if len(a) > len(b) else b
        return int(longer["queueOffset"][n])
    return None


__all__ = ["compare_rocksdb_queues"]
