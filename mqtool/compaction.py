"""Compaction topics as their consumers see them: `info`'s compaction section, `dump cq` of a compacted
queue, `query offset` answered from the compacted queue.

The broker serves a topic with `cleanup.policy=COMPACTION` from `compaction/` (`store.kv.compaction`), so
its ConsumeQueue's min/max offsets are not what a consumer gets (apache/rocketmq #7540): these functions put
the served range beside the ConsumeQueue's.
"""

from __future__ import annotations

from typing import Any

from formats.compaction import is_end_unit
from formats.errors import MqtoolError, UsageError
from formats.message.commitlog import Message
from formats.names import escaped_name
from store.storedir import Store


def compaction_info(store: Store) -> dict[str, Any] | None:
    """`info`'s compaction section; None when the store has no compaction topic and no compaction/."""
    cs = store.compaction
    if not cs.topics and not cs.directory.is_dir():
        return None
    queues, problems = cs.load_listing
    try:
        checkpoint = cs.position_checkpoint
        positions = checkpoint.queue_offset_map if checkpoint else None
    except MqtoolError as exc:
        checkpoint, positions = None, {"error": str(exc)}
    rows = [_queue_row(store, topic, queue_id, checkpoint) for topic, queue_id in queues]
    for topic in cs.topics:
        if not any(t == topic for t, _ in queues):
            rows.append({"topic": topic, "queueId": None, "served": False,
                         "problems": ["no compaction log yet: the broker serves nothing of it"]})  # fmt: skip
    for topic, _ in queues:
        if topic not in cs.topics and not any(p.startswith(f"topic {topic}:") for p in problems):
            problems.append(
                f"topic {topic}: a compaction log, but topics.json does not make it a compaction topic: "
                "the broker serves it from its ConsumeQueue"
            )
    return {"topics": cs.topics, "positionCheckpoint": positions, "queues": rows, "problems": problems}


def _queue_row(store: Store, topic: str, queue_id: int, checkpoint) -> dict[str, Any]:
    cs = store.compaction
    row: dict[str, Any] = {"topic": topic, "queueId": queue_id}
    try:
        log = cs.log(topic, queue_id)
        load = log.load_problems()
        row["served"] = not any(effect == "not served" for effect, _ in load)
        row["minOffset"], row["maxOffset"] = log.min_offset, log.max_offset
        row["records"] = log.unit_count
        row["compactedTo"] = checkpoint.offset(topic, queue_id) if checkpoint else -1
        row["logFiles"] = [f.name for f in log.log.files]
        row["logFileSize"] = log.log.file_size
        row["cqFiles"] = [f.name for f in log.cq.files]
        row["cqFileSize"] = log.cq.file_size
        try:
            cq = store.consume_queue(topic, queue_id)
            row["consumeQueueMinOffset"], row["consumeQueueMaxOffset"] = cq.min_offset, cq.max_offset
        except MqtoolError as exc:
            row["consumeQueueError"] = str(exc)
        row["problems"] = [f"{effect}: {message}" for effect, message in load]
    except MqtoolError as exc:
        row["error"] = str(exc)
    return row


def served_log(store: Store, topic: str, queue_id: int, error: type[MqtoolError] = MqtoolError):
    """The queue's `CompactionLog` (`store.kv.compaction`), or `error` where the broker's start opens none
    for it: every pull of the queue is then NO_MATCHED_LOGIC_QUEUE."""
    cs = store.compaction
    if not cs.has_log(topic, queue_id):
        raise error(
            f"compaction topic {escaped_name(topic)} has no compaction log for queue {queue_id}: the broker "
            "serves nothing of it (NO_MATCHED_LOGIC_QUEUE)",
            str(cs.directory),
        )
    return cs.log(topic, queue_id)


def compacted_cq_units(
    store: Store, topic: str, queue_id: int, *, from_offset: int | None = None, count: int | None = None
) -> dict[str, Any]:
    """`dump cq` of a compaction topic's queue: every unit slot of its compaction CQ files as on disk (end
    units and invalid ones too, `state` says which), each live unit with the KEYS and body length of the
    record it points at in the compaction log (`tombstone`: an empty body); from the first unit at or after
    `from_offset`, `count` units at most. `units` is an iterator of rows."""
    log = served_log(store, topic, queue_id)

    def rows():
        emitted = 0
        for f in log.cq.files:
            for position, u in log.file_units(f.name):
                if from_offset is not None and (not u.is_valid or u.base_offset < from_offset):
                    continue
                if count is not None and emitted >= count:
                    return
                row = {"file": f.name, "position": position, "queueOffset": u.base_offset,
                       "logOffset": u.phy_offset, "size": u.size, "tagsCode": u.tags_code,
                       "storeTime": u.store_time, "batchSize": u.batch_size,
                       "state": "ok" if u.is_valid else "end" if is_end_unit(
                           u.phy_offset, u.size, u.base_offset, u.batch_size) else "invalid",
                       "keys": None, "bodyLength": None}  # fmt: skip
                if u.is_valid:
                    try:
                        record = log.read_record(u)
                        row["keys"], row["bodyLength"] = record.keys, len(record.body)
                    except MqtoolError as exc:
                        row["state"] = f"unreadable: {exc}"
                emitted += 1
                yield row

    return {
        "topic": topic,
        "queueId": queue_id,
        "queueType": "CompactionCQ",
        "minOffset": log.min_offset,
        "maxOffset": log.max_offset,
        "units": rows(),
    }


def compaction_log_records(
    store: Store,
    topic: str,
    queue_id: int,
    *,
    from_offset: int | None = None,
    count: int | None = None,
    with_body: bool = False,
) -> dict[str, Any]:
    """`dump compactionlog`: every record of one queue's compaction log in physical order (each file's
    messages, then the BLANK, end of data or bad record that ends it), each message with its `file` and
    `position`, whether a live CQ unit serves it (`served`), whether it is a `tombstone` (an empty body), and
    what the next compaction would do with it (`nextCompaction`: keep, drop, or null where it would not
    touch it: the last file, or no compaction due; `CompactionLog.next_compaction`). Messages from the first
    at or after queue offset `from_offset`, `count` at most. `records` is an iterator of rows."""
    if count is not None and count < 0:
        raise UsageError("--count must not be negative")
    cs = store.compaction
    log = served_log(store, topic, queue_id)
    checkpoint = cs.position_checkpoint
    done_to = checkpoint.offset(topic, queue_id) if checkpoint else -1
    upcoming = log.next_compaction(done_to)
    compacted = {f.name for f in log.log.files[:-1]} if upcoming else set()
    served = {u.unit.phy_offset for u in log.units}

    def rows():
        listed = 0
        for name, position, record in log.records():
            if isinstance(record, Message):
                if from_offset is not None and record.queue_offset < from_offset:
                    continue
                if count is not None and listed >= count:
                    return
                row = {"file": name, "position": position, "kind": "message"}
                row |= record.to_json(include_body=with_body)
                row["served"] = record.physical_offset in served
                row["tombstone"] = not record.body
                row["nextCompaction"] = (
                    None
                    if name not in compacted
                    else "drop"
                    if record.queue_offset in upcoming[1]
                    else "keep"
                )
                listed += 1
                yield row
            else:
                yield {"file": name, "position": position, **record.to_json()}

    return {
        "topic": topic,
        "queueId": queue_id,
        "minOffset": log.min_offset,
        "maxOffset": log.max_offset,
        "compactedTo": done_to,
        "nextCompactionMapEnd": upcoming[0] if upcoming else None,
        "records": rows(),
    }


def compaction_summary(store: Store) -> list[dict[str, Any]]:
    """One row per compaction queue the broker's load opens: what its consumers are served (`records`
    served, distinct `keys` among them - MD5 of the whole KEYS string, as the compaction's offset map keys
    them -, `superseded`: served records a later served record of the same key replaces, `tombstones`:
    served records with an empty body), the log's size (`logRecords`, `logBytes`: every message in the
    compaction log), and what the next compaction would reclaim (`reclaimableRecords`,
    `reclaimableBytes`; `CompactionLog.next_compaction`). A queue that cannot be read has `error`."""
    from formats.compaction import offset_map_key

    cs = store.compaction
    checkpoint = cs.position_checkpoint  # unreadable: raises (what the next compaction does is unknown)
    rows = []
    for topic, queue_id in cs.queues():
        row: dict[str, Any] = {"topic": topic, "queueId": queue_id}
        try:
            log = cs.log(topic, queue_id)
            row["served"] = not any(effect == "not served" for effect, _ in log.load_problems())
            row["minOffset"], row["maxOffset"] = log.min_offset, log.max_offset
            done_to = checkpoint.offset(topic, queue_id) if checkpoint else -1
            served = {u.unit.phy_offset for u in log.units}
            messages = [r for _, _, r in log.records() if isinstance(r, Message)]
            live = [r for r in messages if r.physical_offset in served]
            last_of_key: dict[bytes, int] = {}
            for r in live:
                last_of_key[offset_map_key(r.keys or "")] = r.queue_offset
            upcoming = log.next_compaction(done_to)
            dropped = upcoming[1] if upcoming else set()
            row |= {
                "records": len(live),
                "keys": len(last_of_key),
                "superseded": sum(last_of_key[offset_map_key(r.keys or "")] != r.queue_offset for r in live),
                "tombstones": sum(not r.body for r in live),
                "logRecords": len(messages),
                "logBytes": sum(r.total_size for r in messages),
                "compactedTo": done_to,
                "nextCompactionMapEnd": upcoming[0] if upcoming else None,
                "reclaimableRecords": sum(r.queue_offset in dropped for r in messages),
                "reclaimableBytes": sum(r.total_size for r in messages if r.queue_offset in dropped),
            }
        except MqtoolError as exc:
            row["error"] = str(exc)
        rows.append(row)
    return rows


def is_served_compacted(store: Store, topic: str) -> bool:
    """The broker serves `topic` from compaction/ (`cleanup.policy=COMPACTION`, enableCompaction)."""
    return store.compaction.is_compaction_topic(topic) and store.layout.broker_config.enableCompaction


__all__ = [
    "compacted_cq_units",
    "compaction_info",
    "compaction_log_records",
    "compaction_summary",
    "is_served_compacted",
    "served_log",
]
