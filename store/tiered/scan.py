"""One tiered COMMIT_LOG segment decoded whole by the columnar decoder: what `export --tiered` writes and
the audit's tiered scan counts.

A segment holds whole messages of one queue in queue order. It is read up to its commit position (the bytes
the broker reads) and decoded from position 0; the accepted rows are kept, and where the walk stops before
the end of those bytes (a message the broker's decode rejects) is said, as is a file shorter than its commit
position or one that cannot be read.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from store.io.filereads import read_range


@dataclass
class SegmentScan:
    """The accepted messages of one segment (None when it could not be read), the walk's early stop
    (position in the segment, status name) and what kept the bytes from being read whole."""

    batch: pa.RecordBatch | None
    stop: tuple[int, str] | None = None
    error: str | None = None


def decode_segment(
    path: str, base: int, committed: int, *, check_crc: bool, with_body: bool = False
) -> SegmentScan:
    """Decode the segment at `path` (base offset `base`) up to `committed` bytes."""
    from formats.columnar.decoder import STATUS_NAMES, STATUS_OK, decode_range

    try:
        data = read_range(path, 0, committed)
    except OSError as exc:
        return SegmentScan(None, error=f"cannot read: {exc.strerror}")
    error = f"{committed} bytes committed, the file holds {len(data)}" if len(data) < committed else None
    batch = decode_range(data, base, check_crc=check_crc, with_body=with_body)
    status = batch.column("status").indices.to_numpy(zero_copy_only=False)
    bad = np.flatnonzero(status != STATUS_OK)
    if not len(bad):
        return SegmentScan(batch, error=error)
    first = int(bad[0])
    position = int(batch.column("physicalOffset")[first].as_py()) - base
    stop = (position, STATUS_NAMES[int(status[first])]) if position < len(data) else None
    return SegmentScan(batch.slice(0, first), stop, error)
