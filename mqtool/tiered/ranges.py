"""Per queue, the local and the tiered offset ranges side by side, and what the broker with the plugin
answers for the queue (`TieredMessageStore.getMinOffsetInQueue`: the smaller of both minimums,
`TieredMessageStore.java:296-307`; getMaxOffsetInQueue is the local store's)."""

from __future__ import annotations

from typing import Any

from formats.errors import MqtoolError
from store.storedir import Store


def local_range(store: Store, topic: str, queue_id: int) -> tuple[int, int] | None:
    """The local ConsumeQueue's [min, max); None when the store has no such queue."""
    cqs = store.consume_queues
    if topic not in cqs.topics() or queue_id not in cqs.queue_ids(topic):
        return None
    queue = cqs.open(topic, queue_id)
    try:
        return queue.min_offset, queue.max_offset
    finally:
        queue.close()


def queue_row(store: Store, topic: str, queue_id: int) -> dict[str, Any]:
    tiered = store.tiered.queue(topic, queue_id)
    row: dict[str, Any] = {"topic": topic, "queueId": queue_id}
    local = local_range(store, topic, queue_id)
    row["localQueue"] = local is not None
    # a queue with no local files is one findOrCreateConsumeQueue makes empty: the broker answers 0 and 0
    local_min, local_max = local if local else (0, 0)
    row["localMinOffset"], row["localMaxOffset"] = local_min, local_max
    try:
        t_min, t_max = tiered.min_offset, tiered.max_offset
    except MqtoolError as exc:
        row["error"] = str(exc)
        return row
    row["tieredMinOffset"], row["tieredMaxOffset"] = t_min, t_max
    row["minOffset"] = min(local_min, t_min) if t_min >= 0 else local_min
    row["maxOffset"] = local_max  # getMaxOffsetInQueue is the local store's, even when it holds nothing
    row["commitLogSegments"] = len(tiered.commit_log.segments)
    row["consumeQueueSegments"] = len(tiered.consume_queue.segments)
    return row


def plugin_min_offset(store: Store, topic: str, queue_id: int, local_min: int) -> tuple[int, str | None]:
    """What a broker with the plugin answers for the queue's min offset (`TieredMessageStore.
    getMinOffsetInQueue`: the smaller of the local and the tiered minimum), and a note where the tiered tree
    could not say (then the local minimum)."""
    try:
        tiered = store.tiered
        if tiered is None:
            return local_min, None
        t_min = tiered.queue(topic, queue_id).min_offset
    except MqtoolError as exc:
        return local_min, f"{topic}/{queue_id}: the local minimum, the tiered store could not say: {exc}"
    return (min(local_min, t_min) if t_min >= 0 else local_min), None


def tiered_info(store: Store) -> dict[str, Any] | None:
    """`mqtool info`'s tiered section; None when no tiered tree is named (--tiered, broker.conf)."""
    tiered = store.tiered
    if tiered is None:
        return None
    loaded = tiered.loaded
    return {
        **tiered.settings.as_dict(),
        "metadata": {
            "file": str(tiered.metadata_file.path),
            "loadedFrom": loaded.source,
            "note": loaded.reason,
        },
        "queues": [queue_row(store, topic, queue_id) for topic, queue_id in tiered.queues()],
    }
