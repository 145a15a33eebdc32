"""Whether each consumer group consumed a found message, and why: `mqtool query`'s `consumedBy` and
`consumedReason`, from the store alone.

A group consumed a message when its committed offset on the message's queue is past the message's queue
offset (mqadmin's `DefaultMQAdminExtImpl.consumed`: consumerOffset > queueOffset). The reason gives the two
figures ("offset 254 < 341"), and, where the store records the group's subscription
(`store.broker.subscription`), whether the message's tag passes it: a consumed message whose tag does not was
skipped, never seen by the consumer ("filtered: tag tag3 not in subscription "tag0 || tag1"", mqadmin's
CONSUMED_BUT_FILTERED). Where the store records no subscription it says so instead of claiming delivery.

A copy in a group's retry or dead-letter topic (`%RETRY%G`, POP's `%RETRY%G_T` / `%RETRY%G+T`, `%DLQ%G`) is
about group G: its reason names the original (`ORIGIN_MESSAGE_ID` from `RETRY_TOPIC`) and the reconsume
count, and a dead letter without a committed offset is said to be one no consumer reads.
"""

from __future__ import annotations

from dataclasses import dataclass

from formats.message.commitlog import Message
from formats.names import DLQ_PREFIX, RETRY_PREFIX
from mqtool.offsets.progress import CommittedOffsets, committed_offsets
from store.broker.subscription import Subscriptions, store_subscriptions
from store.storedir import Store

ORIGIN_MESSAGE_ID = "ORIGIN_MESSAGE_ID"  # MessageConst.PROPERTY_ORIGIN_MESSAGE_ID
RETRY_TOPIC = "RETRY_TOPIC"  # MessageConst.PROPERTY_RETRY_TOPIC


@dataclass(frozen=True)
class Verdict:
    """One group's answer for one message."""

    # consumed | not-consumed | filtered (consumed, never seen) | dead-letter (no consumer reads it)
    state: str
    reason: str


@dataclass
class ConsumerState:
    """What the store says about its consumers: committed offsets and recorded subscriptions."""

    committed: CommittedOffsets
    subscriptions: Subscriptions

    @property
    def notes(self) -> list[str]:
        return [*self.committed.notes, *self.subscriptions.notes]

    def consumed_by(self, msg: Message) -> dict[str, bool]:
        """{group: its committed offset is past the message} for every group with an offset on its queue."""
        return self.committed.consumed_by(msg.topic, msg.queue_id, msg.queue_offset)

    def verdicts(self, msg: Message) -> dict[str, Verdict]:
        """{group: whether and why it consumed the message}: every group of `consumed_by`, and the group
        whose retry or dead-letter copy the message is."""
        offsets = self.committed.by_queue.get((msg.topic, msg.queue_id), {})
        verdicts = {group: self._verdict(msg, group, offset) for group, offset in sorted(offsets.items())}
        owner = self._owner(msg.topic)
        if owner is not None:
            kind, group = owner
            copy = _copy_text(msg, kind, group)
            if group in verdicts:
                verdicts[group] = Verdict(verdicts[group].state, f"{copy}; {verdicts[group].reason}")
            elif kind == "dead letter":
                reason = f"{copy}; no committed offset on {msg.topic}: no consumer reads it"
                verdicts[group] = Verdict("dead-letter", reason)
            else:
                reason = f"{copy}; not consumed: no committed offset on {msg.topic}"
                verdicts[group] = Verdict("not-consumed", reason)
        return verdicts

    def _verdict(self, msg: Message, group: str, offset: int) -> Verdict:
        q = msg.queue_offset
        figures = f"offset {offset} {'>' if offset > q else '<' if offset < q else '='} {q}"
        state = "consumed" if offset > q else "not-consumed"
        plain = f"{'consumed' if offset > q else 'not consumed'}: {figures}"
        if msg.topic.startswith((RETRY_PREFIX, DLQ_PREFIX)):
            # consumers subscribe to their retry topic with `*`; a dead letter has no subscription
            return Verdict(state, plain)
        sub = self.subscriptions.get(group, msg.topic)
        if sub is None:
            return Verdict(state, f"{plain}; subscription unknown" if offset > q else plain)
        passes = sub.passes(msg.tags)
        if passes is None and sub.is_tag:  # FilterAPI refuses the expression: no consumer holds it
            return Verdict(
                state, f'{plain}; subscription "{sub.expression}" ({sub.source}) is no tag expression'
            )
        if passes is None:
            where = f'{sub.expression_type} "{sub.expression}" ({sub.source}), not evaluated'
            return Verdict(state, f"{plain}; subscription is {where}")
        if passes:
            return Verdict(state, plain)
        quoted = f'subscription "{sub.expression}"'
        verdict = f"tag {msg.tags} not in {quoted}" if msg.tags is not None else f"no tag, {quoted}"
        if offset > q:
            return Verdict("filtered", f"filtered: {verdict} ({figures})")
        return Verdict(state, f"{plain}; will be filtered: {verdict}")

    def _owner(self, topic: str) -> tuple[str, str] | None:
        """(kind, group) of a retry or dead-letter topic; None for any other topic."""
        if topic.startswith(DLQ_PREFIX):
            return "dead letter", topic[len(DLQ_PREFIX) :]
        if not topic.startswith(RETRY_PREFIX):
            return None
        rest = topic[len(RETRY_PREFIX) :]
        if "+" in rest:  # POP retry topic V2: %RETRY%group+topic ('+' is in no group or topic name)
            return "POP retry", rest.split("+", 1)[0]
        groups = self.subscriptions.groups | set(self.committed.by_group)
        if rest in groups:
            return "retry", rest
        pop_v1 = [g for g in groups if rest.startswith(g + "_")]  # %RETRY%group_topic
        if pop_v1:
            return "POP retry", max(pop_v1, key=len)
        return "retry", rest


def _copy_text(msg: Message, kind: str, group: str) -> str:
    props = msg.properties
    origin = props.get(ORIGIN_MESSAGE_ID)
    source = props.get(RETRY_TOPIC)
    of = f" of {origin}" if origin else ""
    from_topic = f" from {source}" if source else ""
    times = f"{'after ' if kind == 'dead letter' else ''}{msg.reconsume_times} reconsumes"
    return f"{kind} copy{of}{from_topic} for {group} ({times})"


def consumer_state(store: Store) -> ConsumerState:
    """Committed offsets (consumerOffset.json, as the broker loads it) and recorded subscriptions; files that
    cannot be read leave notes, not errors."""
    return ConsumerState(committed_offsets(store), store_subscriptions(store))
