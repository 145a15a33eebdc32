"""ConsumeQueue and ConsumeQueueExt units: decode, encode, fast numpy views, ext addresses, bloom filter.

Layouts come from `formats.structs` (`ConsumeQueue.putMessagePositionInfo`, `ConsumeQueueExt.put`); the numpy
dtype below is the fast path over a whole CQ file and is property-tested against the construct declaration.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

import functools
import math
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import mmh3
from construct import ConstructError

from formats.errors import FormatError
from formats.java.hash import to_int32
from formats.structs import (
    CQ_EXT_MIN_UNIT_SIZE,
    CQ_STORE_UNIT_SIZE,
    ConsumeQueueExtUnit,
    ConsumeQueueUnit,
)
from formats.twins import dtype_twin, struct_twin

# --- ConsumeQueue units (ConsumeQueue.putMessagePositionInfo) -------------------------------------


# One unit as struct sees it (the writer's fast path) and as numpy sees it: packed, big-endian, 20 bytes.
CQ_UNIT_STRUCT = struct_twin("ConsumeQueueUnit", ConsumeQueueUnit, struct.Struct(">qiq"))


@dtype_twin("ConsumeQueueUnit (numpy)", ConsumeQueueUnit)
@functools.cache
def cq_unit_dtype():
    import numpy as np

    return np.dtype([("phyOffset", ">i8"), ("size", ">i4"), ("tagsCode", ">i8")])


# The pre-blank filler written by `ConsumeQueue.fillPreBlank`.
FILLER_PHY_OFFSET = 0
FILLER_SIZE = 0x7FFFFFFF

DEFAULT_CQ_FILE_SIZE = 300_000 * CQ_STORE_UNIT_SIZE  # mappedFileSizeConsumeQueue (MessageStoreConfig)

LONG_MIN = -(2**63)


@dataclass(frozen=True, slots=True)
class CqUnit:
    """One ConsumeQueue unit: where a message sits in the commitlog, its size and tags code."""

    phy_offset: int
    size: int
    tags_code: int

    @property
    def is_valid(self) -> bool:
        """The broker's test while recovering: `offset >= 0 && size > 0` (fillers pass it)."""
        return self.phy_offset >= 0 and self.size > 0

    @property
    def is_filler(self) -> bool:
        return self.phy_offset == FILLER_PHY_OFFSET and self.size == FILLER_SIZE

    @property
    def has_ext_address(self) -> bool:
        """True when the tags-code field holds a ConsumeQueueExt address instead of a tags code."""
        return is_ext_address(self.tags_code)


FILLER_UNIT = CqUnit(FILLER_PHY_OFFSET, FILLER_SIZE, 0)


def decode_unit(data: bytes | memoryview, position: int = 0, file: str | None = None) -> CqUnit:
    """The unit at `position` of `data`, through the construct `ConsumeQueueUnit`."""
    if position < 0 or position + CQ_STORE_UNIT_SIZE > len(data):
        raise FormatError(
            f"ConsumeQueue unit needs {CQ_STORE_UNIT_SIZE} bytes, {max(0, len(data) - position)} left",
            file,
            position,
        )
    parsed = ConsumeQueueUnit.parse(bytes(data[position : position + CQ_STORE_UNIT_SIZE]))
    return CqUnit(parsed.phyOffset, parsed.size, parsed.tagsCode)


def encode_unit(unit: CqUnit) -> bytes:
    """The 20 bytes of a unit, as `ConsumeQueue.putMessagePositionInfo` writes them."""
    try:
        return ConsumeQueueUnit.build(
            {"phyOffset": unit.phy_offset, "size": unit.size, "tagsCode": unit.tags_code}
        )
    except ConstructError as exc:
        raise FormatError(f"cannot encode ConsumeQueue unit {unit}: {exc}") from exc


def units_view(data: bytes | memoryview, file: str | None = None) -> np.ndarray:
    """A zero-copy structured view (`cq_unit_dtype()`) of a buffer made of whole units."""
    import numpy as np

    if len(data) % CQ_STORE_UNIT_SIZE:
        raise FormatError(
            f"size {len(data)} is not a multiple of the {CQ_STORE_UNIT_SIZE}-byte ConsumeQueue unit", file
        )
    return np.frombuffer(data, dtype=cq_unit_dtype())


def valid_mask(units: np.ndarray) -> np.ndarray:
    """Per unit: `phyOffset >= 0 && size > 0` (the broker's recovery test; fillers are valid)."""
    return (units["phyOffset"] >= 0) & (units["size"] > 0)


def filler_mask(units: np.ndarray) -> np.ndarray:
    """Per unit: is it a pre-blank filler (offset 0, size 0x7FFFFFFF)?"""
    return (units["phyOffset"] == FILLER_PHY_OFFSET) & (units["size"] == FILLER_SIZE)


def count_valid_prefix(units: np.ndarray) -> int:
    """How many units at the start are valid: the index of the first invalid unit, or all of them."""
    import numpy as np

    # in growing chunks: a queue's last file is mostly unwritten (sparse), and a store may hold 100,000+
    start, step = 0, 1024
    while start < len(units):
        invalid = ~valid_mask(units[start : start + step])
        if invalid.any():
            return start + int(np.argmax(invalid))
        start += step
        step *= 4
    return len(units)


def to_native(units: np.ndarray, first_queue_offset: int = 0) -> np.ndarray:
    """A native-endian copy with a `queueOffset` column, numbering the units from `first_queue_offset`."""
    import numpy as np

    out = np.empty(
        len(units),
        dtype=[("queueOffset", "i8"), ("phyOffset", "i8"), ("size", "i4"), ("tagsCode", "i8")],
    )
    out["queueOffset"] = np.arange(first_queue_offset, first_queue_offset + len(units), dtype=np.int64)
    out["phyOffset"] = units["phyOffset"]
    out["size"] = units["size"]
    out["tagsCode"] = units["tagsCode"]
    return out


# --- ConsumeQueueExt (ConsumeQueueExt.put / get) --------------------------------------------------

MAX_ADDR = -(2**31) - 1  # Integer.MIN_VALUE - 1L
MAX_REAL_OFFSET = MAX_ADDR - LONG_MIN  # 9223372034707292159
CQ_EXT_MAX_UNIT_SIZE = 32767
CQ_EXT_END_OF_FILE = -1  # int16 written by fullFillToEnd when the next unit does not fit
CQ_EXT_END_BLANK_LENGTH = 4  # the writer keeps this many bytes free at a file's end
DEFAULT_CQ_EXT_FILE_SIZE = 48 * 1024 * 1024


def _to_int64(value: int) -> int:
    value &= 0xFFFFFFFFFFFFFFFF
    return value - (1 << 64) if value & (1 << 63) else value


def is_ext_address(value: int) -> bool:
    """`ConsumeQueueExt.isExtAddr`: a tags-code field at or below MAX_ADDR is an ext address."""
    return value <= MAX_ADDR


def decorate(offset: int) -> int:
    """`ConsumeQueueExt.decorate`: byte offset in the ext stream -> address stored in a CQ unit."""
    if is_ext_address(offset):
        return offset
    return _to_int64(offset + LONG_MIN)


def undecorate(address: int) -> int:
    """`ConsumeQueueExt.unDecorate`: address from a CQ unit -> byte offset in the ext stream."""
    if is_ext_address(address):
        return address - LONG_MIN
    return address


@dataclass(frozen=True, slots=True)
class CqExtUnit:
    """One ConsumeQueueExt unit: the real tags code, the store time and the filter bitmap."""

    tags_code: int
    msg_store_time: int
    filter_bitmap: bytes = b""

    @property
    def size(self) -> int:
        return CQ_EXT_MIN_UNIT_SIZE + len(self.filter_bitmap)


def decode_ext_unit(data: bytes | memoryview, position: int = 0, file: str | None = None) -> CqExtUnit:
    """The ext unit at `position`; its size field must agree with its bitmap length."""
    available = len(data) - position
    if position < 0 or available < CQ_EXT_MIN_UNIT_SIZE:
        raise FormatError(
            f"ConsumeQueueExt unit needs {CQ_EXT_MIN_UNIT_SIZE} bytes, {max(0, available)} left",
            file,
            position,
        )
    head = bytes(data[position : position + CQ_EXT_MIN_UNIT_SIZE])
    size = int.from_bytes(head[0:2], "big", signed=True)
    bitmap_size = int.from_bytes(head[18:20], "big", signed=True)
    if size < CQ_EXT_MIN_UNIT_SIZE or bitmap_size < 0 or size != CQ_EXT_MIN_UNIT_SIZE + bitmap_size:
        raise FormatError(
            f"ConsumeQueueExt unit size {size} does not match its bitmap length {bitmap_size}", file, position
        )
    if size > available:
        raise FormatError(f"ConsumeQueueExt unit of {size} bytes runs past the end", file, position)
    parsed = ConsumeQueueExtUnit.parse(bytes(data[position : position + size]))
    return CqExtUnit(parsed.tagsCode, parsed.msgStoreTime, bytes(parsed.filterBitMap))


def encode_ext_unit(unit: CqExtUnit) -> bytes:
    """The bytes of an ext unit, as `CqExtUnit.write` produces them."""
    if unit.size > CQ_EXT_MAX_UNIT_SIZE:
        raise FormatError(f"ConsumeQueueExt unit of {unit.size} bytes exceeds {CQ_EXT_MAX_UNIT_SIZE}")
    try:
        return ConsumeQueueExtUnit.build(
            {
                "size": unit.size,
                "tagsCode": unit.tags_code,
                "msgStoreTime": unit.msg_store_time,
                "bitMapSize": len(unit.filter_bitmap),
                "filterBitMap": unit.filter_bitmap,
            }
        )
    except ConstructError as exc:
        raise FormatError(f"cannot encode ConsumeQueueExt unit: {exc}") from exc


def iter_ext_units(data: bytes | memoryview, file: str | None = None) -> Iterator[tuple[int, CqExtUnit]]:
    """(position, unit) for the units of one ext file, walked as `ConsumeQueueExt.recover` does.

    The walk ends at a size field <= 0 (zeros, or the -1 end-of-file marker) or when fewer than two
    bytes remain.
    """
    position = 0
    while position + 2 <= len(data):
        size = int.from_bytes(bytes(data[position : position + 2]), "big", signed=True)
        if size <= 0:
            return
        yield position, decode_ext_unit(data, position, file)
        position += size


# --- Bloom filter of the ext bitmap (BloomFilter.hashTo) ------------------------------------------

DEFAULT_MAX_ERROR_RATE = 20  # maxErrorRateOfBloomFilter, percent
DEFAULT_EXPECT_CONSUMER_NUM = 32  # expectConsumerNumUseFilter


@dataclass(frozen=True, slots=True)
class BloomFilter:
    """`org.apache.rocketmq.filter.util.BloomFilter`: k hash functions over an m-bit map."""

    f: int
    n: int
    k: int
    m: int

    @classmethod
    def create(cls, f: int = DEFAULT_MAX_ERROR_RATE, n: int = DEFAULT_EXPECT_CONSUMER_NUM) -> BloomFilter:
        """`BloomFilter.createByFn(f, n)`: error rate f percent, n expected consumers."""
        if not 1 <= f < 100:
            raise ValueError("f must be greater or equal than 1 and less than 100")
        if n < 1:
            raise ValueError("n must be greater than 0")
        error_rate = f / 100.0
        k = math.ceil(math.log(error_rate) / math.log(0.5))
        m = math.ceil(n * (math.log(1 / error_rate) / math.log(2)) * (math.log(math.e) / math.log(2)))
        m = 8 * math.ceil(m / 8.0)
        return cls(f, n, k, m)

    @property
    def byte_length(self) -> int:
        return (self.m + 7) // 8

    def bit_positions(self, text: str) -> list[int]:
        """`calcBitPositions`: Guava murmur3_128 (seed 0) of the UTF-8 bytes, double hashing."""
        h1, _ = mmh3.hash64(text.encode("utf-8", "surrogatepass"), 0, True, signed=True)
        hash1 = to_int32(h1)
        hash2 = to_int32((h1 & 0xFFFFFFFFFFFFFFFF) >> 32)
        positions = []
        for i in range(1, self.k + 1):
            combined = to_int32(hash1 + i * hash2)
            if combined < 0:
                combined = ~combined
            positions.append(combined % self.m)
        return positions

    def bitmap(self, positions: Iterable[int]) -> bytes:
        """An m-bit map with the given bits set (bit p in byte p // 8, mask 1 << (p % 8))."""
        bits = bytearray(self.byte_length)
        for p in positions:
            if not 0 <= p < self.m:
                raise ValueError(f"bit position {p} outside [0, {self.m})")
            bits[p // 8] |= 1 << (p % 8)
        return bytes(bits)

    def is_hit(self, positions: Iterable[int], bitmap: bytes) -> bool:
        """Whether every position is set in `bitmap` (a message is a hit for that consumer)."""
        if len(bitmap) * 8 < self.m:
            raise FormatError(f"filter bitmap of {len(bitmap)} bytes is shorter than {self.m} bits")
        return all(bitmap[p // 8] & (1 << (p % 8)) for p in positions)


def consumer_filter_key(consumer_group: str, topic: str) -> str:
    """The string hashed for a consumer's bloom positions: `group#topic`."""
    return f"{consumer_group}#{topic}"


def __getattr__(name: str):
    # `CQ_UNIT_DTYPE` stays importable; numpy is imported only when it is first used.
    if name == "CQ_UNIT_DTYPE":
        return cq_unit_dtype()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
