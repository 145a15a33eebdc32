"""The topics a store knows, and the check every query makes of the topic it is given.

A topic is known when it has a consume queue (or a BatchConsumeQueue), a topic config, a committed offset,
is a group's retry or DLQ topic, or is one of the broker's system topics. Nothing here writes into the store.
"""

from __future__ import annotations

import weakref

from formats.errors import MqtoolError
from formats.names import SCHEDULE_TOPIC, TIMER_TOPIC, TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC, escaped_name
from store.storedir import Store


class UnknownTopicError(MqtoolError):
    """A topic that has no consume queue, no topic config and no committed offset in this store."""


SYSTEM_TOPICS = (TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC, SCHEDULE_TOPIC, TIMER_TOPIC)


def _config_model(store: Store, name: str):
    try:
        return store.config(name).load().model
    except MqtoolError:
        return None


_KNOWN_TOPICS: weakref.WeakKeyDictionary[Store, list[str]] = weakref.WeakKeyDictionary()


def known_topics(store: Store) -> list[str]:
    """Topics the store knows: consume queue directories, topics.json, the groups' retry/DLQ topics,
    topics of consumerOffset.json, and the broker's system topics (computed once per open store)."""
    cached = _KNOWN_TOPICS.get(store)
    if cached is None:
        cached = _KNOWN_TOPICS[store] = _known_topics(store)
    return cached


def _known_topics(store: Store) -> list[str]:
    topics = set(store.consume_queues.topics()) | set(store.batch_consume_queues.topics())
    model = _config_model(store, "topics.json")
    if model is not None:
        topics.update(model.topic_config_table)
    groups: set[str] = set()
    model = _config_model(store, "subscriptionGroup.json")
    if model is not None:
        groups.update(model.subscription_group_table)
    model = _config_model(store, store.layout.consumer_offset_file)
    if model is not None:
        for topic, group, _, _ in model.entries():
            topics.add(topic)
            groups.add(group)
    for group in groups:
        topics.update((f"%RETRY%{group}", f"%DLQ%{group}"))
    topics.update(SYSTEM_TOPICS)
    return sorted(topics)


def is_known_topic(store: Store, topic: str) -> bool:
    """The store knows `topic` (see known_topics), or its tiered tree has queues of it (--tiered)."""
    from mqtool.tiered.fetch import in_tiered_tree

    return bool(store.queue_ids(topic)) or topic in known_topics(store) or in_tiered_tree(store, topic)


def check_topic(store: Store, topic: str) -> None:
    """Raise UnknownTopicError unless the store knows `topic`. A topic the broker deleted (deleteTopic drops
    its config, offsets and queues) still has its messages in the commitlog until retention: the error
    points at `--scan`, which searches the commitlog itself (the query commands that have it)."""
    if not is_known_topic(store, topic):
        raise UnknownTopicError(
            f"unknown topic {escaped_name(topic)}: no consume queue, topic config or committed offset in "
            "this store (a deleted topic's messages stay in the commitlog until retention: --scan searches "
            "it)",
            str(store.root),
        )


def unknown_topic_note(topic: str, found: int, start: int, end: int) -> str:
    """What a scan of the commitlog told about a topic the store does not know otherwise."""
    head = (
        f"topic {topic} is not in this store's topic configs, consume queues or committed offsets (deleted, "
        "or never created here)"
    )
    where = f"in the commitlog from {start} to {end}"
    if found:
        return f"{head}: {found} message(s) of {topic} {where}"
    return f"{head}, and there is no message of {topic} {where} either: check the name"
