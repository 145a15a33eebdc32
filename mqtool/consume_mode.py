"""Consume mode per topic and group (`mqtool consume-mode`): messageRequestMode.json, PULL or POP (5.x).

`consume_modes` shows what the broker would answer to QUERY_ASSIGNMENT: the stored entry, else the
default PULL (`MessageRequestModeManager`, `SetConsumeModeSubCommand`), with the retry topics that apply —
`%RETRY%<group>` for
PULL, the POP retry topic `%RETRY%<group>_<topic>` (and the V2 `%RETRY%<group>+<topic>` when the store
has it) for POP (`KeyBuilder.buildPopRetryTopic`) — and how many messages wait in them for the group.

`set_consume_mode` does what `mqadmin setConsumeMode` makes the broker do (refuse `%RETRY%` topics,
unknown topics and groups; store {topic, consumerGroup, mode, popShareQueueNum}; persist the file),
offline, under the write safety rules (`mqtool.safety`); 4.9.x has no such switch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from formats.config.base import JAVA_INT_MAX, JAVA_INT_MIN
from formats.config.metadata import MessageRequestModeTable
from formats.errors import MqtoolError
from formats.names import DLQ_PREFIX, RETRY_PREFIX, pop_retry_topic, pull_retry_topic
from mqtool.offsets.apply import check_writable
from mqtool.offsets.progress import is_system_group
from mqtool.offsets.reset import StoreCatalog
from mqtool.safety import refuse_unsupported_layout, warn, write_guard
from store.storedir import Store
from store.version import BrokerVersion

REQUEST_MODE_FILE = "messageRequestMode.json"
MODES = ("PULL", "POP")
DEFAULT_MODE = "PULL"  # BrokerConfig.defaultMessageRequestMode


class ConsumeModeError(MqtoolError):
    """A consume-mode change the broker would refuse, or one this store cannot take."""


@dataclass
class RetryTopicState:
    """A retry topic that applies to a group, and the messages in it the group has not consumed."""

    topic: str
    kind: str  # "pull", "pop" (V1) or "pop-v2"
    exists: bool
    messages_waiting: int
    read_in_mode: bool = True  # False: the other mode's retry topic, which this mode's consumers never read

    def to_dict(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "kind": self.kind,
            "exists": self.exists,
            "messagesWaiting": self.messages_waiting,
            "readInMode": self.read_in_mode,
        }


@dataclass
class ConsumeModeRow:
    """The mode the broker would use for (topic, group), and its retry topics."""

    topic: str
    group: str
    mode: str
    pop_share_queue_num: int
    source: str  # "file" or "default"
    retry_topics: list[RetryTopicState] = field(default_factory=list)
    note: str | None = None

    @property
    def retry_messages_waiting(self) -> int:
        return sum(r.messages_waiting for r in self.retry_topics)

    def to_dict(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "group": self.group,
            "mode": self.mode,
            "popShareQueueNum": self.pop_share_queue_num,
            "source": self.source,
            "retryTopics": [r.to_dict() for r in self.retry_topics],
            "retryMessagesWaiting": self.retry_messages_waiting,
            "note": self.note,
        }


@dataclass
class ConsumeModes:
    """The rows of `consume_modes` and what to know about them."""

    rows: list[ConsumeModeRow]
    broker_version: BrokerVersion
    notes: list[str] = field(default_factory=list)


class _Context:
    """Loaded tables and queue lookups shared by the rows of one answer."""

    def __init__(self, store: Store, catalog: StoreCatalog) -> None:
        self.store = store
        self.catalog = catalog

    def topic_exists(self, topic: str) -> bool:
        return self.catalog.topic_config(topic) is not None or bool(
            self.store.consume_queues.queue_ids(topic)
        )

    def waiting(self, topic: str, group: str) -> int:
        """Sum over the topic's queues of maxOffset - the group's offset (from the min offset when
        the group has none, or when retention deleted past it)."""
        config = self.catalog.topic_config(topic)
        queues = set(self.store.consume_queues.queue_ids(topic))
        if config is not None:
            queues.update(range(max(0, config.read_queue_nums)))
        committed = self.catalog.committed(topic, group)
        total = 0
        for queue_id in sorted(queues):
            cq = self.store.consume_queue(topic, queue_id)
            low, high = cq.min_offset, cq.max_offset
            start = committed.get(queue_id)
            start = low if start is None else max(start, low)
            total += max(0, high - start)
        return total

    def retry_state(self, topic: str, group: str, kind: str) -> RetryTopicState:
        exists = self.topic_exists(topic)
        return RetryTopicState(topic, kind, exists, self.waiting(topic, group) if exists else 0)

    def mode_retry_topics(self, topic: str, group: str, mode: str) -> list[RetryTopicState]:
        """The retry topics a consumer of `mode` reads: `%RETRY%group` (PULL), the POP retry topic V1 and,
        when it exists, V2 (POP)."""
        if mode != "POP":
            return [self.retry_state(pull_retry_topic(group), group, "pull")]
        states = [self.retry_state(pop_retry_topic(topic, group), group, "pop")]
        v2 = pop_retry_topic(topic, group, v2=True)
        if self.topic_exists(v2):
            states.append(self.retry_state(v2, group, "pop-v2"))
        return states

    def retry_topics(self, topic: str, group: str, mode: str) -> list[RetryTopicState]:
        """The mode's retry topics, then the other mode's that still hold messages for the group: after a
        switch nobody reads those (a POP consumer never reads `%RETRY%group`, a PULL one never the POP
        retry topics), so they must be consumed in the old mode or they are lost."""
        if topic.startswith((RETRY_PREFIX, DLQ_PREFIX)):
            return []
        states = self.mode_retry_topics(topic, group, mode)
        other = self.mode_retry_topics(topic, group, "PULL" if mode == "POP" else "POP")
        for s in other:
            if s.exists and s.messages_waiting:
                s.read_in_mode = False
                states.append(s)
        return states


def _row_note(topic: str, source: str, mode: str, retry: list[RetryTopicState]) -> str | None:
    left = [r for r in retry if not r.read_in_mode]
    if left:
        other = "PULL" if mode == "POP" else "POP"
        where = ", ".join(f"{r.topic} ({r.messages_waiting})" for r in left)
        note = (
            f"messages wait where only {other} consumers read: {where}; a {mode} consumer of this group "
            f"never reads them: consume them in {other} mode or they are lost"
        )
        if source == "default":
            note += " (5.x SimpleConsumers and proxy clients pop whatever messageRequestMode.json says)"
        return note
    if topic.startswith(RETRY_PREFIX):
        if source == "file":
            return "a retry topic: setConsumeMode refuses to set it, but the broker uses this stored entry"
        return "a retry topic: always PULL unless the file says otherwise"
    return None


def consume_modes(
    store: Store, group: str | None = None, topic: str | None = None, *, broker_version: int | None = None
) -> ConsumeModes:
    """Rows for every entry of messageRequestMode.json and every topic@group of consumerOffset.json
    (defaults, PULL), filtered by group/topic; a named pair without either gets its default row."""
    catalog = StoreCatalog.load(store)
    version = store.layout.broker_version(broker_version)
    ctx = _Context(store, catalog)
    out = ConsumeModes([], version, list(catalog.notes))
    table = MessageRequestModeTable()
    if not version.has_consume_mode_switch:
        out.notes.append("4.9.x broker: there is no consume-mode switch, every consumer pulls (PULL)")
    else:
        loaded = store.config(REQUEST_MODE_FILE).load()
        table = loaded.model
        if loaded.source != "file":
            out.notes.append(f"{REQUEST_MODE_FILE}: {loaded.reason}")
        out.notes.extend(loaded.warnings)
    pairs: dict[tuple[str, str], tuple[str, int, str]] = {}
    for t, groups in table.message_request_mode_map.items():
        for g, body in groups.items():
            pairs[(t, g)] = (body.mode, body.pop_share_queue_num, "file")
    for t, g, _, _ in catalog.offsets.entries():
        if (t, g) in pairs or t.startswith((RETRY_PREFIX, DLQ_PREFIX)) or "@" in g or is_system_group(g):
            continue
        pairs[(t, g)] = (DEFAULT_MODE, 0, "default")
    if group is not None and topic is not None and (topic, group) not in pairs:
        pairs[(topic, group)] = (DEFAULT_MODE, 0, "default")
    for (t, g), (mode, share, source) in pairs.items():
        if (group is not None and g != group) or (topic is not None and t != topic):
            continue
        retry = ctx.retry_topics(t, g, mode)
        row = ConsumeModeRow(t, g, mode, share, source, retry, _row_note(t, source, mode, retry))
        out.rows.append(row)
    out.rows.sort(key=lambda r: (r.group, r.topic.startswith(RETRY_PREFIX), r.topic))
    return out


# --- set ---------------------------------------------------------------------------------------------


@dataclass
class ConsumeModeChange:
    """A planned (and, once applied, done) setConsumeMode."""

    topic: str
    group: str
    mode_before: str
    pop_share_queue_num_before: int
    source_before: str
    mode: str
    pop_share_queue_num: int
    broker_version: BrokerVersion
    warnings: list[str] = field(default_factory=list)
    executed: bool = False
    after: ConsumeModes | None = None

    @property
    def changed(self) -> bool:
        return self.source_before != "file" or (self.mode_before, self.pop_share_queue_num_before) != (
            self.mode,
            self.pop_share_queue_num,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "group": self.group,
            "modeBefore": self.mode_before,
            "popShareQueueNumBefore": self.pop_share_queue_num_before,
            "sourceBefore": self.source_before,
            "mode": self.mode,
            "popShareQueueNum": self.pop_share_queue_num,
            "changed": self.changed,
            "executed": self.executed,
            "after": None if self.after is None else [r.to_dict() for r in self.after.rows],
        }


def plan_consume_mode(
    store: Store,
    topic: str,
    group: str,
    mode: str,
    pop_share_queue_num: int = 0,
    *,
    broker_version: int | None = None,
    allow_new_group: bool = False,
) -> ConsumeModeChange:
    """Check a setConsumeMode as the 5.x broker does and say what would change. Read-only."""
    refuse_unsupported_layout(store, "config")
    catalog = StoreCatalog.load(store)
    version = store.layout.broker_version(broker_version)
    if not version.has_consume_mode_switch:
        raise ConsumeModeError(
            f"this store is from a 4.9.x broker ({version.reason}): 4.9 has no consume-mode switch "
            "(messageRequestMode.json and setConsumeMode are 5.x only); use --broker-version 5 if the broker "
            "is 5.x"
        )
    wanted = mode.upper()
    if wanted not in MODES:
        raise ConsumeModeError(f"--mode must be PULL or POP, not {mode!r}")
    if not JAVA_INT_MIN <= pop_share_queue_num <= JAVA_INT_MAX:
        raise ConsumeModeError(f"--pop-share-queue-num {pop_share_queue_num} overflows Java int")
    if not topic or not group:
        raise ConsumeModeError("--topic and --group are required")
    if topic.startswith(RETRY_PREFIX):
        raise ConsumeModeError(
            f"retry topic is not allowed to set mode: {topic} (the broker answers NO_PERMISSION)"
        )
    if catalog.topic_config(topic) is None:
        raise ConsumeModeError(f"topic[{topic}] not exist: it is not in topics.json (TOPIC_NOT_EXIST)")
    warnings = list(catalog.notes)
    if not catalog.group_exists(group):
        if not allow_new_group:
            raise ConsumeModeError(
                f"subscription group does not exist: {group} is not in subscriptionGroup.json "
                "(--allow-new-group sets it anyway; a broker with autoCreateSubscriptionGroup=true "
                "creates it)"
            )
        warnings.append(f"consumer group {group} is not in subscriptionGroup.json")
    current = consume_modes(store, group, topic, broker_version=5)
    before = next(r for r in current.rows if r.topic == topic and r.group == group)
    change = ConsumeModeChange(
        topic,
        group,
        before.mode,
        before.pop_share_queue_num,
        before.source,
        wanted,
        pop_share_queue_num,
        version,
        warnings,
    )
    if before.mode != wanted:
        ctx = _Context(store, catalog)
        for state in before.retry_topics:
            if state.messages_waiting and state.read_in_mode:
                warnings.append(
                    f"{_messages(state.messages_waiting)} in {state.topic}, the {before.mode} retry "
                    f"topic; in {wanted} mode new retries go to "
                    + ", ".join(s.topic for s in ctx.mode_retry_topics(topic, group, wanted))
                )
    return change


def _messages(n: int) -> str:
    return "1 message waits" if n == 1 else f"{n} messages wait"


def apply_consume_mode(
    store: Store, change: ConsumeModeChange, execute: bool, *, note: Callable[[str], None] = warn
) -> ConsumeModeChange:
    """Write the change into messageRequestMode.json (created if absent), then read the state back."""
    config = store.config(REQUEST_MODE_FILE)
    with write_guard(store, execute, note=note, touches="config") as may_write:
        if not may_write or not change.changed:
            return change
        loaded = config.load()
        check_writable(loaded)
        table: MessageRequestModeTable = loaded.model
        table.set_mode(change.topic, change.group, change.mode, change.pop_share_queue_num)
        config.save(table)
        change.executed = True
        change.after = consume_modes(store, change.group, change.topic, broker_version=5)
    row = change.after.rows[0] if change.after.rows else None
    if row is None or (row.mode, row.pop_share_queue_num, row.source) != (
        change.mode,
        change.pop_share_queue_num,
        "file",
    ):
        raise MqtoolError("read-back of the written file does not show the new mode", str(config.path))
    return change


def set_consume_mode(
    store: Store,
    topic: str,
    group: str,
    mode: str,
    pop_share_queue_num: int = 0,
    execute: bool = False,
    *,
    broker_version: int | None = None,
    allow_new_group: bool = False,
    note: Callable[[str], None] = warn,
) -> ConsumeModeChange:
    """`mqadmin setConsumeMode`, offline: plan, then write when `execute` (see the module doc)."""
    change = plan_consume_mode(
        store,
        topic,
        group,
        mode,
        pop_share_queue_num,
        broker_version=broker_version,
        allow_new_group=allow_new_group,
    )
    return apply_consume_mode(store, change, execute, note=note)


# --- rendering ---------------------------------------------------------------------------------------


__all__ = [
    "ConsumeModeChange",
    "ConsumeModeError",
    "ConsumeModeRow",
    "ConsumeModes",
    "RetryTopicState",
    "apply_consume_mode",
    "consume_modes",
    "plan_consume_mode",
    "set_consume_mode",
]
