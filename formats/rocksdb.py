"""Keys and values a 5.x broker keeps in RocksDB (storeType=defaultRocksDB), declared with construct.

Consume queues (`consumequeue/`, `ConsumeQueueRocksDBStorage`), from 5.3.3's classes:
- default column family, `RocksDBConsumeQueueTable`: key `[topicLen i32][CTRL_1][topic][CTRL_1][queueId i32]
  [CTRL_1][cqOffset i64]`, value `[phyOffset i64][size i32][tagsCode i64][storeTimestamp i64]` (28 bytes).
- `offset` column family, `RocksDBConsumeQueueOffsetTable`: key `[topicLen i32][CTRL_1][topic][CTRL_1]
  ["max" or "min"][CTRL_1][queueId i32]`, value `[phyOffset i64][cqOffset i64]`; the "max" entry holds the
  last unit dispatched (max offset = its cqOffset + 1), "min" the first unit still in the commitlog, written
  when the broker first corrects it. One more entry, the topic `CHECKPOINT_TOPIC` "max" queue 0, holds only
  the max physical offset dispatched (8 bytes).
Config v1 (`config/consumerOffsets`, `config/topics`, `config/subscriptionGroups`, `ConfigRocksDBStorage`):
default column family key = the name (UTF-8: "topic@group", topic, group), value = fastjson of the bean
(`RocksDBOffsetSerializeWrapper` `{"offsetTable":{...}}`, `TopicConfig`, `SubscriptionGroupConfig`);
`kvDataVersion` column family, key `kvDataVersionKey`: fastjson `DataVersion`; `forbidden`: group -> JSON.
Config v2 (`config/rdb`, `ConfigStorage`, 5.3.2+), consumer offsets (`ConsumerOffsetManagerV2`): key
`[TablePrefix.TABLE 1][TableId i16][RecordPrefix.DATA 2][groupLen i16][group][CTRL_1][topicLen i16][topic]
[CTRL_1][queueId i32]`, value `[offset i64]` (LMQ offsets too: the manager keeps those only here, not in its
table); topics (`TopicConfigManagerV2`, TableId.TOPIC 3) and groups (`SubscriptionGroupManagerV2`,
SUBSCRIPTION_GROUP 4): key `[1][TableId i16][2][nameLen i16][name]` (`ConfigHelper.keyBufOf`), value
`[SerializationType i8][fastjson2 JSON of the bean]` (`valueBufOf`; only JSON = 1 is read, other types are
skipped); a table's data version: key `[1][TableId][RecordPrefix.DATA_VERSION 1]["data_version"]`, value
`[stateMachineVersion i64][timestamp i64][counter i64]`.
All integers big-endian, as Java's ByteBuffer and Netty's ByteBuf write them.
"""

from __future__ import annotations

from dataclasses import dataclass

from construct import (
    Bytes,
    Const,
    ConstructError,
    GreedyBytes,
    Int8sb,
    Int16sb,
    Int32sb,
    Int64sb,
    Struct,
    this,
)

from formats.errors import FormatError

CTRL_0 = 0  # AbstractRocksDBStorage.CTRL_0
CTRL_1 = 1
CTRL_2 = 2
_CTRL_1 = Const(bytes([CTRL_1]))

OFFSET_COLUMN_FAMILY = "offset"  # ConsumeQueueRocksDBStorage.OFFSET_COLUMN_FAMILY
MAX_PHYSICAL_OFFSET_CHECKPOINT_TOPIC = "CHECKPOINT_TOPIC"  # TopicValidator.RMQ_SYS_ROCKSDB_OFFSET_TOPIC

CqKey = Struct(
    "topic_len" / Int32sb,
    _CTRL_1,
    "topic" / Bytes(this.topic_len),
    _CTRL_1,
    "queue_id" / Int32sb,
    _CTRL_1,
    "cq_offset" / Int64sb,
)
CQ_VALUE_SIZE = 28
CqValue = Struct(
    "phy_offset" / Int64sb,
    "size" / Int32sb,
    "tags_code" / Int64sb,
    "store_timestamp" / Int64sb,
)
OffsetKey = Struct(
    "topic_len" / Int32sb,
    _CTRL_1,
    "topic" / Bytes(this.topic_len),
    _CTRL_1,
    "kind" / Bytes(3),  # b"max" / b"min"
    _CTRL_1,
    "queue_id" / Int32sb,
)
OffsetValue = Struct("phy_offset" / Int64sb, "cq_offset" / Int64sb)
MaxPhyOffsetValue = Struct("phy_offset" / Int64sb)

# --- config v1 (ConfigRocksDBStorage) ---------------------------------------------------------------
KV_DATA_VERSION_COLUMN_FAMILY = "kvDataVersion"
FORBIDDEN_COLUMN_FAMILY = "forbidden"
KV_DATA_VERSION_KEY = b"kvDataVersionKey"
CONFIG_V1_DIRS = {  # config file -> its v1 RocksDB directory under config/
    "consumerOffset.json": "consumerOffsets",
    "topics.json": "topics",
    "subscriptionGroup.json": "subscriptionGroups",
}

# --- config v2 (ConfigStorage, config/rdb) --------------------------------------------------------
CONFIG_V2_DIR = "rdb"
TABLE_PREFIX_TABLE = 1  # TablePrefix.TABLE
RECORD_PREFIX_DATA_VERSION = 1  # RecordPrefix.DATA_VERSION
RECORD_PREFIX_DATA = 2  # RecordPrefix.DATA
TABLE_CONSUMER_OFFSET = 1  # TableId.CONSUMER_OFFSET
TABLE_TOPIC = 3  # TableId.TOPIC
TABLE_SUBSCRIPTION_GROUP = 4  # TableId.SUBSCRIPTION_GROUP
SERIALIZATION_JSON = 1  # SerializationType.JSON
DATA_VERSION_KEY = b"data_version"  # ConfigStorage.DATA_VERSION_KEY

V2ConsumerOffsetKey = Struct(
    "table_prefix" / Const(bytes([TABLE_PREFIX_TABLE])),
    "table_id" / Const(TABLE_CONSUMER_OFFSET, Int16sb),
    "record_prefix" / Const(bytes([RECORD_PREFIX_DATA])),
    "group_len" / Int16sb,
    "group" / Bytes(this.group_len),
    _CTRL_1,
    "topic_len" / Int16sb,
    "topic" / Bytes(this.topic_len),
    _CTRL_1,
    "queue_id" / Int32sb,
)
V2ConsumerOffsetValue = Struct("offset" / Int64sb)
V2NamedKey = Struct(  # ConfigHelper.keyBufOf: a topic or group record
    "table_prefix" / Const(bytes([TABLE_PREFIX_TABLE])),
    "table_id" / Int16sb,
    "record_prefix" / Const(bytes([RECORD_PREFIX_DATA])),
    "name_len" / Int16sb,
    "name" / Bytes(this.name_len),
)
V2SerializedValue = Struct("serialization_type" / Int8sb, "payload" / GreedyBytes)
V2DataVersionKey = Struct(
    "table_prefix" / Const(bytes([TABLE_PREFIX_TABLE])),
    "table_id" / Int16sb,
    "record_prefix" / Const(bytes([RECORD_PREFIX_DATA_VERSION])),
    "name" / GreedyBytes,
)
V2DataVersionValue = Struct("state_version" / Int64sb, "timestamp" / Int64sb, "counter" / Int64sb)


# --- POP state (PopConsumerRocksdbStore, kvStore/, popConsumerKVServiceEnable) --------------------------
POP_STATE_DIR = "kvStore"  # PopConsumerService.ROCKSDB_DIRECTORY
POP_STATE_COLUMN_FAMILY = "popState"
_AT = Const(b"@")
PopRecordKey = Struct(  # PopConsumerRecord.getKeyBytes; group and topic end at the '@' (names have none)
    "visibility_timeout" / Int64sb,
    "rest" / GreedyBytes,
)
PopRecordKeyTail = Struct(_AT, "queue_id" / Int32sb, _AT, "offset" / Int64sb)  # after "group@topic"


@dataclass(frozen=True, slots=True)
class OffsetEntry:
    """One entry of the consume queue's `offset` column family (`RocksDBConsumeQueueOffsetTable`)."""

    topic: str
    queue_id: int
    kind: str  # "max" or "min"
    phy_offset: int
    cq_offset: int


def _parse(layout: Struct, data: bytes, what: str, file: str | None, exact: bool = True):
    try:
        obj = layout.parse(data)
    except ConstructError as exc:
        why = " ".join(str(exc).split())
        raise FormatError(f"{what} {data[:40].hex()}: not the broker's layout ({why})", file) from None
    if exact and len(layout.build(obj)) != len(data):
        raise FormatError(f"{what} {data[:40].hex()}: {len(data)} bytes, not the broker's layout", file)
    return obj


def queue_prefix(topic: str, queue_id: int) -> bytes:
    """The first bytes of every unit key of one queue (`buildCQKeyByteBuffer` without the offset)."""
    return cq_key(topic, queue_id, 0)[:-8]


def cq_key(topic: str, queue_id: int, cq_offset: int) -> bytes:
    raw = topic.encode()
    return CqKey.build({"topic_len": len(raw), "topic": raw, "queue_id": queue_id, "cq_offset": cq_offset})


def parse_cq_key(key: bytes, file: str | None = None) -> tuple[str, int, int]:
    """(topic, queueId, cqOffset) of a default column family key."""
    k = _parse(CqKey, key, "consume queue key", file)
    return k.topic.decode("utf-8", "replace"), k.queue_id, k.cq_offset


def parse_cq_value(value: bytes, file: str | None = None) -> tuple[int, int, int, int]:
    """(phyOffset, size, tagsCode, storeTimestamp) of a unit."""
    v = _parse(CqValue, value, "consume queue unit", file)
    return v.phy_offset, v.size, v.tags_code, v.store_timestamp


def offset_key(topic: str, queue_id: int, kind: str) -> bytes:
    raw = topic.encode()
    return OffsetKey.build({"topic_len": len(raw), "topic": raw, "kind": kind.encode(), "queue_id": queue_id})


def parse_offset_entry(key: bytes, value: bytes, file: str | None = None) -> OffsetEntry | None:
    """An entry of the `offset` column family; None for the max-physical-offset checkpoint (8 bytes), which
    `RocksDBConsumeQueueOffsetTable.forEach` skips as well."""
    k = _parse(OffsetKey, key, "consume queue offset key", file)
    if k.kind not in (b"max", b"min"):
        raise FormatError(f"consume queue offset key {key[:40].hex()}: neither max nor min", file)
    if len(value) == MaxPhyOffsetValue.sizeof():
        return None
    v = _parse(OffsetValue, value, "consume queue offset value", file)
    return OffsetEntry(
        k.topic.decode("utf-8", "replace"), k.queue_id, k.kind.decode(), v.phy_offset, v.cq_offset
    )


def max_phy_offset_key() -> bytes:
    return offset_key(MAX_PHYSICAL_OFFSET_CHECKPOINT_TOPIC, 0, "max")


def parse_max_phy_offset(value: bytes, file: str | None = None) -> int:
    return _parse(MaxPhyOffsetValue, value, "max physical offset checkpoint", file).phy_offset


def parse_pop_record_key(key: bytes, file: str | None = None) -> tuple[int, str, str, int, int]:
    """(visibilityTimeout, group, topic, queueId, offset) of a `popState` key."""
    head = _parse(PopRecordKey, key, "POP state key", file)
    names, tail = head.rest[:-14], head.rest[-14:]
    t = _parse(PopRecordKeyTail, tail, "POP state key", file)
    group, sep, topic = names.partition(b"@")
    if not sep or len(key) < 8 + 14:
        raise FormatError(f"POP state key {key[:40].hex()}: no group@topic", file)
    return (
        head.visibility_timeout,
        group.decode("utf-8", "replace"),
        topic.decode("utf-8", "replace"),
        t.queue_id,
        t.offset,
    )


def parse_v2_consumer_offset(key: bytes, value: bytes, file: str | None = None) -> tuple[str, str, int, int]:
    """(group, topic, queueId, offset) of a v2 consumer offset record."""
    k = _parse(V2ConsumerOffsetKey, key, "config/rdb consumer offset key", file)
    v = _parse(V2ConsumerOffsetValue, value, "config/rdb consumer offset value", file)
    return k.group.decode("utf-8", "replace"), k.topic.decode("utf-8", "replace"), k.queue_id, v.offset


def parse_v2_named_record(key: bytes, value: bytes, file: str | None = None) -> tuple[str, bytes | None]:
    """(name, JSON payload) of a v2 topic or group record; payload None when the value is not JSON, which
    the managers' `parseTopicConfig` / `parseSubscription` skip."""
    k = _parse(V2NamedKey, key, "config/rdb topic or group key", file)
    v = _parse(V2SerializedValue, value, "config/rdb topic or group value", file)
    name = k.name.decode("utf-8", "replace")
    return name, v.payload if v.serialization_type == SERIALIZATION_JSON else None


def v2_table_prefix(table_id: int, record_prefix: int) -> bytes:
    return bytes([TABLE_PREFIX_TABLE]) + Int16sb.build(table_id) + bytes([record_prefix])


def v2_data_version_key(table_id: int) -> bytes:
    return V2DataVersionKey.build({"table_id": table_id, "name": DATA_VERSION_KEY})


def parse_v2_data_version(value: bytes, file: str | None = None) -> tuple[int, int, int] | None:
    """(stateVersion, timestamp, counter); None when not 24 bytes (`onDataVersionLoad` ignores those)."""
    if len(value) != V2DataVersionValue.sizeof():
        return None
    v = V2DataVersionValue.parse(value)
    return v.state_version, v.timestamp, v.counter


__all__ = [name for name in globals() if not name.startswith("_")]
