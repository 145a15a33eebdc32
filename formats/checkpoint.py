"""The 4096-byte StoreCheckpoint file: decode, encode, and the recovery times the broker derives from it.

Layout: `formats.structs.StoreCheckpoint` (the broker's `StoreCheckpoint`: constructor and `flush`). 4.9.x
writes only the first three fields; the 5.x fields `masterFlushedOffset` / `confirmPhyOffset` read as zero
there.
"""

from __future__ import annotations

from dataclasses import dataclass

from construct import ConstructError

from formats import structs
from formats.errors import FormatError

CHECKPOINT_FILE_SIZE = structs.CHECKPOINT_FILE_SIZE
_REST_SIZE = CHECKPOINT_FILE_SIZE - 40


@dataclass(frozen=True, slots=True)
class StoreCheckpoint:
    """The checkpoint fields, plus the bytes after them (zeros as the broker leaves them)."""

    physic_msg_timestamp: int = 0
    logics_msg_timestamp: int = 0
    index_msg_timestamp: int = 0
    master_flushed_offset: int = 0  # 5.x
    confirm_phy_offset: int = 0  # 5.x
    rest: bytes = bytes(_REST_SIZE)

    @property
    def min_timestamp(self) -> int:
        """`getMinTimestamp`: min(physic, logics) - 3000 ms, never below 0 (abnormal recovery's bound)."""
        return max(0, min(self.physic_msg_timestamp, self.logics_msg_timestamp) - 3000)

    @property
    def min_timestamp_index(self) -> int:
        """`getMinTimestampIndex`: the bound when `messageIndexEnable && messageIndexSafe`."""
        return min(self.min_timestamp, self.index_msg_timestamp)


def decode_checkpoint(data: bytes | memoryview, file: str | None = None) -> StoreCheckpoint:
    """A checkpoint from the file's bytes; the file must be exactly 4096 bytes long."""
    if len(data) != CHECKPOINT_FILE_SIZE:
        raise FormatError(f"checkpoint must be {CHECKPOINT_FILE_SIZE} bytes, found {len(data)}", file, 0)
    parsed = structs.StoreCheckpoint.parse(bytes(data))
    return StoreCheckpoint(
        physic_msg_timestamp=parsed.physicMsgTimestamp,
        logics_msg_timestamp=parsed.logicsMsgTimestamp,
        index_msg_timestamp=parsed.indexMsgTimestamp,
        master_flushed_offset=parsed.masterFlushedOffset,
        confirm_phy_offset=parsed.confirmPhyOffset,
        rest=bytes(parsed.rest),
    )


def encode_checkpoint(checkpoint: StoreCheckpoint) -> bytes:
    """The 4096 bytes of a checkpoint file."""
    if len(checkpoint.rest) != _REST_SIZE:
        raise FormatError(f"checkpoint tail must be {_REST_SIZE} bytes, found {len(checkpoint.rest)}")
    try:
        return structs.StoreCheckpoint.build(
            {
                "physicMsgTimestamp": checkpoint.physic_msg_timestamp,
                "logicsMsgTimestamp": checkpoint.logics_msg_timestamp,
                "indexMsgTimestamp": checkpoint.index_msg_timestamp,
                "masterFlushedOffset": checkpoint.master_flushed_offset,
                "confirmPhyOffset": checkpoint.confirm_phy_offset,
                "rest": checkpoint.rest,
            }
        )
    except ConstructError as exc:
        raise FormatError(f"cannot encode checkpoint: {exc}") from exc
