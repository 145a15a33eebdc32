"""The trace records a store holds: every message of its trace topics (`RMQ_SYS_TRACE_TOPIC`, the cloud
channel's `rmq_sys_TRACE_DATA_<region>`, and any custom trace topic named), its body decompressed as the
client compressed it (`DefaultMQProducerImpl.tryToCompressMessage`: the trace producer compresses bodies of
4 KiB and more like any producer) and read by `formats.trace`.

`trace_rows` lists every record for `mqtool dump trace`; `trace_hits` finds the records about one message
through the index, as mqadmin's queryMsgTraceById does (`QueryMsgTraceByIdSubCommand`: the trace message's
KEYS carry the traced msgIds, then `TraceView.decodeFromTraceTransData` keeps the records whose bean's msgId
is the id). Nothing here writes.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from formats.errors import MqtoolError
from formats.message.commitlog import Message
from formats.trace import (
    CLOUD_TRACE_TOPIC_PREFIX,
    TRACE_TOPIC,
    TRACE_TYPES,
    TraceContext,
    decode_records,
    java_split,
)
from mqtool.query.key import query_by_key
from mqtool.query.topics import known_topics
from store.storedir import Store


def trace_topics(store: Store, extra: Iterable[str] = ()) -> list[str]:
    """The store's trace topics: RMQ_SYS_TRACE_TOPIC, the cloud channel's, and `extra` (custom trace topics),
    those the store knows of (topics.json or a ConsumeQueue)."""
    known = set(known_topics(store))
    wanted = [TRACE_TOPIC, *extra]
    wanted += sorted(t for t in known if t.startswith(CLOUD_TRACE_TOPIC_PREFIX))
    return [t for t in dict.fromkeys(wanted) if t in known]


@dataclass
class TraceRecordRow:
    """One trace record as stored: the trace message that carries it and the decoded context (or why its
    body cannot be read: then `context` is None and `error` says where the real decoder throws)."""

    store: str
    trace_topic: str
    queue_id: int
    queue_offset: int | None
    physical_offset: int
    store_timestamp: int
    client_host: str  # the trace message's born host: the traced client (TraceView's clientHost)
    trace_msg_id: str  # the trace message's offsetMsgId
    record_index: int | None
    record_offset: int | None  # byte offset of the record in the (decompressed) body
    context: TraceContext | None
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "store": self.store,
            "traceTopic": self.trace_topic,
            "queueId": self.queue_id,
            "queueOffset": self.queue_offset,
            "physicalOffset": self.physical_offset,
            "storeTimestamp": self.store_timestamp,
            "clientHost": self.client_host,
            "traceMsgId": self.trace_msg_id,
            "recordIndex": self.record_index,
            "recordOffset": self.record_offset,
        }
        if self.context is not None:
            doc.update(self.context.to_json())
            bean_host = self.context.bean.client_host
            doc["clientHost"] = bean_host if bean_host is not None else self.client_host
        if self.error is not None:
            doc["error"] = self.error
        return doc


def _message_at(store: Store, phy: int, size: int) -> Message | None:
    """The message a ConsumeQueue unit points at, or None where the broker finds none."""
    if phy < store.commitlog.min_offset:
        return None
    try:
        return store.commitlog.read_message_at(phy, size)
    except MqtoolError:
        return None


def store_label(store: Store) -> str:
    return str(getattr(store, "location", None) or store.root)


def message_rows(
    store: Store, msg: Message, trace_topic: str, *, version: str = "5.3.3", label: str | None = None
) -> list[TraceRecordRow]:
    """The records of one trace message (one row with the error when its body cannot be read)."""
    label = label or store_label(store)

    def row(index: int | None, offset: int | None, ctx: TraceContext | None, error: str | None = None):
        return TraceRecordRow(
            label,
            trace_topic,
            msg.queue_id,
            msg.queue_offset,
            msg.physical_offset,
            msg.store_timestamp,
            msg.born_host_str,
            msg.offset_msg_id,
            index,
            offset,
            ctx,
            error,
        )

    try:
        body = msg.decompressed_body()
        records = decode_records(body, version=version)
    except MqtoolError as exc:
        return [row(None, None, None, f"trace message at physical offset {msg.physical_offset}: {exc}")]
    return [row(r.index, r.offset, r.context) for r in records]


def trace_rows(
    store: Store,
    *,
    extra_topics: Iterable[str] = (),
    types: Iterable[str] | None = None,
    topic: str | None = None,
    group: str | None = None,
    begin: int | None = None,
    end: int | None = None,
    msg_id: str | None = None,
    version: str = "5.3.3",
) -> Iterator[TraceRecordRow]:
    """Every trace record of the store's trace topics, queue by queue in queue order, filtered: `types`
    (TraceType names), `topic` (the bean's topic: only Pub, EndTransaction and Recall records carry one),
    `group` (groupName), [`begin`, `end`] (the record's timeStamp), `msg_id` (the bean's msgId). Bodies
    that cannot be read are always listed (with their error)."""
    wanted_types = None if types is None else set(types)
    if wanted_types is not None and not wanted_types <= set(TRACE_TYPES):
        bad = sorted(wanted_types - set(TRACE_TYPES))[0]
        raise MqtoolError(f"unknown trace type {bad!r} (one of {', '.join(TRACE_TYPES)})")
    label = store_label(store)
    for trace_topic in trace_topics(store, extra_topics):
        for queue_id in store.consume_queues.queue_ids(trace_topic):
            for _q, phy, size, _tags in store.consume_queue(trace_topic, queue_id).units().tolist():
                msg = _message_at(store, phy, size)
                if msg is None:
                    continue
                for r in message_rows(store, msg, trace_topic, version=version, label=label):
                    if r.context is None or _matches(
                        r.context, wanted_types, topic, group, begin, end, msg_id
                    ):
                        yield r


def _matches(
    ctx: TraceContext,
    types: set[str] | None,
    topic: str | None,
    group: str | None,
    begin: int | None,
    end: int | None,
    msg_id: str | None,
) -> bool:
    bean = ctx.bean
    if types is not None and ctx.trace_type not in types:
        return False
    if topic is not None and bean.topic != topic:
        return False
    if group is not None and ctx.group_name != group:
        return False
    if msg_id is not None and bean.msg_id != msg_id:
        return False
    if begin is not None and (ctx.time_stamp is None or ctx.time_stamp < begin):
        return False
    return not (end is not None and (ctx.time_stamp is None or ctx.time_stamp > end))


def has_key(ctx: TraceContext, key: str) -> bool:
    """The record's bean carries `key` among its space-separated keys."""
    keys = ctx.bean.keys
    return bool(keys) and key in java_split(keys, " ")


def trace_hits(
    store: Store,
    topics: list[str],
    lookup: str,
    *,
    by_key: bool = False,
    message_topic: str | None = None,
    version: str = "5.3.3",
) -> tuple[list[TraceRecordRow], list[str]]:
    """The trace records about a message, found through the index under each trace topic: by its msgId
    (the records whose bean's msgId is `lookup`), or with `by_key` by one of its keys (the records whose bean
    carries the key; with `message_topic`, Pub/EndTransaction/Recall records of another topic are dropped).
    Returns the records and notes (hash collisions, an index behind the commitlog)."""
    rows: list[TraceRecordRow] = []
    notes: list[str] = []
    label = store_label(store)
    for trace_topic in topics:
        result = query_by_key(store, trace_topic, lookup)
        notes += [f"{trace_topic}: {n}" for n in result.notes()]
        for msg in result.messages:
            for r in message_rows(store, msg, trace_topic, version=version, label=label):
                ctx = r.context
                if ctx is None:
                    rows.append(r)
                elif by_key:
                    if has_key(ctx, lookup) and (
                        message_topic is None or ctx.bean.topic in (None, message_topic)
                    ):
                        rows.append(r)
                elif ctx.bean.msg_id == lookup:
                    rows.append(r)
    return rows, notes
