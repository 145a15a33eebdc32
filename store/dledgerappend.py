"""What a DLedger broker writes around each message it appends (`DLedgerMmapFileStore.appendAsLeader`,
D:DMFS:346-385; `MmapFileList.preAppend`, D:store/file/MmapFileList.java:188-226): the 48-byte entry header
before the record (index, term, pos; the record's PHYSICALOFFSET = pos + 48, set by DLedgerCommitLog's
AppendHook), a pad
when the entry and 8 bytes do not fit the file's rest, the 32-byte index unit of every entry, and at a clean
shutdown DLedger's `checkpoint` and `currterm` (`IOUtils.string2File`). Used by `CommitLogAppender` for a
store created as a one-peer DLedger group's (`mqtool sample create --dledger`); mqtool never appends to an
existing DLedger log (store/kind.py)."""

from __future__ import annotations

import os
from pathlib import Path

from formats.dledger import (
    BODY_OFFSET,
    CHECKPOINT_FILE,
    CURRTERM_FILE,
    INDEX_FILE_SIZE,
    INDEX_UNIT_SIZE,
    MAGIC_1,
    MIN_BLANK_LEN,
    IndexUnit,
    encode_entry,
    encode_index_unit,
    encode_pad,
    format_checkpoint,
)
from store.io.filewrites import FileSet, create_sparse_file, fsync_dir, pwrite_all, replace_file, temp_path
from store.log.mappedfile import offset_to_file_name

SELF_ID = "n0"  # the one peer's id (RocketMQ wants a letter and a number: R5 DLedgerCommitLog.java:104)
TERM = 0  # a one-peer group elects itself in term 0 and keeps it


class DLedgerFramer:
    """Entry headers, pads and index units for the appends of one run, from entry index `first_index`."""

    def __init__(self, home: Path, first_index: int = 0, term: int = TERM) -> None:
        self.home = home
        self.next_index = first_index
        self.term = term
        self._units: list[tuple[int, bytes]] = []  # (index, unit) not written yet

    @property
    def data_dir(self) -> Path:
        return self.home / "data"

    def needs_pad(self, record_length: int, room: int) -> bool:
        """`preAppend`: the entry and the 8-byte minimum pad must fit the file's rest."""
        return record_length + BODY_OFFSET + MIN_BLANK_LEN > room

    @staticmethod
    def pad(room: int) -> bytes:
        return encode_pad(room)

    def entry(self, pos: int, record: bytes) -> bytes:
        """The entry at data offset `pos` holding `record` (whose PHYSICALOFFSET must be pos + 48)."""
        index = self.next_index
        self.next_index += 1
        data = encode_entry(index, self.term, pos, record)
        self._units.append((index, encode_index_unit(IndexUnit(MAGIC_1, pos, len(data), index, self.term))))
        return data

    def write_units(self, scratch: Path) -> None:
        """Write the pending index units (each at index * 32), fsynced; index files are created sparse."""
        if not self._units:
            return
        index_dir = self.home / "index"
        index_dir.mkdir(parents=True, exist_ok=True)
        files = FileSet()
        try:
            for index, unit in self._units:
                at = index * INDEX_UNIT_SIZE
                start = at - at % INDEX_FILE_SIZE
                path = index_dir / offset_to_file_name(start)
                if not path.exists():
                    create_sparse_file(path, INDEX_FILE_SIZE, scratch)
                pwrite_all(files.fd(path), unit, at - start)
            files.sync_and_close()
        finally:
            files.close()
        self._units = []

    def write_state(self, scratch: Path) -> None:
        """DLedger's checkpoint (the last entry committed, as a clean one-peer shutdown leaves it) and
        currterm, each replaced atomically with the previous content in `.bak` (`IOUtils.string2File`)."""
        last = self.next_index - 1
        self._replace(CHECKPOINT_FILE, format_checkpoint(last, last), scratch)
        self._replace(CURRTERM_FILE, f"voteLeader={SELF_ID}\ncurrTerm={self.term}\n", scratch)

    def _replace(self, name: str, text: str, scratch: Path) -> None:
        path = self.home / name
        if path.exists():
            previous = path.read_bytes()
            bak = temp_path(scratch, name + ".bak")
            bak.write_bytes(previous)
            replace_file(bak, self.home / (name + ".bak"))
        tmp = temp_path(scratch, name)
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        replace_file(tmp, path)
        fsync_dir(self.home)


__all__ = ["SELF_ID", "TERM", "DLedgerFramer"]
