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

from formats.batchconsumequeue import PROPERTY_INNER_BASE, PROPERTY_INNER_NUM
from formats.errors import MqtoolError
from formats.innerbatch import count_inner_messages, is_inner_batch
from store import checks
from store.checks import ProblemList
from store.checks.batchcq import check_batch_consume_queue
from store.storecheck import QueueCheck, check_cq_files, rel_path
from store.storedir import Store


def _java_number(text: str | None) -> int:
    """Long.parseLong / Short.parseShort of a property, -1 when absent or not a number."""
    try:
        return int(text) if text is not None and text.strip("+-").isdigit() else -1
    except ValueError:
        return -1


def _dispatch_facts(store: Store, units: np.ndarray, commitlog_min: int, valid_end: int) -> tuple[Any, ...]:
    """(INNER_NUM, INNER_BASE, inner messages in the body) of each unit's record; -1 where not known."""
    n = len(units)
    inner_num, inner_base, body_count = (np.full(n, -1, dtype=np.int64) for _ in range(3))
    for i, (phy, size) in enumerate(units[["phyOffset", "size"]].tolist()):
        if not commitlog_min <= phy < valid_end:
            continue
        try:
            msg = store.commitlog.read_message_at(phy, size)
        except MqtoolError:
            continue  # the check reports the unit that points at no record
        props = msg.properties
        inner_num[i] = _java_number(props.get(PROPERTY_INNER_NUM))
        inner_base[i] = _java_number(props.get(PROPERTY_INNER_BASE))
        if is_inner_batch(msg.sys_flag):
            counted = count_inner_messages(msg.body)
            body_count[i] = -1 if counted is None else counted
    return inner_num, inner_base, body_count


def check_batch_queue_files(
    store: Store, records: Any, problems: ProblemList, *, commitlog_min: int, valid_end: int
) -> QueueCheck:
    """Every BatchConsumeQueue: units against `records`, base offsets, file tail and dirty files."""
    found = QueueCheck()
    try:
        queue_list = list(store.batch_consume_queues.queues())
    except MqtoolError as exc:
        problems.add("bcq_file", rel_path(store, exc.file) or "batchconsumequeue", None, exc.message)
        return found
    for topic, queue_id in queue_list:
        try:
            queue = store.batch_consume_queue(topic, queue_id)
            units = queue.units()
            min_offset, max_offset = queue.min_offset, queue.max_offset
        except MqtoolError as exc:
            problems.add("bcq_file", rel_path(store, exc.file), exc.offset, exc.message)
            continue
        inner_num, inner_base, body_count = _dispatch_facts(store, units, commitlog_min, valid_end)
        found.hits.append(
            check_batch_consume_queue(
                units,
                records,
                problems,
                topic=topic,
                queue_id=queue_id,
                inner_num=inner_num,
                inner_base=inner_base,
                body_count=body_count,
                file_size=queue.file_size,
                commitlog_min=commitlog_min,
                valid_end=valid_end,
            )
        )
        found.units += len(units)
        last = queue.last_unit
        last_end = last.phy_offset + last.size if last is not None else 0
        found.queues[(topic, queue_id)] = checks.QueueFacts(max(min_offset, 0), max_offset, last_end)
        check_cq_files(store, queue, topic, queue_id, problems)
    return found


__all__ = ["check_batch_queue_files"]
