"""Cloning one consumer group's offsets onto another (`mqtool offsets clone`), as a reset plan.

The broker's own clone (`mqadmin cloneGroupOffset` -> AdminBrokerProcessor.cloneGroupOffset,
broker/src/main/java/org/apache/rocketmq/broker/processor/AdminBrokerProcessor.java:2381-2421 of
rocketmq-all-5.3.3, and ConsumerOffsetManager.cloneOffset, broker/.../offset/ConsumerOffsetManager.java:
368-373) copies the source group's committed `topic@src` table to `topic@dest` as it is: no clamping into
the queue's [min, max], topics without a topic config skipped. Here a clone is a reset plan whose target
offset of each queue is the source group's committed offset there, so it is written by the reset's applier
(`mqtool.offsets.apply.apply_plan`) under every guard a reset has.

Where this differs from the broker, on purpose and said in the plan: the source group's retry topics
(`%RETRY%<src>`, its POP retry topics) are left out - the destination group consumes its own retry topic,
never the source's; queues the destination has offsets for and the source has none keep them (the broker's
`cloneOffset` replaces the whole `topic@dest` table, which forgets them); queue ids past the topic's
readQueueNums are left out (no consumer pulls them: PullMessageProcessor.java:370). With no `--topic` the
broker clones nothing at all (it passes the blank request topic on to `cloneOffset`); here every topic the
source group has offsets for is cloned. Read-only: the plan only.
"""

from __future__ import annotations

from collections.abc import Sequence

from formats.errors import MqtoolError
from mqtool.offsets.plan import ResetOptionError, ResetPlan, ResetPlanError, forward_warnings, reset_row
from mqtool.offsets.progress import is_retry_topic, store_time_of
from mqtool.offsets.reset import StoreCatalog, check_group, parse_topic_queues, topic_queues
from mqtool.safety import refuse_unsupported_layout
from store.queue.consumequeue import StoreTimeOf
from store.storedir import Store


def plan_clone(
    store: Store,
    from_group: str,
    to_group: str,
    topics: Sequence[str] | None = None,
    *,
    allow_new_group: bool = False,
    broker_version: int | None = None,
    store_time: StoreTimeOf | None = None,
) -> ResetPlan:
    """Plan giving `to_group` the committed offsets of `from_group`, on `topics` (`T` or `T:0,1`) or on
    every topic `from_group` has offsets for. Each row: the destination's current offset and the
    source's, copied as it is (a warning when it lies outside the queue's [min, max])."""
    if not from_group or not to_group:
        raise ResetOptionError("--from-group and --to-group are both required")
    if from_group == to_group:
        raise ResetOptionError(f"--from-group and --to-group are the same group ({from_group})")
    refuse_unsupported_layout(store, "config")
    catalog = StoreCatalog.load(store)
    version = store.layout.broker_version(broker_version)
    plan = ResetPlan([], None, version, source=f"group {from_group}")
    plan.warnings.extend(catalog.notes)
    source_topics = sorted({t for t, g, _, _ in catalog.offsets.entries() if g == from_group})
    if not source_topics:
        raise ResetPlanError(f"group {from_group!r} has no committed offsets: nothing to clone")
    check_group(catalog, to_group, allow_new_group, plan.warnings)
    by_topic = parse_topic_queues(topics)
    if by_topic:
        for topic in by_topic:
            if topic not in source_topics:
                raise ResetPlanError(f"group {from_group} has no committed offsets on topic {topic}")
    chosen = list(by_topic) or source_topics
    retry = [t for t in chosen if is_retry_topic(t)]
    if retry:
        plan.notes.append(
            f"left out {', '.join(retry)}: a retry topic belongs to its group ({to_group} consumes "
            f"%RETRY%{to_group}, never {from_group}'s)"
        )
    times = store_time or store_time_of(store)
    for topic in chosen:
        if is_retry_topic(topic):
            continue
        _plan_topic(store, catalog, plan, from_group, to_group, topic, by_topic.get(topic), version, times)
    plan.warnings.extend(forward_warnings(plan))
    return plan


def _plan_topic(
    store: Store,
    catalog: StoreCatalog,
    plan: ResetPlan,
    from_group: str,
    to_group: str,
    topic: str,
    wanted: list[int] | None,
    version,
    times: StoreTimeOf,
) -> None:
    try:
        known = set(topic_queues(store, catalog, topic, plan.warnings))
    except MqtoolError as exc:
        plan.warnings.append(f"{exc.message}: left out (the broker's clone skips a topic without a config)")
        return
    source = catalog.committed(topic, from_group)
    queue_ids = sorted(source) if wanted is None else wanted
    for queue_id in queue_ids:
        if queue_id not in source:
            raise ResetPlanError(f"group {from_group} has no committed offset on {topic}/{queue_id}")
        if queue_id not in known:
            plan.warnings.append(
                f"{topic}/{queue_id}: {from_group}'s offset is on a queue past the topic's queues: left out "
                "(mqtool offsets prune lists such rows)"
            )
            continue
        cq = store.queue(topic, queue_id)
        current = catalog.committed(topic, to_group).get(queue_id)
        row = reset_row(
            to_group, topic, queue_id, cq, current, source[queue_id], version, times, plan, clamp=False
        )
        if not row.min_offset <= row.new_offset <= row.max_offset:
            plan.warnings.append(
                f"{topic}/{queue_id}: {from_group}'s offset {row.new_offset} is outside the queue's "
                f"[{row.min_offset}, {row.max_offset}]: copied as it is (as the broker's cloneOffset does)"
            )
        plan.rows.append(row)
    kept = sorted(set(catalog.committed(topic, to_group)) - set(source))
    if wanted is None and kept:
        plan.notes.append(
            f"{to_group} keeps its offsets on {topic} queue(s) {', '.join(map(str, kept))}, where "
            f"{from_group} has none (the broker's cloneOffset would drop them)"
        )


__all__ = ["plan_clone"]
