"""Topic and group metadata files: topics.json (`TopicConfigManager`), subscriptionGroup.json
(`SubscriptionGroupManager`) and messageRequestMode.json (`MessageRequestModeManager`), as typed models
(see `formats.config.codec`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Self

from formats.config.base import (
    DataVersion,
    _bool,
    _data_version,
    _dv_json,
    _int,
    _long,
    _object,
    _str,
    _str_key,
    _str_str_map,
    _table,
    _unknown,
    bean,
)
from formats.config.fastjson import Path

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
