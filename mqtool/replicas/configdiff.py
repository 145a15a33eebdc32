"""The config tables of two stores compared row by row: topics, subscription groups, consumer offsets,
delay offsets, consume modes, each loaded as the broker loads it (the file, else its `.bak`).

A row is a topic, a group, a group/topic/queue offset, a delay level or a group/topic consume mode; it is
on one side only, or on both with values that differ (the fields that differ named). Read-only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from formats.errors import MqtoolError
from store.storedir import Store


@dataclass
class ConfigRow:
    table: str
    key: str
    state: str  # only-A | only-B | differs
    a: Any
    b: Any
    fields: list[str] = field(default_factory=list)  # for dict values that differ: which keys

    def to_dict(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "key": self.key,
            "state": self.state,
            "a": self.a,
            "b": self.b,
            "fields": self.fields,
        }


@dataclass
class ConfigDiff:
    rows: list[ConfigRow]
    compared: dict[str, int]  # table -> rows on both sides together (distinct keys)
    notes: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {"compared": self.compared, "rows": [r.to_dict() for r in self.rows], "notes": self.notes}


def _topics(model) -> dict[str, Any]:
    return {k: v.to_json() for k, v in model.topic_config_table.items()}


def _groups(model) -> dict[str, Any]:
    return {k: v.to_json() for k, v in model.subscription_group_table.items()}


def _offsets(model) -> dict[str, Any]:
    return {f"{group} {topic}/{queue}": offset for topic, group, queue, offset in model.entries()}


def _delay(model) -> dict[str, Any]:
    return {f"level {level}": offset for level, offset in model.offset_table.items()}


def _modes(model) -> dict[str, Any]:
    return {
        f"{group} {topic}": mode.to_json()
        for topic, groups in model.message_request_mode_map.items()
        for group, mode in groups.items()
    }


def _tables(store: Store) -> list[tuple[str, str, Callable[[Any], dict[str, Any]]]]:
    return [
        ("topics", "topics.json", _topics),
        ("groups", "subscriptionGroup.json", _groups),
        ("consumerOffsets", store.layout.consumer_offset_file, _offsets),
        ("delayOffsets", "delayOffset.json", _delay),
        ("consumeModes", "messageRequestMode.json", _modes),
    ]


def _load(store: Store, label: str, name: str, rows_of, notes: list[str]) -> dict[str, Any]:
    try:
        loaded = store.config(name).load()
    except MqtoolError as exc:
        notes.append(f"{label}: {name} is unusable ({exc.message}): compared as empty")
        return {}
    if loaded.source != "file":
        notes.append(f"{label}: {name}: {loaded.reason}")
    if loaded.source == "none" or loaded.model is None:
        return {}
    return rows_of(loaded.model)


def _key_order(key: Any) -> tuple[bool, str]:
    """Names in order, then what a damaged file made a key of (a number: fastjson reads `{1: ...}`)."""
    return (not isinstance(key, str), str(key))


def compare_configs(a: Store, b: Store) -> ConfigDiff:
    """Every row of the config tables that is on one side only or differs."""
    rows: list[ConfigRow] = []
    notes: list[str] = []
    compared: dict[str, int] = {}
    for (table, name_a, rows_of), (_, name_b, _) in zip(_tables(a), _tables(b), strict=True):
        left = _load(a, "A", name_a, rows_of, notes)
        right = _load(b, "B", name_b, rows_of, notes)
        keys = sorted(set(left) | set(right), key=_key_order)
        compared[table] = len(keys)
        for key in keys:
            if key not in right:
                rows.append(ConfigRow(table, key, "only-A", left[key], None))
            elif key not in left:
                rows.append(ConfigRow(table, key, "only-B", None, right[key]))
            elif left[key] != right[key]:
                x, y = left[key], right[key]
                fields = (
                    sorted((k for k in set(x) | set(y) if x.get(k) != y.get(k)), key=_key_order)
                    if isinstance(x, dict) and isinstance(y, dict)
                    else []
                )
                rows.append(ConfigRow(table, key, "differs", x, y, fields))
    return ConfigDiff(rows, compared, notes)
