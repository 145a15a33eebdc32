"""ConsumerOrderInfoManager's reading side: what orderly POP consumers hold, offline.

An orderly POP (`PopMessageProcessor` with `order=true`) writes no checkpoint: it records the popped
offsets in `ConsumerOrderInfoManager` (persisted as config/consumerOrderInfo.json) and commits the
group's offset at the first popped offset, not past the batch. An ack (`AckMessageProcessor.ackOrderly`)
sets the offset's bit (`commitAndNext`) and commits the first unacked offset. Until every popped offset is
acked or its visible time passes, the queue is blocked for other attempts (`checkBlock`/`needBlock`);
after it, the next orderly pop hands the unacked messages out again from the queue itself (there is no
retry copy and no revive).

`orderly_messages` gives each popped offset as a `store.pop.revive.PoppedMessage` (`orderly=True`, revive
queue `POP_ORDER_REVIVE_QUEUE`): `acked`, `in-flight` (unacked, visible again at `invisible_until`), or
`overdue` (unacked, visible again already: the next pop redelivers it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from formats.errors import MqtoolError
from store.broker.messagerebuild import queue_message_or_none

if TYPE_CHECKING:
    from store.pop.revive import PoppedMessage
    from store.storedir import Store

ORDER_INFO_FILE = "consumerOrderInfo.json"
POP_ORDER_REVIVE_QUEUE = 999  # KeyBuilder.POP_ORDER_REVIVE_QUEUE: the reviveQid of an orderly pop


def orderly_messages(store: Store, *, now: int, notes: list[str]) -> list[PoppedMessage]:
    """Every offset of every orderly pop in consumerOrderInfo.json, with its state at `now`."""
    from store.pop.revive import PoppedMessage

    config = store.config(ORDER_INFO_FILE)
    if not config.path.exists() and not config.bak_path.exists():
        return []
    try:
        loaded = config.load()
    except MqtoolError as exc:
        notes.append(f"orderly POP state not read: {exc.message}")
        return []
    if loaded.source != "file":  # what ConfigManager.load() leaves the broker with
        notes.append(f"orderly POP state: {loaded.reason}")
    table = loaded.model
    out: list[PoppedMessage] = []
    for topic, group, queue_id, info in table.entries():
        for i, offset in enumerate(info.queue_offsets()):
            visible_at = info.next_visible_time(offset)
            if info.is_acked(i):
                state = "acked"
            elif visible_at is not None and now < visible_at:
                state = "in-flight"
            else:
                state = "overdue"
            out.append(
                PoppedMessage(
                    group,
                    topic,
                    queue_id,
                    offset,
                    info.pop_time,
                    info.pop_time if visible_at is None else visible_at,
                    POP_ORDER_REVIVE_QUEUE,
                    None,
                    state,
                    None,
                    queue_message_or_none(store, topic, queue_id, offset),
                    orderly=True,
                )
            )
    return out


__all__ = ["ORDER_INFO_FILE", "POP_ORDER_REVIVE_QUEUE", "orderly_messages"]
