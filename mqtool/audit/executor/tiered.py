"""What a Spark task of the audit's tiered scan runs on the executors: one tiered COMMIT_LOG segment decoded.

A segment (`store.tiered.flatfile.Segment`) holds whole messages of one queue in queue order; the task
decodes it up to its commit position (`store.tiered.scan.decode_segment`; CRCs checked as the audit's scan
checks them), and returns one small dict: the accepted messages' count, bytes, first and last queue offset
and store time, how many of them lie below `below` (the queue offsets the broker serves from the tiered
store), and where the walk stopped before the end (a damaged message) or why the file could not be read.
Like `mqtool.audit.executor.scan`, this module imports only the standard library, numpy, pyarrow and our
`formats`/`store` packages.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from store.tiered.scan import decode_segment


@dataclass(frozen=True)
class SegmentTask:
    """One tiered COMMIT_LOG segment of one queue of one audited store (what a task is sent)."""

    store: int
    topic: str
    queue_id: int
    path: str
    base: int  # the segment's base offset in the queue's tiered COMMIT_LOG
    committed: int  # its commit position: the bytes the broker reads
    below: int  # queue offsets under this one are served from the tiered store
    check_crc: bool

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def scan_segment(task: SegmentTask) -> dict[str, Any]:
    """The segment's facts (see the module docstring)."""
    out: dict[str, Any] = {"task": task.to_json(), "messages": 0, "bytes": 0, "served": 0, "servedBytes": 0}
    scan = decode_segment(task.path, task.base, task.committed, check_crc=task.check_crc)
    if scan.error is not None:
        out["error"] = scan.error
    if scan.stop is not None:
        out["stop"] = {"position": scan.stop[0], "status": scan.stop[1]}
    batch = scan.batch
    if batch is None or not batch.num_rows:
        return out
    sizes = batch.column("totalSize").to_numpy(zero_copy_only=False)
    offsets = batch.column("queueOffset").to_numpy(zero_copy_only=False)
    times = batch.column("storeTimestamp").to_numpy(zero_copy_only=False)
    served = offsets < task.below
    out.update(
        messages=batch.num_rows,
        bytes=int(sizes.sum()),
        served=int(served.sum()),
        servedBytes=int(sizes[served].sum()),
        firstQueueOffset=int(offsets[0]),
        lastQueueOffset=int(offsets[-1]),
        firstStoreTime=int(times.min()),
        lastStoreTime=int(times.max()),
    )
    return out
