"""Consumer offsets merged across replica stores (`mqtool offsets merge A B ... --into A`).

The operators' fix for a master that restarted after its slave served (apache/rocketmq #1094, #1440: the
slave's offset sync wrote older offsets over the master's) is to take, per group/topic/queue, the largest
committed offset any replica holds. This module plans that: for every (group, topic, queue) committed on
any of the stores, the offset on each side, the one chosen (the max, or the side `prefer` names) and why,
then the row `mqtool.offsets.plan.reset_row` makes of it on the store written: clamped into its queue's
[min, max] as the broker serves an offset out of range (DefaultMessageStore.getMessage, 5.3.3
store/src/main/java/org/apache/rocketmq/store/DefaultMessageStore.java:831-839: below the min offset
OFFSET_TOO_SMALL -> the min, above the max OFFSET_OVERFLOW_BADLY -> the max). Writing is
`mqtool.offsets.apply.apply_plan`, with every guard of `offsets reset`. Read-only here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from formats.errors import UsageError
from formats.names import escaped_name
from mqtool.offsets.plan import ResetPlan, ResetRow, reset_row
from mqtool.offsets.progress import is_system_group, store_time_of
from mqtool.offsets.reset import StoreCatalog
from mqtool.safety import refuse_unsupported_layout
from store.storedir import Store


class MergeOptionError(UsageError):
    """Merge options that do not fit the stores given (exit 2)."""


@dataclass
class MergeRow:
    """One queue: the committed offset on each side (None: not committed there), the side chosen and why,
    and the row written into the target store (`reset`: current offset there, new offset, clamping)."""

    sides: list[int | None]
    chosen_side: int  # index into the plan's stores
    why: str
    reset: ResetRow

    def to_dict(self, labels: Sequence[str]) -> dict[str, Any]:
        r = self.reset
        return {
            "group": r.group,
            "topic": r.topic,
            "queueId": r.queue_id,
            "offsets": dict(zip(labels, self.sides, strict=True)),
            "chosenFrom": labels[self.chosen_side],
            "chosenOffset": self.sides[self.chosen_side],
            "why": self.why,
            "currentOffset": r.current_offset,
            "newOffset": r.new_offset,
            "minOffset": r.min_offset,
            "maxOffset": r.max_offset,
            "clampedTo": r.clamped_to,
            "changed": r.changed,
        }


@dataclass
class MergePlan:
    """The merge's rows; `reset` is the same rows as the plan `apply_plan` writes into stores[into]."""

    labels: list[str]  # each store as given on the command line
    into: int
    prefer: str  # "max" or a label
    rows: list[MergeRow]
    reset: ResetPlan
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def changes(self) -> list[MergeRow]:
        return [r for r in self.rows if r.reset.changed]

    def to_json(self) -> list[dict[str, Any]]:
        return [r.to_dict(self.labels) for r in self.rows]


def _choose(sides: list[int | None], prefer: int | None, into: int) -> tuple[int, str] | None:
    """(side, why): the preferred side where it has an offset, else the largest (ties: the target store
    first, then the order given)."""
    if prefer is not None and sides[prefer] is not None:
        return prefer, "preferred side"
    present = [(i, o) for i, o in enumerate(sides) if o is not None]
    if not present:
        return None
    best = max(o for _, o in present)
    holders = [i for i, o in present if o == best]
    side = into if into in holders else holders[0]
    if len(present) == 1:
        why = "only side with an offset"
    elif len(holders) == len(present):
        why = "same on every side"
    else:
        why = "max"
    if prefer is not None:
        why += " (the preferred side has none)"
    return side, why


def plan_offsets_merge(
    stores: Sequence[Store],
    labels: Sequence[str],
    *,
    into: int = 0,
    prefer: str = "max",
    groups: Sequence[str] | None = None,
    include_system: bool = False,
) -> MergePlan:
    """Plan writing into `stores[into]` the per-queue max (or `prefer`'s) committed offset of `stores`.

    `prefer`: "max" or one of `labels`. `groups`: only these groups. The broker's built-in groups are left
    out unless `include_system`. A queue whose topic the target store has neither in topics.json nor as a
    queue directory is left out with a warning (its broker would not serve it).
    """
    if len(stores) < 2:
        raise MergeOptionError("offsets merge needs two or more stores")
    if prefer != "max" and prefer not in labels:
        raise MergeOptionError(f"--prefer must be max or one of the stores given ({', '.join(labels)})")
    preferred = None if prefer == "max" else list(labels).index(prefer)
    for store in stores:
        refuse_unsupported_layout(store, "config")
    catalogs = [StoreCatalog.load(s) for s in stores]
    target, catalog = stores[into], catalogs[into]
    version = target.layout.broker_version(None)
    reset = ResetPlan([], None, version, source="offsets merge")
    plan = MergePlan(list(labels), into, prefer, [], reset)
    for label, c in zip(labels, catalogs, strict=True):
        plan.warnings.extend(f"{label}: {n}" for n in c.notes)
    wanted = set(groups) if groups else None
    keys: set[tuple[str, str, int]] = set()
    for c in catalogs:
        for topic, group, queue_id, _ in c.offsets.entries():
            if wanted is not None and group not in wanted:
                continue
            if not include_system and wanted is None and is_system_group(group):
                continue
            keys.add((group, topic, queue_id))
    times = store_time_of(target)
    missing_topics: set[str] = set()
    for group, topic, queue_id in sorted(keys):
        sides = [c.committed(topic, group).get(queue_id) for c in catalogs]
        choice = _choose(sides, preferred, into)
        if choice is None:
            continue
        if catalog.topic_config(topic) is None and queue_id not in target.queue_ids(topic):
            missing_topics.add(topic)
            continue
        side, why = choice
        chosen = sides[side]
        assert chosen is not None
        row = reset_row(group, topic, queue_id, target.queue(topic, queue_id), sides[into], chosen, version,
                        times, reset)  # fmt: skip
        reset.rows.append(row)
        plan.rows.append(MergeRow(sides, side, why, row))
    for topic in sorted(missing_topics):
        plan.warnings.append(
            f"{labels[into]}: topic {escaped_name(topic)} is neither in topics.json nor a queue directory "
            "there: its offsets are left out (the broker would not serve them)"
        )
    plan.warnings.extend(reset.warnings)
    if any(r.reset.clamped_to for r in plan.rows):
        plan.notes.append(
            f"offsets outside {labels[into]}'s [min, max] are clamped to where its broker would serve them "
            "(DefaultMessageStore.getMessage: OFFSET_TOO_SMALL -> min, OFFSET_OVERFLOW_BADLY -> max)"
        )
    return plan
