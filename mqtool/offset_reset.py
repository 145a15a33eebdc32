"""The offset planner (`mqtool offsets reset`): where a consumer group's offsets would go, and writing them.

A plan is computed read-only from consumerOffset.json, topics.json, subscriptionGroup.json and the
consume queues: per group/topic/queue the current offset, the new one, the queue's min and max offset
and the store time of the message the new offset points at. Targets (mqadmin resetOffsetByTime and friends): a
time (the
broker's `getOffsetInQueueByTime`, 5.1.1+ LOWER/UPPER binary search, or the 4.9.x nearest-message
search that picks the ConsumeQueue file by its mtime), a duration before now, an explicit offset, a
shift from the current offset, the earliest or latest offset, or a CSV plan file. Targets outside
[min, max] are clamped with a warning; a reset to 0 is kept (mqadmin's single-queue path skips it).

`apply_plan` writes the plan into consumerOffset.json as the 5.2+ server-side reset does
(unconditionally, creating `topic@group` entries: `ConsumerOffsetManager.assignResetOffset`), under the write
safety
rules of `mqtool.safety`: dry run unless `execute`, never while a broker holds the store lock, atomic
replace with the previous content kept in `.bak`. Every other entry and table keeps its layout.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import tzinfo
from pathlib import Path
from typing import Any, Literal

from formats.configs import (
    JAVA_INT_MAX,
    ConsumerOffsetTable,
    DataVersion,
    SubscriptionGroupTable,
    TopicConfigTable,
)
from formats.errors import MqtoolError
from mqtool.consumer_progress import is_system_group, store_time_of
from mqtool.safety import warn, write_guard
from mqtool.timeparse import duration_text, format_time, now_ms, zone_label
from store.config import LoadedConfig
from store.consumequeue import Boundary, ConsumeQueue, StoreTimeOf
from store.filewrites import crash_point
from store.storedir import Store
from store.version import BrokerVersion

CONSUMER_OFFSET = "consumerOffset.json"
JAVA_LONG_MAX = 2**63 - 1

TargetKind = Literal["time", "offset", "shift", "earliest", "latest"]


class ResetPlanError(MqtoolError):
    """A reset that cannot be planned: unknown group/topic/queue, bad options, bad plan file."""


class PlanOutdatedError(MqtoolError):
    """consumerOffset.json changed between planning and writing."""


class ConfigNotWritableError(MqtoolError):
    """A config file the broker would not load as it is; writing it now would destroy its good `.bak`."""


# --- broker version --------------------------------------------------------------------------------


@dataclass
class StoreCatalog:
    """The config tables a plan consults, loaded once as the broker would load them."""

    topics: TopicConfigTable | None
    groups: SubscriptionGroupTable | None
    offsets: ConsumerOffsetTable
    offsets_loaded: LoadedConfig | None
    request_mode_present: bool
    notes: list[str] = field(default_factory=list)

    @classmethod
    def load(cls, store: Store) -> StoreCatalog:
        notes: list[str] = []

        def model(name: str) -> tuple[Any, LoadedConfig | None]:
            try:
                loaded = store.config(name).load()
            except MqtoolError as exc:
                notes.append(f"{name} is unusable ({exc.message}): the broker would not start")
                return None, None
            if loaded.source != "file":
                notes.append(f"{name}: {loaded.reason}")
            notes.extend(loaded.warnings)
            return (loaded.model if loaded.source != "none" else None), loaded

        topics, _ = model("topics.json")
        groups, _ = model("subscriptionGroup.json")
        offsets, offsets_loaded = model(CONSUMER_OFFSET)
        mode_path = store.config_dir / "messageRequestMode.json"
        return cls(
            topics=topics,
            groups=groups,
            offsets=offsets if offsets is not None else ConsumerOffsetTable(),
            offsets_loaded=offsets_loaded,
            request_mode_present=mode_path.exists() or mode_path.with_name(mode_path.name + ".bak").exists(),
            notes=notes,
        )

    def topic_config(self, topic: str):
        return None if self.topics is None else self.topics.topic_config_table.get(topic)

    def group_exists(self, group: str) -> bool:
        """In subscriptionGroup.json, a built-in group, or a group with committed offsets."""
        if self.groups is not None and group in self.groups.subscription_group_table:
            return True
        return is_system_group(group) or any(g == group for _, g, _, _ in self.offsets.entries())

    def committed(self, topic: str, group: str) -> dict[int, int]:
        return self.offsets.get(topic, group) or {}


# --- targets ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ResetTarget:
    """Where each queue's offset goes. `value`: epoch ms (time), offset, or shift."""

    kind: TargetKind
    value: int | None = None
    boundary: Boundary | None = None  # time only; None means the broker's default, lower
    duration_ms: int | None = None  # set when the time came from --by-duration

    def describe(self, zone: tzinfo) -> str:
        if self.kind == "time":
            when = f"{format_time(self.value, zone)} {zone_label(zone, self.value)} ({self.value})"
            ago = f" ({duration_text(self.duration_ms)} ago)" if self.duration_ms is not None else ""
            return f"to time {when}{ago}"
        if self.kind == "offset":
            return f"to offset {self.value}"
        if self.kind == "shift":
            return f"shift by {self.value:+d}"
        return "to the earliest offset" if self.kind == "earliest" else "to the latest offset"


PLAN_FILE_COLUMNS = ("group", "topic", "queue", "offset")


EXPORT_COLUMNS = (*PLAN_FILE_COLUMNS, "currentOffset", "minOffset", "maxOffset", "newOffsetStoreTimestamp")


def reset_target(
    *,
    to_time: int | None = None,
    by_duration_ms: int | None = None,
    to_offset: int | None = None,
    shift_by: int | None = None,
    to_earliest: bool = False,
    to_latest: bool = False,
    boundary: str | None = None,
    now: int | None = None,
) -> ResetTarget:
    """The one target the options ask for; errors when none or several are given."""
    given = [
        name
        for name, present in (
            ("--to-time", to_time is not None),
            ("--by-duration", by_duration_ms is not None),
            ("--to-offset", to_offset is not None),
            ("--shift-by", shift_by is not None),
            ("--to-earliest", to_earliest),
            ("--to-latest", to_latest),
        )
        if present
    ]
    if len(given) != 1:
        which = "none was given" if not given else f"got {', '.join(given)}"
        raise ResetPlanError(
            "give exactly one of --to-time, --by-duration, --to-offset, --shift-by, --to-earliest, "
            f"--to-latest, --from-file ({which})"
        )
    if boundary is not None:
        boundary = boundary.lower()
        if boundary not in ("lower", "upper"):
            raise ResetPlanError(f"--boundary must be lower or upper, not {boundary!r}")
        if to_time is None and by_duration_ms is None:
            raise ResetPlanError("--boundary only applies to --to-time and --by-duration")
    if to_time is not None:
        return ResetTarget("time", to_time, boundary)  # type: ignore[arg-type]
    if by_duration_ms is not None:
        if by_duration_ms < 0:
            raise ResetPlanError("--by-duration must not be negative")
        base = now if now is not None else now_ms()
        return ResetTarget("time", base - by_duration_ms, boundary, by_duration_ms)  # type: ignore[arg-type]
    if to_offset is not None:
        if not 0 <= to_offset <= JAVA_LONG_MAX:
            raise ResetPlanError(f"--to-offset must be between 0 and {JAVA_LONG_MAX}, not {to_offset}")
        return ResetTarget("offset", to_offset)
    if shift_by is not None:
        return ResetTarget("shift", shift_by)
    return ResetTarget("earliest" if to_earliest else "latest")


# --- plans -----------------------------------------------------------------------------------------


@dataclass
class ResetRow:
    """One queue of a plan (JSON names of notes/json-output.md, plus requestedOffset and lags)."""

    group: str
    topic: str
    queue_id: int
    current_offset: int | None
    new_offset: int
    min_offset: int
    max_offset: int
    new_offset_store_timestamp: int | None
    requested_offset: int

    @property
    def changed(self) -> bool:
        return self.current_offset != self.new_offset

    @property
    def clamped(self) -> bool:
        return self.requested_offset != self.new_offset

    @property
    def lag_before(self) -> int | None:
        return None if self.current_offset is None else self.max_offset - self.current_offset

    @property
    def lag_after(self) -> int:
        return self.max_offset - self.new_offset

    def to_dict(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "topic": self.topic,
            "queueId": self.queue_id,
            "currentOffset": self.current_offset,
            "newOffset": self.new_offset,
            "minOffset": self.min_offset,
            "maxOffset": self.max_offset,
            "newOffsetStoreTimestamp": self.new_offset_store_timestamp,
            "requestedOffset": self.requested_offset,
            "lagBefore": self.lag_before,
            "lagAfter": self.lag_after,
        }


@dataclass
class ResetPlan:
    """The rows of a reset and what the operator should know about them."""

    rows: list[ResetRow]
    target: ResetTarget | None  # None for a plan read from a file
    broker_version: BrokerVersion
    source: str | None = None  # the plan file, for --from-file
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def groups(self) -> list[str]:
        return list(dict.fromkeys(r.group for r in self.rows))

    @property
    def changes(self) -> list[ResetRow]:
        return [r for r in self.rows if r.changed]

    def to_json(self) -> list[dict[str, Any]]:
        return [r.to_dict() for r in self.rows]


def plan_reset(
    store: Store,
    group: str,
    topics: Sequence[str] | None,
    target: ResetTarget,
    *,
    all_topics: bool = False,
    queues: Iterable[int] | None = None,
    broker_version: int | None = None,
    allow_new_group: bool = False,
    cq_file_mtimes: Mapping[str, int] | None = None,
    store_time: StoreTimeOf | None = None,
) -> ResetPlan:
    """Plan moving `group`'s offsets on `topics` (or all topics it has offsets for) to `target`.

    `queues` limits the queues (each must be a queue of every topic). `cq_file_mtimes` (path under
    consumequeue/ -> epoch ms, like store-49a's `cqFileLastModified`) replaces the files' own mtimes in
    the 4.9.x time search. Read-only.
    """
    catalog = StoreCatalog.load(store)
    version = store.layout.broker_version(broker_version)
    plan = ResetPlan([], target, version)
    plan.warnings.extend(catalog.notes)
    if target.kind == "time" and version.major == 4 and target.boundary is not None:
        raise ResetPlanError(
            "--boundary needs the 5.1.1+ time search; the 4.9.x broker returns the nearest message "
            "(use --broker-version 5 if the broker is 5.1.1 or later)"
        )
    if not group:
        raise ResetPlanError("--group is required")
    _check_group(catalog, group, allow_new_group, plan.warnings)
    topic_list = _topics_for(catalog, group, topics, all_topics)
    wanted = None if queues is None else list(dict.fromkeys(queues))
    times = store_time or store_time_of(store)
    for topic in topic_list:
        topic_queues = _topic_queues(store, catalog, topic, plan.warnings)
        selected = topic_queues if wanted is None else _select_queues(topic, topic_queues, wanted, catalog)
        committed = catalog.committed(topic, group)
        if not committed:
            plan.warnings.append(
                f"group {group} has no committed offsets on {topic} yet: the reset creates them "
                "(as the broker's server-side reset does)"
            )
        for queue_id in selected:
            cq = store.consume_queue(topic, queue_id)
            current = committed.get(queue_id)
            requested = _target_offset(cq, target, current, version, times, cq_file_mtimes)
            if requested is None:
                plan.warnings.append(f"{topic}/{queue_id}: no committed offset to shift from: left out")
                continue
            plan.rows.append(_row(group, topic, queue_id, cq, current, requested, version, times, plan))
    _add_notes(plan)
    return plan


def _check_group(catalog: StoreCatalog, group: str, allow_new_group: bool, warnings: list[str]) -> None:
    if catalog.group_exists(group):
        return
    if not allow_new_group:
        raise ResetPlanError(
            f"consumer group {group!r} does not exist: not in subscriptionGroup.json and no committed "
            "offsets (--allow-new-group plans for it anyway)"
        )
    warnings.append(
        f"consumer group {group} is not in subscriptionGroup.json: the broker creates it on first use "
        "only with autoCreateSubscriptionGroup=true"
    )


def _topics_for(
    catalog: StoreCatalog, group: str, topics: Sequence[str] | None, all_topics: bool
) -> list[str]:
    if all_topics and topics:
        raise ResetPlanError("give --topic or --all-topics, not both")
    if all_topics:
        found = sorted({t for t, g, _, _ in catalog.offsets.entries() if g == group})
        if not found:
            raise ResetPlanError(
                f"group {group} has no committed offsets, so it has no topics to reset: "
                "name them with --topic"
            )
        return found
    if not topics:
        raise ResetPlanError("--topic (or --all-topics) is required")
    return list(dict.fromkeys(topics))


def _topic_queues(store: Store, catalog: StoreCatalog, topic: str, warnings: list[str]) -> list[int]:
    """0 .. readQueueNums-1 of the topic config (as the broker's reset), else the consumequeue dirs."""
    config = catalog.topic_config(topic)
    if config is not None:
        if config.read_queue_nums <= 0:
            warnings.append(f"topic {topic} has readQueueNums {config.read_queue_nums}: no queue to reset")
        return list(range(max(0, config.read_queue_nums)))
    ids = store.consume_queues.queue_ids(topic)
    if ids:
        warnings.append(
            f"topic {topic} is not in topics.json (the broker's reset would answer TOPIC_NOT_EXIST unless it "
            f"creates the topic at start-up); using its consumequeue directories: queues {_ranges(ids)}"
        )
        return ids
    raise ResetPlanError(f"topic {topic!r} does not exist: not in topics.json and no consumequeue/{topic}")


def _select_queues(
    topic: str, topic_queues: list[int], wanted: list[int], catalog: StoreCatalog
) -> list[int]:
    known = set(topic_queues)
    for q in wanted:
        if q not in known:
            config = catalog.topic_config(topic)
            why = (
                f"readQueueNums is {config.read_queue_nums}"
                if config is not None
                else f"its consumequeue directories are {_ranges(topic_queues) or 'none'}"
            )
            raise ResetPlanError(f"queue {q} is not a queue of topic {topic} ({why})")
    return wanted


def _ranges(ids: Sequence[int]) -> str:
    """`0-3, 7` style."""
    parts: list[str] = []
    start = prev = None
    for i in sorted(ids):
        if start is None:
            start = prev = i
        elif i == prev + 1:
            prev = i
        else:
            parts.append(f"{start}-{prev}" if prev != start else str(start))
            start = prev = i
    if start is not None:
        parts.append(f"{start}-{prev}" if prev != start else str(start))
    return ", ".join(parts)


def _queue_min(cq: ConsumeQueue, version: BrokerVersion) -> int:
    return cq.min_offset_of(version.major)


def offset_by_time(
    cq: ConsumeQueue,
    timestamp: int,
    version: BrokerVersion,
    store_time: StoreTimeOf,
    boundary: Boundary | None = None,
    cq_file_mtimes: Mapping[str, int] | None = None,
) -> int:
    """The broker's `getOffsetInQueueByTime` of the given version (LOWER unless `boundary`)."""
    try:
        return cq.offset_by_time(version.major, timestamp, store_time, boundary, cq_file_mtimes)
    except MqtoolError as exc:
        raise ResetPlanError(
            f"{cq.topic}/{cq.queue_id}: time search failed: {exc.message}", exc.file, exc.offset
        ) from exc


def _target_offset(
    cq: ConsumeQueue,
    target: ResetTarget,
    current: int | None,
    version: BrokerVersion,
    store_time: StoreTimeOf,
    cq_file_mtimes: Mapping[str, int] | None,
) -> int | None:
    if target.kind == "time":
        assert target.value is not None
        return offset_by_time(cq, target.value, version, store_time, target.boundary, cq_file_mtimes)
    if target.kind == "offset":
        return target.value
    if target.kind == "shift":
        return None if current is None else current + (target.value or 0)
    if target.kind == "earliest":
        return _queue_min(cq, version)
    return cq.max_offset


def _row(
    group: str,
    topic: str,
    queue_id: int,
    cq: ConsumeQueue,
    current: int | None,
    requested: int,
    version: BrokerVersion,
    store_time: StoreTimeOf,
    plan: ResetPlan,
) -> ResetRow:
    low, high = _queue_min(cq, version), cq.max_offset
    new = min(max(requested, low), high)
    if new != requested:
        side = f"below the min offset {low}" if requested < low else f"above the max offset {high}"
        plan.warnings.append(f"{topic}/{queue_id}: target {requested} is {side}: clamped to {new}")
    return ResetRow(
        group=group,
        topic=topic,
        queue_id=queue_id,
        current_offset=current,
        new_offset=new,
        min_offset=low,
        max_offset=high,
        new_offset_store_timestamp=_store_time_at(cq, new, store_time),
        requested_offset=requested,
    )


def _store_time_at(cq: ConsumeQueue, queue_offset: int, store_time: StoreTimeOf) -> int | None:
    """STORETIMESTAMP of the message at `queue_offset` (None at the max offset or when deleted)."""
    unit = cq.unit(queue_offset)
    if unit is None:
        return None
    t = store_time(unit.phy_offset, unit.size)
    return t if t >= 0 else None


def _add_notes(plan: ResetPlan) -> None:
    target = plan.target
    version = plan.broker_version
    if target is not None and target.kind == "time":
        if version.major == 4:
            plan.notes.append(
                "time search: the 4.9.x getOffsetInQueueByTime (also 5.0.x-5.1.0): it picks the ConsumeQueue "
                "file by its modification time, then the message nearest to the time, which may be stored "
                "just before it; a time after the last message gives the last message, not the max offset. "
                "Results depend on the CQ files' mtimes: a copied or restored store answers differently"
            )
        else:
            boundary = target.boundary or "lower"
            what = (
                "the first message stored at or after the time (the broker's default)"
                if boundary == "lower"
                else "the last message stored at or before the time"
            )
            plan.notes.append(
                f"time search: 5.1.1+ getOffsetInQueueByTime, {boundary.upper()} boundary: {what}"
            )
        plan.notes.append(f"algorithm chosen for {version.describe()}")
    if any(r.new_offset == 0 and r.changed for r in plan.rows):
        plan.notes.append("offsets reset to 0 are written (mqadmin resetOffsetByTime -q silently skips 0)")


# --- plan files ------------------------------------------------------------------------------------

_HEADER_ALIASES = {
    "group": "group",
    "consumergroup": "group",
    "topic": "topic",
    "queue": "queue",
    "queueid": "queue",
    "partition": "queue",
    "offset": "offset",
    "newoffset": "offset",
}


@dataclass(frozen=True)
class PlanFileRow:
    """One wanted offset of a plan file; `line` is its 1-based line number."""

    line: int
    group: str
    topic: str
    queue_id: int
    offset: int


def export_plan(plan: ResetPlan, path: Path | str) -> None:
    """Write the plan as CSV: `group,topic,queue,offset` (+ informational columns, ignored on import)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(EXPORT_COLUMNS)
    for r in plan.rows:
        stamp = "" if r.new_offset_store_timestamp is None else r.new_offset_store_timestamp
        current = "" if r.current_offset is None else r.current_offset
        writer.writerow(
            [r.group, r.topic, r.queue_id, r.new_offset, current, r.min_offset, r.max_offset, stamp]
        )
    try:
        Path(path).write_text(out.getvalue(), encoding="utf-8")
    except OSError as exc:
        raise ResetPlanError(f"cannot write the plan: {exc.strerror or exc}", str(path)) from exc


def read_plan_file(path: Path | str, default_group: str | None = None) -> list[PlanFileRow]:
    """Rows of a plan CSV: a header naming group/topic/queue/offset columns (also queueId, partition,
    newOffset), or headerless `group,topic,queue,offset` — or `topic,queue,offset` (Kafka's
    `topic,partition,offset`) with `default_group`. Blank lines and `#` comments are skipped."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise ResetPlanError(f"cannot read the plan: {exc.strerror or exc}", str(path)) from exc
    except UnicodeDecodeError as exc:
        raise ResetPlanError(f"the plan is not UTF-8 text (byte {exc.start})", str(path)) from exc
    file = str(path)
    lines = [
        (n, cells)
        for n, cells in enumerate(csv.reader(io.StringIO(text)), start=1)
        if cells and any(c.strip() for c in cells) and not cells[0].lstrip().startswith("#")
    ]
    if not lines:
        raise ResetPlanError("the plan has no rows", file)
    first = [c.strip() for c in lines[0][1]]
    if any(c.lower() in ("topic", "offset") for c in first):
        columns = {}
        for i, name in enumerate(first):
            key = _HEADER_ALIASES.get(name.lower())
            if key is not None and key not in columns:
                columns[key] = i
        lines = lines[1:]
    elif len(first) == 3:
        columns = {"topic": 0, "queue": 1, "offset": 2}
    elif len(first) >= 4:
        columns = {"group": 0, "topic": 1, "queue": 2, "offset": 3}
    else:
        raise ResetPlanError(f"line {lines[0][0]}: expected group,topic,queue,offset", file)
    missing = [c for c in ("topic", "queue", "offset") if c not in columns]
    if "group" not in columns and default_group is None:
        missing.insert(0, "group")
    if missing:
        hint = " (or give --group for a topic,queue,offset file)" if missing == ["group"] else ""
        raise ResetPlanError(f"the plan has no {'/'.join(missing)} column{hint}", file)
    rows: list[PlanFileRow] = []
    seen: dict[tuple[str, str, int], int] = {}
    for n, cells in lines:
        rows.append(_plan_file_row(n, cells, columns, default_group, file))
        key = (rows[-1].group, rows[-1].topic, rows[-1].queue_id)
        if key in seen:
            where = f"{key[0]} {key[1]}/{key[2]}"
            raise ResetPlanError(f"line {n}: {where} is already planned on line {seen[key]}", file)
        seen[key] = n
    if not rows:
        raise ResetPlanError("the plan has no rows", file)
    return rows


def _plan_file_row(
    n: int, cells: list[str], columns: dict[str, int], default_group: str | None, file: str
) -> PlanFileRow:
    def cell(name: str) -> str:
        i = columns[name]
        if i >= len(cells):
            raise ResetPlanError(f"line {n}: no {name} value", file)
        return cells[i].strip()

    def number(name: str, high: int) -> int:
        raw = cell(name)
        try:
            value = int(raw)
        except ValueError:
            raise ResetPlanError(f"line {n}: {name} {raw!r} is not a whole number", file) from None
        if not 0 <= value <= high:
            raise ResetPlanError(f"line {n}: {name} {value} is out of range (0..{high})", file)
        return value

    group = cell("group") if "group" in columns else ""
    group = group or (default_group or "")
    topic = cell("topic")
    if not group:
        raise ResetPlanError(f"line {n}: no group", file)
    if not topic:
        raise ResetPlanError(f"line {n}: no topic", file)
    return PlanFileRow(n, group, topic, number("queue", JAVA_INT_MAX), number("offset", JAVA_LONG_MAX))


def plan_from_file(
    store: Store,
    path: Path | str,
    *,
    default_group: str | None = None,
    broker_version: int | None = None,
    allow_new_group: bool = False,
    store_time: StoreTimeOf | None = None,
) -> ResetPlan:
    """A plan from a CSV plan file (see `read_plan_file`), validated against the store as `plan_reset`."""
    wanted = read_plan_file(path, default_group)
    catalog = StoreCatalog.load(store)
    version = store.layout.broker_version(broker_version)
    plan = ResetPlan([], None, version, source=str(path))
    plan.warnings.extend(catalog.notes)
    times = store_time or store_time_of(store)
    queues_of: dict[str, list[int]] = {}
    for group in dict.fromkeys(w.group for w in wanted):
        _check_group(catalog, group, allow_new_group, plan.warnings)
    for w in wanted:
        if w.topic not in queues_of:
            queues_of[w.topic] = _topic_queues(store, catalog, w.topic, plan.warnings)
        try:
            _select_queues(w.topic, queues_of[w.topic], [w.queue_id], catalog)
        except ResetPlanError as exc:
            raise ResetPlanError(f"line {w.line}: {exc.message}", str(path)) from None
        cq = store.consume_queue(w.topic, w.queue_id)
        current = catalog.committed(w.topic, w.group).get(w.queue_id)
        plan.rows.append(_row(w.group, w.topic, w.queue_id, cq, current, w.offset, version, times, plan))
    _add_notes(plan)
    return plan


def plan_offsets_reset(
    store: Store,
    *,
    group: str | None = None,
    topics: Sequence[str] | None = None,
    all_topics: bool = False,
    queues: Iterable[int] | None = None,
    to_time: int | None = None,
    by_duration_ms: int | None = None,
    to_offset: int | None = None,
    shift_by: int | None = None,
    to_earliest: bool = False,
    to_latest: bool = False,
    boundary: str | None = None,
    from_file: Path | str | None = None,
    broker_version: int | None = None,
    allow_new_group: bool = False,
) -> ResetPlan:
    """`mqtool offsets reset`'s options -> `plan_from_file` or `reset_target` + `plan_reset`."""
    if from_file is None:
        target = reset_target(
            to_time=to_time,
            by_duration_ms=by_duration_ms,
            to_offset=to_offset,
            shift_by=shift_by,
            to_earliest=to_earliest,
            to_latest=to_latest,
            boundary=boundary,
        )
        return plan_reset(
            store,
            group or "",
            topics,
            target,
            all_topics=all_topics,
            queues=queues,
            broker_version=broker_version,
            allow_new_group=allow_new_group,
        )
    others = [
        name
        for name, given in (
            ("--topic", bool(topics)),
            ("--all-topics", all_topics),
            ("--queue", queues is not None),
            ("--to-time", to_time is not None),
            ("--boundary", boundary is not None),
            ("--by-duration", by_duration_ms is not None),
            ("--to-offset", to_offset is not None),
            ("--shift-by", shift_by is not None),
            ("--to-earliest", to_earliest),
            ("--to-latest", to_latest),
        )
        if given
    ]
    if others:
        raise ResetPlanError(f"--from-file takes its targets from the file; drop {', '.join(others)}")
    return plan_from_file(
        store, from_file, default_group=group, broker_version=broker_version, allow_new_group=allow_new_group
    )


def parse_queue_ids(values: Iterable[str] | None) -> list[int] | None:
    """`--queue 0 --queue 2,3` -> [0, 2, 3]; None when no queue was given."""
    if not values:
        return None
    out: list[int] = []
    for value in values:
        for part in value.split(","):
            part = part.strip()
            if not part.isascii() or not part.isdigit() or int(part) > JAVA_INT_MAX:
                raise ResetPlanError(f"--queue {part!r} is not a queue id (0, 1, 2 ...)")
            out.append(int(part))
    return out


# --- writing ---------------------------------------------------------------------------------------


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
    config = store.config(CONSUMER_OFFSET)
    changes = plan.changes
    result = ApplyResult(False, config.path, len(changes))
    with write_guard(store, execute, note=note) as may_write:
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
                    "consumerOffset.json changed since the plan was made; plan again",
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


__all__ = [
    "ApplyResult",
    "ConfigNotWritableError",
    "PlanFileRow",
    "PlanOutdatedError",
    "ResetPlan",
    "ResetPlanError",
    "ResetRow",
    "ResetTarget",
    "StoreCatalog",
    "apply_plan",
    "check_writable",
    "export_plan",
    "offset_by_time",
    "parse_queue_ids",
    "plan_from_file",
    "plan_offsets_reset",
    "plan_reset",
    "read_plan_file",
    "reset_target",
]
