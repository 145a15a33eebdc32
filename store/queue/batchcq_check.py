"""`verify`'s BatchCQ part: every BatchConsumeQueue of a store against the commitlog records.

Feeds `store.checks.batchcq` from a `Store`: each queue's units, and per unit what the dispatch reads
from its record (`INNER_NUM`, `INNER_BASE`) and how many messages its inner-batch body holds (one
record decode per unit: a BatchCQ unit stands for a whole batch). The file tails and dirty files are
judged as for ConsumeQueues. Returns the record rows the units hit and each queue's facts, so the
dispatch coverage check counts BatchCQ records as dispatched.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from formats.batchconsumequeue import BATCH_CQ_DIR, PROPERTY_INNER_NUM
from formats.errors import MqtoolError
from formats.message.innerbatch import count_inner_messages, is_inner_batch
from store.checks.batchcq import check_batch_consume_queue, check_batch_offset_gaps
from store.checks.consumequeue import QueueFacts
from store.checks.problems import ProblemList
from store.queue.batchconsumequeue import configured_batch_cq_topics
from store.queue.batchcq_build import INVALID, batch_fields
from store.storecheck import QueueCheck, check_cq_files, rel_path
from store.storedir import Store


def dispatch_facts(store: Store, units: np.ndarray, commitlog_min: int, valid_end: int) -> tuple[Any, ...]:
    """Per unit, from its record: the base offset and batch size the dispatch takes (-2 where the broker's
    check refuses the batch properties, -1 where the record is not read), INNER_NUM (-1: none) and the
    messages its inner-batch body holds (-1: not an inner batch, or unreadable)."""
    n = len(units)
    want_base, want_batch, inner_num, body_count = (np.full(n, -1, dtype=np.int64) for _ in range(4))
    for i, (phy, size) in enumerate(units[["phyOffset", "size"]].tolist()):
        if not commitlog_min <= phy < valid_end:
            continue
        try:
            msg = store.commitlog.read_message_at(phy, size)
        except MqtoolError:
            continue  # the check reports the unit that points at no record
        fields = batch_fields(msg.properties, msg.queue_offset)
        want_base[i], want_batch[i] = (-2, -2) if fields == INVALID else fields
        num = msg.properties.get(PROPERTY_INNER_NUM)
        inner_num[i] = want_batch[i] if num is not None and fields != INVALID else -1
        if is_inner_batch(msg.sys_flag):
            counted = count_inner_messages(msg.body)
            body_count[i] = -1 if counted is None else counted
    return want_base, want_batch, inner_num, body_count


def check_queue_types(store: Store, problems: ProblemList) -> None:
    """Queue directories of the other kind than topics.json gives the topic: the broker's load throws
    (`ConsumeQueueStore.queueTypeShouldBe`) and the broker does not start."""
    configured = configured_batch_cq_topics(store)
    if configured is None:
        return  # topics.json unreadable: reported by the config checks
    batch = store.batch_consume_queues
    for topic in batch.topics():
        if topic not in configured and batch.queue_ids(topic):
            problems.add(
                "bcq_queue_type",
                f"{BATCH_CQ_DIR}/{topic}",
                None,
                f"{topic}: BatchConsumeQueue directories, but topics.json does not give the topic "
                "queue.type=BatchCQ: the broker's load throws and it does not start",
            )
    for topic in sorted(configured & set(store.consume_queues.topics())):
        if store.consume_queues.queue_ids(topic):
            problems.add(
                "bcq_queue_type",
                f"consumequeue/{topic}",
                None,
                f"{topic}: ConsumeQueue directories, but topics.json gives the topic queue.type=BatchCQ: "
                "the broker's load throws and it does not start",
            )


def check_batch_queue_files(
    store: Store,
    records: Any,
    problems: ProblemList,
    *,
    commitlog_min: int,
    valid_end: int,
    outside_only: bool = False,
) -> QueueCheck:
    """Every BatchConsumeQueue: units against `records`, base offsets, file tail and dirty files. With
    `outside_only` only the units outside [commitlog_min, valid_end) are judged against records (the
    audit's driver: its executors judge the others)."""
    found = QueueCheck()
    try:
        queue_list = list(store.batch_consume_queues.queues())
        check_queue_types(store, problems)
    except MqtoolError as exc:
        problems.add("bcq_file", rel_path(store, exc.file) or "batchconsumequeue", None, exc.message)
        return found
    for topic, queue_id in queue_list:
        try:
            queue = store.batch_consume_queue(topic, queue_id)
            size = queue.file_size
            units = queue.units()
            min_offset, max_offset = queue.min_offset, queue.max_offset
        except MqtoolError as exc:
            problems.add("bcq_file", rel_path(store, exc.file), exc.offset, exc.message)
            continue
        checked = units
        if outside_only:
            phy = units["phyOffset"]
            checked = units[(phy < commitlog_min) | (phy >= valid_end)]
            # the whole queue: the executors judged its units in parts
            check_batch_offset_gaps(units, problems, topic=topic, queue_id=queue_id, file_size=size)
        facts = dispatch_facts(store, checked, commitlog_min, valid_end)
        want_base, want_batch, inner_num, body_count = facts
        found.hits.append(
            check_batch_consume_queue(
                checked,
                records,
                problems,
                topic=topic,
                queue_id=queue_id,
                want_base=want_base,
                want_batch=want_batch,
                inner_num=inner_num,
                body_count=body_count,
                file_size=queue.file_size,
                commitlog_min=commitlog_min,
                valid_end=valid_end,
                offset_gaps=not outside_only,
            )
        )
        found.units += len(units)
        last = queue.last_unit
        last_end = last.phy_offset + last.size if last is not None else 0
        found.queues[(topic, queue_id)] = QueueFacts(max(min_offset, 0), max_offset, last_end)
        check_cq_files(store, queue, topic, queue_id, problems)
    return found


__all__ = ["check_batch_queue_files", "dispatch_facts"]
