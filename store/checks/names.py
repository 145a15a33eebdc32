"""Names the broker's dispatch turns into paths: record topics and the LMQ queues records name.

The dispatch names a record's ConsumeQueue directory after its topic (`consumequeue/<topic>/<queueId>`,
rocketmq-all-5.3.3 ConsumeQueue.java:93-97), and each LMQ queue of INNER_MULTI_DISPATCH likewise
(`multiDispatchLmqQueue`, which skips only names holding a path separator). A name the broker's own code
never gives a queue (`formats.names.topic_name_problem`) makes that dispatch write outside the store
(`../`) or fail and stop every ConsumeQueue write (a NUL: "[BUG]consume queue can not write",
`makeLogicsQueueError`): an error, one row per name (how many records, the first one's place). mqtool's
writes refuse such a record (`store.io.pathnames`).
"""

from __future__ import annotations

import numpy as np

from formats.names import escaped_name, topic_name_problem
from store.checks.problems import ProblemList
from store.checks.records import RecordIndex
from store.queue.lmq import LmqSettings, multi_dispatch_units


def check_record_names(
    records: RecordIndex, problems: ProblemList, *, settings: LmqSettings | None = None
) -> int:
    """`illegal_topic` and `illegal_lmq_name` rows; returns how many records name an illegal queue."""
    bad = 0
    for code, topic in enumerate(records.topics):
        problem = topic_name_problem(topic)
        if problem is None:
            continue
        rows = np.flatnonzero(records.topic == code)
        if len(rows) == 0:
            continue
        bad += len(rows)
        first = int(records.phy[rows[0]])
        names, positions = records.locate(np.asarray([first]))
        problems.add(
            "illegal_topic",
            names[0].as_py(),
            int(positions[0]),
            f"{len(rows)} record(s) with topic {escaped_name(topic)} (first at phy {first}): the topic "
            f"{problem}; the broker's dispatch builds consumequeue/<topic>/<queueId> from it (outside the "
            "store, or failing and stopping every ConsumeQueue write); mqtool's writes refuse such a record",
        )
    if settings is None or not settings.dispatches:
        return bad
    lmq_first: dict[str, tuple[int, int, str]] = {}  # name -> (records, first phy, problem)
    for row in sorted(records.multi_dispatch):
        dispatch, offsets = records.multi_dispatch[row]
        topic = records.topics[int(records.topic[row])]
        # (names holding a path separator are left out, as multiDispatchLmqQueue skips them)
        for unit in multi_dispatch_units(topic, int(records.queue_id[row]), dispatch, offsets, settings):
            problem = topic_name_problem(unit.queue)
            if problem is None:
                continue
            count, phy, _ = lmq_first.get(unit.queue, (0, int(records.phy[row]), problem))
            lmq_first[unit.queue] = (count + 1, phy, problem)
    for name, (count, phy, problem) in sorted(lmq_first.items(), key=lambda kv: kv[1][1]):
        bad += count
        names, positions = records.locate(np.asarray([phy]))
        problems.add(
            "illegal_lmq_name",
            names[0].as_py(),
            int(positions[0]),
            f"{count} record(s) name the LMQ queue {escaped_name(name)} in INNER_MULTI_DISPATCH (first at "
            f"phy {phy}): the name {problem}; the broker's multiDispatchLmqQueue builds its directory from "
            "it; mqtool's writes refuse such a record",
        )
    return bad


__all__ = ["check_record_names"]
