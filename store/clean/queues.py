"""`CleanConsumeQueueService` and the index cleaning: what goes once the commitlog's min offset moves.

A run (5.3.3 DefaultMessageStore.java:2485-2520, 4.9.8 :1861-1895) acts only when the commitlog's min
offset grew since its last run (`lastPhysicalMinOffset`, 0 when the broker starts). Then for every
ConsumeQueue `deleteExpiredFile(minOffset)`: `MappedFileQueue.deleteExpiredFileByOffset` (5.3.3
MappedFileQueue.java:533-573) deletes from the first file, never the last, each file whose last unit points
below the min offset, stopping at the first that does not; then `correctMinOffset` moves the queue's min
offset (5.3.3 ConsumeQueue.java:540-669: none left -> the queue's max; else the first unit of the first file
at or above the min offset; 4.9.8 ConsumeQueue.java:343-378: only the first-file scan, and the min offset
stays where it was when no unit of that file qualifies). Then `IndexService.deleteExpiredFile(minOffset)`
(5.3.3 IndexService.java:99-150): when the first index file ends below it, every file but the last whose
endPhyOffset is below it, in order, stopping at the first that is not.
"""

from __future__ import annotations

from dataclasses import dataclass

from formats.consumequeue import filler_mask, units_view
from formats.structs import CQ_STORE_UNIT_SIZE as UNIT
from store.log.mappedfile import MappedFile
from store.queue.consumequeue import ConsumeQueue


@dataclass
class QueueState:
    """One ConsumeQueue during a forecast: its files still there and its min offset."""

    topic: str
    queue_id: int
    queue: ConsumeQueue
    files: list[MappedFile]
    min_offset: int
    max_offset: int

    @classmethod
    def of(cls, queue: ConsumeQueue, major: int) -> QueueState:
        min_offset = queue.min_offset if major >= 5 else queue.min_offset_v4
        return cls(queue.topic, queue.queue_id, queue, list(queue.live_files), min_offset, queue.max_offset)

    def _last_phy_of_file(self, f: MappedFile) -> int:
        """The physical offset of a full file's last unit (`selectMappedBuffer(fileSize - 20)`)."""
        return int(units_view(f.read(self.queue.file_size - UNIT, UNIT), str(f.path))["phyOffset"][0])

    def delete_expired(self, commitlog_min: int, major: int) -> list[MappedFile]:
        """`ConsumeQueue.deleteExpiredFile(commitlog_min)`: the files deleted; min offset corrected."""
        deleted: list[MappedFile] = []
        for f in self.files[:-1]:
            if self._last_phy_of_file(f) >= commitlog_min:
                break
            deleted.append(f)
        self.files = self.files[len(deleted) :]
        self._correct_min_offset(commitlog_min, major)
        return deleted

    def _correct_min_offset(self, commitlog_min: int, major: int) -> None:
        if not self.files:
            return
        end = self.max_offset * UNIT
        if major >= 5:
            if self.min_offset * UNIT >= end:
                return  # "contains no valid entries"
            last = self.files[-1]
            read = end - last.start_offset
            if read >= UNIT:
                phy = int(units_view(last.read(read - UNIT, UNIT), str(last.path))["phyOffset"][0])
                if phy < commitlog_min:
                    self.min_offset = self.max_offset
                    return
        first = self.files[0]
        readable = max(0, min(self.queue.file_size, end - first.start_offset))
        start = 0
        if major >= 5:
            start = max(0, self.min_offset * UNIT - first.start_offset)
            if start > readable:
                return
        units = units_view(first.read(start, readable - start), str(first.path))
        hit = (units["phyOffset"] >= commitlog_min) & ~filler_mask(units)
        if hit.any():
            import numpy as np

            self.min_offset = (first.start_offset + start) // UNIT + int(np.argmax(hit))


def index_files_deleted(headers: list[tuple[str, int]], commitlog_min: int) -> list[str]:
    """`IndexService.deleteExpiredFile(commitlog_min)` over (file name, endPhyOffset), oldest first."""
    if not headers or headers[0][1] >= commitlog_min:
        return []
    deleted = []
    for name, end in headers[:-1]:
        if end >= commitlog_min:
            break
        deleted.append(name)
    return deleted
