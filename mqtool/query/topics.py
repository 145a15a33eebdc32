"""The topics a store knows, and the check every query makes of the topic it is given.

A topic is known when it has a consume queue, a topic config, a committed offset, is a group's retry or DLQ
topic, or is one of the broker's system topics. Nothing here writes into the store.
"""

from __future__ import annotations

import weakref

from formats.errors import MqtoolError
from formats.names import SCHEDULE_TOPIC, TIMER_TOPIC, TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC
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
    topics = set(store.consume_queues.topics())
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


def check_topic(store: Store, topic: str) -> None:
    """Raise UnknownTopicError unless the store knows `topic` (see known_topics)."""
    if topic in store.consume_queues.topics():
        return
    if topic not in known_topics(store):
        raise UnknownTopicError(
            f"unknown topic {topic!r}: no consume queue, topic config or committed offset in this store",
            str(store.root),
        )
