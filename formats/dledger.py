"""DLedger's commitlog files (openmessaging/dledger 0.3.1.2, the version RocketMQ 4.9.8 and 5.3.3 pin): what
the bytes of `formats.structs.DLedgerEntryHeader`, `DLedgerPad` and `DLedgerIndexUnit` mean, the checks
DLedger's recovery applies to each entry, and its `checkpoint` / `currterm` properties.

A data file is a run of entries from position 0, then a pad (int -1, int bytes left to the file end) or
zeros. An entry is a 48-byte header and a body; for RocketMQ the body is one commitlog message record,
byte for byte the classic format, whose physical offset is **the entry's pos + 48** (its PHYSICALOFFSET
field says so: DLedgerCommitLog's AppendHook writes it). The index files hold entry i's 32-byte unit at
i * 32. Facts with file:line references: tests/oracle/DLEDGER.md (D: = dledger-all-0.3.1.2
`dledger/src/main/java/io/openmessaging/storage/dledger/`, DMFS = `store/file/DLedgerMmapFileStore.java`).
"""

from __future__ import annotations

import functools
import struct
from dataclasses import dataclass
from typing import NamedTuple

from formats.errors import FormatError
from formats.java.props import java_parse_long, parse_properties
from formats.structs import (
    DLEDGER_ENTRY_HEADER_SIZE,
    DLEDGER_INDEX_UNIT_SIZE,
    DLedgerEntryHeader,
    DLedgerIndexUnit,
    DLedgerPad,
)
from formats.twins import dtype_twin, struct_twin

MAGIC_1 = 1  # DLedgerMmapFileStore.MAGIC_1 = CURRENT_MAGIC: the only entry magic 0.3.1.2 writes (DMFS:47-48)
CURRENT_MAGIC = MAGIC_1
PAD_MAGIC = -1  # MmapFileList.BLANK_MAGIC_CODE (D:store/file/MmapFileList.java:35)
MIN_BLANK_LEN = 8  # MmapFileList.MIN_BLANK_LEN: an entry never ends in a file's last 7 bytes
HEADER_SIZE = 44  # DLedgerEntry.HEADER_SIZE: recovery wants size > 44
BODY_OFFSET = DLEDGER_ENTRY_HEADER_SIZE  # DLedgerEntry.BODY_OFFSET = 48
INDEX_UNIT_SIZE = DLEDGER_INDEX_UNIT_SIZE
# DLedgerConfig.mappedFileSizeForEntryIndex (D:DLedgerConfig.java:80); RocketMQ never sets it
INDEX_FILE_SIZE = 32 * 5 * 1024 * 1024
CHECKPOINT_FILE = "checkpoint"  # DMFS.CHECK_POINT_FILE: endIndex, committedIndex
CURRTERM_FILE = "currterm"  # MemberState.TERM_PERSIST_FILE: currTerm, voteLeader
COMMITTED_INDEX_KEY = "committedIndex"
END_INDEX_KEY = "endIndex"

ENTRY_HEADER = struct_twin("DLedgerEntryHeader", DLedgerEntryHeader, struct.Struct(">iiqqqiiii"))
INDEX_UNIT = struct_twin("DLedgerIndexUnit", DLedgerIndexUnit, struct.Struct(">iqiqq"))
PAD = struct.Struct(">ii")
_PAD_DECLARATION = DLedgerPad  # the pad as built: magic -1 first (the classic BLANK is size first)


@dtype_twin("DLedgerIndexUnit (numpy)", DLedgerIndexUnit)
@functools.cache
def index_unit_dtype():
    import numpy as np

    return np.dtype([("magic", ">i4"), ("pos", ">i8"), ("size", ">i4"), ("index", ">i8"), ("term", ">i8")])


@dtype_twin("DLedgerEntryHeader (numpy)", DLedgerEntryHeader)
@functools.cache
def entry_header_dtype():
    import numpy as np

    return np.dtype(
        [("magic", ">i4"), ("size", ">i4"), ("index", ">i8"), ("term", ">i8"), ("pos", ">i8"),
         ("channel", ">i4"), ("chainCrc", ">i4"), ("bodyCrc", ">i4"), ("bodySize", ">i4")]
    )  # fmt: skip


class EntryHeader(NamedTuple):
    """The 48-byte header of one entry."""

    magic: int
    size: int
    index: int
    term: int
    pos: int
    channel: int
    chain_crc: int
    body_crc: int
    body_size: int

    def unit(self) -> IndexUnit:
        """The index unit DLedger writes for this entry."""
        return IndexUnit(self.magic, self.pos, self.size, self.index, self.term)


class IndexUnit(NamedTuple):
    magic: int
    pos: int
    size: int
    index: int
    term: int


def message_offset(entry_pos: int) -> int:
    """The physical offset RocketMQ gives the message of the entry at `entry_pos` (the +48 rule)."""
    return entry_pos + BODY_OFFSET


def entry_position(physical_offset: int) -> int:
    """The entry whose message has this physical offset."""
    return physical_offset - BODY_OFFSET


def _java_int(value: int) -> int:
    """`value` wrapped to a Java int (DLedger adds sizes in int arithmetic)."""
    return (value + 2**31) % 2**32 - 2**31


# What ends DLedger's recovery walk at an entry (DMFS.recover :206-290), in the order it checks; "pad" and
# "end" are the two ways a file ends normally.
ENTRY_PAD = "pad"
ENTRY_END = "end"
ENTRY_REASONS = {
    "pad": "pad: the rest of the file is unused, the log goes on in the next file",
    "end": "size 0: the end of the written entries",
    "short": "fewer than 48 bytes left for an entry header before the file end",
    "pos": "the pos field is not the entry's own position",
    "body_size": "size is not bodySize + 48",
    "past_file_end": "the entry runs past the file end",
    "magic": "magic is not 1 (the only entry magic DLedger 0.3.1.2 writes)",
    "index": "index is not the previous entry's + 1",
    "term": "term is lower than the previous entry's",
    "small": "size is not greater than 44",
}


def check_entry(
    buf, position: int, file_start: int, file_size: int, prev_index: int = -1, prev_term: int = -1
) -> tuple[str, EntryHeader | None]:
    """One step of DLedger's recovery walk at `position` of a data file: ("ok", header) for an entry it
    keeps, else (a key of ENTRY_REASONS, the header when one was read). `prev_index` / `prev_term`: the
    previous kept entry's (-1 before the first: then the index is not checked, as in DLedger)."""
    left = file_size - position
    if left < 4:
        return "short", None
    (magic,) = struct.unpack_from(">i", buf, position)
    if magic == PAD_MAGIC:
        return ENTRY_PAD, None
    if left < 8:
        return "short", None
    (size,) = struct.unpack_from(">i", buf, position + 4)
    if size == 0:
        return ENTRY_END, None
    if left < BODY_OFFSET:
        return "short", None
    header = EntryHeader(*ENTRY_HEADER.unpack_from(buf, position))
    if header.pos != file_start + position:
        return "pos", header
    if _java_int(header.body_size + BODY_OFFSET) != size:
        return "body_size", header
    if not 0 <= position + size <= file_size:
        return "past_file_end", header
    if not MAGIC_1 <= magic <= CURRENT_MAGIC:
        return "magic", header
    if prev_index != -1 and header.index != prev_index + 1:
        return "index", header
    if header.term < prev_term:
        return "term", header
    if size <= HEADER_SIZE:
        return "small", header
    return "ok", header


def entry_header_at(raw: bytes, position: int) -> EntryHeader | None:
    """The header in `raw` (48 bytes read at absolute data offset `position`) when it is one DLedger's
    recovery keeps on its own: magic 1, its pos field its position, size bodySize + 48 and above 44 (what
    a reader positioned by an index unit or a physical offset can check without the walk)."""
    if len(raw) < BODY_OFFSET:
        return None
    header = EntryHeader(*ENTRY_HEADER.unpack_from(raw, 0))
    if (
        header.magic != MAGIC_1
        or header.pos != position
        or _java_int(header.body_size + BODY_OFFSET) != header.size
        or header.size <= HEADER_SIZE
    ):
        return None
    return header


def read_pad(buf, position: int) -> int | None:
    """The pad's remaining-bytes field at `position`, or None when no pad starts there."""
    if position + PAD.size > len(buf):
        return None
    magic, remaining = PAD.unpack_from(buf, position)
    return remaining if magic == PAD_MAGIC else None


def encode_entry(index: int, term: int, pos: int, body: bytes, magic: int = MAGIC_1) -> bytes:
    """An entry as `DLedgerEntryCoder.encode` writes it (channel, chain CRC and body CRC 0: 0.3.1.2 never
    sets them)."""
    return ENTRY_HEADER.pack(magic, BODY_OFFSET + len(body), index, term, pos, 0, 0, 0, len(body)) + body


def encode_pad(remaining: int) -> bytes:
    """The pad `MmapFileList.preAppend` writes when `remaining` bytes are left: magic, size, zeros."""
    return PAD.pack(PAD_MAGIC, remaining) + bytes(remaining - PAD.size)


def encode_index_unit(unit: IndexUnit) -> bytes:
    return INDEX_UNIT.pack(*unit)


def decode_index_unit(raw: bytes) -> IndexUnit:
    return IndexUnit(*INDEX_UNIT.unpack(raw))


# --- checkpoint and currterm (Java properties, `IOUtils.string2File`) -----------------------------------


@dataclass(frozen=True)
class LedgerCheckpoint:
    """`dledger-<selfId>/checkpoint` as `DLedgerMmapFileStore.loadCheckPoint` and `recover` read it: the
    committed index recovery takes (None: absent or empty, then -1), `endIndex` (informational)."""

    committed_index: int | None
    end_index: int | None
    text: str


def parse_checkpoint(text: str, file: str | None = None) -> LedgerCheckpoint:
    """Raise FormatError where DLedger's recover throws (`Long.valueOf` of a committedIndex that is not a
    number: the broker's load fails)."""
    props = parse_properties(text)
    committed = props.get(COMMITTED_INDEX_KEY, "").strip()
    value = None
    if committed:
        value = java_parse_long(committed)
        if value is None:
            raise FormatError(
                f"committedIndex {committed!r} is not a number: DLedger's recovery throws and the broker "
                "does not load the store",
                file,
            )
    end = props.get(END_INDEX_KEY, "").strip()
    return LedgerCheckpoint(value, java_parse_long(end) if end else None, text)


def format_checkpoint(end_index: int, committed_index: int) -> str:
    """`persistCheckPoint`'s text: Properties (a Hashtable) iterates committedIndex before endIndex."""
    return f"{COMMITTED_INDEX_KEY}={committed_index}\n{END_INDEX_KEY}={end_index}\n"


def parse_currterm(text: str) -> tuple[int | None, str | None]:
    """(currTerm, voteLeader) of `currterm` (`MemberState.loadTerm`): None where absent or empty."""
    props = parse_properties(text)
    term = props.get("currTerm", "").strip()
    leader = props.get("voteLeader", "").strip()
    return (java_parse_long(term) if term else None), (leader or None)


__all__ = [
    "BODY_OFFSET",
    "CHECKPOINT_FILE",
    "COMMITTED_INDEX_KEY",
    "CURRENT_MAGIC",
    "CURRTERM_FILE",
    "END_INDEX_KEY",
    "ENTRY_END",
    "ENTRY_HEADER",
    "ENTRY_PAD",
    "ENTRY_REASONS",
    "EntryHeader",
    "HEADER_SIZE",
    "INDEX_FILE_SIZE",
    "INDEX_UNIT",
    "INDEX_UNIT_SIZE",
    "IndexUnit",
    "LedgerCheckpoint",
    "MAGIC_1",
    "MIN_BLANK_LEN",
    "PAD",
    "PAD_MAGIC",
    "check_entry",
    "decode_index_unit",
    "encode_entry",
    "encode_index_unit",
    "encode_pad",
    "entry_header_at",
    "entry_header_dtype",
    "entry_position",
    "format_checkpoint",
    "index_unit_dtype",
    "message_offset",
    "parse_checkpoint",
    "parse_currterm",
    "read_pad",
]
