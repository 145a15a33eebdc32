"""`mqtool query id` (mqadmin queryMsgById, `MQAdminImpl.viewMessage` / `queryMessageByUniqKey`): a 32/56-hex
id is first read as an offsetMsgId (store host + physical offset); when no message with that id is there, it
is looked up as a UNIQ_KEY under every topic of the store (or the one given), and every record carrying it
is listed (retries, re-puts, batches). Nothing here writes into the store.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from formats.errors import MqtoolError
from formats.indexfile import LONG_MAX
from formats.message.commitlog import Message
from formats.message.msgid import OffsetMsgId, decode_offset_msg_id, looks_like_offset_msg_id
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
from mqtool.query.topics import check_topic, is_known_topic, known_topics, unknown_topic_note
from store.storedir import Store


class MessageIdError(MqtoolError):
    """An id that is neither an offsetMsgId nor a UNIQ_KEY (32 or 56 hex digits)."""


@dataclass
class IdQueryResult:
    msg_id: str
    kind: str  # "offsetMsgId" or "uniqKey": how the id was resolved (or last tried)
    messages: list[Message]
    decoded: OffsetMsgId | None
    offset_note: str | None  # what the offsetMsgId reading found, when it did not simply match
    topics_searched: list[str]
    hits: HitReport
    coverage: IndexCoverage | None
    scanned: ScanOutcome | None = None
    scan_requested: bool = False
    topic_note: str | None = None  # --topic that only the commitlog knows: what the scan found of it
    tiered_messages: int = 0  # found through the tiered store's index (--tiered)

    def notes(self) -> list[str]:
        notes = [self.topic_note] if self.topic_note else []
        if self.tiered_messages:
            notes.append(f"{self.tiered_messages} message(s) found through the tiered store's index")
        notes += [u for u in self.hits.unreadable if u.startswith("tiered store: ")]
        notes += [self.offset_note] if self.offset_note else []
        if self.kind == "uniqKey":
            where = (
                f"topic {self.topics_searched[0]}"
                if len(self.topics_searched) == 1
                else f"{len(self.topics_searched)} topics"
            )
            notes.append(f"looked up as a UNIQ_KEY under {where}")
            notes += hit_notes(self.hits, False, False)
        if self.coverage is not None:
            notes += coverage_notes(self.coverage, self.scanned, self.scan_requested)
        unconfirmed = unconfirmed_note(self.coverage, self.messages)
        notes += [unconfirmed] if unconfirmed else []
        return notes


def normalize_msg_id(msg_id: str) -> str:
    """Upper-case a 32/56-hex id; raise MessageIdError for anything else."""
    text = msg_id.strip()
    if not looks_like_offset_msg_id(text):
        if not text:
            detail = "empty"
        elif re.fullmatch(r"[0-9A-Fa-f]+", text):
            detail = f"{len(text)} hex digits"
        else:
            detail = "not hexadecimal"
        raise MessageIdError(
            f"not a message id: {msg_id!r} ({detail}); an offsetMsgId or UNIQ_KEY has 32 or 56 hex digits"
        )
    return text.upper()


def query_by_id(
    store: Store,
    msg_id: str,
    *,
    topic: str | None = None,
    scan: bool = False,
    advance: Callable[[int], None] | None = None,
) -> IdQueryResult:
    """The message(s) an offsetMsgId or UNIQ_KEY names (`MQAdminImpl.viewMessage`, `queryMessageByUniqKey`),
    sorted by store time. With `scan`, a `topic` the store does not know otherwise (a deleted topic) is
    searched in the whole commitlog, as `query_by_key` does."""
    ident = normalize_msg_id(msg_id)
    known = topic is None or is_known_topic(store, topic)
    if not known and not scan:
        check_topic(store, topic)
    decoded = decode_offset_msg_id(ident)
    commitlog = store.commitlog
    offset_msg: Message | None = None
    offset_note: str | None = None
    if decoded.offset < commitlog.min_offset and commitlog.files and decoded.offset >= 0:
        offset_note = (
            f"as an offsetMsgId: physical offset {decoded.offset} is below the commitlog's min offset "
            f"{commitlog.min_offset} (deleted by retention, or not an offsetMsgId)"
        )
    else:
        try:
            offset_msg = commitlog.read_message_at(decoded.offset)
        except MqtoolError as exc:
            offset_note = f"as an offsetMsgId: {exc}"
    exact = offset_msg is not None and offset_msg.offset_msg_id == ident
    if exact and (topic is None or offset_msg.topic == topic):
        coverage = None
        if store.confirm is not None:  # say so when the message lies in the unconfirmed tail
            coverage = IndexCoverage(None, None, None, None, served_end=store.served_end)
        return IdQueryResult(ident, "offsetMsgId", [offset_msg], decoded, None, [], HitReport(), coverage)
    if offset_msg is not None and offset_msg.offset_msg_id != ident:
        offset_note = (
            f"as an offsetMsgId the id names store host {decoded.host}, but the message at physical offset "
            f"{decoded.offset} was stored by {offset_msg.store_host_str}: the id is not from this store"
        )
    topics = [topic] if topic is not None else known_topics(store)
    raw: list[int] = []
    for t in topics:
        raw.extend(store.index_service.query_offset(t, ident).phy_offsets)
    hits = HitReport(raw_hits=len(set(raw)))
    seen: set[int] = set()
    found, _ = read_hits(store, raw, lambda m: m.uniq_key == ident, hits, None, seen)
    tiered_found = 0
    if store.tiered is not None:  # queryMessageByUniqKey -> queryMessage: the plugin asks its index too
        from mqtool.tiered.fetch import tiered_key_messages

        for t in topics:
            problems: list[str] = []
            older, force = tiered_key_messages(store, t, ident, 0, LONG_MAX, problems)
            hits.unreadable.extend(f"tiered store: {p}" for p in problems)
            older = [m for m in older if m.uniq_key == ident]
            if force:
                found = [m for m in found if m.topic != t]
            found.extend(older)
            tiered_found += len(older)
    coverage = index_coverage(store)
    outcome = None
    topic_note = None
    if scan:
        of_topic = 0

        def match(m: Message) -> bool:
            nonlocal of_topic
            if topic is not None and m.topic != topic:
                return False
            of_topic += 1
            return m.uniq_key == ident

        start = None if known else store.commitlog.min_offset
        outcome = scan_tail(store, coverage, start, match, advance)
        if outcome is not None:
            found.extend(m for m in outcome.messages if m.physical_offset not in seen)
            if not known:
                topic_note = unknown_topic_note(topic, of_topic, outcome.start, outcome.end)
    if not found and offset_msg is not None and (topic is None or offset_msg.topic == topic):
        found = [offset_msg]  # shown with the host-mismatch note
        kind = "offsetMsgId"
    else:
        kind = "uniqKey"
        if found and offset_msg is None:
            offset_note = None  # a UNIQ_KEY, as expected: no need to explain the offset reading
    found.sort(key=lambda m: (m.store_timestamp, m.physical_offset))
    result = IdQueryResult(
        ident, kind, found, decoded, offset_note, topics, hits, coverage, outcome, scan, topic_note
    )
    result.tiered_messages = tiered_found
    return result
