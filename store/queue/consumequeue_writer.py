"""The ConsumeQueue writer: `ConsumeQueue.putMessagePositionInfo` for one queue, offline.

The "build consume queue repeatedly" skips (`offset + size <= maxPhysicOffset`, queue offset below the
write position), the `[BUG]logic queue order` case (the unit goes to the write position), new full-size
sparse files named by the next start offset, and `fillPreBlank` when the first file of a queue is
created for a non-zero queue offset. Its starting state is what `ConsumeQueue.recover()` leaves: write
position = end of the valid units, maxPhysicOffset = end of the last valid unit (a filler counts: the
broker's quirk). The reader it starts from is `store.queue.consumequeue.ConsumeQueue`.
"""

from __future__ import annotations

from pathlib import Path

from formats.consumequeue import CQ_UNIT_STRUCT, FILLER_PHY_OFFSET, FILLER_SIZE
from formats.structs import CQ_STORE_UNIT_SIZE
from store.io.filewrites import DispatchError, FileSet, create_sparse_file, last_nonzero_end, pwrite_all
from store.log.mappedfile import offset_to_file_name
from store.log.recovery import recovery_start_normal
from store.queue.consumequeue import ConsumeQueue

UNIT = CQ_STORE_UNIT_SIZE
_FILLER = CQ_UNIT_STRUCT.pack(FILLER_PHY_OFFSET, FILLER_SIZE, 0)


class ConsumeQueueWriter:
    """`ConsumeQueue.putMessagePositionInfo` for one queue, over its directory under `cq_root`."""

    def __init__(self, cq_root: Path, topic: str, queue_id: int, file_size: int) -> None:
        if file_size <= 0 or file_size % UNIT:
            raise DispatchError(f"ConsumeQueue file size {file_size} is not a positive multiple of {UNIT}")
        self.topic = topic
        self.queue_id = queue_id
        self.file_size = file_size
        self.directory = cq_root / topic / str(queue_id)
        self.warnings: list[str] = []
        if cq_root.name != "consumequeue":
            raise DispatchError("ConsumeQueue root must be a directory named consumequeue", str(cq_root))
        queue = ConsumeQueue(cq_root.parent, topic, queue_id, commitlog_min_offset=0, file_size=file_size)
        try:
            self._check_files(queue)
            self.write_end = queue.max_position if queue.files else 0
            # recover() keeps the files starting at or before the end and deletes the others
            self.file_starts: list[int] = [f.start_offset for f in queue.live_files]
            for f in queue.files:
                if f.start_offset > self.write_end and last_nonzero_end(f.path, 0, f.size) > 0:
                    raise DispatchError(
                        "ConsumeQueue file after the end of the valid units holds data (the broker deletes "
                        "it at its next start); remove it or start the broker once",
                        str(f.path),
                    )
            self.max_physic_offset = -1
            self.last_unit_end = -1  # end of the last unit that is not a filler
            if self.file_starts:
                first = recovery_start_normal([f.start_offset for f in queue.files]) or 0
                scan_start = queue.files[first].start_offset
                if self.write_end - UNIT >= scan_start:
                    last = queue.unit_at(self.write_end - UNIT)
                    assert last is not None
                    self.max_physic_offset = last.phy_offset + last.size
                    if not last.is_filler:
                        self.last_unit_end = self.max_physic_offset
        finally:
            queue.close()
        # Non-zero bytes after the write end in its file would be read as units once the gap before
        # them is filled: they are zeroed before the first new unit is written.
        self._stale: tuple[int, int, int] | None = None  # (file start, position, length)
        holder = next((f for f in self.file_starts if f <= self.write_end < f + file_size), None)
        if holder is not None:
            position = self.write_end - holder
            end = last_nonzero_end(self.directory / offset_to_file_name(holder), position, file_size)
            if end > position:
                self._stale = (holder, position, end - position)
        self.first_create = not self.file_starts
        self.min_logic_offset: int | None = None
        self._pending = bytearray()
        self._pending_start = self.write_end
        self.units_written = 0
        self.durable = True  # False: new files without fsync (a dry run's staging)

    def _check_files(self, queue: ConsumeQueue) -> None:
        for f in queue.files:
            if f.size != self.file_size:
                raise DispatchError(
                    f"file is {f.size} bytes but the ConsumeQueue file size is {self.file_size}", str(f.path)
                )
        for a, b in zip(queue.files, queue.files[1:], strict=False):
            if b.start_offset != a.start_offset + self.file_size:
                raise DispatchError(
                    "ConsumeQueue files are not consecutive (a file is missing in the middle)", str(b.path)
                )

    @property
    def max_offset(self) -> int:
        """The next queue offset the broker would assign (`getMaxOffsetInQueue`)."""
        return self.write_end // UNIT

    def put(self, phy_offset: int, size: int, tags_code: int, cq_offset: int) -> bool:
        """One unit, as `putMessagePositionInfo`; False when the broker would skip it as a repeat."""
        if phy_offset + size <= self.max_physic_offset:
            return False
        expect = cq_offset * UNIT
        fs = self.file_size
        if not self.file_starts:
            start = expect - expect % fs
            self.file_starts.append(start)
            self.write_end = start
            self._pending_start = start
        elif self.write_end >= self.file_starts[-1] + fs:  # the last file is full
            self.file_starts.append(self.file_starts[-1] + fs)
        if self.first_create and cq_offset != 0 and self.write_end == self.file_starts[-1]:
            # fillPreBlank: the queue's first file starts below this unit
            self.min_logic_offset = expect
            for _ in range((expect % fs) // UNIT):
                self._pending += _FILLER
                self.write_end += UNIT
        self.first_create = False
        if cq_offset != 0:
            if expect < self.write_end:
                return False  # "Build consume queue repeatedly"
            if expect != self.write_end:
                self.warnings.append(
                    f"{self.topic}/{self.queue_id}: queue offset {cq_offset} but the queue ends at "
                    f"{self.write_end // UNIT} (the broker logs '[BUG]logic queue order maybe wrong' and "
                    "writes the unit at the end)"
                )
        self.max_physic_offset = self.last_unit_end = phy_offset + size
        self._pending += CQ_UNIT_STRUCT.pack(phy_offset, size, tags_code)
        self.write_end += UNIT
        self.units_written += 1
        return True

    @property
    def has_pending(self) -> bool:
        return bool(self._pending) or self._stale is not None

    @property
    def pending_units(self) -> int:
        return len(self._pending) // UNIT

    def flush(self, files: FileSet, scratch: Path) -> None:
        """Write the pending units (new files first created full-size and sparse), then forget them."""
        if not self.has_pending:
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        if self._stale is not None:
            file_start, position, length = self._stale
            self._write(files, scratch, file_start, position, bytes(length))
            self._stale = None
        pos = self._pending_start
        data = memoryview(self._pending)
        fs = self.file_size
        while data:
            start = pos - pos % fs
            take = min(len(data), start + fs - pos)
            self._write(files, scratch, start, pos - start, data[:take])
            data = data[take:]
            pos += take
        self._pending = bytearray()
        self._pending_start = self.write_end

    def _write(self, files: FileSet, scratch: Path, file_start: int, position: int, data) -> None:
        path = self.directory / offset_to_file_name(file_start)
        if not path.exists():
            create_sparse_file(path, self.file_size, scratch, [(position, bytes(data))], durable=self.durable)
            return
        pwrite_all(files.fd(path), data, position)


__all__ = ["ConsumeQueueWriter"]
