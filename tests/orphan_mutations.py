"""Topic config edits that leave orphan consume queues behind, each on a copy of a golden store: what an
operator's `deleteTopic` or `updateTopic` with fewer queues leaves when the queues stay on disk
(tests/oracle/orphans_cases.py records what the real broker's cleanUnusedTopic does after each;
tests/test_orphans.py replays them)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path


def _edit_topics(root: Path, edit: Callable[[dict], None]) -> None:
    """Apply `edit` to the topicConfigTable of topics.json and of its .bak (the broker falls back to it)."""
    for name in ("topics.json", "topics.json.bak"):
        path = root / "config" / name
        if path.exists():
            doc = json.loads(path.read_text(encoding="utf-8"))
            edit(doc["topicConfigTable"])
            path.write_text(json.dumps(doc, indent=1), encoding="utf-8")


def topic_deleted(root: Path) -> None:
    """OrderTopic deleted from the topic config; its queues stay."""
    _edit_topics(root, lambda t: t.pop("OrderTopic"))


def retry_topic_deleted(root: Path) -> None:
    """A group's retry topic deleted (not a system topic: cleanUnusedTopic deletes its queue too)."""
    _edit_topics(root, lambda t: t.pop("%RETRY%groupA"))


def topic_shrunk(root: Path) -> None:
    """TopicTest shrunk from 4 queues to 2, and OrderTopic deleted."""

    def edit(table: dict) -> None:
        table.pop("OrderTopic")
        table["TopicTest"]["readQueueNums"] = table["TopicTest"]["writeQueueNums"] = 2

    _edit_topics(root, edit)


MUTATIONS: dict[str, Callable[[Path], None]] = {
    "topic-deleted": topic_deleted,
    "retry-topic-deleted": retry_topic_deleted,
    "topic-shrunk": topic_shrunk,
}
