"""`dlq list` and `dlq stats`: the messages of `%DLQ%<group>` topics, where each came from and when it died.

How the broker builds a DLQ copy (rocketmq-all-5.3.3, the consumer's send-back,
broker/src/main/java/org/apache/rocketmq/broker/processor/AbstractSendMessageProcessor.java):
- it looks the consumed message up by its commitlog offset (:157-163) and, when that message has no
  `RETRY_TOPIC` yet, sets `RETRY_TOPIC` to its topic (:165-168) - so `RETRY_TOPIC` is the topic the message
  was first sent to (MessageConst.PROPERTY_RETRY_TOPIC);
- once `reconsumeTimes >= maxReconsumeTimes` (the group's retryMaxTimes, or the client's
  maxReconsumeTimes) or the client asks a negative delay level, the copy goes to `%DLQ%<group>`, queue
  `randomQueueId(DLQ_NUMS_PER_GROUP)` (one queue), with delay level 0 (`DELAY` "0") (:181-206);
- the copy keeps every property of the message it copies (:215-219: `REAL_TOPIC`/`REAL_QID` where the
  message came through the delay queue, i.e. the retry topic and queue it was last consumed from; `UNIQ_KEY`,
  `KEYS`, `TAGS` of the original), its body, flag, sysFlag, born time and host; the store host is this
  broker's; `reconsumeTimes` is the consumed message's + 1 (:223-228);
- `ORIGIN_MESSAGE_ID` is kept when the message had one, else set to the consumed message's offset
  msgId (:230-232, MessageAccessor.getOriginMessageId/setOriginMessageId): the store host and commitlog
  offset of the first copy, on whichever broker stored it.
The send path has a second way in: a message sent to `%RETRY%<group>` with reconsumeTimes above the maximum
(or for a group holding orderly locks) is redirected to `%DLQ%<group>` with its own properties
(SendMessageProcessor.java:196-231). Either way the copy's store time is when it died.

Where `ORIGIN_MESSAGE_ID` names this store's host, the original record is read at its commitlog offset
for its queue and store time (when retention has not deleted it). Read-only.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from formats.errors import MqtoolError
from formats.message.msgid import decode_offset_msg_id
from formats.names import DLQ_PREFIX
from store.broker.messagerebuild import read_message_or_none
from store.storedir import Store

# MessageConst names (common/src/main/java/org/apache/rocketmq/common/message/MessageConst.java of 5.3.3)
RETRY_TOPIC = "RETRY_TOPIC"
ORIGIN_MESSAGE_ID = "ORIGIN_MESSAGE_ID"
REAL_TOPIC = "REAL_TOPIC"
REAL_QID = "REAL_QID"

# age buckets of `dlq stats`: (label, upper bound in ms, exclusive)
AGE_BUCKETS = (("<1h", 3_600_000), ("1h-1d", 86_400_000), ("1d-7d", 604_800_000), (">=7d", None))


@dataclass
class DlqRow:
    """One message of a DLQ topic (JSON names: notes/json-output.md style)."""

    group: str
    topic: str
    queue_id: int
    queue_offset: int
    physical_offset: int
    store_timestamp: int  # when it died
    born_timestamp: int
    reconsume_times: int
    uniq_key: str | None
    offset_msg_id: str
    origin_message_id: str | None
    origin_topic: str | None  # RETRY_TOPIC: the topic the message was first sent to
    real_topic: str | None
    real_queue_id: int | None
    keys: str | None
    tags: str | None
    body_size: int
    origin_queue_id: int | None = None
    origin_queue_offset: int | None = None
    origin_store_timestamp: int | None = None
    origin_note: str | None = None

    def age_ms(self, now: int) -> int:
        return max(0, now - self.store_timestamp)

    def to_json(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "topic": self.topic,
            "queueId": self.queue_id,
            "queueOffset": self.queue_offset,
            "physicalOffset": self.physical_offset,
            "storeTimestamp": self.store_timestamp,
            "bornTimestamp": self.born_timestamp,
            "reconsumeTimes": self.reconsume_times,
            "uniqKey": self.uniq_key,
            "offsetMsgId": self.offset_msg_id,
            "originMessageId": self.origin_message_id,
            "originTopic": self.origin_topic,
            "originQueueId": self.origin_queue_id,
            "originQueueOffset": self.origin_queue_offset,
            "originStoreTimestamp": self.origin_store_timestamp,
            "realTopic": self.real_topic,
            "realQueueId": self.real_queue_id,
            "keys": self.keys,
            "tags": self.tags,
            "bodySize": self.body_size,
            "originNote": self.origin_note,
        }


@dataclass
class DlqListing:
    rows: list[DlqRow]
    groups: list[str]  # the DLQ groups looked at
    warnings: list[str] = field(default_factory=list)


def dlq_groups(store: Store) -> list[str]:
    """The groups with a `%DLQ%<group>` queue directory, in name order."""
    return [t[len(DLQ_PREFIX) :] for t in store.consume_queues.topics() if t.startswith(DLQ_PREFIX)]


def list_dlq(
    store: Store, *, group: str | None = None, begin: int | None = None, end: int | None = None
) -> DlqListing:
    """Every message of `%DLQ%<group>` (or of every DLQ topic) stored in [begin, end] (epoch ms, as the
    query commands take --begin/--end)."""
    groups = dlq_groups(store)
    if group is not None:
        if group not in groups:
            raise MqtoolError(f"group {group!r} has no dead-letter queue ({DLQ_PREFIX}{group}) in this store")
        groups = [group]
    listing = DlqListing([], groups)
    for g in groups:
        for row in _group_rows(store, g, listing.warnings):
            if (begin is None or row.store_timestamp >= begin) and (
                end is None or row.store_timestamp <= end
            ):
                listing.rows.append(row)
    return listing


def _group_rows(store: Store, group: str, warnings: list[str]) -> Iterator[DlqRow]:
    topic = DLQ_PREFIX + group
    for queue_id in store.queue_ids(topic):
        cq = store.consume_queue(topic, queue_id)
        for queue_offset, phy, size, _ in cq.units(cq.min_offset, cq.max_offset).tolist():
            msg = read_message_or_none(store, phy, size)
            if msg is None:
                warnings.append(
                    f"{topic}/{queue_id} offset {queue_offset}: no message at commitlog offset {phy} "
                    "(deleted)"
                )
                continue
            yield _row(store, group, msg)


def _row(store: Store, group: str, msg) -> DlqRow:
    props = msg.properties
    real_qid = props.get(REAL_QID)
    row = DlqRow(
        group=group,
        topic=msg.topic,
        queue_id=msg.queue_id,
        queue_offset=msg.queue_offset,
        physical_offset=msg.physical_offset,
        store_timestamp=msg.store_timestamp,
        born_timestamp=msg.born_timestamp,
        reconsume_times=msg.reconsume_times,
        uniq_key=msg.uniq_key,
        offset_msg_id=msg.offset_msg_id,
        origin_message_id=props.get(ORIGIN_MESSAGE_ID),
        origin_topic=props.get(RETRY_TOPIC),
        real_topic=props.get(REAL_TOPIC),
        real_queue_id=int(real_qid) if real_qid is not None and real_qid.lstrip("-").isdigit() else None,
        keys=msg.keys,
        tags=msg.tags,
        body_size=msg.body_length,
    )
    _resolve_origin(store, msg, row)
    return row


def _resolve_origin(store: Store, msg, row: DlqRow) -> None:
    """The original record, where ORIGIN_MESSAGE_ID names this store (same store host as the DLQ copy)."""
    if row.origin_message_id is None:
        row.origin_note = "no ORIGIN_MESSAGE_ID"
        return
    try:
        origin = decode_offset_msg_id(row.origin_message_id)
    except MqtoolError:
        row.origin_note = "ORIGIN_MESSAGE_ID is not an offset msgId"
        return
    if (bytes(origin.address), origin.port) != (bytes(msg.store_host), msg.store_port):
        row.origin_note = "original stored on another broker"
        return
    first = read_message_or_none(store, origin.offset, None)
    if first is None:
        row.origin_note = "no record at the original's commitlog offset (deleted, or not a record start)"
        return
    if row.origin_topic is not None and first.topic != row.origin_topic:
        row.origin_note = (
            f"the record at the original's offset is of topic {first.topic}, not {row.origin_topic}"
        )
        return
    row.origin_queue_id = first.queue_id
    row.origin_queue_offset = first.queue_offset
    row.origin_store_timestamp = first.store_timestamp


# --- stats ----------------------------------------------------------------------------------------


@dataclass
class DlqStatsRow:
    group: str
    origin_topic: str | None
    messages: int
    oldest: int  # store time of the oldest death
    newest: int
    max_reconsume_times: int
    ages: dict[str, int]

    def to_json(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "originTopic": self.origin_topic,
            "messages": self.messages,
            "oldestStoreTimestamp": self.oldest,
            "newestStoreTimestamp": self.newest,
            "maxReconsumeTimes": self.max_reconsume_times,
            **{f"age{label}": n for label, n in self.ages.items()},
        }


def age_bucket(age_ms: int) -> str:
    for label, bound in AGE_BUCKETS:
        if bound is None or age_ms < bound:
            return label
    raise AssertionError("the last bucket has no bound")


def dlq_stats(listing: DlqListing, now: int) -> list[DlqStatsRow]:
    """Per group and original topic: how many died, the oldest and newest death, by age at `now`."""
    out: dict[tuple[str, str | None], DlqStatsRow] = {}
    for r in listing.rows:
        key = (r.group, r.origin_topic)
        stats = out.get(key)
        if stats is None:
            stats = out[key] = DlqStatsRow(
                r.group,
                r.origin_topic,
                0,
                r.store_timestamp,
                r.store_timestamp,
                0,
                {label: 0 for label, _ in AGE_BUCKETS},
            )
        stats.messages += 1
        stats.oldest = min(stats.oldest, r.store_timestamp)
        stats.newest = max(stats.newest, r.store_timestamp)
        stats.max_reconsume_times = max(stats.max_reconsume_times, r.reconsume_times)
        stats.ages[age_bucket(r.age_ms(now))] += 1
    return [out[k] for k in sorted(out, key=lambda k: (k[0], k[1] or ""))]


__all__ = ["DlqListing", "DlqRow", "DlqStatsRow", "age_bucket", "dlq_groups", "dlq_stats", "list_dlq"]
