"""BatchConsumeQueue units (BatchCQ topics): decode, encode, the struct and numpy twins, the batch properties.

A topic with the attribute `queue.type=BatchCQ` keeps `batchconsumequeue/<topic>/<queueId>/` files of
46-byte units (`formats.structs.BatchConsumeQueueUnit`), one per commitlog record. An inner-batch record
(sysFlag `INNER_BATCH`, properties `INNER_NUM` = its message count and `INNER_BASE` = its first queue
offset) covers queue offsets [msgBaseOffset, msgBaseOffset + batchSize); a plain message on such a topic
gets a unit of batch size 1 at its own queue offset.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

import functools
import struct
from dataclasses import dataclass

from construct import ConstructError

from formats.errors import FormatError
from formats.structs import BCQ_STORE_UNIT_SIZE, BatchConsumeQueueUnit
from formats.twins import dtype_twin, struct_twin

BCQ_UNIT_STRUCT = struct_twin("BatchConsumeQueueUnit", BatchConsumeQueueUnit, struct.Struct(">qiqqqhii"))


@dtype_twin("BatchConsumeQueueUnit (numpy)", BatchConsumeQueueUnit)
@functools.cache
def bcq_unit_dtype():
    import numpy as np

    return np.dtype(
        [
            ("phyOffset", ">i8"),
            ("size", ">i4"),
            ("tagsCode", ">i8"),
            ("storeTime", ">i8"),
            ("msgBaseOffset", ">i8"),
            ("batchSize", ">i2"),
            ("compactedOffset", ">i4"),
            ("reserved", ">i4"),
        ]
    )


DEFAULT_BCQ_FILE_SIZE = 300_000 * BCQ_STORE_UNIT_SIZE  # mapperFileSizeBatchConsumeQueue (MessageStoreConfig)
BATCH_CQ_DIR = "batchconsumequeue"  # StorePathConfigHelper.getStorePathBatchConsumeQueue

# The topic attribute (TopicAttributes.QUEUE_TYPE_ATTRIBUTE) and its value read by CQType.valueOf.
QUEUE_TYPE_ATTRIBUTE = "queue.type"
BATCH_CQ = "BatchCQ"

# MessageConst: an inner-batch record's message count, and its first queue offset (set at the put).
PROPERTY_INNER_NUM = "INNER_NUM"
PROPERTY_INNER_BASE = "INNER_BASE"

# What putBatchMessagePositionInfo writes into compactedOffset (INVALID_POS) and reserved.
NO_COMPACTED_OFFSET = -1


@dataclass(frozen=True, slots=True)
class BcqUnit:
    """One BatchConsumeQueue unit: a record's place, tags code, store time and the queue offsets it covers."""

    phy_offset: int
    size: int
    tags_code: int
    store_time: int
    base_offset: int
    batch_size: int
    compacted_offset: int = NO_COMPACTED_OFFSET
    reserved: int = 0

    @property
    def end_offset(self) -> int:
        """One past the last queue offset the unit covers."""
        return self.base_offset + self.batch_size

    @property
    def is_valid(self) -> bool:
        """`BatchConsumeQueue.recover`'s test: offset >= 0, size > 0, base offset >= 0, batch size > 0."""
        return self.phy_offset >= 0 and self.size > 0 and self.base_offset >= 0 and self.batch_size > 0


def is_batch_cq(attributes: dict[str, str] | None) -> bool:
    """`QueueTypeUtils.isBatchCq`: the topic's `queue.type` attribute is exactly `BatchCQ`."""
    return (attributes or {}).get(QUEUE_TYPE_ATTRIBUTE) == BATCH_CQ


def decode_unit(data: bytes | memoryview, position: int = 0, file: str | None = None) -> BcqUnit:
    """The unit at `position` of `data`, through the construct `BatchConsumeQueueUnit`."""
    if position < 0 or position + BCQ_STORE_UNIT_SIZE > len(data):
        raise FormatError(
            f"BatchConsumeQueue unit needs {BCQ_STORE_UNIT_SIZE} bytes, {max(0, len(data) - position)} left",
            file,
            position,
        )
    p = BatchConsumeQueueUnit.parse(bytes(data[position : position + BCQ_STORE_UNIT_SIZE]))
    return BcqUnit(
        p.phyOffset,
        p.size,
        p.tagsCode,
        p.storeTime,
        p.msgBaseOffset,
        p.batchSize,
        p.compactedOffset,
        p.reserved,
    )


def encode_unit(unit: BcqUnit) -> bytes:
    """The 46 bytes of a unit, as `putBatchMessagePositionInfo` writes them."""
    try:
        return BatchConsumeQueueUnit.build(
            {
                "phyOffset": unit.phy_offset,
                "size": unit.size,
                "tagsCode": unit.tags_code,
                "storeTime": unit.store_time,
                "msgBaseOffset": unit.base_offset,
                "batchSize": unit.batch_size,
                "compactedOffset": unit.compacted_offset,
                "reserved": unit.reserved,
            }
        )
    except ConstructError as exc:
        raise FormatError(f"cannot encode BatchConsumeQueue unit {unit}: {exc}") from exc


def units_view(data: bytes | memoryview, file: str | None = None) -> np.ndarray:
    """A zero-copy structured view (`bcq_unit_dtype()`) of a buffer; a partial unit at the end is left out."""
    import numpy as np

    whole = len(data) - len(data) % BCQ_STORE_UNIT_SIZE
    return np.frombuffer(data, dtype=bcq_unit_dtype(), count=whole // BCQ_STORE_UNIT_SIZE)


def valid_mask(units: np.ndarray) -> np.ndarray:
    """Per unit: `BcqUnit.is_valid`, over a view."""
    return (
        (units["phyOffset"] >= 0)
        & (units["size"] > 0)
        & (units["msgBaseOffset"] >= 0)
        & (units["batchSize"] > 0)
    )


def count_valid_prefix(units: np.ndarray) -> int:
    """How many units at the start are valid (recovery stops at the first invalid one)."""
    import numpy as np

    invalid = ~valid_mask(units)
    return len(units) if not invalid.any() else int(np.argmax(invalid))


def unit_of_row(row) -> BcqUnit:
    """A `BcqUnit` from one row of a view."""
    return BcqUnit(
        int(row["phyOffset"]),
        int(row["size"]),
        int(row["tagsCode"]),
        int(row["storeTime"]),
        int(row["msgBaseOffset"]),
        int(row["batchSize"]),
        int(row["compactedOffset"]),
        int(row["reserved"]),
    )


__all__ = [
    "BATCH_CQ",
    "BATCH_CQ_DIR",
    "BCQ_UNIT_STRUCT",
    "DEFAULT_BCQ_FILE_SIZE",
    "NO_COMPACTED_OFFSET",
    "PROPERTY_INNER_BASE",
    "PROPERTY_INNER_NUM",
    "QUEUE_TYPE_ATTRIBUTE",
    "BcqUnit",
    "bcq_unit_dtype",
    "count_valid_prefix",
    "decode_unit",
    "encode_unit",
    "is_batch_cq",
    "unit_of_row",
    "units_view",
    "valid_mask",
]
