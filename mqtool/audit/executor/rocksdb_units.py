"""The audit's executors read ConsumeQueue units from files by path; a RocksDB-mode store has none. So the
driver writes each RocksDB queue's units, in the ConsumeQueue file layout (20-byte big-endian units from the
first unit still in RocksDB, fillers in any gap), into a private temporary directory outside the store,
removed when the process ends, and the executors read that file as they read a ConsumeQueue file.
"""

from __future__ import annotations

import atexit
import hashlib
import shutil
import tempfile
from functools import cache
from pathlib import Path

import numpy as np

from formats.consumequeue import FILLER_SIZE, cq_unit_dtype, filler_mask
from mqtool.audit.schema import CqFile


@cache
def _scratch() -> Path:
    path = Path(tempfile.mkdtemp(prefix="mqtool-audit-rocksdb-"))
    atexit.register(shutil.rmtree, path, True)
    return path


def rocksdb_cq_file(cq) -> tuple[CqFile | None, int]:
    """(the queue's units as a ConsumeQueue-layout file, phy end of its last unit) for a RocksDB queue."""
    units = cq.units(0)
    if not len(units):
        return None, 0
    first = int(units["queueOffset"][0])
    count = int(units["queueOffset"][-1]) - first + 1
    dense = np.zeros(count, dtype=cq_unit_dtype())
    dense["size"] = FILLER_SIZE  # a gap reads as the broker's pre-blank filler, which the checks skip
    at = units["queueOffset"] - first
    dense["phyOffset"][at] = units["phyOffset"]
    dense["size"][at] = units["size"]
    dense["tagsCode"][at] = units["tagsCode"]
    # named by a digest of the topic: a RocksDB key's topic may be any string (hex of a 130-character
    # retry topic is already longer than a file name)
    digest = hashlib.sha256(cq.topic.encode("utf-8", "surrogatepass")).hexdigest()
    path = _scratch() / f"{digest}-{cq.queue_id}"
    path.write_bytes(dense.tobytes())
    real = dense[~filler_mask(dense)]
    lo, hi = (int(real["phyOffset"].min()), int(real["phyOffset"].max())) if len(real) else (1, 0)
    last_end = int(units["phyOffset"][-1]) + int(units["size"][-1])
    return CqFile(str(path), first, count, lo, hi), last_end


__all__ = ["rocksdb_cq_file"]
