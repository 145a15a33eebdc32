"""Putting a message back into the store as the broker rebuilds it (`ScheduleMessageService.messageTimeUp`,
`EndTransactionProcessor.endMessageTransaction`), shared by `mqtool.delay` and `mqtool.transactions`.

* which broker's rules to follow (`broker_major`: 4.9.x or 5.x, from the records the broker serialised
  itself) and its property serialisation (`rebuild_properties`: Java `HashMap` order, separator style);
* reading what the broker would find (`read_message_or_none`, `queue_max_offset`, `units_after`);
* writing under the safety rules (`refuse_unclean` while `abort` exists, `StoreWriter`: append with the
  broker's CommitLog rules and dispatch).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from formats.consumequeue import FILLER_SIZE
from formats.errors import FormatError, MqtoolError
from formats.java.hash import java_hashmap_order as _java_hashmap_order
from formats.message.commitlog import Message, build_message
from formats.message.properties import (
    decode_properties,
    encode_properties,
)
from formats.names import SCHEDULE_TOPIC, TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC
from formats.structs import CQ_STORE_UNIT_SIZE
from store.dispatch import refuse_batch_cq_topic, refuse_queue_name
from store.queue.consumequeue import native_unit_dtype
from store.storedir import Store
from store.version import BrokerVersion

if TYPE_CHECKING:
    from store.io.filewrites import WriteTargets

MAX_TOPIC_LENGTH_V1 = 127  # 4.9.x refuses longer topics (no V2 records)


class BrokerVersionError(MqtoolError):
    """A broker version mqtool does not rebuild messages for."""


class WriteNotAvailableError(MqtoolError):
    """`--execute` cannot write now: the store needs the broker's recovery first."""


def java_hashmap_order(keys: Iterable[str], initial_capacity: int = 16) -> list[str]:
    """`formats.java.hash.java_hashmap_order`, refusing (FormatError) an order Java keeps in a tree bin."""
    try:
        return _java_hashmap_order(keys, initial_capacity)
    except ValueError as exc:
        raise FormatError(f"property names: {exc}, whose order mqtool does not reproduce") from exc


# `MessageDecoder.string2messageProperties`: 4.9.x `new HashMap()`, 5.x `new HashMap(128)`.
DECODER_MAP_CAPACITY = {4: 16, 5: 128}


def rebuild_properties(raw: bytes, major: int) -> bytes:
    """`messageProperties2String(string2messageProperties(raw))` as broker `major` (4 or 5) runs it.

    What `messageTimeUp` and `endMessageTransaction` store: the record's properties decoded into a
    Java HashMap and written back in its iteration order, every pair followed by \\x02 (5.x) or the
    pairs joined by \\x02 (4.9.x).
    """
    props = decode_properties(raw)
    order = java_hashmap_order(props, DECODER_MAP_CAPACITY[major])
    return encode_properties([(key, props[key]) for key in order], trailing_separator=major >= 5)


def copied_record(
    msg: Message,
    *,
    topic: str,
    queue_id: int,
    properties: bytes,
    store_timestamp: int = 0,
    queue_offset: int = 0,
    physical_offset: int = 0,
) -> Message:
    """The record a broker service stores again from stored record `msg` (`messageTimeUp`,
    TimerMessageStore's `convertMessage`): into (topic, queue_id) with `properties`; body, flag, sysflag,
    born time and host, store host and reconsume times copied; prepared transaction offset 0."""
    return build_message(
        topic=topic,
        body=msg.body,
        properties=properties,
        queue_id=queue_id,
        flag=msg.flag,
        queue_offset=queue_offset,
        physical_offset=physical_offset,
        sys_flag=msg.sys_flag,
        born_timestamp=msg.born_timestamp,
        born_host=(msg.born_host, msg.born_port),
        store_timestamp=store_timestamp,
        store_host=(msg.store_host, msg.store_port),
        reconsume_times=msg.reconsume_times,
        prepared_transaction_offset=0,
    )


_BROKER_REBUILT_TOPICS = (SCHEDULE_TOPIC, TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC)


def _newest_broker_rebuilt(store: Store) -> Message | None:
    """The newest record whose properties the broker itself serialised (schedule, half, op topics)."""
    newest: tuple[int, int, int, str, int] | None = None
    queues = store.consume_queues
    for topic in _BROKER_REBUILT_TOPICS:
        for queue_id in queues.queue_ids(topic):
            try:
                cq = store.consume_queue(topic, queue_id)
                if cq.max_offset <= cq.min_offset:
                    continue
                unit = cq.unit(cq.max_offset - 1)
            except MqtoolError:
                continue
            if unit is not None and unit.size > 0 and (newest is None or unit.phy_offset > newest[0]):
                newest = (unit.phy_offset, unit.size, queue_id, topic, cq.max_offset - 1)
    if newest is None:
        return None
    return read_message_or_none(store, newest[0], newest[1])


def broker_major(store: Store, given: int | None = None) -> BrokerVersion:
    """`given` (4 or 5), else `store.version`'s answer with the newest record the broker serialised itself
    (schedule, half, op topics) as evidence: 5.x ends every property pair with \\x02, 4.9.x does not."""
    if given is not None and given not in (4, 5):
        raise BrokerVersionError(f"--broker-version must be 4 or 5, not {given}")
    record = None if given is not None else _newest_broker_rebuilt(store)
    return store.layout.broker_version(given, record)


def read_message_or_none(store: Store, phy_offset: int, size: int | None) -> Message | None:
    """`lookMessageByOffset(offset, size)`: the message there, or None where the broker finds none."""
    if phy_offset < store.commitlog.min_offset:
        return None
    try:
        return store.commitlog.read_message_at(phy_offset, size)
    except MqtoolError:
        return None


def queue_message_or_none(store: Store, topic: str, queue_id: int, queue_offset: int) -> Message | None:
    """The message at a queue offset (its ConsumeQueue unit, then the commitlog), or None if there is none."""
    if queue_id not in store.consume_queues.queue_ids(topic):
        return None
    try:
        unit = store.consume_queue(topic, queue_id).unit(queue_offset)
    except MqtoolError:
        return None
    return None if unit is None else read_message_or_none(store, unit.phy_offset, unit.size)


def planned_json(record: Message, *, written: bool) -> dict[str, Any]:
    """A record as JSON; one not written yet has no position, store time or offsetMsgId (the append's)."""
    out = record.to_json(include_body=False)
    if not written:
        out.update(physicalOffset=None, storeTimestamp=None, offsetMsgId=None)
    return out


def queue_max_offset(store: Store, topic: str, queue_id: int, *, source: int | None = None) -> int:
    """The next queue offset the broker assigns in (topic, queueId): the CQ max offset, 0 without a CQ.
    The plans of writes stop here: a BatchCQ topic is refused (`store.dispatch.BatchCQTopicError`), and so
    is a name no queue directory may have (`store.io.pathnames.new_queue_dir`; `source`: the physical offset
    of the record the name comes from)."""
    refuse_queue_name(store.consumequeue_dir, topic, queue_id, record=source)
    refuse_batch_cq_topic(topic, store.batch_cq_topics)
    if queue_id not in store.consume_queues.queue_ids(topic):
        return 0
    return store.consume_queue(topic, queue_id).max_offset


def units_after(store: Store, topic: str, queue_id: int, phy_offset: int) -> np.ndarray:
    """Native units (queueOffset, phyOffset, size, tagsCode) of a queue whose phyOffset > `phy_offset`,
    read file by file from the end (a queue's physical offsets grow with its queue offsets)."""
    if queue_id not in store.consume_queues.queue_ids(topic):
        return np.empty(0, dtype=native_unit_dtype())
    cq = store.consume_queue(topic, queue_id)
    parts: list[np.ndarray] = []
    per_file = cq.units_per_file
    for f in reversed(cq.live_files):
        first = f.start_offset // CQ_STORE_UNIT_SIZE
        units = cq.units(max(first, cq.min_offset), first + per_file)
        if len(units):
            parts.append(units[units["phyOffset"] > phy_offset])
            real = units[units["size"] != FILLER_SIZE]
            if len(real) and int(real["phyOffset"][0]) <= phy_offset:
                break
    if not parts:
        return np.empty(0, dtype=native_unit_dtype())
    return np.concatenate(parts[::-1])


def refuse_unclean(store: Store) -> None:
    """No write while `abort` exists: the broker's recovery must run first (it truncates a torn tail and
    completes the ConsumeQueues this module reads to recognise earlier deliveries)."""
    if (store.root / "abort").exists():
        raise WriteNotAvailableError(
            "`abort` exists: the last broker run (or an interrupted mqtool write) did not finish. Start the "
            "broker once and stop it cleanly so its recovery runs, then run this again (mqtool rebuild "
            "repairs the consume queues and index but does not clear `abort`)",
            str(store.root / "abort"),
        )


class StoreWriter:
    """The store write path for records built here: `store.appender.CommitLogAppender` appends them with
    the broker's CommitLog rules (queue offset, physical offset, store time, file roll) and dispatches
    them to the ConsumeQueues and the index as ReputMessageService does."""

    def __init__(self, store: Store, major: int | None = None) -> None:
        self.store = store
        self.major = major
        self.warnings: list[str] = []

    def targets(self, records: list[Message]) -> WriteTargets:
        """What appending `records` changes (`store.appender.append_targets`)."""
        from store.appender import append_targets

        return append_targets(self.store, ((r.topic, r.queue_id) for r in records))

    def append(self, records: list[Message], *, own_store_host: bool = False) -> list[Message]:
        """Append `records` in order; returns them as written (queue offset, physical offset, store time).
        The records' store host is kept when they share one (the broker re-puts its own records), unless
        `own_store_host` (records from another store: this store's host is written)."""
        if not records:
            return []
        hosts = {(r.store_host, r.store_port) for r in records}
        host = next(iter(hosts)) if len(hosts) == 1 and not own_store_host else None
        if host is None and not own_store_host:
            self.warnings.append("records with different store hosts: the store's own host is written")
        from store.appender import CommitLogAppender, NewMessage

        written: list[Message] = []
        with CommitLogAppender(
            self.store.root, broker_config=self.store.broker_config, version=self.major, store_host=host
        ) as app:
            self.warnings.extend(app.warnings)
            for r in records:
                result = app.append(
                    NewMessage(
                        topic=r.topic,
                        body=r.body,
                        properties=r.properties_raw,
                        queue_id=r.queue_id,
                        flag=r.flag,
                        sys_flag=r.sys_flag,
                        born_timestamp=r.born_timestamp,
                        born_host=(r.born_host, r.born_port),
                        reconsume_times=r.reconsume_times,
                        prepared_transaction_offset=r.prepared_transaction_offset,
                    )
                )
                written.append(
                    replace(
                        r,
                        queue_offset=result.queue_offset,
                        physical_offset=result.physical_offset,
                        store_timestamp=result.store_timestamp,
                        total_size=result.total_size,
                    )
                )
        return written


def store_writer(store: Store, major: int | None = None) -> StoreWriter:
    """The write path for records rebuilt here."""
    return StoreWriter(store, major)
