"""What a store says each consumer group subscribes to, and whether a message's tag passes a subscription.

A broker keeps its consumers' subscriptions in memory (ConsumerManager, from their heartbeats). On disk there
are only two traces of them, and a group found in neither has an unknown subscription:

* subscriptionGroup.json (5.x): `SubscriptionGroupConfig.subscriptionDataSet`, a set of
  `SimpleSubscriptionData` {topic, expressionType, expression, version} that an administrator sets with the
  group (updateSubGroup; the broker reads it for its lag metrics, `ConsumerLagCalculator`);
* consumerFilter.json: `ConsumerFilterManager` persists the last SQL92 (non-tag) filter each group registered
  per topic (`register` ignores tag subscriptions: rocketmq-all-5.3.3
  broker/src/main/java/org/apache/rocketmq/broker/filter/ConsumerFilterManager.java:137-140), and at load
  takes every one of them as dead until its consumer registers again (`decode`, :265-270).

Tags (rocketmq-all-5.3.3): `FilterAPI.buildSubscriptionData`
(remoting/src/main/java/org/apache/rocketmq/remoting/protocol/filter/FilterAPI.java:27) reads an empty
expression or `*` as every message, else splits it at `||` and trims each tag. The broker lets a message
through when its ConsumeQueue tagsCode is among the tags' hash codes (store/.../DefaultMessageFilter.java:42,
broker/.../filter/ExpressionMessageFilter.java:80); the client then keeps it only when its TAGS string is in
the tag set (client/.../impl/consumer/PullAPIWrapper.java:113-121), so a message without TAGS, or whose TAGS
only share a hash code with a subscribed tag, is filtered too. Either way the group's offset moves past a
filtered message (mqadmin's CONSUMED_BUT_FILTERED).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from formats.errors import MqtoolError
from store.storedir import Store

SUB_ALL = "*"  # SubscriptionData.SUB_ALL
TAG_TYPE = "TAG"  # ExpressionType.TAG; a subscription without a type is a tag subscription


@dataclass(frozen=True)
class Subscription:
    """One group's subscription to one topic, as a store file records it."""

    group: str
    topic: str
    expression_type: str
    expression: str
    source: str  # the file that records it

    @property
    def is_tag(self) -> bool:
        return self.expression_type.upper() == TAG_TYPE

    @property
    def tags(self) -> frozenset[str] | None:
        """The tag set FilterAPI.buildSubscriptionData builds; None for every message (`*` or empty), and an
        empty set for an expression it refuses ("||": "subString split error") or that names no tag."""
        if not self.expression or self.expression == SUB_ALL:
            return None
        parts = self.expression.split("||")
        while parts and parts[-1] == "":  # Java's String.split drops trailing empty strings
            parts.pop()
        return frozenset(p.strip() for p in parts if p.strip())

    @property
    def valid(self) -> bool:
        """False for a tag expression FilterAPI refuses: subscribe() throws, so no consumer holds it."""
        if not self.is_tag or not self.expression or self.expression == SUB_ALL:
            return True
        return any(self.expression.split("||"))

    def passes(self, tags: str | None) -> bool | None:
        """Whether a message with these TAGS reaches the consumer; None when mqtool cannot tell (SQL92, or an
        expression no consumer can hold). A set without tags (" ||") lets nothing through: the broker's hash
        codes are empty, though the client would keep everything."""
        if not self.is_tag or not self.valid:
            return None
        wanted = self.tags
        return wanted is None or (tags is not None and tags in wanted)


@dataclass
class Subscriptions:
    """(group, topic) -> Subscription from the store's files, the groups subscriptionGroup.json knows, and
    notes on files that could not be read."""

    by_group_topic: dict[tuple[str, str], Subscription] = field(default_factory=dict)
    groups: set[str] = field(default_factory=set)
    notes: list[str] = field(default_factory=list)

    def get(self, group: str, topic: str) -> Subscription | None:
        return self.by_group_topic.get((group, topic))


def store_subscriptions(store: Store) -> Subscriptions:
    """The subscriptions subscriptionGroup.json and consumerFilter.json record (the former wins for a group
    and topic in both: an administrator set it). A file that cannot be read gives a note, not an error."""
    found = Subscriptions()
    groups = _load(store, "subscriptionGroup.json", found.notes)
    if groups is not None:
        for name, config in groups.subscription_group_table.items():
            found.groups.add(name)
            for item in _items(config.subscription_data_set):
                sub = _subscription(name, item, "subscriptionGroup.json")
                if sub is not None:
                    found.by_group_topic.setdefault((name, sub.topic), sub)
    filters = _load(store, "consumerFilter.json", found.notes)
    by_topic = filters.value.get("filterDataByTopic") if filters is not None else None
    for topic_data in (by_topic or {}).values():
        group_data = topic_data.get("groupFilterData") if isinstance(topic_data, dict) else None
        for group, data in (group_data or {}).items() if isinstance(group_data, dict) else ():
            if not isinstance(data, dict):
                continue
            sub = _subscription(str(group), data, "consumerFilter.json")
            if sub is not None:
                found.by_group_topic.setdefault((sub.group, sub.topic), sub)
    return found


def _load(store: Store, name: str, notes: list[str]):
    try:
        loaded = store.config(name).load()
    except MqtoolError as exc:
        notes.append(f"subscriptions in {name} unknown: {exc}")
        return None
    return loaded.model


def _items(value: Any) -> list[Any]:
    """The elements of a JSON array (the fastjson parser gives tuples)."""
    return list(value) if isinstance(value, list | tuple) else []


def _subscription(group: str, item: Any, source: str) -> Subscription | None:
    """A SimpleSubscriptionData or ConsumerFilterData object; None when it lacks a topic or expression."""
    if not isinstance(item, dict):
        return None
    topic, expression = item.get("topic"), item.get("expression")
    if not isinstance(topic, str) or not isinstance(expression, str):
        return None
    kind = item.get("expressionType")
    return Subscription(
        group, topic, kind if isinstance(kind, str) and kind else TAG_TYPE, expression, source
    )
