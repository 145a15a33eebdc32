"""LMQ multi-dispatch: which extra ConsumeQueue units a record gets, as a broker with `enableLmq` writes them.

A record whose `INNER_MULTI_DISPATCH` property names queues (comma list, `%LMQ%...` for LMQ queues) is, on
a broker with `enableMultiDispatch`, dispatched after its own unit to each named queue too
(`ConsumeQueue.multiDispatchLmqQueue`): same phy offset, size and tags code, at the queue offset
`INNER_MULTI_QUEUE_OFFSET` holds for it, and queue id 0 for an LMQ queue when `enableLmq`
(`MixAll.LMQ_QUEUE_ID`). The put path fills `INNER_MULTI_QUEUE_OFFSET` (`LmqDispatch.wrapLmqDispatch`) on
topics that allow LMQ. Rules from rocketmq-all-5.3.3 `MultiDispatchUtils`, `ConsumeQueue`, `LmqDispatch`,
`MixAll.isLmq` / `topicAllowsLMQ`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from formats.names import LMQ_PREFIX, LMQ_QUEUE_ID, RETRY_PREFIX, SCHEDULE_TOPIC, SYSTEM_TOPIC_PREFIX
from store.config.brokerconf import BrokerConfig

LMQ_DISPATCH_SEPARATOR = ","  # MixAll.LMQ_DISPATCH_SEPARATOR
PROPERTY_INNER_MULTI_DISPATCH = "INNER_MULTI_DISPATCH"
PROPERTY_INNER_MULTI_QUEUE_OFFSET = "INNER_MULTI_QUEUE_OFFSET"
LMQ_OFFSET_FILE = "lmqConsumerOffset.json"  # BrokerPathConfigHelper.getLmqConsumerOffsetPath

_JAVA_LONG = re.compile(r"[+-]?[0-9]+")


def is_lmq(name: str | None) -> bool:
    """`MixAll.isLmq`."""
    return name is not None and name.startswith(LMQ_PREFIX)


def topic_allows_lmq(topic: str) -> bool:
    """`MixAll.topicAllowsLMQ` (= `MultiDispatchUtils.isNeedHandleMultiDispatch` without the flag)."""
    return (
        not topic.startswith(RETRY_PREFIX)
        and not topic.startswith(SYSTEM_TOPIC_PREFIX)
        and topic != SCHEDULE_TOPIC
    )


def is_blank(value: str | None) -> bool:
    """`StringUtils.isBlank`."""
    return value is None or not value.strip()


def java_split(text: str, sep: str = LMQ_DISPATCH_SEPARATOR) -> list[str]:
    """`text.split(sep)` as Java does it for a one-character separator: trailing empty strings dropped."""
    parts = text.split(sep)
    if text == "":
        return [""]
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def java_parse_long(text: str) -> int | None:
    """`Long.parseLong(text)`, or None where Java throws (ASCII digits only: what the broker writes)."""
    if not _JAVA_LONG.fullmatch(text):
        return None
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None


@dataclass(frozen=True, slots=True)
class LmqSettings:
    """`enableLmq` and `enableMultiDispatch` of the broker that writes the store, and where they came from."""

    enable_lmq: bool = False
    enable_multi_dispatch: bool = False
    source: str = "broker default"

    @property
    def dispatches(self) -> bool:
        return self.enable_multi_dispatch


@dataclass(frozen=True, slots=True)
class LmqUnit:
    """One unit `multiDispatchLmqQueue` writes for a record: queue, queue id, queue offset."""

    queue: str
    queue_id: int
    queue_offset: int


def multi_dispatch_units(
    topic: str,
    queue_id: int,
    dispatch: str | None,
    offsets: str | None,
    settings: LmqSettings,
    problems: list[str] | None = None,
) -> list[LmqUnit]:
    """The units `checkMultiDispatchQueue` + `multiDispatchLmqQueue` add for one dispatched record.

    Names with a path separator are skipped as the broker skips them; an offset Java cannot parse stops
    the list there (the broker's `Long.parseLong` throws) with a note in `problems`.
    """
    if not settings.enable_multi_dispatch or not topic_allows_lmq(topic):
        return []
    if is_blank(dispatch) or is_blank(offsets):
        return []
    assert dispatch is not None and offsets is not None
    names = java_split(dispatch)
    values = java_split(offsets)
    if len(names) != len(values):
        if problems is not None:
            problems.append(
                f"{PROPERTY_INNER_MULTI_DISPATCH} names {len(names)} queues but "
                f"{PROPERTY_INNER_MULTI_QUEUE_OFFSET} holds {len(values)} offsets "
                "(the broker dispatches none: '[bug] queues.length!=queueOffsets.length')"
            )
        return []
    units: list[LmqUnit] = []
    for name, value in zip(names, values, strict=True):
        if os.sep in name:
            continue
        offset = java_parse_long(value)
        if offset is None:
            if problems is not None:
                problems.append(
                    f"{PROPERTY_INNER_MULTI_QUEUE_OFFSET} entry {value!r} for {name} is not a number"
                )
            break
        qid = LMQ_QUEUE_ID if settings.enable_lmq and is_lmq(name) else queue_id
        units.append(LmqUnit(name, qid, offset))
    return units


def lmq_queue_names(cq_root: Path) -> Iterator[str]:
    """The `%LMQ%...` directories under consumequeue/, one at a time (a store may hold 100,000+)."""
    try:
        with os.scandir(cq_root) as entries:
            for entry in entries:
                if entry.name.startswith(LMQ_PREFIX) and entry.is_dir():
                    yield entry.name
    except (FileNotFoundError, NotADirectoryError):
        return


def store_shows_lmq(root: Path) -> bool:
    """The files of an LMQ broker: an LMQ ConsumeQueue directory or config/lmqConsumerOffset.json."""
    if (root / "config" / LMQ_OFFSET_FILE).exists():
        return True
    return next(lmq_queue_names(root / "consumequeue"), None) is not None


def offset_file_name(settings: LmqSettings, config_backend: str = "json") -> str:
    """The consumer offset file the broker loads: an enableLmq broker with file config runs
    LmqConsumerOffsetManager (lmqConsumerOffset.json, every group's offsets) and never reads
    consumerOffset.json. A broker keeping its config in RocksDB (`config_backend` "rocksdb" or "rdb",
    `StoreLayout.config_backend`) runs RocksDBConsumerOffsetManager or ConsumerOffsetManagerV2 whatever
    enableLmq says (BrokerController's constructor): LMQ offsets sit with the others there, and
    lmqConsumerOffset.json is never read."""
    return LMQ_OFFSET_FILE if settings.enable_lmq and config_backend == "json" else "consumerOffset.json"


def resolve_lmq_settings(root: Path, config: BrokerConfig | None = None) -> LmqSettings:
    """enableLmq / enableMultiDispatch: broker.conf when it sets either, else on when the files show LMQ
    queues or lmqConsumerOffset.json (what only a broker with both on writes), else off."""
    if config is not None and {"enableLmq", "enableMultiDispatch"} & config.explicit:
        return LmqSettings(config.enableLmq, config.enableMultiDispatch, "broker.conf")
    if store_shows_lmq(root):
        return LmqSettings(True, True, "current files")
    return LmqSettings()


__all__ = [
    "LMQ_DISPATCH_SEPARATOR",
    "LMQ_OFFSET_FILE",
    "PROPERTY_INNER_MULTI_DISPATCH",
    "PROPERTY_INNER_MULTI_QUEUE_OFFSET",
    "LmqSettings",
    "LmqUnit",
    "is_blank",
    "is_lmq",
    "java_parse_long",
    "java_split",
    "lmq_queue_names",
    "multi_dispatch_units",
    "offset_file_name",
    "resolve_lmq_settings",
    "store_shows_lmq",
    "topic_allows_lmq",
]
