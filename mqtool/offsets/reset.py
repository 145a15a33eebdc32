"""The offset planner (`mqtool offsets reset`): where a consumer group's offsets would go, and writing them.

A plan is computed read-only from consumerOffset.json, topics.json, subscriptionGroup.json and the
consume queues: per group/topic/queue the current offset, the new one, the queue's min and max offset
and the store time of the message the new offset points at. This module picks the group, topics and
queues and turns `mqtool offsets reset`'s options or a CSV plan file into a plan; where each queue's
offset goes is `mqtool.offsets.plan`, the plan file `mqtool.offsets.plan_file`, writing consumerOffset.json
(`apply_plan`) `mqtool.offsets.apply`. A reset to 0 is kept (mqadmin's single-queue path skips it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from formats.config.base import JAVA_INT_MAX
from formats.config.metadata import SubscriptionGroupTable, TopicConfigTable
from formats.config.offsets import ConsumerOffsetTable
from formats.errors import MqtoolError
from formats.names import LMQ_QUEUE_ID, escaped_name
from mqtool.offsets.plan import (
    ResetOptionError,
    ResetPlan,
    ResetPlanError,
    ResetTarget,
    forward_warnings,
    reset_row,
    reset_target,
    target_offset,
)
from mqtool.offsets.plan_file import read_plan_file
from mqtool.offsets.progress import is_system_group, store_time_of
from mqtool.safety import refuse_unsupported_layout
from store.config.configfile import LoadedConfig
from store.queue.consumequeue import StoreTimeOf
from store.queue.lmq import is_lmq
from store.storedir import Store

# --- config tables --------------------------------------------------------------------------------


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
        offsets, offsets_loaded = model(store.layout.consumer_offset_file)
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


# --- plans ----------------------------------------------------------------------------------------


def plan_reset(
    store: Store,
    group: str | None,
    topics: Sequence[str] | None,
    target: ResetTarget,
    *,
    all_topics: bool = False,
    all_groups: bool = False,
    queues: Iterable[int] | None = None,
    broker_version: int | None = None,
    allow_new_group: bool = False,
    cq_file_mtimes: Mapping[str, int] | None = None,
    store_time: StoreTimeOf | None = None,
) -> ResetPlan:
    """Plan moving `group`'s offsets on `topics` (or all topics it has offsets for) to `target`.

    A topic may name its queues as kafka-consumer-groups does (`TopicTest:0,1`); `queues` limits the
    queues of every topic instead (each must be a queue of every topic). `all_groups`: every group with
    committed offsets on the topics (with `all_topics`, on any topic), the broker's built-in groups left
    out; a group is planned only on the topics it has offsets for. `cq_file_mtimes` (path under
    consumequeue/ -> epoch ms, like store-49a's `cqFileLastModified`) replaces the files' own mtimes in
    the 4.9.x time search. Read-only.
    """
    refuse_unsupported_layout(store, "config")
    catalog = StoreCatalog.load(store)
    version = store.layout.broker_version(broker_version)
    plan = ResetPlan([], target, version)
    plan.warnings.extend(catalog.notes)
    if target.kind == "time" and version.major == 4 and target.boundary is not None:
        raise ResetPlanError(
            "--boundary needs the 5.1.1+ time search; the 4.9.x broker returns the nearest message "
            "(use --broker-version 5 if the broker is 5.1.1 or later)"
        )
    by_topic = parse_topic_queues(topics)
    if queues is not None and any(q is not None for q in by_topic.values()):
        raise ResetOptionError("--queue and --topic TOPIC:QUEUES exclude each other")
    wanted = None if queues is None else list(dict.fromkeys(queues))
    times = store_time or store_time_of(store)
    for g in _groups_for(catalog, group, all_groups, list(by_topic), all_topics):
        check_group(catalog, g, allow_new_group, plan.warnings)
        topic_list = _topics_for(catalog, g, list(by_topic), all_topics)
        if all_groups:  # never give a group offsets on a topic it does not consume
            topic_list = [t for t in topic_list if catalog.committed(t, g)]
        for topic in topic_list:
            queue_ids = topic_queues(store, catalog, topic, plan.warnings)
            chosen = by_topic.get(topic) or wanted
            selected = queue_ids if chosen is None else _select_queues(topic, queue_ids, chosen, catalog)
            _plan_topic(store, plan, g, topic, selected, catalog, version, times, cq_file_mtimes)
    plan.warnings.extend(forward_warnings(plan))
    _add_notes(plan)
    _pop_notes(store, plan)
    return plan


def _plan_topic(
    store: Store,
    plan: ResetPlan,
    group: str,
    topic: str,
    queue_ids: list[int],
    catalog: StoreCatalog,
    version,
    times: StoreTimeOf,
    cq_file_mtimes: Mapping[str, int] | None,
) -> None:
    """The rows of one group's queues of one topic."""
    target = plan.target
    assert target is not None
    committed = catalog.committed(topic, group)
    if not committed:
        plan.warnings.append(
            f"group {group} has no committed offsets on {topic} yet: the reset creates them "
            "(as the broker's server-side reset does)"
        )
    for queue_id in queue_ids:
        cq = store.queue(topic, queue_id)
        current = committed.get(queue_id)
        requested = target_offset(cq, target, current, version, times, cq_file_mtimes)
        if requested is None:
            plan.warnings.append(f"{topic}/{queue_id}: no committed offset to shift from: left out")
            continue
        row = reset_row(
            group,
            topic,
            queue_id,
            cq,
            current,
            requested,
            version,
            times,
            plan,
            clamp=target.kind != "current",
        )
        plan.rows.append(row)


def _groups_for(
    catalog: StoreCatalog, group: str | None, all_groups: bool, topics: Sequence[str], all_topics: bool
) -> list[str]:
    """The group asked for, or with `all_groups` every group with committed offsets on `topics` (on any
    topic with `all_topics`), less the broker's built-in groups."""
    if all_groups and group:
        raise ResetOptionError("give --group or --all-groups, not both")
    if not all_groups:
        if not group:
            raise ResetOptionError("--group (or --all-groups) is required")
        return [group]
    wanted = set(topics)
    found = sorted(
        {
            g
            for t, g, _, _ in catalog.offsets.entries()
            if not is_system_group(g) and (all_topics or t in wanted)
        }
    )
    if not found:
        where = "any topic" if all_topics else ", ".join(topics) or "the topics given"
        raise ResetPlanError(f"no consumer group has committed offsets on {where}")
    return found


def check_group(catalog: StoreCatalog, group: str, allow_new_group: bool, warnings: list[str]) -> None:
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


def _topics_for(catalog: StoreCatalog, group: str, topics: Sequence[str], all_topics: bool) -> list[str]:
    if all_topics and topics:
        raise ResetOptionError("give --topic or --all-topics, not both")
    if all_topics:
        found = sorted({t for t, g, _, _ in catalog.offsets.entries() if g == group})
        if not found:
            raise ResetPlanError(
                f"group {group} has no committed offsets, so it has no topics to reset: "
                "name them with --topic"
            )
        return found
    if not topics:
        raise ResetOptionError("--topic (or --all-topics) is required")
    return list(dict.fromkeys(topics))


def topic_queues(store: Store, catalog: StoreCatalog, topic: str, warnings: list[str]) -> list[int]:
    """0 .. readQueueNums-1 of the topic config (as the broker's reset), else the queue directories of
    the topic's queue type (consumequeue/ or batchconsumequeue/)."""
    if store.layout.lmq.enable_lmq and is_lmq(topic):
        return [LMQ_QUEUE_ID]  # LmqTopicConfigManager.selectTopicConfig: one queue, never in topics.json
    config = catalog.topic_config(topic)
    if config is not None:
        if config.read_queue_nums <= 0:
            warnings.append(f"topic {topic} has readQueueNums {config.read_queue_nums}: no queue to reset")
        return list(range(max(0, config.read_queue_nums)))
    ids = store.queue_ids(topic)
    where = "batchconsumequeue" if store.queue_type(topic) == "BatchCQ" else "consumequeue"
    if ids:
        warnings.append(
            f"topic {topic} is not in topics.json (the broker's reset would answer TOPIC_NOT_EXIST unless it "
            f"creates the topic at start-up); using its {where} directories: queues {_ranges(ids)}"
        )
        return ids
    raise ResetPlanError(
        f"topic {escaped_name(topic)} does not exist: not in topics.json and no {where}/<topic>"
    )


def _select_queues(
    topic: str, known_queues: list[int], wanted: list[int], catalog: StoreCatalog
) -> list[int]:
    known = set(known_queues)
    for q in wanted:
        if q not in known:
            config = catalog.topic_config(topic)
            why = (
                f"readQueueNums is {config.read_queue_nums}"
                if config is not None
                else f"its queue directories are {_ranges(known_queues) or 'none'}"
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


def _pop_notes(store: Store, plan: ResetPlan) -> None:
    """What a reset leaves of a POP group's popped, unacked messages: the broker's server-side reset clears
    only its in-memory in-flight counter (PopInflightMessageCounter.clearInFlightMessageNum,
    AdminBrokerProcessor.resetOffsetInner at rocketmq-all-5.3.3 broker/.../AdminBrokerProcessor.java:2100);
    the checkpoints stay in the revive topic and PopReviveService still revives those messages into the
    POP retry topic when their invisible time passes. An orderly pop has no checkpoint and no retry copy:
    consumerOrderInfo.json keeps its unacked offsets, and until they are acked or visible again the queue's
    other orderly pops are blocked (ConsumerOrderInfoManager.checkBlock -> OrderInfo.needBlock)."""
    from formats.pop.bodies import PopCheckPoint
    from mqtool.timeparse import now_ms
    from store.pop.revive import pop_state, revive_targets

    if not plan.rows:
        return
    wanted = {(r.group, r.topic, r.queue_id) for r in plan.rows}
    held: dict[tuple[str, str, bool], list] = {}
    for m in pop_state(store, now=now_ms()).messages:
        if m.state in ("in-flight", "overdue") and (m.group, m.topic, m.queue_id) in wanted:
            held.setdefault((m.group, m.topic, m.orderly), []).append(m)
    for (group, topic, orderly), messages in sorted(held.items()):
        if orderly:
            plan.notes.append(
                f"{group} pops {topic} orderly: {len(messages)} popped message(s) not acked yet stay in "
                "consumerOrderInfo.json; the reset does not clear them, and until they are acked or visible "
                f"again the queue's other orderly pops are blocked (mqtool pop list --group {group})"
            )
            continue
        retry = " or ".join(revive_targets(PopCheckPoint(topic=topic, cid=group)))
        plan.notes.append(
            f"{group} consumes {topic} by POP: {len(messages)} popped message(s) not acked yet stay in the "
            f"revive topic; the reset does not take them back, and the broker still revives each into "
            f"{retry} when its invisible time passes (mqtool pop list --group {group})"
        )


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


# --- options and plan files -----------------------------------------------------------------------


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
    refuse_unsupported_layout(store, "config")
    wanted = read_plan_file(path, default_group)
    catalog = StoreCatalog.load(store)
    version = store.layout.broker_version(broker_version)
    plan = ResetPlan([], None, version, source=str(path))
    plan.warnings.extend(catalog.notes)
    times = store_time or store_time_of(store)
    queues_of: dict[str, list[int]] = {}
    for group in dict.fromkeys(w.group for w in wanted):
        check_group(catalog, group, allow_new_group, plan.warnings)
    for w in wanted:
        if w.topic not in queues_of:
            queues_of[w.topic] = topic_queues(store, catalog, w.topic, plan.warnings)
        try:
            _select_queues(w.topic, queues_of[w.topic], [w.queue_id], catalog)
        except ResetPlanError as exc:
            raise ResetPlanError(f"line {w.line}: {exc.message}", str(path)) from None
        cq = store.queue(w.topic, w.queue_id)
        current = catalog.committed(w.topic, w.group).get(w.queue_id)
        plan.rows.append(reset_row(w.group, w.topic, w.queue_id, cq, current, w.offset, version, times, plan))
    plan.warnings.extend(forward_warnings(plan))
    _add_notes(plan)
    _pop_notes(store, plan)
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
    to_current: bool = False,
    all_groups: bool = False,
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
            to_current=to_current,
            boundary=boundary,
        )
        return plan_reset(
            store,
            group,
            topics,
            target,
            all_topics=all_topics,
            all_groups=all_groups,
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
            ("--to-current", to_current),
            ("--all-groups", all_groups),
        )
        if given
    ]
    if others:
        raise ResetOptionError(f"--from-file takes its targets from the file; drop {', '.join(others)}")
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
                raise ResetOptionError(f"--queue {part!r} is not a queue id (0, 1, 2 ...)")
            out.append(int(part))
    return out


def parse_topic_queues(values: Iterable[str] | None) -> dict[str, list[int] | None]:
    """`--topic T --topic U:0,1` -> {T: None, U: [0, 1]} (kafka-consumer-groups' TOPIC:PARTITIONS form;
    None: every queue). A RocketMQ topic name has no `:` (TopicValidator's `^[%|a-zA-Z0-9_-]+$`,
    common/src/main/java/org/apache/rocketmq/common/topic/TopicValidator.java:68-87 of 5.3.3), so the last
    `:` always starts the queue ids."""
    out: dict[str, list[int] | None] = {}
    for value in values or ():
        if ":" not in value:
            out[value] = None
            continue
        topic, _, listed = value.rpartition(":")
        if not topic:
            raise ResetOptionError(f"--topic {value!r}: no topic before the ':'")
        queues = parse_queue_ids([listed]) or []
        if topic in out and out[topic] is None:
            continue  # every queue was asked for already
        out[topic] = list(dict.fromkeys([*(out.get(topic) or []), *queues]))
    return out


__all__ = [
    "StoreCatalog",
    "check_group",
    "parse_queue_ids",
    "parse_topic_queues",
    "plan_from_file",
    "plan_offsets_reset",
    "plan_reset",
    "topic_queues",
]
