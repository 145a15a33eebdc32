"""What the topic and group edits share: the plan (rows of what changes, the files to write, the queue
directories to remove), the refusals every edit makes first, and writing a plan under the write safety
rules (`mqtool.safety`).

The tables are written as the broker's managers persist them (`ConfigManager.persist` -> `encode(true)`,
fastjson): `topicConfigTable` and `subscriptionGroupTable` are `ConcurrentHashMap(1024)`s
(TopicConfigManager.java:68, SubscriptionGroupManager.java:46-47 of rocketmq-all-5.3.3; 4.9.8 the same),
whose 2048-bucket table iterates in bucket order, each bucket in insertion order: a new entry lands where
the broker's would (`table_order`); the consumer offsets are the map fastjson filled (`loaded_order`).
dataVersion moves as `updateDataVersion` moves it
(`DataVersion.nextVersion(stateMachineVersion)`: counter + 1, timestamp now, stateVersion the store's
state machine version, 0 outside controller mode, which is refused), once per table change.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from formats.config.base import DataVersion
from formats.config.codec import encode_config
from formats.errors import MqtoolError
from formats.java.hash import java_concurrent_hashmap_order
from formats.names import GROUP_MAX_LENGTH, escaped_name, is_topic_or_group_illegal, validate_topic
from mqtool.offsets.apply import PlanOutdatedError, check_writable
from mqtool.safety import finishing, refuse_unsupported_layout, warn, write_guard
from store.io.filewrites import TMP_PREFIX, WriteTargets, crash_point, fsync_dir
from store.storedir import Store
from store.version import BrokerVersion

# ConcurrentHashMap(1024): JDK 17 sizes the table for 1024 / 0.75 + 1 entries, 2048 buckets
TABLE_BUCKETS = 2048

PARKED_PREFIX = f"{TMP_PREFIX}deleted-"  # a consume queue directory on its way out (`remove_directory`)
ACTIONS = ("create", "update", "delete", "remove-offsets", "remove-queue", "broker-also")


class ConfigEditError(MqtoolError):
    """An edit the broker refuses, or one mqtool refuses on this store."""


@dataclass
class EditRow:
    """One change: a property of an entry (create/update), an entry removed (delete), offsets or queue
    files removed with it, or what the broker would also do that mqtool leaves (broker-also)."""

    action: str  # one of ACTIONS
    file: str  # the config file or directory it is in
    name: str  # topic, group or topic@group
    field: str | None = None
    before: Any = None
    after: Any = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "file": self.file,
            "name": self.name,
            "field": self.field,
            "before": self.before,
            "after": self.after,
        }


@dataclass
class FileEdit:
    """A config file to rewrite: its text when planned (a change meanwhile refuses the write) and the
    model to write."""

    name: str
    planned_text: str
    model: Any
    data_version_before: DataVersion | None = None
    data_version_after: DataVersion | None = None


@dataclass
class ConfigEdit:
    """A planned topic or group edit (and, once applied, done)."""

    command: str  # "topic update", "topic delete", "group update", "group delete"
    target: str  # the topic or group
    broker_version: BrokerVersion
    rows: list[EditRow] = field(default_factory=list)
    files: list[FileEdit] = field(default_factory=list)
    queue_dirs: list[Path] = field(default_factory=list)  # consume queue directories to remove
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    executed: bool = False

    @property
    def changed(self) -> bool:
        return bool(self.files or self.queue_dirs)

    def to_json(self) -> list[dict[str, Any]]:
        return [r.to_dict() for r in self.rows]


def refuse_layout(store: Store, touches: str = "config") -> None:
    """The refusals every edit makes before planning: a layout mqtool does not write on, configs the broker
    keeps in RocksDB, and controller mode (the dataVersion's stateVersion is the controller's epoch)."""
    refuse_unsupported_layout(store, touches)
    backend = store.layout.config_backend
    if backend != "json":
        where = "config/rdb (configManagerVersion=v2)" if backend == "rdb" else "RocksDB (config/topics, ...)"
        raise ConfigEditError(
            f"the broker keeps its topic and group configs in {where}: mqtool edits only the JSON files; "
            "use mqadmin on the running broker",
            str(store.config_dir),
        )
    if store.broker_config.enableControllerMode:
        raise ConfigEditError(
            "controller mode (enableControllerMode=true): the broker stamps each config change with the "
            "controller's epoch, which the store does not hold; use mqadmin on the running broker",
            str(store.root),
        )


def check_name(kind: str, name: str) -> None:
    """Topics: `TopicValidator.validateTopic` (common/.../topic/TopicValidator.java:110-124): blank,
    characters outside ^[%|a-zA-Z0-9_-]+$, longer than 127. Groups: the broker's update takes any name, but
    the groups it creates itself are held to the same characters and 255 characters
    (SubscriptionGroupManager.findSubscriptionGroupConfig, SubscriptionGroupManager.java:265): mqtool
    holds every group to that, as a name nothing else could have written."""
    if kind == "topic":
        problem = validate_topic(name)
    elif not name.strip():
        problem = "The specified group is blank."
    elif is_topic_or_group_illegal(name):
        problem = "The specified group contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
    elif len(name) > GROUP_MAX_LENGTH:
        problem = f"The specified group is longer than {GROUP_MAX_LENGTH} characters."
    else:
        problem = None
    if problem is not None:
        raise ConfigEditError(f"{kind} {escaped_name(name)}: {problem}")


def loaded_order(keys: Iterable[str]) -> list[str]:
    """The keys of a `ConcurrentMap` property in the order the broker holds them after loading the file:
    fastjson fills a `new ConcurrentHashMap()` in file order (`ConsumerOffsetManager.decode` keeps that
    map as its offsetTable; the topic and group managers putAll it into their own)."""
    return java_concurrent_hashmap_order(keys)


def table_order(
    file_keys: Iterable[str], new_keys: Iterable[str] = (), first: Iterable[str] = ()
) -> list[str]:
    """The iteration order of a manager's ConcurrentHashMap(1024) that got `first` (its constructor's
    built-in entries), then the file's entries (`putAll` of the loaded map, `loaded_order`), then
    `new_keys`."""
    keys = list(file_keys)
    present = set(keys)
    seq = [k for k in first if k in present] + loaded_order(keys) + list(new_keys)
    return java_concurrent_hashmap_order(seq, TABLE_BUCKETS)


def next_version(current: DataVersion | None, now: int, times: int = 1) -> DataVersion | None:
    """`updateDataVersion` `times` times (None: the file has no dataVersion, and the broker would write a
    fresh one: refused by the callers)."""
    version = current
    for _ in range(times):
        version = version.next_version(now) if version is not None else None
    return version


def planned_text(model: Any) -> str:
    return encode_config(model, True)


def apply_edit(
    store: Store, edit: ConfigEdit, execute: bool, *, note: Callable[[str], None] = warn
) -> ConfigEdit:
    """Write the plan's files (atomically, `.bak` kept) and remove its queue directories; dry run unless
    `execute`. Under the store lock each file is read again and must still be as planned."""
    configs = [store.config(f.name) for f in edit.files]

    def targets() -> WriteTargets:
        out = WriteTargets()
        for config in configs:
            out = out + config.write_targets()
        if edit.queue_dirs:
            out = out + WriteTargets(dirs=[store.root, *(d.parent for d in edit.queue_dirs)])
        return out

    touches = "queues" if edit.queue_dirs else "config"
    with write_guard(store, execute, note=note, touches=touches, targets=targets) as may_write:
        if not may_write or not edit.changed:
            return edit
        crash_point("locked")
        remove_parked(store.root)
        for config, planned in zip(configs, edit.files, strict=True):
            loaded = config.load()
            check_writable(loaded)
            if planned_text(loaded.model) != planned.planned_text:
                raise PlanOutdatedError(
                    f"{config.name} changed since the plan was made; plan again", str(config.path)
                )
        written: list[str] = []
        for config, planned in zip(configs, edit.files, strict=True):
            with finishing(_written(written), "run the same command again to finish"):
                config.save(planned.model, True)
            written.append(config.name)
            crash_point("saved")
        for directory in edit.queue_dirs:
            with finishing(_written(written), "run the same command again to finish"):
                remove_directory(store.root, directory)
            written.append(str(directory.relative_to(store.root)))
        edit.executed = True
    return edit


def _written(done: list[str]) -> str:
    return "wrote " + ", ".join(done) if done else "nothing written"


def remove_parked(root: Path) -> None:
    """Delete the directories an interrupted `remove_directory` left parked in the store root."""
    for entry in os.scandir(root):
        if entry.name.startswith(PARKED_PREFIX) and entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)


def remove_directory(root: Path, directory: Path) -> None:
    """Remove a consume queue directory so that a crash leaves it whole or gone: renamed out of its parent
    into a temporary name in the store root (one rename), then deleted (what an interrupted delete left
    there is removed by the next edit, `remove_parked`, or by `rebuild`'s `remove_leftovers`)."""
    if not directory.exists():
        return
    parked = root / f"{PARKED_PREFIX}{os.getpid()}-{time.monotonic_ns()}"
    os.rename(directory, parked)
    fsync_dir(directory.parent)
    fsync_dir(root)
    shutil.rmtree(parked, ignore_errors=True)


__all__ = [
    "ACTIONS",
    "ConfigEdit",
    "ConfigEditError",
    "EditRow",
    "FileEdit",
    "apply_edit",
    "check_name",
    "next_version",
    "planned_text",
    "refuse_layout",
    "remove_directory",
    "remove_parked",
    "loaded_order",
    "table_order",
]
