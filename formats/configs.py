"""Typed models of the broker's JSON config files, read from and written back to fastjson values.

Each model's `from_json(value)` takes what `formats.fastjson.parse` returns and `to_json()` gives back a
value that `formats.fastjson.dumps` writes exactly as the broker would: bean properties in fastjson's
alphabetical order, map entries in the order they were read (new ones appended), unknown properties kept
(`extra`). Rewriting an unchanged model therefore reproduces the broker's file byte for byte.
Version-specific properties (4.9.x vs 5.x) are `None` when the file does not have them and are then not
written (`ConfigManager.persist`, `RemotingSerializable.toJson`; the models follow
`ConsumerOffsetManager`, `ScheduleMessageService`, `TopicConfigManager`, `SubscriptionGroupManager`,
`MessageRequestModeManager`, `ConsumerFilterManager`, `ConsumerOrderInfoManager`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, Self, TypeVar

from formats import fastjson
from formats.errors import FormatError
from formats.fastjson import Path
from formats.javahash import java_hashmap_order

JAVA_INT_MIN = -(2**31)
JAVA_INT_MAX = 2**31 - 1
TOPIC_GROUP_SEPARATOR = "@"


class ConfigValueError(FormatError):
    """A parsed config value of the wrong shape; `path` locates it inside the document."""

    def __init__(self, message: str, path: Path) -> None:
        super().__init__(f"{render_path(path)}: {message}" if path else message)
        self.path = path


def render_path(path: Path) -> str:
    """`offsetTable["TopicTest@groupA"][0]` style rendering of a value's path."""
    out = ""
    for i, part in enumerate(path):
        if isinstance(part, int):
            out += f"[{part}]"
        elif i == 0 and part.isidentifier():
            out += part
        else:
            out += "[" + fastjson.quote(part) + "]"
    return out


# ---------------------------------------------------------------------------------------------------
# Checks for values read from JSON (fastjson's Java types: int, long, boolean, String, Map)


def _type_name(value: Any) -> str:
    return {dict: "an object", list: "an array", tuple: "an array", str: "a string", bool: "a boolean"}.get(
        type(value), "null" if value is None else "a number"
    )


def _object(value: Any, path: Path) -> dict[Any, Any]:
    if not isinstance(value, dict):
        raise ConfigValueError(f"expected an object, found {_type_name(value)}", path)
    return value


def _long(value: Any, path: Path) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ConfigValueError(f"expected an integer, found {_type_name(value)}", path)
    return value  # the parser already keeps integers within Java's long


def _int(value: Any, path: Path) -> int:
    value = _long(value, path)
    if not JAVA_INT_MIN <= value <= JAVA_INT_MAX:
        raise ConfigValueError(f"integer {value} overflows Java int (int32)", path)
    return value


def _bool(value: Any, path: Path) -> bool:
    if not isinstance(value, bool):
        raise ConfigValueError(f"expected true or false, found {_type_name(value)}", path)
    return value


def _str(value: Any, path: Path) -> str:
    if not isinstance(value, str):
        raise ConfigValueError(f"expected a string, found {_type_name(value)}", path)
    return value


def _int_key(key: str | int, path: Path) -> int:
    """A Map<Integer, ...> key; fastjson also reads a quoted number as the number (verified)."""
    if isinstance(key, str):
        if not key.lstrip("-").isdigit() or not key.isascii():
            raise ConfigValueError(f"map key {key!r} is not an integer", path)
        key = int(key)
    if not JAVA_INT_MIN <= key <= JAVA_INT_MAX:
        raise ConfigValueError(f"map key {key} overflows Java int (int32)", path)
    return key


def _str_key(key: str | int) -> str:
    return key if isinstance(key, str) else str(key)


def _table(obj: dict[Any, Any], name: str, path: Path) -> dict[Any, Any]:
    """A table property; absent means empty, null makes the broker's decode fail (putAll(null))."""
    if name not in obj:
        return {}
    if obj[name] is None:
        raise ConfigValueError("is null: the broker's decode would fail", (*path, name))
    return _object(obj[name], (*path, name))


def _int_long_map(value: Any, path: Path) -> dict[int, int]:
    """Map<Integer, Long>, e.g. queueId -> offset or delay level -> offset."""
    return {_int_key(k, path): _long(v, (*path, k)) for k, v in _object(value, path).items()}


def _str_str_map(value: Any, path: Path) -> dict[str, str]:
    return {_str_key(k): _str(v, (*path, k)) for k, v in _object(value, path).items()}


def bean(properties: dict[str, Any], extra: dict[Any, Any]) -> dict[Any, Any]:
    """A Java bean as fastjson writes it: null properties left out, names in alphabetical order."""
    merged = {**extra, **properties}
    return {name: merged[name] for name in sorted(merged, key=str) if merged[name] is not None}


def _unknown(obj: dict[Any, Any], names: Iterable[str]) -> dict[Any, Any]:
    """The properties of `obj` a model does not know, kept to be written back."""
    known = set(names)
    return {k: v for k, v in obj.items() if k not in known}


# ---------------------------------------------------------------------------------------------------
# Java collection iteration order, for properties the broker derives (groupTopicMap)


def java_hash_order(keys: Iterable[str], initial_capacity: int) -> list[str]:
    """Iteration order of a `java.util.HashMap`/`HashSet` of Strings filled with `keys` in this order
    (tree bins, which need 9 colliding keys in 64+ buckets, are approximated by insertion order)."""
    return java_hashmap_order(keys, initial_capacity, exact=False)


def java_split_topic_group(key: str) -> list[str]:
    """`key.split("@")` as Java does it: trailing empty strings dropped."""
    parts = key.split(TOPIC_GROUP_SEPARATOR)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


# ---------------------------------------------------------------------------------------------------
# DataVersion


@dataclass
class DataVersion:
    """`{"counter","stateVersion","timestamp"}` (4.9.x has no stateVersion: `state_version` None)."""

    counter: int = 0
    timestamp: int = 0
    state_version: int | None = None
    extra: dict[Any, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, value: Any, path: Path = ("dataVersion",)) -> Self:
        obj = _object(value, path)
        state = obj.get("stateVersion")
        return cls(
            counter=_long(obj.get("counter", 0), (*path, "counter")),
            timestamp=_long(obj.get("timestamp", 0), (*path, "timestamp")),
            state_version=None if state is None else _long(state, (*path, "stateVersion")),
            extra=_unknown(obj, ("counter", "timestamp", "stateVersion")),
        )

    def to_json(self) -> dict[str, Any]:
        return bean(
            {"counter": self.counter, "stateVersion": self.state_version, "timestamp": self.timestamp},
            self.extra,
        )

    def next_version(self, now_ms: int) -> DataVersion:
        """`DataVersion.nextVersion()`: counter + 1, timestamp = now; 5.x also resets stateVersion to 0."""
        return DataVersion(
            counter=self.counter + 1,
            timestamp=now_ms,
            state_version=None if self.state_version is None else 0,
            extra=dict(self.extra),
        )


def _data_version(obj: dict[Any, Any], path: Path, null_fails: bool) -> DataVersion | None:
    if obj.get("dataVersion") is None:
        if "dataVersion" in obj and null_fails:
            raise ConfigValueError("is null: the broker's decode would fail", (*path, "dataVersion"))
        return None
    return DataVersion.from_json(obj["dataVersion"], (*path, "dataVersion"))


def _dv_json(data_version: DataVersion | None) -> dict[str, Any] | None:
    return None if data_version is None else data_version.to_json()


# ---------------------------------------------------------------------------------------------------
# consumerOffset.json / lmqConsumerOffset.json


def split_offset_key(key: str) -> tuple[str, str] | None:
    """`topic@group` split at the first '@'; a broadcast key keeps its suffix in the group
    (`t@g@broadcast` -> `("t", "g@broadcast")`). None for a key without '@'."""
    topic, sep, group = key.partition(TOPIC_GROUP_SEPARATOR)
    return (topic, group) if sep else None


def offset_key(topic: str, group: str) -> str:
    return topic + TOPIC_GROUP_SEPARATOR + group


def _offset_tables(value: Any, path: Path) -> dict[str, dict[int, int]]:
    table = _object(value, path)
    return {_str_key(k): _int_long_map(v, (*path, k)) for k, v in table.items()}


@dataclass
class ConsumerOffsetTable:
    """ConsumerOffsetManager: `offsetTable` "topic@group" -> {queueId: next offset to consume}.

    `groupTopicMap` is derived (the 5.x getter) and regenerated on write when `with_group_topic_map`
    (set when the file had the 5.x shape: a dataVersion or a groupTopicMap). `pullOffsetTable` and
    `resetOffsetTable` are never written by 4.9.8/5.3.3 but are kept if a file has them.
    """

    offset_table: dict[str, dict[int, int]] = field(default_factory=dict)
    data_version: DataVersion | None = None
    with_group_topic_map: bool = False
    pull_offset_table: dict[str, dict[int, int]] | None = None
    reset_offset_table: dict[str, dict[int, int]] | None = None
    extra: dict[Any, Any] = field(default_factory=dict)

    KNOWN: ClassVar[tuple[str, ...]] = (
        "offsetTable",
        "dataVersion",
        "groupTopicMap",
        "pullOffsetTable",
        "resetOffsetTable",
    )

    @classmethod
    def from_json(cls, value: Any) -> Self:
        obj = _object(value, ())
        optional = {
            name: None if obj.get(name) is None else _offset_tables(obj[name], (name,))
            for name in ("pullOffsetTable", "resetOffsetTable")
        }
        return cls(
            offset_table=_offset_tables(_table(obj, "offsetTable", ()), ("offsetTable",)),
            data_version=_data_version(obj, (), null_fails=False),
            with_group_topic_map="dataVersion" in obj or "groupTopicMap" in obj,
            pull_offset_table=optional["pullOffsetTable"],
            reset_offset_table=optional["resetOffsetTable"],
            extra=_unknown(obj, cls.KNOWN),
        )

    def to_json(self) -> dict[str, Any]:
        return bean(
            {
                "dataVersion": _dv_json(self.data_version),
                "groupTopicMap": self.group_topic_map() if self.with_group_topic_map else None,
                "offsetTable": {k: dict(v) for k, v in self.offset_table.items()},
                "pullOffsetTable": self.pull_offset_table,
                "resetOffsetTable": self.reset_offset_table,
            },
            self.extra,
        )

    def group_topic_map(self) -> dict[str, tuple[str, ...]]:
        """`ConsumerOffsetManager.getGroupTopicMap()`: HashMap(128) group -> HashSet(8) of topics, keys
        with exactly two '@'-separated parts only, in the Java iteration order (Sets are written inline)."""
        topics_by_group: dict[str, list[str]] = {}
        for key in self.offset_table:
            parts = java_split_topic_group(key)
            if len(parts) == 2:
                topics_by_group.setdefault(parts[1], []).append(parts[0])
        return {
            group: tuple(java_hash_order(topics_by_group[group], 8))
            for group in java_hash_order(topics_by_group, 128)
        }

    def entries(self) -> Iterator[tuple[str, str, int, int]]:
        """(topic, group, queueId, offset) of every key that has an '@'."""
        for key, queues in self.offset_table.items():
            split = split_offset_key(key)
            if split is not None:
                for queue_id, offset in queues.items():
                    yield split[0], split[1], queue_id, offset

    def get(self, topic: str, group: str) -> dict[int, int] | None:
        return self.offset_table.get(offset_key(topic, group))

    def set_offset(self, topic: str, group: str, queue_id: int, offset: int) -> None:
        """Commit one offset as `commitOffset` does, creating the `topic@group` entry if needed."""
        self.offset_table.setdefault(offset_key(topic, group), {})[queue_id] = offset

    def bump_version(self, now_ms: int) -> None:
        if self.data_version is not None:
            self.data_version = self.data_version.next_version(now_ms)


# ---------------------------------------------------------------------------------------------------
# delayOffset.json


@dataclass
class DelayOffsetTable:
    """ScheduleMessageService: delay level (1-based) -> next offset of SCHEDULE_TOPIC_XXXX queue level-1."""

    offset_table: dict[int, int] = field(default_factory=dict)
    data_version: DataVersion | None = None
    extra: dict[Any, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, value: Any) -> Self:
        obj = _object(value, ())
        return cls(
            offset_table=_int_long_map(_table(obj, "offsetTable", ()), ("offsetTable",)),
            data_version=_data_version(obj, (), null_fails=False),
            extra=_unknown(obj, ("offsetTable", "dataVersion")),
        )

    def to_json(self) -> dict[str, Any]:
        return bean(
            {"dataVersion": _dv_json(self.data_version), "offsetTable": dict(self.offset_table)}, self.extra
        )

    def bump_version(self, now_ms: int) -> None:
        if self.data_version is not None:
            self.data_version = self.data_version.next_version(now_ms)


# ---------------------------------------------------------------------------------------------------
# topics.json


@dataclass
class TopicConfig:
    """TopicConfig; `attributes` is None for 4.9.x files (no such property there)."""

    topic_name: str | None
    read_queue_nums: int = 16
    write_queue_nums: int = 16
    perm: int = 6
    topic_filter_type: str = "SINGLE_TAG"
    topic_sys_flag: int = 0
    order: bool = False
    attributes: dict[str, str] | None = None
    extra: dict[Any, Any] = field(default_factory=dict)

    KNOWN: ClassVar[tuple[str, ...]] = (
        "attributes",
        "order",
        "perm",
        "readQueueNums",
        "topicFilterType",
        "topicName",
        "topicSysFlag",
        "writeQueueNums",
    )

    @classmethod
    def new(
        cls, topic_name: str, queue_nums: int, *, perm: int = 6, order: bool = False, v5: bool = True
    ) -> Self:
        """A topic as `updateTopic` creates it, with the property set of the broker version."""
        return cls(topic_name, queue_nums, queue_nums, perm, order=order, attributes={} if v5 else None)

    @classmethod
    def from_json(cls, value: Any, path: Path) -> Self:
        obj = _object(value, path)

        def get(name: str, check: Any, default: Any) -> Any:
            return default if obj.get(name) is None else check(obj[name], (*path, name))

        return cls(
            topic_name=get("topicName", _str, None),
            read_queue_nums=get("readQueueNums", _int, 16),
            write_queue_nums=get("writeQueueNums", _int, 16),
            perm=get("perm", _int, 6),
            topic_filter_type=get("topicFilterType", _str, "SINGLE_TAG"),
            topic_sys_flag=get("topicSysFlag", _int, 0),
            order=get("order", _bool, False),
            attributes=get("attributes", _str_str_map, None),
            extra=_unknown(obj, cls.KNOWN),
        )

    def to_json(self) -> dict[str, Any]:
        return bean(
            {
                "attributes": None if self.attributes is None else dict(self.attributes),
                "order": self.order,
                "perm": self.perm,
                "readQueueNums": self.read_queue_nums,
                "topicFilterType": self.topic_filter_type,
                "topicName": self.topic_name,
                "topicSysFlag": self.topic_sys_flag,
                "writeQueueNums": self.write_queue_nums,
            },
            self.extra,
        )


@dataclass
class TopicConfigTable:
    """TopicConfigManager's file (`TopicConfigSerializeWrapper`): dataVersion + topic -> TopicConfig."""

    topic_config_table: dict[str, TopicConfig] = field(default_factory=dict)
    data_version: DataVersion | None = None
    extra: dict[Any, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, value: Any) -> Self:
        obj = _object(value, ())
        table = _table(obj, "topicConfigTable", ())
        return cls(
            topic_config_table={
                _str_key(k): TopicConfig.from_json(v, ("topicConfigTable", k)) for k, v in table.items()
            },
            data_version=_data_version(obj, (), null_fails=True),
            extra=_unknown(obj, ("topicConfigTable", "dataVersion")),
        )

    def to_json(self) -> dict[str, Any]:
        return bean(
            {
                "dataVersion": _dv_json(self.data_version),
                "topicConfigTable": {k: v.to_json() for k, v in self.topic_config_table.items()},
            },
            self.extra,
        )

    @property
    def is_v5(self) -> bool:
        """Written by a 5.x broker (stateVersion in dataVersion or attributes in topic configs)."""
        if self.data_version is not None and self.data_version.state_version is not None:
            return True
        return any(t.attributes is not None for t in self.topic_config_table.values())

    def bump_version(self, now_ms: int) -> None:
        if self.data_version is not None:
            self.data_version = self.data_version.next_version(now_ms)


# ---------------------------------------------------------------------------------------------------
# subscriptionGroup.json


@dataclass
class SubscriptionGroupConfig:
    """SubscriptionGroupConfig; the 5.x-only properties are None in 4.9.x files."""

    group_name: str | None
    consume_enable: bool = True
    consume_from_min_enable: bool = True
    consume_broadcast_enable: bool = True
    retry_queue_nums: int = 1
    retry_max_times: int = 16
    broker_id: int = 0
    which_broker_when_consume_slowly: int = 1
    notify_consumer_ids_changed_enable: bool = True
    # 5.x only
    consume_message_orderly: bool | None = None
    group_retry_policy: dict[str, Any] | None = None
    group_sys_flag: int | None = None
    consume_timeout_minute: int | None = None
    subscription_data_set: Any = None
    attributes: dict[str, str] | None = None
    extra: dict[Any, Any] = field(default_factory=dict)

    KNOWN: ClassVar[tuple[str, ...]] = (
        "attributes",
        "brokerId",
        "consumeBroadcastEnable",
        "consumeEnable",
        "consumeFromMinEnable",
        "consumeMessageOrderly",
        "consumeTimeoutMinute",
        "groupName",
        "groupRetryPolicy",
        "groupSysFlag",
        "notifyConsumerIdsChangedEnable",
        "retryMaxTimes",
        "retryQueueNums",
        "subscriptionDataSet",
        "whichBrokerWhenConsumeSlowly",
    )

    @classmethod
    def new(cls, group_name: str, *, v5: bool = True) -> Self:
        """A group with the broker's defaults and the property set of the broker version."""
        if not v5:
            return cls(group_name)
        return cls(
            group_name,
            consume_message_orderly=False,
            group_retry_policy={"type": "CUSTOMIZED"},
            group_sys_flag=0,
            consume_timeout_minute=15,
            attributes={},
        )

    @classmethod
    def from_json(cls, value: Any, path: Path) -> Self:
        obj = _object(value, path)

        def get(name: str, check: Any, default: Any) -> Any:
            return default if obj.get(name) is None else check(obj[name], (*path, name))

        return cls(
            group_name=get("groupName", _str, None),
            consume_enable=get("consumeEnable", _bool, True),
            consume_from_min_enable=get("consumeFromMinEnable", _bool, True),
            consume_broadcast_enable=get("consumeBroadcastEnable", _bool, True),
            retry_queue_nums=get("retryQueueNums", _int, 1),
            retry_max_times=get("retryMaxTimes", _int, 16),
            broker_id=get("brokerId", _long, 0),
            which_broker_when_consume_slowly=get("whichBrokerWhenConsumeSlowly", _long, 1),
            notify_consumer_ids_changed_enable=get("notifyConsumerIdsChangedEnable", _bool, True),
            consume_message_orderly=get("consumeMessageOrderly", _bool, None),
            group_retry_policy=get("groupRetryPolicy", _object, None),
            group_sys_flag=get("groupSysFlag", _int, None),
            consume_timeout_minute=get("consumeTimeoutMinute", _int, None),
            subscription_data_set=obj.get("subscriptionDataSet"),
            attributes=get("attributes", _str_str_map, None),
            extra=_unknown(obj, cls.KNOWN),
        )

    def to_json(self) -> dict[str, Any]:
        return bean(
            {
                "attributes": None if self.attributes is None else dict(self.attributes),
                "brokerId": self.broker_id,
                "consumeBroadcastEnable": self.consume_broadcast_enable,
                "consumeEnable": self.consume_enable,
                "consumeFromMinEnable": self.consume_from_min_enable,
                "consumeMessageOrderly": self.consume_message_orderly,
                "consumeTimeoutMinute": self.consume_timeout_minute,
                "groupName": self.group_name,
                "groupRetryPolicy": self.group_retry_policy,
                "groupSysFlag": self.group_sys_flag,
                "notifyConsumerIdsChangedEnable": self.notify_consumer_ids_changed_enable,
                "retryMaxTimes": self.retry_max_times,
                "retryQueueNums": self.retry_queue_nums,
                "subscriptionDataSet": self.subscription_data_set,
                "whichBrokerWhenConsumeSlowly": self.which_broker_when_consume_slowly,
            },
            self.extra,
        )


@dataclass
class SubscriptionGroupTable:
    """SubscriptionGroupManager's file: dataVersion, group -> config, and (5.x) forbiddenTable."""

    subscription_group_table: dict[str, SubscriptionGroupConfig] = field(default_factory=dict)
    data_version: DataVersion | None = None
    forbidden_table: dict[str, dict[str, int]] | None = None
    extra: dict[Any, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, value: Any) -> Self:
        obj = _object(value, ())
        table = _table(obj, "subscriptionGroupTable", ())
        forbidden = None
        if obj.get("forbiddenTable") is not None:
            forbidden = {
                _str_key(group): {
                    _str_key(topic): _int(bits, ("forbiddenTable", group, topic))
                    for topic, bits in _object(topics, ("forbiddenTable", group)).items()
                }
                for group, topics in _object(obj["forbiddenTable"], ("forbiddenTable",)).items()
            }
        return cls(
            subscription_group_table={
                _str_key(k): SubscriptionGroupConfig.from_json(v, ("subscriptionGroupTable", k))
                for k, v in table.items()
            },
            data_version=_data_version(obj, (), null_fails=True),
            forbidden_table=forbidden,
            extra=_unknown(obj, ("subscriptionGroupTable", "dataVersion", "forbiddenTable")),
        )

    def to_json(self) -> dict[str, Any]:
        forbidden = None
        if self.forbidden_table is not None:
            forbidden = {group: dict(topics) for group, topics in self.forbidden_table.items()}
        return bean(
            {
                "dataVersion": _dv_json(self.data_version),
                "forbiddenTable": forbidden,
                "subscriptionGroupTable": {k: v.to_json() for k, v in self.subscription_group_table.items()},
            },
            self.extra,
        )

    @property
    def is_v5(self) -> bool:
        """Written by a 5.x broker (stateVersion in dataVersion, or a forbiddenTable)."""
        dv = self.data_version
        return (dv is not None and dv.state_version is not None) or self.forbidden_table is not None

    def bump_version(self, now_ms: int) -> None:
        if self.data_version is not None:
            self.data_version = self.data_version.next_version(now_ms)


# ---------------------------------------------------------------------------------------------------
# messageRequestMode.json


@dataclass
class MessageRequestMode:
    """SetMessageRequestModeRequestBody: how `group` consumes `topic` (mode "PULL" or "POP")."""

    topic: str | None
    consumer_group: str | None
    mode: str = "PULL"
    pop_share_queue_num: int = 0
    extra: dict[Any, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, value: Any, path: Path) -> Self:
        obj = _object(value, path)

        def get(name: str, check: Any, default: Any) -> Any:
            return default if obj.get(name) is None else check(obj[name], (*path, name))

        return cls(
            topic=get("topic", _str, None),
            consumer_group=get("consumerGroup", _str, None),
            mode=get("mode", _str, "PULL"),
            pop_share_queue_num=get("popShareQueueNum", _int, 0),
            extra=_unknown(obj, ("topic", "consumerGroup", "mode", "popShareQueueNum")),
        )

    def to_json(self) -> dict[str, Any]:
        return bean(
            {
                "consumerGroup": self.consumer_group,
                "mode": self.mode,
                "popShareQueueNum": self.pop_share_queue_num,
                "topic": self.topic,
            },
            self.extra,
        )


@dataclass
class MessageRequestModeTable:
    """MessageRequestModeManager's file: topic -> consumer group -> MessageRequestMode (5.x)."""

    message_request_mode_map: dict[str, dict[str, MessageRequestMode]] = field(default_factory=dict)
    extra: dict[Any, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, value: Any) -> Self:
        obj = _object(value, ())
        table = _table(obj, "messageRequestModeMap", ())
        path: Path = ("messageRequestModeMap",)
        return cls(
            message_request_mode_map={
                _str_key(topic): {
                    _str_key(group): MessageRequestMode.from_json(body, (*path, topic, group))
                    for group, body in _object(groups, (*path, topic)).items()
                }
                for topic, groups in table.items()
            },
            extra=_unknown(obj, ("messageRequestModeMap",)),
        )

    def to_json(self) -> dict[str, Any]:
        table = {
            topic: {group: body.to_json() for group, body in groups.items()}
            for topic, groups in self.message_request_mode_map.items()
        }
        return bean({"messageRequestModeMap": table}, self.extra)

    def get(self, topic: str, group: str) -> MessageRequestMode | None:
        return self.message_request_mode_map.get(topic, {}).get(group)

    def set_mode(self, topic: str, group: str, mode: str, pop_share_queue_num: int = 0) -> None:
        """What `setMessageRequestMode` stores for a topic/group pair."""
        self.message_request_mode_map.setdefault(topic, {})[group] = MessageRequestMode(
            topic, group, mode, pop_share_queue_num
        )


# ---------------------------------------------------------------------------------------------------
# Files without a typed model (consumerFilter, consumerOrderInfo, timermetrics, transactionMetrics ...)


@dataclass
class RawConfig:
    """A config file kept as the parsed fastjson value, written back unchanged."""

    value: Any = field(default_factory=dict)

    @classmethod
    def from_json(cls, value: Any) -> Self:
        _object(value, ())
        return cls(value)

    def to_json(self) -> Any:
        return self.value


# ---------------------------------------------------------------------------------------------------
# Text in, model out, and back


class ConfigModel(Protocol):
    """What every model above provides."""

    @classmethod
    def from_json(cls, value: Any) -> Self: ...

    def to_json(self) -> Any: ...


M = TypeVar("M", bound=ConfigModel)


def decode_config(model: type[M], text: str, file: str | None = None) -> M:
    """Parse `text` and build `model` from it; errors carry the character offset of the bad value."""
    positions: dict[Path, int] = {}
    value = fastjson.parse(text, file=file, positions=positions)
    return build_config(model, value, text, positions, file)


def build_config(
    model: type[M], value: Any, text: str, positions: dict[Path, int], file: str | None = None
) -> M:
    """`model.from_json(value)`, a ConfigValueError turned into a FormatError located in `text`."""
    try:
        return model.from_json(value)
    except ConfigValueError as exc:
        path = exc.path
        while path and path not in positions:
            path = path[:-1]
        raise fastjson.located_error(text, positions.get(path, 0), exc.message, file) from None


def encode_config(model: ConfigModel, pretty: bool = True) -> str:
    """The file text the broker would write for `model` (pretty unless the file was compact)."""
    return fastjson.dumps(model.to_json(), pretty=pretty)
