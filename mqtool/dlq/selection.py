"""Which dead letters a `dlq export` or `dlq resend` works on: `DlqSelector`, every condition ANDed.

* `msg_ids`: the DLQ record's offsetMsgId, its UNIQ_KEY (the client's msgId) or its ORIGIN_MESSAGE_ID
  (the first copy's offsetMsgId), any of them (hex compared case-blind);
* `key`: one of the message's KEYS (split at MessageConst.KEY_SEPARATOR, a space);
* `begin`/`end`: when it died (its store time in the DLQ), epoch ms, both inclusive;
* `origin_topic`: its RETRY_TOPIC, the topic it was first sent to.
"""

from __future__ import annotations

from dataclasses import dataclass

from mqtool.dlq.listing import DlqListing, DlqRow, list_dlq
from store.storedir import Store

KEY_SEPARATOR = " "  # MessageConst.KEY_SEPARATOR


@dataclass(frozen=True)
class DlqSelector:
    msg_ids: tuple[str, ...] = ()
    key: str | None = None
    begin: int | None = None
    end: int | None = None
    origin_topic: str | None = None

    def matches(self, row: DlqRow) -> bool:
        if self.msg_ids:
            ids = {i.upper() for i in (row.offset_msg_id, row.uniq_key, row.origin_message_id) if i}
            if not ids.intersection(i.upper() for i in self.msg_ids):
                return False
        if self.key is not None and self.key not in (row.keys or "").split(KEY_SEPARATOR):
            return False
        if self.origin_topic is not None and row.origin_topic != self.origin_topic:
            return False
        return (self.begin is None or row.store_timestamp >= self.begin) and (
            self.end is None or row.store_timestamp <= self.end
        )


def select_dead_letters(store: Store, group: str | None, selector: DlqSelector) -> DlqListing:
    """`list_dlq` of `group` (or every DLQ group), keeping the rows `selector` matches."""
    listing = list_dlq(store, group=group, begin=selector.begin, end=selector.end)
    listing.rows = [r for r in listing.rows if selector.matches(r)]
    return listing


__all__ = ["DlqSelector", "select_dead_letters"]
