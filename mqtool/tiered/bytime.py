"""The queue offset by store time on a broker with the tiered plugin (`TieredMessageStore.
getOffsetInQueueByTime`, 5.3.3 `TieredMessageStore.java:362-377`): a time before the local store's
earliest message (`DefaultMessageStore.getEarliestMessageTime`: the store time at the commitlog's min
offset), or any time at `tieredStorageLevel` FORCE, is searched in the tiered queue
(`FlatMessageFile.getQueueOffsetByTimeAsync`; -1 without a tiered queue, which falls back to the local
store unless FORCE); other times are the local store's, always with the LOWER boundary (the plugin drops
the boundary it was given there)."""

from __future__ import annotations

from mqtool.offsets.progress import store_time_of
from store.storedir import Store
from store.tiered.settings import storage_level


def local_earliest_time(store: Store) -> int:
    """DefaultMessageStore.getEarliestMessageTime: the store time of the record at the commitlog's min offset
    (-1 without one)."""
    first = store.commitlog.first_record()
    return -1 if first is None else first.store_timestamp


def offset_in_queue_by_time(
    store: Store, topic: str, queue_id: int, timestamp: int, boundary: str = "lower"
) -> int:
    force = storage_level(store.broker_config) == "FORCE"
    tiered = store.tiered
    if tiered is not None and (timestamp < local_earliest_time(store) or force):
        queue = tiered.queue(topic, queue_id)
        found = -1 if queue is None else queue.offset_by_time(timestamp, boundary)
        if found != -1 or force:
            return found
    cq = store.consume_queue(topic, queue_id)
    return cq.offset_by_time(5, timestamp, store_time_of(store), "lower")
