"""BatchConsumeQueue units built from the commitlog as the broker's dispatch writes them.

`CommitLog.checkMessageAndReturnSize` -> `setBatchSizeIfNeeded` gives a record's base offset and batch size
(`INNER_BASE` and `INNER_NUM` when both are set, else its queue offset and 1), and
`BatchConsumeQueue.putBatchMessagePositionInfo` appends the 46-byte unit (compactedOffset -1, reserved 0)
at the end of the queue's files, opening a new zero-filled file of `mapperFileSizeBatchConsumeQueue`
bytes only when the last one is full. `tests/test_batchcq_build.py` shows the result byte-identical to
what the real 5.3.3 broker wrote (store-batchcq).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from formats.batchconsumequeue import (
    BCQ_STORE_UNIT_SIZE,
    NO_COMPACTED_OFFSET,
    PROPERTY_INNER_BASE,
    PROPERTY_INNER_NUM,
    BcqUnit,
    encode_unit,
)
from formats.commitlog import DEFAULT_DELAY_LEVELS_MS, Message, java_parse_int
from store.dispatch import DispatchRequest
from store.mappedfile import offset_to_file_name
from store.transaction import java_parse_long

INVALID = "invalid"  # the broker's check throws on the record: no dispatch at all


def batch_fields(properties: dict[str, str], queue_offset: int) -> tuple[int, int] | str:
    """(base offset, batch size) the dispatch takes, or INVALID where Long.parseLong / Short.parseShort
    throw inside the broker's check (the record then fails it)."""
    num, base = properties.get(PROPERTY_INNER_NUM), properties.get(PROPERTY_INNER_BASE)
    if num is None or base is None:
        return queue_offset, 1
    base_offset, batch = java_parse_long(base), java_parse_int(num)
    if base_offset is None or batch is None or not -(2**15) <= batch < 2**15:
        return INVALID
    return base_offset, batch


def batch_unit(msg: Message, delay_levels: tuple[int, ...] = DEFAULT_DELAY_LEVELS_MS) -> BcqUnit | None:
    """The unit the dispatch writes for `msg`; None when it writes none (a prepared or rolled-back
    transaction record, a negative base offset or batch size, or batch properties the check refuses)."""
    request = DispatchRequest.from_message(msg, delay_levels)
    if not request.goes_to_consume_queue:
        return None
    fields = batch_fields(msg.properties, msg.queue_offset)
    if fields == INVALID:
        return None
    base_offset, batch = fields
    if base_offset < 0 or batch < 0:  # putMessagePositionInfoWrapper: warned and skipped
        return None
    return BcqUnit(
        msg.physical_offset,
        msg.total_size,
        request.tags_code,
        msg.store_timestamp,
        base_offset,
        batch,
        NO_COMPACTED_OFFSET,
        0,
    )


def batch_units(
    records: Iterable[object], topics: frozenset[str] | set[str], delay_levels: tuple[int, ...]
) -> dict[tuple[str, int], list[BcqUnit]]:
    """Every BatchCQ topic's units per (topic, queueId), in commitlog order."""
    queues: dict[tuple[str, int], list[BcqUnit]] = {}
    for record in records:
        if isinstance(record, Message) and record.topic in topics:
            unit = batch_unit(record, delay_levels)
            if unit is not None:
                queues.setdefault((record.topic, record.queue_id), []).append(unit)
    return queues


def queue_files(units: list[BcqUnit], file_size: int) -> Iterator[tuple[str, bytes]]:
    """(file name, bytes) of one queue's files as the broker leaves them."""
    data = b"".join(encode_unit(u) for u in units)
    per_file = file_size // BCQ_STORE_UNIT_SIZE * BCQ_STORE_UNIT_SIZE
    for start in range(0, len(data), per_file):
        chunk = data[start : start + per_file]
        yield offset_to_file_name(start // per_file * file_size), chunk + bytes(file_size - len(chunk))


def write_queue(directory: Path, units: list[BcqUnit], file_size: int) -> list[str]:
    """Write one queue's files into `directory` (new); their names."""
    directory.mkdir(parents=True, exist_ok=True)
    names = []
    for name, data in queue_files(units, file_size):
        (directory / name).write_bytes(data)
        names.append(name)
    return names


__all__ = ["INVALID", "batch_fields", "batch_unit", "batch_units", "queue_files", "write_queue"]
