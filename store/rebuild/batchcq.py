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
    BATCH_CQ_DIR,
    DEFAULT_BCQ_FILE_SIZE,
    NO_COMPACTED_OFFSET,
    PROPERTY_INNER_BASE,
    PROPERTY_INNER_NUM,
    BcqUnit,
    encode_unit,
)
from formats.errors import MqtoolError
from formats.java.props import java_parse_long
from formats.message.commitlog import DEFAULT_DELAY_LEVELS_MS, Message, java_parse_int
from formats.structs import BCQ_STORE_UNIT_SIZE
from store.dispatch import DispatchRequest
from store.io.filereads import written_part
from store.io.pathnames import queue_dir
from store.log.mappedfile import MappedFileQueue, majority_size, offset_to_file_name

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


# --- the rebuild's BatchCQ part -------------------------------------------------------------------


def stage_batch_queues(store, result, delay_levels: tuple[int, ...]) -> list:
    """Move the BatchCQ topics out of the staged ConsumeQueues and build their BatchConsumeQueues.

    `build_staging`'s dispatcher writes every topic into `staging/consumequeue`; the broker keeps a BatchCQ
    topic only in `batchconsumequeue/`, so those queues leave the staged ConsumeQueues and are built into
    `staging/batchconsumequeue` (file size: the current files', else broker.conf's
    `mapperFileSizeBatchConsumeQueue`, else the broker default). A current
    queue without a live record is carried over unchanged (the broker keeps it with min = max). Returns a
    `QueueDiff` per BatchCQ queue, current or rebuilt.
    """
    import shutil

    from store.queue.batchconsumequeue import BatchConsumeQueue
    from store.rebuild.build import QueueDiff

    topics = store.batch_cq_topics
    staged_cq = result.staging / "consumequeue"
    moved = [k for k in result.queues if k[0] in topics]
    for key in moved:
        result.cq_units -= result.queues.pop(key).units
    for topic, queue_id in moved:  # names the staging's writer checked (store.io.pathnames)
        shutil.rmtree(queue_dir(staged_cq, topic, queue_id).parent, ignore_errors=True)
    # the ConsumeQueue writer's complaints about them (batch base offsets are not unit positions)
    result.warnings[:] = [w for w in result.warnings if w.split("/", 1)[0] not in topics]
    old_root, new_root = store.root / BATCH_CQ_DIR, result.staging / BATCH_CQ_DIR
    new_root.mkdir(parents=True, exist_ok=True)
    old_queues = set(store.batch_consume_queues.queues())
    # broker.conf's, else the size most current files have (one outlier never decides), else the default
    sizes = [f.size for t, q in old_queues for f in MappedFileQueue.open(queue_dir(old_root, t, q))]
    configured = store.layout.configured("mapperFileSizeBatchConsumeQueue")
    file_size = configured or majority_size(sizes, BCQ_STORE_UNIT_SIZE) or DEFAULT_BCQ_FILE_SIZE
    if file_size % BCQ_STORE_UNIT_SIZE:  # the broker's recovery reads whole units at every 46-byte step
        raise MqtoolError(
            f"mapperFileSizeBatchConsumeQueue={file_size} is not a multiple of {BCQ_STORE_UNIT_SIZE}",
            store.broker_config.source,
        )
    built = batch_units(store.commitlog.iter_records(), topics, delay_levels)
    diffs = []
    for topic, queue_id in sorted(old_queues | set(built)):
        # names from the listing, or of records the staging's ConsumeQueue writer took (store.io.pathnames)
        old_dir, new_dir = queue_dir(old_root, topic, queue_id), queue_dir(new_root, topic, queue_id)
        old, unreadable = None, False
        if (topic, queue_id) in old_queues:
            try:
                old = store.batch_consume_queue(topic, queue_id)
            except MqtoolError as exc:  # a file of another size, say: the rebuilt queue replaces it
                unreadable = True
                result.warnings.append(f"{topic}/{queue_id}: the current files are not read ({exc})")
        units = built.get((topic, queue_id), [])
        kept = old is not None and not units and old.max_offset > 0
        if kept:
            shutil.copytree(old_dir, new_dir)
            names = sorted(p.name for p in new_dir.iterdir())
        else:
            names = write_queue(new_dir, units, file_size) if units else []
        new = (
            BatchConsumeQueue(result.staging, topic, queue_id, result.commitlog_min_offset) if names else None
        )
        old_names = [f.name for f in old.files] if old is not None else []
        diff = QueueDiff(
            topic,
            queue_id,
            "kept" if kept else "same",
            old.min_offset if old else None,
            old.max_offset if old else None,
            new.min_offset if new else None,
            new.max_offset if new else None,
            len(old_names),
            len(names),
        )
        if new is None:
            diff.status = "removed"
        elif unreadable:
            diff.status = "differs"
        elif old is None:
            diff.status = "new"
        elif not kept:
            for name in sorted(set(old_names) | set(names)):
                a, b = _read(old_dir / name), _read(new_dir / name)
                if a != b:
                    diff.status = "differs"
                    diff.first_difference = _first_base_difference(old, units)
                    break
        if new is not None:
            new.close()
        diffs.append(diff)
    return diffs


def _read(path: Path) -> bytes:
    """A BatchConsumeQueue file's bytes up to its last non-zero byte (b"" when missing)."""
    return written_part(path)[1]


def _first_base_difference(old, units: list[BcqUnit]) -> int | None:
    """The base offset of the first unit the rebuild writes differently (None: only the files differ)."""
    for current, rebuilt in zip(old.iter_units(), units, strict=False):
        if current != rebuilt:
            return rebuilt.base_offset
    return None


__all__ = [
    "INVALID",
    "batch_fields",
    "batch_unit",
    "batch_units",
    "queue_files",
    "stage_batch_queues",
    "write_queue",
]
