"""POP state a 5.3.x broker keeps in RocksDB (`popConsumerKVServiceEnable=true`): `kvStore/`, column family
`popState`, one `PopConsumerRecord` per popped, not yet acked message (`PopConsumerService` writes it at pop
time and deletes it at ack; its revive scans them in key order, which is visibility-time order).

`pop_state_records` reads them as `PopConsumerRocksdbStore.scanExpiredRecords(lower, upper, max)` does:
keys from the 8-byte visibility time `lower` (inclusive) to `upper` (exclusive), values decoded as
`PopConsumerRecord.decode` (fastjson). Read-only through `store.rocksdb.db`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from formats import rocksdb as layout
from formats.config import fastjson
from formats.errors import MqtoolError
from store.broker.messagerebuild import queue_message_or_none
from store.rocksdb.db import ReadOnlyRocksDB

if TYPE_CHECKING:
    from store.pop.revive import PoppedMessage
    from store.storedir import Store

COLUMN_FAMILIES = ("default", layout.POP_STATE_COLUMN_FAMILY)
RETRY_TYPES = {0: "NORMAL_TOPIC", 1: "RETRY_TOPIC_V1", 2: "RETRY_TOPIC_V2"}  # PopConsumerRecord.RetryType


@dataclass(frozen=True)
class PopStateRecord:
    """One `PopConsumerRecord`: a message popped by `group` from topic/queue at `offset`, not yet acked."""

    pop_time: int
    group: str
    topic: str
    queue_id: int
    retry_flag: int
    invisible_time: int
    offset: int
    attempt_times: int
    attempt_id: str | None

    @property
    def visibility_timeout(self) -> int:
        """When it becomes visible again (revived) unless acked: popTime + invisibleTime."""
        return self.pop_time + self.invisible_time


def has_pop_state(root: Path) -> bool:
    return (Path(root) / layout.POP_STATE_DIR / "CURRENT").is_file()


def _long(obj: dict, name: str, where: str) -> int:
    value = obj.get(name, 0)
    if isinstance(value, bool) or not isinstance(value, int):
        raise MqtoolError(f"PopConsumerRecord {name} is not a number: {value!r}", where)
    return value


def pop_state_records(
    root: Path, lower: int = 0, upper: int = 2**63 - 1, max_count: int | None = None
) -> list[PopStateRecord]:
    """`scanExpiredRecords(lower, upper, maxCount)` over `kvStore/` (every record by default)."""
    directory = Path(root) / layout.POP_STATE_DIR
    where = str(directory)
    out: list[PopStateRecord] = []
    with ReadOnlyRocksDB(directory, COLUMN_FAMILIES) as db:
        for key, value in db.items(layout.POP_STATE_COLUMN_FAMILY):
            visible, group, topic, queue_id, offset = layout.parse_pop_record_key(key, where)
            if visible < lower:
                continue
            if visible >= upper or (max_count is not None and len(out) >= max_count):
                break
            obj = fastjson.parse(value.decode("utf-8", "replace"), file=where)
            if not isinstance(obj, dict):
                raise MqtoolError(
                    f"POP state value of {group}@{topic}/{queue_id}@{offset} is not an object", where
                )
            attempt = obj.get("attemptId")
            out.append(
                PopStateRecord(
                    _long(obj, "popTime", where),
                    str(obj.get("groupId", group)),
                    str(obj.get("topicId", topic)),
                    _long(obj, "queueId", where),
                    _long(obj, "retryFlag", where),
                    _long(obj, "invisibleTime", where),
                    _long(obj, "offset", where),
                    _long(obj, "attemptTimes", where),
                    None if attempt is None else str(attempt),
                )
            )
    return out


KV_STORE_REVIVE_QUEUE = -1  # a kvStore record belongs to no revive queue


def kv_messages(store: Store, *, now: int, notes: list[str]) -> list[PoppedMessage]:
    """Each popped, unacked message of `kvStore/` as a `store.pop.revive.PoppedMessage` (`kv_store=True`):
    `in-flight` until its visibility time, then `overdue` (PopConsumerService's revive has not copied it into
    the retry topic yet: it deletes the record when it does)."""
    from store.pop.revive import PoppedMessage

    if not has_pop_state(store.root):
        return []
    try:
        records = pop_state_records(store.root)
    except MqtoolError as exc:
        notes.append(f"POP state in kvStore/ not read: {exc.message}")
        return []
    return [
        PoppedMessage(
            r.group,
            r.topic,
            r.queue_id,
            r.offset,
            r.pop_time,
            r.visibility_timeout,
            KV_STORE_REVIVE_QUEUE,
            None,
            "in-flight" if now < r.visibility_timeout else "overdue",
            None,
            queue_message_or_none(store, r.topic, r.queue_id, r.offset),
            kv_store=True,
        )
        for r in records
    ]


__all__ = ["KV_STORE_REVIVE_QUEUE", "PopStateRecord", "has_pop_state", "kv_messages", "pop_state_records"]
