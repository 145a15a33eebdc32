"""The controller mode's epoch file (`epochFileCheckpoint` in the store root): AutoSwitchHAService's
EpochFileCache persisted through `CheckpointFile` (5.3.3 common/.../utils/CheckpointFile.java:81-139).

Text, one value a line (Java's line separator, "\\n" here): the number of entries, the CRC of the entry lines
(`UtilAll.crc32`: CRC-32 masked to 31 bits, over every entry line with its separator; 0 means "not
checked"), then one `epoch-startOffset` line per entry (EpochFileCache.EpochEntrySerializer, :305-327). A
line that is not two numbers joined by `-` yields no entry, and then the count does not match: the read
fails (IOException) as it does for a CRC mismatch; a count or CRC line that is not an int throws
NumberFormatException, which the broker's start does not catch.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass

from formats.errors import FormatError
from formats.java.props import java_parse_long
from formats.message.commitlog import java_parse_int

EPOCH_FILE = "epochFileCheckpoint"  # MessageStoreConfig.getStorePathEpochFile: <root>/epochFileCheckpoint


class EpochFileIOError(FormatError):
    """What `CheckpointFile.read(path)` throws as an IOException (count or CRC mismatch): `read()` then reads
    the `.bak` instead."""


@dataclass(frozen=True)
class EpochEntry:
    epoch: int
    start_offset: int


def decode_epoch_file(text: str, file: str | None = None) -> list[EpochEntry]:
    """The entries `CheckpointFile.read(path)` returns, or FormatError where it throws (the message says
    whether the broker's read would fall back to the `.bak`: an IOException does, a NumberFormatException
    does not)."""
    lines = re.split(r"\r\n|\r|\n", text)  # BufferedReader.readLine's line ends
    if lines and lines[-1] == "":
        lines.pop()
    if len(lines) < 2:
        raise FormatError("epoch file: no entry count and CRC lines (the read throws)", file)
    count, crc = java_parse_int(lines[0].rstrip("\r")), java_parse_int(lines[1].rstrip("\r"))
    if count is None or crc is None:
        raise FormatError(
            "epoch file: the entry count or CRC line is not an int (NumberFormatException)", file
        )
    entries: list[EpochEntry] = []
    body = ""
    for line in lines[2:]:
        body += line + "\n"
        parts = line.split("-")
        if len(parts) == 2:
            epoch, start = java_parse_int(parts[0]), java_parse_long(parts[1])
            if epoch is None or start is None:
                raise FormatError(
                    f"epoch file: entry {line!r} is not two numbers (NumberFormatException)", file
                )
            entries.append(EpochEntry(epoch, start))
    if len(entries) != count:
        raise EpochFileIOError(
            f"epoch file: expects {count} entries, holds {len(entries)} (IOException)", file
        )
    real = zlib.crc32(body.encode("utf-8")) & 0x7FFFFFFF
    if crc != 0 and real != crc:
        raise EpochFileIOError(
            f"epoch file: CRC {real} of its entries is not the recorded {crc} (IOException)", file
        )
    return entries


__all__ = ["EPOCH_FILE", "EpochEntry", "EpochFileIOError", "decode_epoch_file"]
