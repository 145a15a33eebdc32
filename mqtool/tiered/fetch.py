"""The broker's read below the local minimum: which queue offsets a broker with the tiered plugin serves from
the tiered store, and those messages.

`TieredMessageStore.getMessageAsync` (5.3.3 `TieredMessageStore.java:210-225`) asks `fetchFromCurrentStore`
(`:163-200`): at the default `tieredStorageLevel` NOT_IN_DISK an offset is read from the tiered store when the
queue has a flat file, the offset is below its commit offset, and the local store does not hold it
(`checkInStoreByConsumeOffset`: outside the local ConsumeQueue's [min, max) - a queue with no local files
included - while the commitlog's first file starts above 0: `unitless_offsets_go_tiered`).
`MessageStoreFetcherImpl` (`MessageStoreFetcherImpl.java:336-363`) then answers from
[getConsumeQueueMinOffset, getConsumeQueueCommitOffset) and the reply's minOffset is the smaller of the tiered
and the local one (`TieredMessageStore.java:273-277`). The messages come from the tiered segments
(`store.tiered.flatfile.TieredQueue.message`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from formats.errors import MqtoolError
from formats.message.commitlog import Message
from mqtool.tiered.ranges import local_range
from store.storedir import Store
from store.tiered.settings import storage_level


@dataclass
class TieredRead:
    """Messages at [start, end) read from the tiered store; min/max: the queue's range as the broker answers
    it (the local max when the store has the queue, else the tiered one)."""

    start: int
    end: int
    min_offset: int
    max_offset: int
    messages: list[Message] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def served_from_tiered(store: Store, topic: str, queue_id: int, offset: int) -> bool:
    """fetchFromCurrentStore: whether the broker reads `offset` from the tiered store. At FORCE every
    offset the tiered queue holds is; at DISABLE none; at NOT_IN_DISK (the default) and NOT_IN_MEM those
    the local store does not hold (NOT_IN_MEM also reads offsets out of the page cache from the tiered
    store, which no file tells: mqtool reads those locally, the same message but for its offsetMsgId)."""
    tiered = store.tiered
    level = storage_level(store.broker_config)
    if level == "FORCE":
        return tiered is not None and tiered.queue(topic, queue_id) is not None
    queue = None if tiered is None or level == "DISABLE" else tiered.queue(topic, queue_id)
    if queue is None or offset >= queue.max_offset:
        return False
    local = local_range(store, topic, queue_id)
    if local is not None and local[0] <= offset < local[1]:
        return False
    return unitless_offsets_go_tiered(store)


def unitless_offsets_go_tiered(store: Store) -> bool:
    """checkInStoreByConsumeOffset for a queue offset the local ConsumeQueue has no unit at (below its
    minimum, or no local queue at all): `getCommitLogOffsetInQueue` answers 0 and `checkInDiskByCommitOffset`
    calls that in the store when 0 >= CommitLog.getMinOffset (`DefaultMessageStore.java:1040-1049, 1556-1558,
    1755-1757`). So the broker reads such offsets from the tiered store only while the commitlog is empty
    (getMinOffset -1: `TieredMessageStore.java:185-188`) or its first file starts above 0; with the file at 0
    still there it asks the local store, which has nothing there."""
    commitlog = store.commitlog
    return not commitlog.files or commitlog.min_offset > 0


def tiered_span(store: Store, topic: str, queue_id: int):
    """(tiered queue, stop): the queue offsets [tiered min, stop) the broker serves from the tiered store
    (stop: the local minimum at NOT_IN_DISK / NOT_IN_MEM, the tiered max at FORCE); None when it serves
    none of them (no tree, no such tiered queue, DISABLE)."""
    tiered = store.tiered
    level = storage_level(store.broker_config)
    queue = None if tiered is None or level == "DISABLE" else tiered.queue(topic, queue_id)
    if queue is None:
        return None
    local = local_range(store, topic, queue_id)
    if level == "FORCE":
        return queue, queue.max_offset
    if not unitless_offsets_go_tiered(store):
        return None
    if local is None:
        return queue, queue.max_offset
    return queue, min(max(local[0], 0), queue.max_offset)


def tiered_queue_ids(store: Store, topic: str) -> list[int]:
    """The queue ids of `topic` the broker's tiered store has flat files for (none without a tree or at
    DISABLE): with the local ones, the queues a broker with the plugin answers for."""
    tiered = store.tiered
    if tiered is None or storage_level(store.broker_config) == "DISABLE":
        return []
    return sorted(q for t, q in tiered.queues() if t == topic)


def in_tiered_tree(store: Store, topic: str) -> bool:
    """The tiered tree (--tiered, broker.conf) has queues of `topic` the broker reads; False also when the
    tree cannot be read (the commands that read it say why)."""
    try:
        return bool(tiered_queue_ids(store, topic))
    except MqtoolError:
        return False


def no_local_queue_error(store: Store, topic: str, queue_id: int, offset: int) -> str:
    """Why offset `offset` of a queue only the tiered store holds is not served from it (the caller found
    `read_tiered` None): the broker then answers from an empty local queue, minOffset = maxOffset = 0."""
    queue = store.tiered.queue(topic, queue_id)
    held = f"the tiered store holds [{queue.min_offset}, {queue.max_offset})"
    if offset >= queue.max_offset or storage_level(store.broker_config) == "FORCE":
        why = f"no message at queue offset {offset}: {held}"
    else:
        why = (
            f"queue offset {offset} is asked of the local store, not the tiered one ({held}): the "
            "commitlog's first file starts at 0 (checkInStoreByConsumeOffset)"
        )
    return (
        f"{why}; {topic}/{queue_id} has no local ConsumeQueue, so the broker answers NO_MESSAGE_IN_QUEUE "
        "(min 0, max 0)"
    )


def read_tiered(store: Store, topic: str, queue_id: int, offset: int, count: int) -> TieredRead | None:
    """The messages at [offset, offset+count) the broker serves from the tiered store, up to where the local
    store takes over; None when the broker would not read `offset` from the tiered store."""
    if not served_from_tiered(store, topic, queue_id, offset):
        return None
    queue = store.tiered.queue(topic, queue_id)
    local = local_range(store, topic, queue_id)
    t_min, t_max = queue.min_offset, queue.max_offset
    # the reply's min is fixed by the local getMinOffsetInQueue: 0 for a queue with no local files
    # (findOrCreateConsumeQueue makes an empty one; `TieredMessageStore.java:273-277`)
    local_min = 0 if local is None else local[0]
    lo = t_min if local_min < 0 else min(t_min, local_min)
    if local is None or storage_level(store.broker_config) == "FORCE":
        # the fetcher's max is the tiered commit offset; past it: OFFSET_OVERFLOW, no fall back (FORCE)
        hi, end = t_max, max(offset, min(offset + count, t_max))
    else:
        hi, end = local[1], min(offset + count, max(min(local[0], t_max), offset))
    read = TieredRead(offset, end, lo, hi)
    for q in range(offset, end):
        if q < t_min:
            continue  # the fetcher's OFFSET_TOO_SMALL (the caller explains offsets below lo)
        try:
            read.messages.append(queue.message(q))
        except MqtoolError as exc:
            read.problems.append(f"queue offset {q} (tiered store): {exc}")
    return read


def tiered_key_messages(
    store: Store, topic: str, key: str, begin: int, end: int, problems: list[str] | None = None
) -> tuple[list[Message], bool]:
    """TieredMessageStore.queryMessageAsync's tiered part (`TieredMessageStore.java:385-415`): the tiered
    index is asked for [begin, the local store's earliest message time] when begin is before that time, or
    for [begin, end] at FORCE, where the local index is not asked at all. Returns the messages (not capped:
    mqtool answers without the broker's maxNum; the plugin reads at most 1024 items of a hash slot) and
    whether the local index is to be skipped (FORCE). Unreadable index files and messages go to
    `problems` (raised when it is None)."""
    from mqtool.tiered.bytime import local_earliest_time
    from store.tiered.index import DEFAULT_MAX_HASH_SLOT_NUM, query_messages

    tiered = store.tiered
    if tiered is None:
        return [], False
    force = storage_level(store.broker_config) == "FORCE"
    earliest = local_earliest_time(store)
    if not force and begin >= earliest:
        return [], False
    slots = DEFAULT_MAX_HASH_SLOT_NUM
    if "tieredStoreIndexFileMaxHashSlotNum" in store.broker_config.explicit:
        slots = store.broker_config.tieredStoreIndexFileMaxHashSlotNum
    last = end if force else min(end, earliest)
    found = query_messages(tiered, topic, key, 2**31 - 1, begin, last, slots, problems)
    return found, force
