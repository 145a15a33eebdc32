"""ScheduleMessageService (the 18 delay levels of SCHEDULE_TOPIC_XXXX) as the broker runs it: the level
table, the progress in delayOffset.json, where a level's task starts, each unit's delivery time, and the
record `messageTimeUp` writes for a due schedule record. `mqtool.delay` lists, counts and replays with it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from formats.consumequeue import MAX_ADDR, is_ext_address
from formats.errors import FormatError, MqtoolError
from formats.message.commitlog import Message, java_length, java_parse_int
from formats.message.properties import PROPERTY_REAL_QUEUE_ID, PROPERTY_REAL_TOPIC
from formats.names import SCHEDULE_TOPIC
from store.broker.messagerebuild import MAX_TOPIC_LENGTH_V1, copied_record, rebuild_properties
from store.layout import DelayLevelTable as DelayLevels
from store.storedir import Store

DELAY_OFFSET = "delayOffset.json"


class DelayError(MqtoolError):
    """A delay-queue request that cannot be answered (unknown level, bad options)."""


def delay_levels(store: Store) -> DelayLevels:
    """The messageDelayLevel table the store's broker runs with (`Store.layout`)."""
    return store.layout.delay_levels


@dataclass
class DelayProgress:
    """delayOffset.json as the ScheduleMessageService loads it."""

    table: dict[int, int]
    model: Any  # formats.configs.DelayOffsetTable
    source: str  # file / bak / none
    notes: list[str] = field(default_factory=list)


def load_delay_progress(store: Store) -> DelayProgress:
    """delayOffset.json, with the broker's `.bak` fallback."""
    loaded = store.config(DELAY_OFFSET).load()
    notes = list(loaded.warnings)
    if loaded.source != "file":
        notes.append(f"{DELAY_OFFSET}: {loaded.reason}")
    return DelayProgress(dict(loaded.model.offset_table), loaded.model, loaded.source, notes)


def effective_start(stored: int | None, cq_min: int, cq_max: int) -> int:
    """Where a level's task really starts: the stored offset (0 when absent) moved into [min, max],
    as 5.x `correctDelayOffset` and both versions' "CQ offset invalid" resets do."""
    return min(max(stored or 0, cq_min), cq_max)


def correct_deliver_timestamp(now: int, tags_code: int, delay_ms: int) -> int:
    """`correctDeliverTimestamp`: a delivery time further ahead than now + the level's delay (clock went
    back, configuration changed) is taken as now."""
    return now if tags_code > now + delay_ms else tags_code


def schedule_levels(store: Store) -> list[int]:
    """The levels that have a ConsumeQueue (queue id = level - 1)."""
    return [queue_id + 1 for queue_id in store.consume_queues.queue_ids(SCHEDULE_TOPIC)]


def iter_pending_units(store: Store, level: int, start: int, end: int) -> Iterator[tuple[int, int, int, int]]:
    """(queueOffset, phyOffset, size, tagsCode) of SCHEDULE_TOPIC_XXXX queue `level - 1` in [start, end)."""
    cq = store.consume_queue(SCHEDULE_TOPIC, level - 1)
    yield from cq.units(start, end).tolist()


def deliver_time(
    store: Store, level: int, delay: int | None, phy: int, size: int, tags: int
) -> tuple[int, str | None]:
    """The unit's delivery time: its tags code, or store time + delay where it holds a CQ-ext address."""
    if not is_ext_address(tags):
        return tags, None
    stored = store.commitlog.pickup_store_timestamp(phy, size)
    return stored + (
        delay if delay is not None else 1000
    ), "tags code is a CQ-ext address: store time + delay"


def deliver_times(store: Store, level: int, delay: int | None, units) -> Any:
    """`deliver_time` of many units at once (a native units array of `ConsumeQueue.units`), as int64."""
    import numpy as np

    deliver = units["tagsCode"].astype(np.int64)
    ext = np.flatnonzero(deliver <= MAX_ADDR)
    phy, size = units["phyOffset"], units["size"]
    for i in ext.tolist():  # CQ-ext addresses: only with enableConsumeQueueExt (off by default)
        deliver[i] = deliver_time(store, level, delay, int(phy[i]), int(size[i]), int(deliver[i]))[0]
    return deliver


def real_queue(msg: Message) -> tuple[str | None, int | None]:
    """REAL_TOPIC and REAL_QID (None where Integer.parseInt fails) of a schedule record."""
    props = msg.properties
    qid = props.get(PROPERTY_REAL_QUEUE_ID)
    return props.get(PROPERTY_REAL_TOPIC), (None if qid is None else java_parse_int(qid))


def message_time_up(
    msg: Message, major: int, *, store_timestamp: int = 0, queue_offset: int = 0, physical_offset: int = 0
) -> Message:
    """`ScheduleMessageService.messageTimeUp`: the record delivered for schedule record `msg`.

    TOPIC/QUEUEID from REAL_TOPIC/REAL_QID; BODY (as stored), FLAG, SYSFLAG, born time and host, STOREHOST
    and RECONSUMETIMES copied; PREPARED TRANSACTION OFFSET 0; PROPERTIES = the schedule record's whole map
    re-serialised before DELAY (and the 5.x TIMER_* keys) are cleared from memory, so DELAY, REAL_TOPIC,
    REAL_QID, WAIT stay in the stored string. STORETIMESTAMP, QUEUEOFFSET and PHYSICALOFFSET are the
    append's. Raises DelayError when REAL_TOPIC/REAL_QID cannot give a destination.
    """
    topic, queue_id = real_queue(msg)
    if not topic:
        raise DelayError(f"schedule record at {msg.physical_offset} has no REAL_TOPIC property")
    if queue_id is None:
        raise DelayError(
            f"schedule record at {msg.physical_offset} has REAL_QID "
            f"{msg.properties.get(PROPERTY_REAL_QUEUE_ID)!r}, not an int (Integer.parseInt fails)"
        )
    if major < 5 and java_length(topic) > MAX_TOPIC_LENGTH_V1:
        raise DelayError(f"real topic of {java_length(topic)} characters: a 4.9.x broker refuses it (> 127)")
    try:
        properties = rebuild_properties(msg.properties_raw, major)
    except FormatError as exc:
        raise DelayError(f"schedule record at {msg.physical_offset}: {exc.message}") from None
    return copied_record(
        msg,
        topic=topic,
        queue_id=queue_id,
        properties=properties,
        store_timestamp=store_timestamp,
        queue_offset=queue_offset,
        physical_offset=physical_offset,
    )
