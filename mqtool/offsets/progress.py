"""Consumer progress (`mqtool offsets show`): consumerOffset.json against the consume queues, offline.

Like `mqadmin consumerProgress` (`ConsumerProgressSubCommand`): per group/topic/queue the committed consumer
offset,
the queue's min and max offset, the lag (maxOffset - consumerOffset, mqadmin's "Diff") and the store
time of the last consumed message (the one at consumerOffset - 1). Unlike mqadmin it never turns a
missing or impossible offset into 0: each row carries a `state` —

* `ok`: minOffset <= consumerOffset <= maxOffset;
* `behind-min`: the committed offset is below the queue's min offset (retention deleted messages the
  group never consumed; `deleted` says how many);
* `beyond-max`: the committed offset is past the end of the queue (lag is negative);
* `no-queue`: the queue has no consume queue directory (min/max/lag are null);
* `no-offset`: a queue of a topic the group consumes, without a committed offset for this queue;
* `no-committed-offset`: a group of subscriptionGroup.json with no committed offset at all (one row,
  topic and queueId null).

Retry topics (`%RETRY%<group>`, POP `%RETRY%<group>_<topic>`) are listed under their group, after its
ordinary topics. Also home of two helpers the query commands share: `committed_offsets` and
`store_time_of` (a record's STORETIMESTAMP without walking the commitlog).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from formats.errors import MqtoolError
from formats.names import BUILTIN_GROUPS, RETRY_PREFIX, SYSTEM_GROUP_PREFIX, escaped_name
from mqtool.tiered.fetch import in_tiered_tree
from mqtool.tiered.ranges import plugin_min_offset
from store.storedir import Store

if TYPE_CHECKING:
    from store.pop.columns import PopColumns

# MixAll's built-in groups: left out of the "no committed offset" rows unless asked for by name.
SYSTEM_GROUPS = BUILTIN_GROUPS
SYSTEM_GROUP_PREFIXES = (SYSTEM_GROUP_PREFIX,)

STATES = ("ok", "behind-min", "beyond-max", "no-queue", "no-offset", "no-committed-offset")


def is_system_group(group: str) -> bool:
    return group in SYSTEM_GROUPS or group.startswith(SYSTEM_GROUP_PREFIXES)


def is_retry_topic(topic: str | None) -> bool:
    return bool(topic) and topic.startswith(RETRY_PREFIX)


def retry_topics(group: str, topic: str) -> set[str]:
    """The group's retry topic and its POP retry topics for `topic` (V1 `_` and V2 `+` separators)."""
    return {RETRY_PREFIX + group, f"{RETRY_PREFIX}{group}_{topic}", f"{RETRY_PREFIX}{group}+{topic}"}


# --- shared helpers ------------------------------------------------------------------------------


def store_time_of(store: Store) -> Callable[[int, int], int]:
    """(phy_offset, size) -> STORETIMESTAMP of the record there, or -1 when no message of that size
    starts there (deleted by retention, outside the files, not a record head).

    Like `CommitLog.pickupStoreTimestamp` but without the commitlog's max offset (which walks the
    last files); instead the record head is checked (`CommitLog.store_time_at`).
    """
    store_time_at = store.commitlog.store_time_at

    def store_time(phy_offset: int, size: int) -> int:
        stamp = store_time_at(phy_offset, size)
        return -1 if stamp is None else stamp

    return store_time


@dataclass
class CommittedOffsets:
    """consumerOffset.json as (topic, queueId) -> {group: offset}, plus how it was loaded."""

    by_queue: dict[tuple[str, int], dict[str, int]] = field(default_factory=dict)
    by_group: dict[str, dict[str, dict[int, int]]] = field(default_factory=dict)  # group -> topic -> q
    notes: list[str] = field(default_factory=list)

    def consumed_by(self, topic: str, queue_id: int, queue_offset: int) -> dict[str, bool]:
        """{group: True when its committed offset is past `queue_offset`} for the message's queue."""
        groups = self.by_queue.get((topic, queue_id), {})
        return {group: offset > queue_offset for group, offset in sorted(groups.items())}


def committed_offsets(store: Store, *, strict: bool = False) -> CommittedOffsets:
    """Load consumerOffset.json as the broker does (.bak fallback). With `strict=False` a file that
    cannot be loaded gives empty tables and a note instead of an error."""
    out = CommittedOffsets()
    lmq = store.layout.lmq
    name = store.layout.consumer_offset_file
    if name != "consumerOffset.json":
        out.notes.append(
            f"offsets from {name}: the store's broker runs with enableLmq ({lmq.source}), whose "
            "LmqConsumerOffsetManager keeps every group's offsets there and never reads consumerOffset.json"
        )
    try:
        loaded = store.config(name).load()
    except MqtoolError as exc:
        if strict:
            raise
        out.notes.append(f"consumer offsets unknown: {exc}")
        return out
    if loaded.source != "file":
        out.notes.append(f"{name}: {loaded.reason}")
    out.notes.extend(loaded.warnings)
    for topic, group, queue_id, offset in loaded.model.entries():
        out.by_queue.setdefault((topic, queue_id), {})[group] = offset
        out.by_group.setdefault(group, {}).setdefault(topic, {})[queue_id] = offset
    return out


# --- consumer progress ---------------------------------------------------------------------------


@dataclass
class ProgressRow:
    """One group/topic/queue of consumer progress (JSON names of notes/json-output.md)."""

    group: str
    topic: str | None
    queue_id: int | None
    consumer_offset: int | None
    min_offset: int | None
    max_offset: int | None
    lag: int | None
    last_consumed_timestamp: int | None
    newest_timestamp: int | None
    state: str
    # a POP group's popped, unacked messages here, as `pop stats` counts them (`PopColumns.queue_counts`):
    # still invisible (in flight) and past their invisible time, not revived yet (overdue); None: no POP group
    pop_in_flight: int | None = None
    pop_overdue: int | None = None
    pop_orderly: bool = False  # the group pops orderly: its offset stays at the first unacked message

    @property
    def lag_with_in_flight(self) -> int | None:
        """`lag` counting a POP group's popped but unacked messages (in flight or overdue) as not consumed;
        an orderly group's lag counts them already."""
        if self.pop_in_flight is None or self.lag is None:
            return None
        if self.pop_orderly:
            return self.lag
        return self.lag + self.pop_in_flight + (self.pop_overdue or 0)

    @property
    def retry(self) -> bool:
        return is_retry_topic(self.topic)

    @property
    def deleted(self) -> int | None:
        """Messages deleted by retention before the group consumed them (state behind-min)."""
        if self.state != "behind-min" or self.min_offset is None or self.consumer_offset is None:
            return None
        return self.min_offset - self.consumer_offset

    def to_json(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "topic": self.topic,
            "queueId": self.queue_id,
            "consumerOffset": self.consumer_offset,
            "minOffset": self.min_offset,
            "maxOffset": self.max_offset,
            "lag": self.lag,
            "lastConsumedTimestamp": self.last_consumed_timestamp,
            "newestTimestamp": self.newest_timestamp,
            "state": self.state,
            "retry": self.retry,
            "deleted": self.deleted,
            "popInFlight": self.pop_in_flight,
            "popOverdue": self.pop_overdue,
            "lagWithInFlight": self.lag_with_in_flight,
        }


@dataclass
class GroupTotal:
    group: str
    topics: int
    queues: int
    lag: int  # sum of the rows' numeric lags (mqadmin's "Consume Diff Total")
    flagged: int  # rows whose state is not ok
    last_consumed_timestamp: int | None

    def to_json(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "topics": self.topics,
            "queues": self.queues,
            "lag": self.lag,
            "flagged": self.flagged,
            "lastConsumedTimestamp": self.last_consumed_timestamp,
        }


@dataclass
class ConsumerProgress:
    rows: list[ProgressRow]
    totals: list[GroupTotal]
    notes: list[str] = field(default_factory=list)


def _load_model(store: Store, name: str, notes: list[str]):
    try:
        loaded = store.config(name).load()
    except MqtoolError as exc:
        notes.append(f"{name} not used: {exc}")
        return None
    if loaded.source != "file":
        notes.append(f"{name}: {loaded.reason}")
    return loaded.model


def _queue_row(
    store: Store, group: str, topic: str, queue_id: int, offset: int | None, store_time, notes: list[str]
) -> ProgressRow:
    """One queue's row, read through the queue of the topic's type (`Store.open_queue`: ConsumeQueue,
    RocksDB or BatchConsumeQueue, whose offsets count messages inside batches). With a tiered tree
    (--tiered, broker.conf) the min offset is what the broker with the plugin answers."""
    if queue_id not in store.queue_ids(topic):
        tiered = _tiered_only_row(store, group, topic, queue_id, offset, notes)
        if tiered is not None:
            return tiered
        state = "no-queue" if offset is not None else "no-offset"
        return ProgressRow(group, topic, queue_id, offset, None, None, None, None, None, state)
    queue = store.open_queue(topic, queue_id)  # closed here: an LMQ store may have 100,000+ queues
    try:

        def time_at(queue_offset: int) -> int | None:
            t = queue.store_time_at(queue_offset, store_time)
            return t if t is not None and t > 0 else None

        low, note = plugin_min_offset(store, topic, queue_id, queue.min_offset)
        if note is not None:
            notes.append(note)
        return _row(group, topic, queue_id, offset, low, queue.max_offset, time_at)
    finally:
        queue.close()


def _tiered_only_row(
    store: Store, group: str, topic: str, queue_id: int, offset: int | None, notes: list[str]
) -> ProgressRow | None:
    """The row of a queue only the tiered tree holds (no local ConsumeQueue): min offset as the broker with
    the plugin answers it (the smaller of the empty local queue's 0 and the tiered minimum), max the
    tiered commit offset consumers are served up to (`mqtool.tiered.fetch`); None when the tree has no
    such queue."""
    if store.tiered is None:
        return None
    from mqtool.tiered.fetch import tiered_queue_ids, tiered_span

    try:
        if queue_id not in tiered_queue_ids(store, topic):
            return None
        queue = store.tiered.queue(topic, queue_id)
        t_min, span = queue.min_offset, tiered_span(store, topic, queue_id)
    except MqtoolError as exc:
        notes.append(f"{topic}/{queue_id}: the tiered store could not say: {exc}")
        return None
    low = min(0, t_min) if t_min >= 0 else 0
    high = span[1] if span is not None else 0
    served = f"consumers are served [{t_min}, {high}) from the tiered store" if high else "nothing is served"
    notes.append(
        f"{topic}/{queue_id}: no local ConsumeQueue: the broker's queue stats answer max offset 0 for it; "
        f"{served}"
    )

    def time_at(queue_offset: int) -> int | None:
        return queue.store_time(queue_offset) if t_min <= queue_offset < high else None

    return _row(group, topic, queue_id, offset, low, high, time_at)


def _row(
    group: str,
    topic: str,
    queue_id: int,
    offset: int | None,
    lo: int,
    hi: int,
    time_at: Callable[[int], int | None],
) -> ProgressRow:
    """One queue's row from its min/max offsets and the store time at a queue offset."""
    newest = time_at(hi - 1) if hi > lo else None
    if offset is None:
        return ProgressRow(group, topic, queue_id, None, lo, hi, None, None, newest, "no-offset")
    state = "ok" if lo <= offset <= hi else ("behind-min" if offset < lo else "beyond-max")
    last = time_at(offset - 1) if offset >= 1 else None
    return ProgressRow(group, topic, queue_id, offset, lo, hi, hi - offset, last, newest, state)


def _topic_order(topic: str | None) -> tuple[int, str]:
    return (1 if is_retry_topic(topic) else 0, topic or "")


def consumer_progress(
    store: Store,
    *,
    group: str | None = None,
    topic: str | None = None,
    queues: Iterable[int] | None = None,
    include_system: bool = False,
    pop: PopColumns | None = None,
) -> ConsumerProgress:
    """Rows for every committed offset in consumerOffset.json (filtered by group/topic), the queues of
    those topics without a committed offset, and the groups of subscriptionGroup.json without any.
    POP groups' popped-but-unacked counts come from `pop` when the caller has it (else read now).

    With `topic`, a group's retry topics are listed along with it; with `queues` too, only those queues
    of the topic (no retry topic). Raises MqtoolError when the group or topic is unknown to the store.
    """
    only_queues = None if queues is None else set(queues)
    notes: list[str] = []
    committed = committed_offsets(store, strict=True)
    notes.extend(committed.notes)
    topics_model = _load_model(store, "topics.json", notes)
    groups_model = _load_model(store, "subscriptionGroup.json", notes)
    topic_configs = topics_model.topic_config_table if topics_model is not None else {}
    known_groups = set(groups_model.subscription_group_table) if groups_model is not None else set()
    cq_topics = set(store.consume_queues.topics()) | set(store.batch_consume_queues.topics())

    if group is not None and group not in committed.by_group and group not in known_groups:
        raise MqtoolError(
            f"unknown consumer group {group!r}: not in consumerOffset.json nor subscriptionGroup.json"
        )
    committed_topics = {t for topics in committed.by_group.values() for t in topics}
    if (
        topic is not None
        and topic not in cq_topics | set(topic_configs) | committed_topics
        and not in_tiered_tree(store, topic)
    ):
        raise MqtoolError(
            f"unknown topic {escaped_name(topic)}: no consume queue, topic config or committed offset"
        )

    store_time = store_time_of(store)
    rows: list[ProgressRow] = []
    for g in sorted(committed.by_group):
        if group is not None and g != group:
            continue
        topics = committed.by_group[g]
        if topic is not None:
            if topic not in topics:
                continue
            retries = retry_topics(g, topic) if only_queues is None else ()
            chosen = [t for t in topics if t == topic or t in retries]
        else:
            chosen = list(topics)
        for t in sorted(chosen, key=_topic_order):
            offsets = topics[t]
            queue_ids = set(offsets) | set(store.queue_ids(t))
            config = topic_configs.get(t)
            if config is not None:
                queue_ids |= set(range(max(config.read_queue_nums, 0)))
            if only_queues is not None:
                queue_ids &= only_queues
            for q in sorted(queue_ids):
                rows.append(_queue_row(store, g, t, q, offsets.get(q), store_time, notes))
    if topic is None:
        for g in sorted(known_groups - set(committed.by_group)):
            if group is not None and g != group:
                continue
            if group is None and not include_system and is_system_group(g):
                continue
            rows.append(ProgressRow(g, None, None, None, None, None, None, None, None, "no-committed-offset"))
    _mark_pop_groups(store, rows, notes, pop)
    return ConsumerProgress(rows, _totals(rows), notes)


def _mark_pop_groups(store: Store, rows: list[ProgressRow], notes: list[str], pop: PopColumns | None) -> None:
    """POP groups (checkpoints in the revive topic, orderly pops, kvStore records): each of their rows gets
    what the group holds there as `pop stats` counts it (`PopColumns.queue_counts`: in flight, overdue),
    and the table one note per kind of group: a POP group's offset moves at pop time, so `lag` counts popped
    messages as consumed; an orderly group's stays at the first unacked message, so `lag` counts them."""
    from mqtool.timeparse import now_ms
    from store.pop.columns import PopCounts, pop_columns

    if pop is None:
        pop = pop_columns(store, now=now_ms())
    counts = pop.queue_counts()
    groups = pop.group_counts()
    for r in rows:
        if r.group in groups and r.topic is not None and r.queue_id is not None:
            held = counts.get((r.group, r.topic, r.queue_id), PopCounts())
            r.pop_in_flight, r.pop_overdue = held.in_flight, held.overdue
            r.pop_orderly = groups[r.group].orderly
    shown = {r.group for r in rows}
    popping = sorted(g for g, c in groups.items() if g in shown and c.popped and not c.orderly)
    orderly = sorted(g for g, c in groups.items() if g in shown and c.popped and c.orderly)
    if popping:
        notes.append(
            f"POP groups ({_names(popping)}): the offset moves when messages are popped, so lag counts "
            "popped messages as consumed; popInFlight and popOverdue are popped and not acked yet (still "
            "invisible, or past their invisible time and not revived): mqtool pop list --group G"
        )
    if orderly:
        notes.append(
            f"orderly POP groups ({_names(orderly)}): the offset stays at the first unacked message, so lag "
            "already counts popped and unacked messages (popInFlight, popOverdue) as not consumed"
        )


def _names(groups: list[str]) -> str:
    shown = ", ".join(groups[:8])
    return shown + (f" and {len(groups) - 8} more" if len(groups) > 8 else "")


def _totals(rows: list[ProgressRow]) -> list[GroupTotal]:
    totals: list[GroupTotal] = []
    by_group: dict[str, list[ProgressRow]] = {}
    for row in rows:
        by_group.setdefault(row.group, []).append(row)
    for g, group_rows in by_group.items():
        queues = [r for r in group_rows if r.queue_id is not None]
        times = [r.last_consumed_timestamp for r in group_rows if r.last_consumed_timestamp]
        totals.append(
            GroupTotal(
                group=g,
                topics=len({r.topic for r in queues}),
                queues=len(queues),
                lag=sum(r.lag for r in group_rows if r.lag is not None),
                flagged=sum(1 for r in group_rows if r.state != "ok"),
                last_consumed_timestamp=max(times) if times else None,
            )
        )
    return totals


# --- rendering -----------------------------------------------------------------------------------
