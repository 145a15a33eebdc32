"""What every queue of a topic answers, whatever its type: the broker's `ConsumeQueueInterface` as mqtool's
planners and progress readers use it.

`Store.queue(topic, queueId)` / `Store.open_queue` hand out the queue the broker would open for the topic
(`ConsumeQueueStore.findOrCreateConsumeQueue`, store/src/main/java/org/apache/rocketmq/store/queue/
ConsumeQueueStore.java:386-427 at rocketmq-all-5.3.3): a `ConsumeQueue` (classic files; LMQ queues too),
a `RocksDBConsumeQueue` (storeType=defaultRocksDB) or a `BatchConsumeQueue` (`queue.type=BatchCQ`). Each
answers the same questions the same way the store does:

- `min_offset`, `max_offset`: `getMinOffsetInQueue` / `getMaxOffsetInQueue`; `min_offset_of(major)` the
  min a broker of that major version reports;
- `offset_by_time(major, timestamp, store_time_of, boundary, recorded_mtimes)`:
  `DefaultMessageStore.getOffsetInQueueByTime(topic, queueId, timestamp, boundaryType)` - the queue's
  search, clamped into [min, max] as `ConsumeQueueStore.getOffsetInQueueByTime` does (5.3.3
  ConsumeQueueStore.java:183-193; RocksDB's store does not clamp, RocksDBConsumeQueueStore.java:457);
- `store_time_at(queue_offset, store_time_of)`: the store time of the message at a queue offset in
  [min, max) (a BatchCQ unit carries its record's), None where there is none.

A planner or reader that needs a queue's min, max or time search takes it from here, never from one
queue kind's store (`store.consume_queues`, `store.batch_consume_queues`): those list and open only their
own directories, and a queue of another kind reads there as empty (max 0).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from store.queue.consumequeue import Boundary, StoreTimeOf


class UnitQueue(Protocol):
    topic: str
    queue_id: int

    @property
    def min_offset(self) -> int: ...

    @property
    def max_offset(self) -> int: ...

    def min_offset_of(self, major: int) -> int: ...

    def offset_by_time(
        self,
        major: int,
        timestamp: int,
        store_time_of: StoreTimeOf | None = None,
        boundary: Boundary | None = None,
        recorded_mtimes: Mapping[str, int] | None = None,
    ) -> int: ...

    def store_time_at(self, queue_offset: int, store_time_of: StoreTimeOf) -> int | None: ...

    def close(self) -> None: ...


__all__ = ["UnitQueue"]
