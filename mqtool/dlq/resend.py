"""`dlq resend`: put dead letters back where a consumer group gets them again, as the broker's own re-put
builds them, offline and idempotent.

What the broker writes when a consumer sends a message back (rocketmq-all-5.3.3):
- `AbstractSendMessageProcessor.consumerSendMsgBack` (broker/src/main/java/org/apache/rocketmq/broker/
  processor/AbstractSendMessageProcessor.java) copies the consumed message: every property kept (:219-220),
  `RETRY_TOPIC` set to its topic when it has none (:165-168), `WAIT` "false" (:169), body, flag, sysFlag, born
  time and host copied (:217-225), the store host this broker's (:227), reconsumeTimes + 1 (:228),
  `ORIGIN_MESSAGE_ID` kept, else set to the copied record's offset msgId (:230-232); below the group's
  maximum it goes to `%RETRY%<group>`, queue `random.nextInt(retryQueueNums)` (:132-133), with delay level
  `3 + reconsumeTimes` (:208-213) — the group must be in subscriptionGroup.json (:110-117) with
  retryQueueNums > 0 (:126-130);
- the put hook (`HookUtils.handleScheduleMessage` / `transformDelayLevelMessage`,
  broker/src/main/java/org/apache/rocketmq/broker/util/HookUtils.java:129-152, :222-237) adds `REAL_TOPIC` /
  `REAL_QID` (the retry topic and queue), re-serialises the properties and stores the message in
  `SCHEDULE_TOPIC_XXXX`;
- when due, `ScheduleMessageService.messageTimeUp` (broker/.../schedule/ScheduleMessageService.java:334-364)
  writes it into `REAL_TOPIC`/`REAL_QID` with the properties re-serialised from the decoded map
  (`store.broker.schedule.message_time_up`), so `DELAY`, `REAL_TOPIC`, `REAL_QID` stay in the stored string.

`--to retry` writes the record that path leaves in `%RETRY%<group>` for a message failing for the first
time: built from the DLQ copy (properties, body, flag, sysFlag, born time and host, store host), with
`REAL_TOPIC` = `%RETRY%<group>`, `REAL_QID` = the queue, `DELAY` = 3 (clamped to the store's highest delay
level as transformDelayLevelMessage does), and **reconsumeTimes 1**: the DLQ copy's count is the group's
maximum + 1, so sent back as it is the first failure would kill it again (:181-183
`getReconsumeTimes() >= maxReconsumeTimes`); reset to what the first send-back writes (0 + 1), the group gets
its full retries again. The record is written as delivered (no wait in the delay queue). The queue: the
broker picks one at random among retryQueueNums; mqtool takes the DLQ copy's `REAL_QID` (the retry queue it
last died from) when it is one of them, else 0. A consumer pulling `%RETRY%<group>` gets the message with
its topic reset to `RETRY_TOPIC` (DefaultMQPushConsumerImpl.resetRetryAndNamespace, client/src/main/java/
org/apache/rocketmq/client/impl/consumer/DefaultMQPushConsumerImpl.java:1564-1576).

`--to origin` puts the DLQ copy back into the queue its first copy was stored in (`RETRY_TOPIC`, and the
queue of the record `ORIGIN_MESSAGE_ID` names, which must be in this store): properties as the send-back
re-serialises them (with `ORIGIN_MESSAGE_ID` set as above), no delay, reconsumeTimes 0 (as first sent).
Every group subscribed to that topic gets it again, not only `--group`.

Idempotent: a resent copy keeps `ORIGIN_MESSAGE_ID` (and `UNIQ_KEY`), which every later copy of the
message keeps too (the send-back keeps both). A dead letter counts as already resent when a record of
`%RETRY%<group>` or of its original topic (either target: one resent to retry is not resent to origin) stored
after it (higher commitlog offset: every copy from before it died is older) carries
the same `ORIGIN_MESSAGE_ID` and `UNIQ_KEY` — the resent copy itself, or its own retries. A record the
retention already deleted cannot be seen: such a dead letter would be resent again.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal

from formats.errors import FormatError, MqtoolError
from formats.message.commitlog import Message, build_message
from formats.message.properties import (
    PROPERTY_CRC32,
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_REAL_QUEUE_ID,
    PROPERTY_REAL_TOPIC,
    PROPERTY_UNIQ_KEY,
    PROPERTY_WAIT_STORE_MSG_OK,
    encode_properties,
)
from formats.names import DLQ_PREFIX, RETRY_PREFIX, SCHEDULE_TOPIC
from mqtool.dlq.listing import ORIGIN_MESSAGE_ID, DlqRow, dlq_groups
from mqtool.dlq.selection import DlqSelector, select_dead_letters
from mqtool.offsets.reset import StoreCatalog
from mqtool.safety import refuse_unsupported_layout
from store.broker.messagerebuild import (
    broker_major,
    copied_record,
    planned_json,
    queue_max_offset,
    read_message_or_none,
    rebuild_properties,
    refuse_unclean,
    store_writer,
    units_after,
)
from store.broker.schedule import DelayError, delay_levels, message_time_up
from store.io.filewrites import WriteTargets, crash_point
from store.storedir import Store
from store.version import BrokerVersion

Target = Literal["retry", "origin"]
Action = Literal["resend", "skip", "refuse"]
TARGETS = ("retry", "origin")
FIRST_RETRY_DELAY_LEVEL = 3  # AbstractSendMessageProcessor.java:209-211: 3 + reconsumeTimes (0)


class ResendError(MqtoolError):
    """A resend mqtool cannot carry out (nothing written)."""


@dataclass
class Resend:
    """One selected dead letter and what the resend does with it."""

    row: DlqRow
    action: Action
    reason: str | None = None
    record: Message | None = None  # to write
    written: Message | None = None  # as written (after --execute)
    found: Message | None = None  # the copy that shows it was resent already

    @property
    def marker(self) -> tuple[str, str | None]:
        """(ORIGIN_MESSAGE_ID as the send-back leaves it, UNIQ_KEY): what every later copy keeps."""
        return (self.row.origin_message_id or self.row.offset_msg_id, self.row.uniq_key)

    def to_json(self) -> dict[str, Any]:
        r = self.row
        rec = self.written or self.record
        return {
            "group": r.group,
            "dlqQueueId": r.queue_id,
            "dlqQueueOffset": r.queue_offset,
            "physicalOffset": r.physical_offset,
            "offsetMsgId": r.offset_msg_id,
            "uniqKey": r.uniq_key,
            "keys": r.keys,
            "originTopic": r.origin_topic,
            "originMessageId": r.origin_message_id,
            "storeTimestamp": r.store_timestamp,
            "action": self.action,
            "reason": self.reason,
            "topic": None if rec is None else rec.topic,
            "queueId": None if rec is None else rec.queue_id,
            "newQueueOffset": None if rec is None else rec.queue_offset,
            "newPhyOffset": None if self.written is None else self.written.physical_offset,
            "newStoreTimestamp": None if self.written is None else self.written.store_timestamp,
            "reconsumeTimes": None if rec is None else rec.reconsume_times,
            "foundPhyOffset": None if self.found is None else self.found.physical_offset,
            "record": None if rec is None else planned_json(rec, written=self.written is not None),
        }


@dataclass
class ResendPlan:
    broker: BrokerVersion
    group: str
    target: Target
    resends: list[Resend]
    notes: list[str] = field(default_factory=list)

    @property
    def to_resend(self) -> list[Resend]:
        return [r for r in self.resends if r.action == "resend"]

    @property
    def changes_anything(self) -> bool:
        return bool(self.to_resend)

    def counts(self) -> dict[str, int]:
        out = {"resend": 0, "skip": 0, "refuse": 0}
        for r in self.resends:
            out[r.action] += 1
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "brokerVersion": self.broker.major,
            "brokerVersionReason": self.broker.reason,
            "group": self.group,
            "to": self.target,
            "counts": self.counts(),
            "messages": [r.to_json() for r in self.resends],
            "notes": self.notes,
        }


# --- building the records ---------------------------------------------------------------------------


def _send_back_properties(msg: Message, drop_crc: bool) -> dict[str, str]:
    """The DLQ copy's properties as consumerSendMsgBack leaves them in memory (:165-169, :230-232); with
    `drop_crc` (the store's broker runs enabledAppendPropCRC) without the `__CRC32#` trailer of the copy,
    which every put of that broker deletes before it appends its own (store/.../CommitLog.java:930-933)."""
    props = dict(msg.properties)
    if drop_crc:
        props.pop(PROPERTY_CRC32, None)
    props[PROPERTY_WAIT_STORE_MSG_OK] = "false"
    if not props.get(ORIGIN_MESSAGE_ID, "").strip():  # UtilAll.isBlank
        props[ORIGIN_MESSAGE_ID] = msg.offset_msg_id
    return props


def retry_record(
    msg: Message, group: str, queue_id: int, major: int, max_level: int, drop_crc: bool = False
) -> Message:
    """The record the send-back + put hook + messageTimeUp leave in `%RETRY%<group>` for `msg`, sent back
    as a first failure (reconsumeTimes 0 -> 1, delay level 3)."""
    props = _send_back_properties(msg, drop_crc)
    level = min(FIRST_RETRY_DELAY_LEVEL, max_level) if max_level > 0 else FIRST_RETRY_DELAY_LEVEL
    props[PROPERTY_DELAY_TIME_LEVEL] = str(level)
    props[PROPERTY_REAL_TOPIC] = RETRY_PREFIX + group  # transformDelayLevelMessage
    props[PROPERTY_REAL_QUEUE_ID] = str(queue_id)
    scheduled = build_message(
        topic=SCHEDULE_TOPIC,
        body=msg.body,
        properties=encode_properties(props.items(), trailing_separator=major >= 5),
        queue_id=level - 1,
        flag=msg.flag,
        sys_flag=msg.sys_flag,
        born_timestamp=msg.born_timestamp,
        born_host=(msg.born_host, msg.born_port),
        store_host=(msg.store_host, msg.store_port),
        reconsume_times=1,
    )
    return message_time_up(scheduled, major)


def origin_record(msg: Message, topic: str, queue_id: int, major: int, drop_crc: bool = False) -> Message:
    """The DLQ copy put back into the original queue: properties as the send-back re-serialises them, no
    delay, reconsumeTimes 0."""
    props = _send_back_properties(msg, drop_crc)
    raw = rebuild_properties(encode_properties(props.items(), trailing_separator=major >= 5), major)
    return replace(copied_record(msg, topic=topic, queue_id=queue_id, properties=raw), reconsume_times=0)


# --- the plan -----------------------------------------------------------------------------------------


def plan_resend(
    store: Store,
    group: str,
    selector: DlqSelector,
    target: Target = "retry",
    *,
    broker_version: int | None = None,
) -> ResendPlan:
    """What `dlq resend` writes for the dead letters of `%DLQ%<group>` that `selector` picks: per message
    resend (the record), skip (already resent, or a later dead letter of the same message is selected) or
    refuse (why). Nothing is written."""
    if target not in TARGETS:
        raise ResendError(f"--to must be retry or origin, not {target!r}")
    refuse_unsupported_layout(store)
    broker = broker_major(store, broker_version)
    if group not in dlq_groups(store):
        note = (
            f"group {group} has no dead-letter queue ({DLQ_PREFIX}{group}) in this store: nothing to resend"
        )
        return ResendPlan(broker, group, target, [], notes=[note])
    listing = select_dead_letters(store, group, selector)
    plan = ResendPlan(broker, group, target, [], notes=list(listing.warnings))
    catalog = StoreCatalog.load(store)
    plan.notes.extend(catalog.notes)
    refusal, retry_queues = _retry_refusal(catalog, group) if target == "retry" else (None, 0)
    max_level = delay_levels(store).max_level
    drop_crc = bool(store.broker_config.enabledAppendPropCRC)
    latest: dict[tuple[str, str | None], Resend] = {}
    for row in listing.rows:
        item = Resend(row, "refuse", refusal)
        plan.resends.append(item)
        if refusal is not None:
            continue
        msg = read_message_or_none(store, row.physical_offset, None)
        if msg is None:
            item.reason = f"no message at commitlog offset {row.physical_offset}"
            continue
        if not row.origin_topic:
            item.reason = "no RETRY_TOPIC: the topic it was first sent to is unknown"
            continue
        try:
            if target == "retry":
                queue_id = row.real_queue_id if row.real_topic == RETRY_PREFIX + group else None
                if queue_id is None or not 0 <= queue_id < retry_queues:
                    queue_id = 0
                item.record = retry_record(msg, group, queue_id, broker.major, max_level, drop_crc)
            else:
                why = _origin_refusal(catalog, row)
                if why is not None:
                    item.reason = why
                    continue
                item.record = origin_record(
                    msg, row.origin_topic, row.origin_queue_id, broker.major, drop_crc
                )
        except (DelayError, FormatError) as exc:
            item.reason = exc.message
            continue
        item.action, item.reason = "resend", None
        earlier = latest.get(item.marker)
        if earlier is not None:  # the same message died twice: the later dead letter is the one to resend
            earlier.action, earlier.record = "skip", None
            earlier.reason = (
                f"a later dead letter of the same message is selected (DLQ offset {row.queue_offset})"
            )
        latest[item.marker] = item
    _recognise_resent(store, group, plan.to_resend)
    _assign_queue_offsets(store, plan)
    plan.notes.extend(_consumer_notes(store, catalog, plan))
    return plan


def _retry_refusal(catalog: StoreCatalog, group: str) -> tuple[str | None, int]:
    """Why the send-back would refuse `group` (AbstractSendMessageProcessor.java:110-130), and its
    retryQueueNums."""
    if catalog.groups is None:
        return "no subscriptionGroup.json: whether the group exists is unknown", 0
    config = catalog.groups.subscription_group_table.get(group)
    if config is None:
        return (
            f"group {group} is not in subscriptionGroup.json (deleted): the broker's send-back answers "
            "SUBSCRIPTION_GROUP_NOT_EXIST and no consumer of it would get the message",
            0,
        )
    if config.retry_queue_nums <= 0:
        return f"group {group} has retryQueueNums {config.retry_queue_nums}: the broker writes no retry", 0
    topic = RETRY_PREFIX + group
    if catalog.topic_config(topic) is None:
        return (
            f"{topic} is not in topics.json: the broker's send-back would create it "
            "(createTopicInSendMessageBackMethod); mqtool does not write topics.json",
            0,
        )
    return None, config.retry_queue_nums


def _origin_refusal(catalog: StoreCatalog, row: DlqRow) -> str | None:
    topic = row.origin_topic
    if topic.startswith((RETRY_PREFIX, DLQ_PREFIX)):
        return f"RETRY_TOPIC {topic} is not an ordinary topic"
    if catalog.topics is None:
        return "no topics.json: whether the original topic exists is unknown"
    config = catalog.topic_config(topic)
    if config is None:
        return f"topic {topic} is not in topics.json (deleted): no consumer reads it"
    if row.origin_queue_id is None:
        return f"the original's queue is unknown ({row.origin_note}); --to retry needs no queue"
    if row.origin_queue_id >= config.read_queue_nums:
        return f"queue {row.origin_queue_id} of {topic} is past readQueueNums {config.read_queue_nums}"
    return None


def _recognise_resent(store: Store, group: str, items: list[Resend]) -> None:
    """Mark as skipped the dead letters whose marks (ORIGIN_MESSAGE_ID and UNIQ_KEY) a record stored after
    them already carries, in `%RETRY%<group>` or in the original topic, whichever target this run has: a
    message resent either way is not resent again."""
    if not items:
        return
    codes = {id(item): item.record.tags_code() for item in items}
    by_topic: dict[str, list[Resend]] = {}
    for item in items:
        for topic in dict.fromkeys((RETRY_PREFIX + group, item.row.origin_topic)):
            by_topic.setdefault(topic, []).append(item)
    for topic, todo in by_topic.items():
        low = min(i.row.physical_offset for i in todo)
        wanted = {i.marker: i for i in todo}
        origins = {m[0].encode() for m in wanted}
        tags = {codes[id(i)] for i in todo}
        for queue_id in store.consume_queues.queue_ids(topic):
            units = units_after(store, topic, queue_id, low)
            for phy, size, code in zip(
                units["phyOffset"].tolist(), units["size"].tolist(), units["tagsCode"].tolist(), strict=True
            ):
                if code not in tags or not _may_carry(store, phy, size, origins):
                    continue
                found = read_message_or_none(store, phy, size)
                if found is None:
                    continue
                props = found.properties
                item = wanted.get((props.get(ORIGIN_MESSAGE_ID), props.get(PROPERTY_UNIQ_KEY)))
                if item is None or phy <= item.row.physical_offset or item.found is not None:
                    continue
                item.action, item.found = "skip", found
                item.reason = (
                    f"already resent: {found.topic} queue {found.queue_id} offset {found.queue_offset} "
                    f"(phy {found.physical_offset}) carries its ORIGIN_MESSAGE_ID and UNIQ_KEY"
                )
                item.record = None


_ORIGIN_MARK = ORIGIN_MESSAGE_ID.encode() + b"\x01"


def _may_carry(store: Store, phy: int, size: int, origins: set[bytes]) -> bool:
    """A byte test before the full decode: does the record at `phy` hold `ORIGIN_MESSAGE_ID` = one of
    `origins`? The last mark is taken (properties follow the body and topic), so a body holding the mark
    cannot hide the property; a record that cannot be read here is left to the decode."""
    try:
        raw = store.commitlog.read_raw(phy, size)
    except (MqtoolError, OSError):
        return True
    at = raw.rfind(_ORIGIN_MARK)
    if at < 0:
        return False
    start = at + len(_ORIGIN_MARK)
    end = raw.find(b"\x02", start)
    return raw[start : end if end >= 0 else len(raw)] in origins


def _assign_queue_offsets(store: Store, plan: ResendPlan) -> None:
    next_offset: dict[tuple[str, int], int] = {}
    for item in plan.to_resend:
        key = (item.record.topic, item.record.queue_id)
        if key not in next_offset:
            next_offset[key] = queue_max_offset(store, *key, source=item.row.physical_offset)
        item.record = replace(item.record, queue_offset=next_offset[key])
        next_offset[key] += 1


def _consumer_notes(store: Store, catalog: StoreCatalog, plan: ResendPlan) -> list[str]:
    notes: list[str] = []
    if plan.target == "origin" and plan.to_resend:
        topics = sorted({r.record.topic for r in plan.to_resend})
        notes.append(
            f"every consumer group subscribed to {', '.join(topics)} gets the resent messages, not only "
            f"{plan.group}"
        )
        return notes
    committed = catalog.committed(RETRY_PREFIX + plan.group, plan.group)
    for queue_id in sorted({r.record.queue_id for r in plan.to_resend}):
        if queue_id not in committed:
            earlier = queue_max_offset(store, RETRY_PREFIX + plan.group, queue_id)
            notes.append(
                f"{plan.group} has no committed offset in {RETRY_PREFIX}{plan.group} queue {queue_id}: a "
                f"push consumer starts it at 0 (RebalancePushImpl.computePullFromWhere) and also gets the "
                f"{earlier} earlier record(s) there"
            )
    return notes


# --- execution ------------------------------------------------------------------------------------


@dataclass
class ResendResult:
    executed: bool
    written: list[Message] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def execute_resend(store: Store, plan: ResendPlan, execute: bool, *, replan=None) -> ResendResult:
    """Append and dispatch the plan's records, under the write safety rules (`mqtool.safety`). Dry run
    unless `execute`. With `replan` (a function of a fresh Store), the plan is made again under the store
    lock and refused if it changed. Each record is appended all or nothing; a crash part way leaves some
    resent, which the next run recognises and skips."""
    from mqtool.safety import write_guard

    result = ResendResult(executed=False)

    def targets() -> WriteTargets:
        if not plan.changes_anything:
            return WriteTargets()
        return store_writer(store, plan.broker.major).targets([r.record for r in plan.to_resend])

    with write_guard(store, execute, targets=targets) as writable:
        if not writable or not plan.changes_anything:
            return result
        refuse_unclean(store)
        if replan is not None:
            with Store(store.root, store.broker_config) as again:
                fresh = replan(again)
            if _shape(fresh) != _shape(plan):
                raise ResendError("the store changed since the plan was made; run the command again")
        writer = store_writer(store, plan.broker.major)
        records = [r.record for r in plan.to_resend]
        written = writer.append(records)
        crash_point("dlq-resent")
        for item, w in zip(plan.to_resend, written, strict=True):
            item.written = w
        result.written = written
        result.notes.extend(writer.warnings)
        result.executed = True
    return result


def _shape(plan: ResendPlan) -> list[tuple]:
    return [
        (
            r.row.physical_offset,
            r.action,
            None if r.record is None else (r.record.topic, r.record.queue_id, r.record.queue_offset),
        )
        for r in plan.resends
    ]


__all__ = [
    "TARGETS",
    "Resend",
    "ResendError",
    "ResendPlan",
    "ResendResult",
    "execute_resend",
    "origin_record",
    "plan_resend",
    "retry_record",
]
