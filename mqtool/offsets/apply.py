"""Applying a reset plan: consumerOffset.json written as the 5.2+ server-side reset does
(lmqConsumerOffset.json on a store of a broker with enableLmq, `StoreLayout.consumer_offset_file`).

Unconditionally, creating `topic@group` entries (`ConsumerOffsetManager.assignResetOffset`), under the
write safety rules of `mqtool.safety`: dry run unless `execute`, never while a broker holds the store
lock, atomic replace with the previous content kept in `.bak`. Every other entry and table keeps its
layout.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from formats.config.base import DataVersion
from formats.config.offsets import ConsumerOffsetTable
from formats.errors import MqtoolError
from mqtool.offsets.plan import ResetPlan
from mqtool.safety import warn, write_guard
from mqtool.timeparse import now_ms
from store.config.configfile import LoadedConfig
from store.io.filewrites import crash_point
from store.storedir import Store

CONSUMER_OFFSET = "consumerOffset.json"


class PlanOutdatedError(MqtoolError):
    """consumerOffset.json changed between planning and writing."""


class ConfigNotWritableError(MqtoolError):
    """A config file the broker would not load as it is; writing it now would destroy its good `.bak`."""


@dataclass
class ApplyResult:
    """What `apply_plan` did."""

    executed: bool  # True when the file was written
    path: Path
    changed: int  # offsets that changed
    data_version_before: DataVersion | None = None
    data_version_after: DataVersion | None = None
    text: str | None = None  # the file text written

    @property
    def bak_path(self) -> Path:
        return self.path.with_name(self.path.name + ".bak")


def check_writable(loaded: LoadedConfig) -> None:
    """Refuse to write a config file whose current content is broken while its `.bak` is good.

    The broker would load the `.bak`; `atomic_write` would copy the broken file over it.
    """
    if loaded.source == "bak" and loaded.file_error is not None:
        name = loaded.name
        raise ConfigNotWritableError(
            f"{loaded.reason}: writing now would replace {name}.bak, the copy the broker would load, with "
            f"the broken file; restore {name} from {name}.bak first",
            str(loaded.path.with_name(name) if loaded.path else name),
        )


def apply_plan(
    store: Store,
    plan: ResetPlan,
    execute: bool,
    *,
    now: int | None = None,
    note: Callable[[str], None] = warn,
) -> ApplyResult:
    """Write the plan's offsets into consumerOffset.json (dry run unless `execute`).

    Under the store lock the file is re-read; if a planned row's current offset changed meanwhile the
    write is refused (PlanOutdatedError). Then `set_offset` for every changed row, dataVersion bumped
    when the file has one, saved atomically (previous content in `.bak`), and read back to check.
    """
    config = store.config(store.layout.consumer_offset_file)
    changes = plan.changes
    result = ApplyResult(False, config.path, len(changes))
    with write_guard(store, execute, note=note, touches="config") as may_write:
        if not may_write or not changes:
            return result
        crash_point("locked")
        loaded = config.load()
        check_writable(loaded)
        model: ConsumerOffsetTable = loaded.model
        if loaded.source == "none" and plan.broker_version.major == 5:
            # A 5.x broker writes a fresh manager's file with its DataVersion and groupTopicMap.
            model.data_version = DataVersion(0, now or now_ms(), 0)
            model.with_group_topic_map = True
        for r in plan.rows:
            found = (model.get(r.topic, r.group) or {}).get(r.queue_id)
            if found != r.current_offset:
                raise PlanOutdatedError(
                    f"{r.group} {r.topic}/{r.queue_id} is now at {found}, not {r.current_offset} as planned: "
                    f"{config.name} changed since the plan was made; plan again",
                    str(config.path),
                )
        result.data_version_before = model.data_version
        for r in changes:
            model.set_offset(r.topic, r.group, r.queue_id, r.new_offset)
        model.bump_version(now or now_ms())
        result.data_version_after = model.data_version
        crash_point("loaded")
        result.text = config.save(model)
        crash_point("saved")
        result.executed = True
        _verify(config, plan)
    return result


def _verify(config, plan: ResetPlan) -> None:
    back = config.load()
    if back.source != "file":
        raise MqtoolError(f"read-back failed: {back.reason}", str(config.path))
    for r in plan.rows:
        got = (back.model.get(r.topic, r.group) or {}).get(r.queue_id)
        if got != r.new_offset:
            raise MqtoolError(
                f"read-back shows {r.group} {r.topic}/{r.queue_id} at {got}, not {r.new_offset}",
                str(config.path),
            )
