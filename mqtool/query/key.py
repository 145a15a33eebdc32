"""`mqtool query key` (mqadmin queryMsgByKey): the index files walked newest first as
`IndexService.queryOffset` does, without the broker's cap of 64 hits; each hit confirmed on the message itself
(topic equal and the key among its space-separated KEYS or equal to its UNIQ_KEY), so hash collisions are
dropped and counted instead of silently returned or silently lost. The answer says whether the index covers
the commitlog (`mqtool.query.index_lookup`); `scan=True` searches the uncovered tail directly. Nothing here
writes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from formats.errors import MqtoolError, UsageError
from formats.indexfile import LONG_MAX
from formats.message.commitlog import Message
from mqtool.query.index_lookup import (
    HitReport,
    IndexCoverage,
    ScanOutcome,
    coverage_notes,
    hit_notes,
    index_coverage,
    read_hits,
    scan_tail,
    unconfirmed_note,
)
from mqtool.query.topics import check_topic, is_known_topic, unknown_topic_note
from store.index.indexservice import MAX_MSGS_NUM_BATCH
from store.storedir import Store


def _has_key(msg: Message, key: str) -> bool:
    return msg.uniq_key == key or (bool(msg.keys) and key in msg.keys.split(" "))


@dataclass
class KeyQueryResult:
    topic: str
    key: str
    begin: int
    end: int
    messages: list[Message]
    hits: HitReport
    coverage: IndexCoverage
    scanned: ScanOutcome | None = None
    truncated: bool = False  # --max stopped the answer early
    scan_requested: bool = False
    topic_note: str | None = None  # a topic only the commitlog knows: what the scan found of it
    tiered_messages: int = 0  # found through the tiered store's index (--tiered)

    @property
    def capped_like_broker(self) -> bool:
        """A live broker returns at most 64 raw hits (maxMsgsNumBatch) per key query."""
        return self.hits.raw_hits > MAX_MSGS_NUM_BATCH

    def notes(self) -> list[str]:
        notes = [self.topic_note] if self.topic_note else []
        if self.tiered_messages:
            notes.append(f"{self.tiered_messages} message(s) found through the tiered store's index")
        notes += [u for u in self.hits.unreadable if u.startswith("tiered store: ")]
        return (
            notes
            + hit_notes(self.hits, self.capped_like_broker, self.truncated)
            + coverage_notes(self.coverage, self.scanned, self.scan_requested)
            + [n for n in [unconfirmed_note(self.coverage, self.messages)] if n]
        )


def query_by_key(
    store: Store,
    topic: str,
    key: str,
    *,
    begin: int = 0,
    end: int = LONG_MAX,
    max_num: int | None = None,
    scan: bool = False,
    scan_from: int | None = None,
    advance: Callable[[int], None] | None = None,
) -> KeyQueryResult:
    """Messages of `topic` with `key` among their KEYS or as their UNIQ_KEY, stored in [begin, end].

    Index hits are read newest first; `max_num` (None = no cap) bounds the confirmed messages. The
    answer is sorted by physical offset. `scan` searches the commitlog after the index end (or from
    `scan_from`) too; for a topic the store does not know otherwise (a deleted topic's messages stay in the
    commitlog and the index) the whole commitlog, and the answer says how many messages of it are there.
    """
    if not key:
        raise MqtoolError("empty key")
    if max_num is not None and max_num <= 0:
        raise UsageError("--max must be positive")
    requested = scan or scan_from is not None
    known = is_known_topic(store, topic)
    if not known and not requested:
        check_topic(store, topic)
    raw = store.index_service.query_offset(topic, key, None, begin, end).phy_offsets
    hits = HitReport(raw_hits=len(raw))
    seen: set[int] = set()
    found, truncated = read_hits(
        store, raw, lambda m: m.topic == topic and _has_key(m, key), hits, max_num, seen
    )
    coverage = index_coverage(store)
    outcome = None
    topic_note = None
    if requested:
        of_topic = 0

        def match(m: Message) -> bool:
            nonlocal of_topic
            if m.topic != topic:
                return False
            of_topic += 1
            return begin <= m.store_timestamp <= end and _has_key(m, key)

        start = scan_from if scan_from is not None or known else store.commitlog.min_offset
        outcome = scan_tail(store, coverage, start, match, advance)
        if outcome is not None:
            found.extend(m for m in outcome.messages if m.physical_offset not in seen)
            if not known:
                topic_note = unknown_topic_note(topic, of_topic, outcome.start, outcome.end)
    found.sort(key=lambda m: m.physical_offset)
    tiered: list[Message] = []
    if store.tiered is not None:
        from mqtool.tiered.fetch import tiered_key_messages

        problems: list[str] = []
        tiered, force = tiered_key_messages(store, topic, key, begin, end, problems)
        hits.unreadable.extend(f"tiered store: {p}" for p in problems)
        hits.dropped_collisions += sum(not _has_key(m, key) for m in tiered)
        tiered = [m for m in tiered if _has_key(m, key)]
        found = tiered + ([] if force else found)  # older: below the local store's earliest time
    if max_num is not None and len(found) > max_num:
        found, truncated = found[-max_num:], True
    result = KeyQueryResult(
        topic, key, begin, end, found, hits, coverage, outcome, truncated, requested, topic_note
    )
    result.tiered_messages = sum(1 for m in found if any(m is t for t in tiered))
    return result
