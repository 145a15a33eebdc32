"""Orphan consume queues: queue directories a deleted topic or a shrunk queue count left behind.

A topic deleted while its broker was down, or by a config edit, leaves `consumequeue/<topic>/` (and
`batchconsumequeue/<topic>/`): the broker loads those queues at every start (5.3.3
ConsumeQueueStore.java:68-70, 204-212 walks the directories, not topics.json) but serves none of them,
as a pull of a topic with no config is TOPIC_NOT_EXIST. The broker removes them only when asked: `mqadmin
cleanUnusedTopic` runs `DefaultMessageStore.cleanUnusedTopic(topics.json's topics)` (5.3.3
DefaultMessageStore.java:1440-1452), which deletes the queues of every topic not in the set except system
topics (`TopicValidator.isSystemTopic`) and LMQ queues (`MixAll.isLmq`), through `deleteTopics` (:1391-1437):
each queue's files, then the topic's empty directories under consumequeue/, consumequeue_ext/ and
batchconsumequeue/.

A queue id at or past both of its topic's queue counts (`readQueueNums`, `writeQueueNums`) is neither
written (the send path picks queue ids below writeQueueNums) nor read (PullMessageProcessor refuses a
queue id >= readQueueNums, 5.3.3 PullMessageProcessor.java:370): what shrinking a topic left. The broker
never removes those; `rebuild --prune-orphans` does (dry run first).

`find_orphans` is a pure function of the topic table and the queues found; `report_orphans` turns the
result into verify's `orphan_topic` / `orphan_queue` rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from formats.names import LMQ_PREFIX, escaped_name, is_system_topic
from store.checks.problems import ProblemList

TOPIC_MISSING, QUEUE_OUT_OF_RANGE = "topic-missing", "queue-out-of-range"


@dataclass(frozen=True)
class OrphanQueue:
    """One queue directory no topic config serves, and why."""

    directory: str  # consumequeue or batchconsumequeue
    topic: str
    queue_id: int
    reason: str  # TOPIC_MISSING or QUEUE_OUT_OF_RANGE
    detail: str

    @property
    def path(self) -> str:
        return f"{self.directory}/{self.topic}/{self.queue_id}"

    def to_dict(self) -> dict[str, object]:
        return {
            "directory": self.directory,
            "topic": self.topic,
            "queueId": self.queue_id,
            "reason": self.reason,
            "detail": self.detail,
        }


def find_orphans(
    topics: Mapping[str, tuple[int, int]], queues: Mapping[str, Iterable[tuple[str, int]]]
) -> list[OrphanQueue]:
    """The orphan queues among `queues` ({directory: (topic, queue id), ...}) given `topics` ({topic:
    (readQueueNums, writeQueueNums)}, what the broker's topic config holds), in directory, topic, queue
    order."""
    found = []
    for directory, keys in queues.items():
        for topic, queue_id in sorted(set(keys)):
            if topic.startswith(LMQ_PREFIX) or is_system_topic(topic):
                continue  # cleanUnusedTopic keeps these; an LMQ queue has no topic config at all
            counts = topics.get(topic)
            if counts is None:
                detail = (
                    f"topic {escaped_name(topic)} is not in the broker's topic config: its queue is loaded "
                    "at every start but never served (cleanUnusedTopic would delete it)"
                )
                found.append(OrphanQueue(directory, topic, queue_id, TOPIC_MISSING, detail))
            elif queue_id >= max(counts):
                detail = (
                    f"queue {queue_id} of {escaped_name(topic)} is past readQueueNums {counts[0]} and "
                    f"writeQueueNums {counts[1]}: never written or served"
                )
                found.append(OrphanQueue(directory, topic, queue_id, QUEUE_OUT_OF_RANGE, detail))
    return found


def report_orphans(orphans: list[OrphanQueue], problems: ProblemList) -> None:
    """verify's rows: one `orphan_topic` per deleted topic's directory, one `orphan_queue` per queue past
    its topic's counts."""
    by_topic: dict[tuple[str, str], list[int]] = {}
    for o in orphans:
        if o.reason == TOPIC_MISSING:
            by_topic.setdefault((o.directory, o.topic), []).append(o.queue_id)
        else:
            problems.add("orphan_queue", o.path, None, o.detail)
    for (directory, topic), ids in by_topic.items():
        problems.add(
            "orphan_topic",
            f"{directory}/{topic}",
            None,
            f"topic {escaped_name(topic)} is not in the broker's topic config; its {len(ids)} queue(s) "
            f"({', '.join(map(str, ids[:8]))}{', ...' if len(ids) > 8 else ''}) are loaded at every start "
            "but never served: `mqtool rebuild cq --prune-orphans` removes them, as the broker's "
            "cleanUnusedTopic would",
        )


__all__ = ["QUEUE_OUT_OF_RANGE", "TOPIC_MISSING", "OrphanQueue", "find_orphans", "report_orphans"]
