"""Topic and group attributes as the 5.x broker alters them (`+key=value` adds or updates, `-key` deletes).

`alter_attributes` is `AttributeUtil.alterCurrentAttributes` (rocketmq-all-5.3.3
common/src/main/java/org/apache/rocketmq/common/attribute/AttributeUtil.java:31-83) over the attribute
sets of `TopicAttributes.ALL` (common/.../TopicAttributes.java:27-64: `queue.type` and `cleanup.policy`
may only be set when the topic is created, `message.type` and `reserve.time` may change) and
`SubscriptionGroupAttributes.ALL` (common/.../SubscriptionGroupAttributes.java: empty, so the broker
refuses every group attribute). Its result's key order is that of the broker's `HashMap`s (the request
parsed by `AttributeParser.parseToMap`, AttributeParser.java:31-62, the init/add/update/delete maps, the
copy of the current attributes), so the file written holds the keys where the broker's would.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from formats.errors import MqtoolError
from formats.java.hash import JavaHashMapKeys
from formats.java.props import java_parse_long


class AttributeChangeError(MqtoolError):
    """An attribute change the broker refuses (its own message, one line)."""


@dataclass(frozen=True)
class AttributeRule:
    """One of `TopicAttributes.ALL`: whether it may change after creation and the values it takes."""

    name: str
    changeable: bool
    values: frozenset[str] | None  # an EnumAttribute's universe; None: a LongRangeAttribute
    low: int = 0
    high: int = 0

    def verify(self, value: str) -> None:
        """`EnumAttribute.verify` / `LongRangeAttribute.verify`: the broker's refusal of a wrong `value`."""
        if self.values is not None:
            if value not in self.values:
                raise AttributeChangeError(
                    f"{self.name}: value is not in set: [{', '.join(sorted(self.values))}]"
                )
            return
        number = java_parse_long(value)
        if number is None:
            raise AttributeChangeError(f'{self.name}: For input string: "{value}" (not a Java long)')
        if not self.low <= number <= self.high:
            raise AttributeChangeError(f"{self.name}: value is not in range({self.low}, {self.high})")


# TopicAttributes.java:27-56 (TopicMessageType.topicMessageTypeSet: TopicMessageType.java:26-44)
TOPIC_ATTRIBUTES: dict[str, AttributeRule] = {
    "queue.type": AttributeRule("queue.type", False, frozenset({"BatchCQ", "SimpleCQ"})),
    "cleanup.policy": AttributeRule("cleanup.policy", False, frozenset({"DELETE", "COMPACTION"})),
    "message.type": AttributeRule(
        "message.type", True, frozenset({"UNSPECIFIED", "NORMAL", "FIFO", "DELAY", "TRANSACTION", "MIXED"})
    ),
    "reserve.time": AttributeRule("reserve.time", True, None, -1, 2**63 - 1),
}
GROUP_ATTRIBUTES: dict[str, AttributeRule] = {}  # SubscriptionGroupAttributes.ALL is empty in 5.3.3


def parse_modifications(items: Iterable[str]) -> dict[str, str]:
    """`--attr +key=value` / `--attr -key` options as `AttributeParser.parseToMap` reads the comma-joined
    string mqadmin sends (`+key` -> value, `-key` -> ""), in the order of its HashMap."""
    request: dict[str, str] = {}
    for item in items:
        if "," in item:
            raise AttributeChangeError(
                f"--attr {item!r}: one attribute per --attr (mqadmin would split at ',')"
            )
        if "=" in item:
            key, _, value = item.partition("=")
            if "=" in value or not value:
                raise AttributeChangeError(f"--attr {item!r}: add/alter attribute format is wrong: {key}")
            if "+" not in key:
                raise AttributeChangeError(f"--attr {item!r}: add/alter attribute format is wrong: {key}")
        else:
            key, value = item, ""
            if "-" not in key:
                raise AttributeChangeError(f"--attr {item!r}: delete attribute format is wrong: {key}")
        if key in request:
            raise AttributeChangeError(f"--attr: key duplication: {key}")
        request[key] = value
    return {k: request[k] for k in JavaHashMapKeys(request).order()}


def alter_attributes(
    create: bool, rules: dict[str, AttributeRule], current: dict[str, str], request: dict[str, str]
) -> dict[str, str]:
    """The attributes after the change (`AttributeUtil.alterCurrentAttributes`), keys in the broker's
    order; raises the broker's refusal as AttributeChangeError."""
    init: dict[str, str] = {}
    add: dict[str, str] = {}
    update: dict[str, str] = {}
    delete: dict[str, str] = {}
    seen: set[str] = set()
    for key, value in request.items():
        real = key[1:]
        if not real or "+" in real or "-" in real:
            raise AttributeChangeError(f"attribute {key!r}: kv string format wrong.")
        if real in seen:
            raise AttributeChangeError(f"alter duplication key. key: {real}")
        seen.add(real)
        if create:
            if not key.startswith("+"):
                raise AttributeChangeError(
                    f"only add attribute is supported while creating topic. key: {real}"
                )
            init[real] = value
        elif key.startswith("+"):
            (update if real in current else add)[real] = value
        elif key.startswith("-"):
            if real not in current:
                raise AttributeChangeError(f"attempt to delete a nonexistent key: {real}")
            delete[real] = value
        else:
            raise AttributeChangeError(f"wrong format key: {real}")
    for alter, is_init, is_delete in ((init, True, False), (add, False, False), (update, False, False),
                                      (delete, False, True)):  # fmt: skip
        for key, value in alter.items():
            rule = rules.get(key)
            if rule is None:
                raise AttributeChangeError(f"unsupported key: {key}")
            if not is_init and not rule.changeable:
                raise AttributeChangeError(f"attempt to update an unchangeable attribute. key: {key}")
            if not is_delete:
                rule.verify(value)
    # new HashMap<>(current); putAll(init), putAll(add), putAll(update); remove each of delete
    result = dict(current)
    keys = JavaHashMapKeys(current)
    for part in (init, add, update):
        ordered = JavaHashMapKeys(part).order()
        keys.put_all(ordered)
        result.update({k: part[k] for k in ordered})
    for key in JavaHashMapKeys(delete).order():
        keys.remove(key)
        result.pop(key, None)
    return {k: result[k] for k in keys.order()}


def attributes_loaded_order(attributes: dict[str, str]) -> dict[str, str]:
    """The attributes as the broker holds them after loading the file (fastjson fills a `new HashMap()`
    in file order), so in the order its next persist writes them."""
    return {k: attributes[k] for k in JavaHashMapKeys(attributes).order()}


__all__ = [
    "GROUP_ATTRIBUTES",
    "TOPIC_ATTRIBUTES",
    "AttributeChangeError",
    "AttributeRule",
    "alter_attributes",
    "attributes_loaded_order",
    "parse_modifications",
]
