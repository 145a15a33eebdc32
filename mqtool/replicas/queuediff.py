"""The consume queues, index coverage and checkpoints of two replicas compared.

A queue row is a ConsumeQueue or BatchCQ queue whose served range (min and max queue offsets, as `info`
reads them) differs between the sides, or that is on one side only: a lagging slave's queues end earlier,
a diverged pair's queues hold different messages at the same offsets (the commitlog comparison says
which), and a queue on one side only is what a topic deleted on one replica leaves (apache/rocketmq #8539,
#7264: the slave's reput rebuilt it, the master's deleteTopic never reached it). LMQ queues are only
counted, as `info` does. Per side also: how far the ConsumeQueues and the index cover the commitlog
(`info`'s dispatch section) and the checkpoint's fields, side by side - these are a replica's own
(flush times, its reput) and never make a pair differ by themselves. Read-only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from formats.errors import MqtoolError
from mqtool.info import batch_queues_info, checkpoint_json, dispatch_info, lmq_info, queues_info
from store.storedir import Store

SIDES = ("A", "B")


@dataclass
class QueueRow:
    kind: str  # consumequeue | batchconsumequeue
    topic: str
    queue_id: int | None
    state: str  # only-A | only-B | differs
    a: dict[str, Any] | None  # minOffset, maxOffset, messages (or error)
    b: dict[str, Any] | None

    @property
    def ahead(self) -> str | None:
        """The side whose queue ends later (None: the same end, or an end unknown)."""
        ends = [None if s is None else s.get("maxOffset") for s in (self.a, self.b)]
        if None in ends or ends[0] == ends[1]:
            return None
        return "A" if ends[0] > ends[1] else "B"

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "topic": self.topic,
            "queueId": self.queue_id,
            "state": self.state,
            "a": self.a,
            "b": self.b,
            "ahead": self.ahead,
        }


@dataclass
class QueueDiff:
    rows: list[QueueRow]
    compared: int  # queues on either side
    lmq_queues: tuple[int, int]
    dispatch: tuple[dict[str, Any], dict[str, Any]]  # per side: consumeQueueEnd, indexLastPhyOffset, ...
    index_files: tuple[int | dict[str, Any], int | dict[str, Any]]
    checkpoints: tuple[dict[str, Any] | None, dict[str, Any] | None]
    checkpoint_fields: list[str] = field(default_factory=list)  # the checkpoint fields that differ

    def to_dict(self) -> dict[str, Any]:
        return {
            "compared": self.compared,
            "rows": [r.to_dict() for r in self.rows],
            "lmqQueues": list(self.lmq_queues),
            "dispatch": list(self.dispatch),
            "indexFiles": list(self.index_files),
            "checkpoints": list(self.checkpoints),
            "checkpointFieldsDiffer": self.checkpoint_fields,
        }


def _served(store: Store) -> dict[tuple[str, str, int | None], dict[str, Any]]:
    ranges = {}
    for kind, rows in (("consumequeue", queues_info(store)), ("batchconsumequeue", batch_queues_info(store))):
        for row in rows:
            ranges[(kind, row["topic"], row["queueId"])] = {
                k: v for k, v in row.items() if k not in ("topic", "queueId", "units")
            }
    return ranges


def _sort_key(key: tuple[str, str, int | None]) -> tuple[str, str, int]:
    kind, topic, queue_id = key
    return (kind, topic, -1 if queue_id is None else queue_id)


def _or_error(fn, *args: Any) -> Any:
    """A side's section, or {"error": ...} for a file mqtool cannot read (the rest is still compared)."""
    try:
        return fn(*args)
    except MqtoolError as exc:
        return {"error": str(exc)}


def _commitlog_end(store: Store, known: int | None) -> int | None:
    if known is not None:
        return known
    try:
        return store.commitlog.max_offset
    except MqtoolError:
        return None


def compare_queues(a: Store, b: Store, commitlog_ends: tuple[int | None, int | None]) -> QueueDiff:
    """Every queue whose served range differs or that one side lacks; `commitlog_ends` are the sides'
    valid commitlog ends where the commitlog comparison found them (None: read here), against which each
    side's dispatch coverage is measured."""
    left, right = _served(a), _served(b)
    rows = []
    keys = sorted(set(left) | set(right), key=_sort_key)
    for key in keys:
        x, y = left.get(key), right.get(key)
        if x == y:
            continue
        state = "only-B" if x is None else "only-A" if y is None else "differs"
        rows.append(QueueRow(key[0], key[1], key[2], state, x, y))
    lmq = [_or_error(lmq_info, s) for s in (a, b)]
    checkpoints = tuple(_or_error(lambda s: checkpoint_json(s.checkpoint()), s) for s in (a, b))
    differ = []
    if all(c is not None and "error" not in c for c in checkpoints):
        differ = [k for k in checkpoints[0] if checkpoints[0][k] != checkpoints[1][k]]
    ends = [_commitlog_end(s, e) for s, e in zip((a, b), commitlog_ends, strict=True)]
    dispatch = tuple(
        {"error": "the commitlog's end is unknown"} if end is None else _or_error(dispatch_info, s, end)
        for s, end in zip((a, b), ends, strict=True)
    )
    index_files = tuple(_or_error(lambda s: len(s.index_service.headers()), s) for s in (a, b))
    return QueueDiff(
        rows,
        len(keys),
        tuple(0 if x is None else x.get("queues") for x in lmq),  # type: ignore[arg-type]
        dispatch,  # type: ignore[arg-type]
        index_files,  # type: ignore[arg-type]
        checkpoints,  # type: ignore[arg-type]
        differ,
    )
