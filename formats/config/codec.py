"""Typed models of the broker's JSON config files, read from and written back to fastjson values.

Each model's `from_json(value)` takes what `formats.config.fastjson.parse` returns and `to_json()` gives back
a value that `formats.config.fastjson.dumps` writes exactly as the broker would: bean properties in fastjson's
alphabetical order, map entries in the order they were read (new ones appended), unknown properties kept
(`extra`). Rewriting an unchanged model therefore reproduces the broker's file byte for byte.
Version-specific properties (4.9.x vs 5.x) are `None` when the file does not have them and are then not
written (`ConfigManager.persist`, `RemotingSerializable.toJson`; the models follow
`ConsumerOffsetManager`, `ScheduleMessageService`, `TopicConfigManager`, `SubscriptionGroupManager`,
`MessageRequestModeManager`, `ConsumerFilterManager`, `ConsumerOrderInfoManager`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, Self, TypeVar

from formats.config import fastjson
from formats.config.base import (
    ConfigValueError,
    _object,
)
from formats.config.fastjson import Path

# ---------------------------------------------------------------------------------------------------
# Files without a typed model (consumerFilter, timermetrics, transactionMetrics ...)


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


__all__ = [
    "ConfigModel",
    "RawConfig",
    "build_config",
    "decode_config",
    "encode_config",
]
