"""What every config-file model shares: Java-typed checks of parsed fastjson values, the bean layout
fastjson writes, Java `HashMap` key order and `DataVersion` (`ConfigManager`, `DataVersion`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Self

from formats.config import fastjson
from formats.config.fastjson import Path
from formats.errors import FormatError
from formats.java.hash import java_hashmap_order

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


def _int_key(key: str | int, path: Path, bits: int = 32) -> int:
    """A Map<Integer, ...> key (`bits=64`: a Map<Long, ...> key); fastjson also reads a quoted number as
    the number (verified), and its decode throws on one outside the Java type (`TypeUtils.castToLong`)."""
    if isinstance(key, str):
        if not key.lstrip("-").isdigit() or not key.isascii():
            raise ConfigValueError(f"map key {key!r} is not an integer", path)
        key = int(key)
    if not -(1 << (bits - 1)) <= key < 1 << (bits - 1):
        java = "int (int32)" if bits == 32 else f"long (int{bits})"
        raise ConfigValueError(f"map key {key} overflows Java {java}", path)
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
