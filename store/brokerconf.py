"""broker.conf: the Java properties file a broker is started with (`-c broker.conf`).

mqtool reads the few settings that change how store files must be read or written: file sizes,
index geometry, delay levels, the store path. Missing keys take the broker's defaults.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from formats.errors import MqtoolError

DEFAULT_MESSAGE_DELAY_LEVEL = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"

_UNIT_MS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


@dataclass
class BrokerConfig:
    """Store-relevant broker settings, with the 5.3.3 defaults (MessageStoreConfig)."""

    mappedFileSizeCommitLog: int = 1024 * 1024 * 1024
    mappedFileSizeConsumeQueue: int = 300_000 * 20
    maxHashSlotNum: int = 5_000_000
    maxIndexNum: int = 5_000_000 * 4
    messageDelayLevel: str = DEFAULT_MESSAGE_DELAY_LEVEL
    storePathRootDir: str | None = None
    transactionCheckMax: int = 15
    enabledAppendPropCRC: bool = False
    explicit: frozenset[str] = frozenset()

    def delay_level_table(self) -> dict[int, int]:
        """Level (1-based) -> delay in ms, parsed like ScheduleMessageService.parseDelayLevel."""
        return parse_delay_levels(self.messageDelayLevel)


def parse_delay_levels(text: str) -> dict[int, int]:
    table: dict[int, int] = {}
    for level, item in enumerate(text.split(), start=1):
        unit = item[-1:]
        if unit not in _UNIT_MS or not item[:-1].isdigit():
            raise MqtoolError(f"bad messageDelayLevel entry {item!r} (expected e.g. 10s, 5m, 2h, 1d)")
        table[level] = int(item[:-1]) * _UNIT_MS[unit]
    return table


def parse_properties(text: str) -> dict[str, str]:
    """A Java .properties file, the subset brokers use: key=value or key: value, # and ! comments."""
    result: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        for i, ch in enumerate(line):
            if ch in "=:":
                result[line[:i].strip()] = line[i + 1 :].strip()
                break
        else:
            result[line] = ""
    return result


def load_broker_config(path: Path | str | None) -> BrokerConfig:
    if path is None:
        return BrokerConfig()
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise MqtoolError(f"cannot read broker config: {exc.strerror}", str(path)) from exc
    props = parse_properties(text)
    config = BrokerConfig()
    explicit = set()
    for name, default in vars(BrokerConfig()).items():
        if name == "explicit" or name not in props:
            continue
        value = props[name]
        try:
            if isinstance(default, bool):
                converted: object = value.lower() == "true"
            elif isinstance(default, int):
                converted = int(value)
            else:
                converted = value
        except ValueError as exc:
            raise MqtoolError(f"{name}={value!r} is not a number", str(path)) from exc
        setattr(config, name, converted)
        explicit.add(name)
    config.explicit = frozenset(explicit)
    config.delay_level_table()  # validate early
    return config
