"""Which broker wrote a store, 4.9.x or 5.x — from what its files show.

The two write differently (property strings end with \\x02 in 5.x; V2 records; config JSON shapes;
5.x-only files) and mqtool must follow the right one when it writes or emulates the broker. Evidence,
strongest first:

1. a file only 5.x writes: `timerwheel`, `config/timercheck`, `abort.bak`, `config/messageRequestMode.json`;
2. a record the broker serialised itself (given by the caller, e.g. the newest schedule/half/op record,
   or the last record before an append): V2 magic or properties ending with \\x02 -> 5, otherwise 4;
3. config shapes: consumerOffset.json / delayOffset.json with a dataVersion, topics.json or
   subscriptionGroup.json in the 5.x shape -> 5; the same files in the 4.9.x shape -> 4;
4. nothing at all: assume 5.x, and say so.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path

from formats.errors import MqtoolError, UsageError
from formats.message.commitlog import Message
from formats.structs import MAGIC_V2

FILES_ONLY_5X = ("timerwheel", "config/timercheck", "abort.bak", "config/messageRequestMode.json")


@dataclass(frozen=True)
class BrokerVersion:
    """4 (4.9.x) or 5 (5.x), and why."""

    major: int
    reason: str
    detected: bool = True

    @property
    def has_consume_mode_switch(self) -> bool:
        """5.x only: messageRequestMode.json and setConsumeMode (4.9.x consumers always pull)."""
        return self.major >= 5

    def describe(self) -> str:
        how = "detected" if self.detected else "given with --broker-version"
        return f"broker {self.major}.x ({how}: {self.reason})"


def version_of_record(msg: Message) -> int | None:
    """5 or 4 from how the broker serialised a record (V2 magic, trailing \\x02), or None if it can't tell."""
    if msg.magic_code == MAGIC_V2:
        return 5
    if not msg.properties_raw:
        return None
    return 5 if msg.properties_raw.endswith(b"\x02") else 4


def _config_marks(root: Path) -> tuple[list[str], list[str]]:
    from store.config.configfile import ConfigFile

    marks5: list[str] = []
    marks4: list[str] = []
    for name in ("consumerOffset.json", "delayOffset.json"):
        with contextlib.suppress(MqtoolError):
            loaded = ConfigFile(root, name).load()
            if loaded.source != "none":
                if getattr(loaded.model, "data_version", None) is not None:
                    marks5.append(f"{name} has a dataVersion")
                else:
                    marks4.append(f"{name} has no dataVersion")
    for name, table in (
        ("topics.json", "topic_config_table"),
        ("subscriptionGroup.json", "subscription_group_table"),
    ):
        with contextlib.suppress(MqtoolError):
            loaded = ConfigFile(root, name).load()
            if loaded.source != "none" and getattr(loaded.model, table):
                (marks5 if loaded.model.is_v5 else marks4).append(
                    f"{name} has the {'5' if loaded.model.is_v5 else '4.9'}.x shape"
                )
    return marks5, marks4


def detect_broker_version(root: Path, record: Message | None = None) -> BrokerVersion | None:
    """The broker major version that wrote the store at `root`, or None when nothing shows it."""
    for name in FILES_ONLY_5X:
        if (root / name).exists():
            return BrokerVersion(5, f"{name} exists (only 5.x writes it)")
    if record is not None:
        major = version_of_record(record)
        if major is not None:
            how = (
                "V2 magic"
                if record.is_v2
                else ("ends" if major == 5 else "does not end") + " its properties with \\x02"
            )
            return BrokerVersion(major, f"the {record.topic} record at {record.physical_offset}: {how}")
    marks5, marks4 = _config_marks(root)
    if marks5:
        return BrokerVersion(5, ", ".join(marks5))
    if marks4:
        return BrokerVersion(4, ", ".join(marks4))
    return None


def resolve_broker_version(
    root: Path, given: int | None = None, record: Message | None = None
) -> BrokerVersion:
    """`--broker-version` when given (4 or 5), else detected, else 5.x (the current broker)."""
    if given is not None:
        if given not in (4, 5):
            raise UsageError(f"--broker-version must be 4 or 5, not {given}")
        return BrokerVersion(given, "", detected=False)
    return detect_broker_version(root, record) or BrokerVersion(
        5, "no version marks in the store; assuming 5.x"
    )
