"""A reset plan and where each queue's offset goes (mqadmin resetOffsetByTime and friends).

A target is a time (the broker's `getOffsetInQueueByTime`, 5.1.1+ LOWER/UPPER binary search, or the 4.9.x
nearest-message search that picks the ConsumeQueue file by its mtime), a duration before now, an explicit
offset, a shift from the current offset, the earliest or latest offset, or the current offset
(kafka-consumer-groups' --to-current: the committed offset as it is, the latest offset where there is
none). A queue's row holds the current offset, the new one, the queue's min and max offset and the store
time of the message the new offset points at; targets outside [min, max] are clamped with a warning
(--to-current keeps the committed offset as it is, as Kafka's does). Read-only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import tzinfo
from typing import Any, Literal

from formats.errors import MqtoolError, UsageError
from mqtool.timeparse import duration_text, format_time, now_ms, zone_label
from store.queue.consumequeue import Boundary, ConsumeQueue, StoreTimeOf
from store.version import BrokerVersion

JAVA_LONG_MAX = 2**63 - 1

TargetKind = Literal["time", "offset", "shift", "earliest", "latest", "current"]


class ResetPlanError(MqtoolError):
    """A reset that cannot be planned: unknown group/topic/queue, bad options, bad plan file."""


class ResetOptionError(ResetPlanError, UsageError):
    """Reset options that cannot go together, or a bad value: a usage error (exit 2)."""


# --- targets --------------------------------------------------------------------------------------


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
        if self.kind == "current":
            return "to the current offset (the latest where none is committed)"
        return "to the earliest offset" if self.kind == "earliest" else "to the latest offset"


def reset_target(
    *,
    to_time: int | None = None,
    by_duration_ms: int | None = None,
    to_offset: int | None = None,
    shift_by: int | None = None,
    to_earliest: bool = False,
    to_latest: bool = False,
    to_current: bool = False,
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
            ("--to-current", to_current),
        )
        if present
    ]
    if len(given) != 1:
        which = "none was given" if not given else f"got {', '.join(given)}"
        raise ResetOptionError(
            "give exactly one of --to-time, --by-duration, --to-offset, --shift-by, --to-earliest, "
            f"--to-latest, --to-current, --from-file ({which})"
        )
    if boundary is not None:
        boundary = boundary.lower()
        if boundary not in ("lower", "upper"):
            raise ResetOptionError(f"--boundary must be lower or upper, not {boundary!r}")
        if to_time is None and by_duration_ms is None:
            raise ResetOptionError("--boundary only applies to --to-time and --by-duration")
    if to_time is not None:
        return ResetTarget("time", to_time, boundary)  # type: ignore[arg-type]
    if by_duration_ms is not None:
        if by_duration_ms < 0:
            raise ResetOptionError("--by-duration must not be negative")
        base = now if now is not None else now_ms()
        return ResetTarget("time", base - by_duration_ms, boundary, by_duration_ms)  # type: ignore[arg-type]
    if to_offset is not None:
        if not 0 <= to_offset <= JAVA_LONG_MAX:
            raise ResetOptionError(f"--to-offset must be between 0 and {JAVA_LONG_MAX}, not {to_offset}")
        return ResetTarget("offset", to_offset)
    if shift_by is not None:
        return ResetTarget("shift", shift_by)
    if to_current:
        return ResetTarget("current")
    return ResetTarget("earliest" if to_earliest else "latest")


# --- plans ----------------------------------------------------------------------------------------


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


# --- one queue ------------------------------------------------------------------------------------


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


def target_offset(
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
    if target.kind == "current" and current is not None:
        return current
    return cq.max_offset  # latest; --to-current where no offset is committed (Kafka's log end offset)


def reset_row(
    group: str,
    topic: str,
    queue_id: int,
    cq: ConsumeQueue,
    current: int | None,
    requested: int,
    version: BrokerVersion,
    store_time: StoreTimeOf,
    plan: ResetPlan,
    *,
    clamp: bool = True,
) -> ResetRow:
    """The row of one queue; `requested` clamped into [min, max] with a warning unless `clamp` is off
    (--to-current: kafka-consumer-groups keeps a committed offset as it is, out of range or not)."""
    low, high = _queue_min(cq, version), cq.max_offset
    new = min(max(requested, low), high) if clamp else requested
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
