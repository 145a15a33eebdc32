"""`mqtool query key` over several stores (`--store` repeated, a directory of stores, URLs; worker processes,
or Spark tasks with `--spark`): `mqtool.query.key.query_by_key` run on each store on its own, each message
with the groups whose committed offsets passed it in that store. A store that cannot be read is reported
and the others answer.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from formats.errors import MqtoolError
from formats.message.commitlog import Message
from mqtool.trace.fleet import Runner, expand_locations, label_of, layout_notes, process_runner


@dataclass(frozen=True)
class KeyLookup:
    """One store's task (picklable: it travels to worker processes and executors)."""

    location: str
    topic: str
    key: str
    begin: int
    end: int
    max_num: int | None = None
    broker_config: str | None = None


@dataclass
class StoreKeyResult:
    store: str
    messages: list[Message] = field(default_factory=list)
    consumed: list[dict[str, bool]] = field(default_factory=list)  # per message: group -> offset past it
    notes: list[str] = field(default_factory=list)
    error: str | None = None
    seconds: float = 0.0


def run_key_lookup(task: KeyLookup) -> StoreKeyResult:
    from mqtool.offsets.progress import committed_offsets
    from mqtool.query.key import query_by_key
    from mqtool.query.topics import UnknownTopicError
    from store.config.brokerconf import load_broker_config
    from store.storedir import Store

    started = time.perf_counter()
    out = StoreKeyResult(label_of(task.location))
    try:
        config = load_broker_config(Path(task.broker_config)) if task.broker_config else None
        with Store.open_location(task.location, config) as store:
            out.notes += layout_notes(store)
            try:
                result = query_by_key(
                    store, task.topic, task.key, begin=task.begin, end=task.end, max_num=task.max_num
                )
            except UnknownTopicError as exc:
                out.notes.append(str(exc))
            else:
                committed = committed_offsets(store)
                out.messages = result.messages
                out.consumed = [
                    committed.consumed_by(m.topic, m.queue_id, m.queue_offset) for m in result.messages
                ]
                out.notes = result.notes() + committed.notes
    except (MqtoolError, OSError) as exc:
        out.error = str(exc)
    out.seconds = time.perf_counter() - started
    return out


def query_key_stores(
    stores: list[str | Path],
    topic: str,
    key: str,
    *,
    begin: int,
    end: int,
    max_num: int | None = None,
    broker_config: Path | None = None,
    runner: Runner | None = None,
    workers: int = 2,
) -> list[StoreKeyResult]:
    """Each store's answer, in the order of the stores; raises when none can be read."""
    if not key:
        raise MqtoolError("empty key")
    locations = expand_locations(stores)
    config = None if broker_config is None else str(broker_config)
    tasks = [KeyLookup(str(loc), topic, key, begin, end, max_num, config) for loc in locations]
    results = (runner or process_runner(workers))(run_key_lookup, tasks)
    if results and all(r.error for r in results):
        if len(results) == 1:
            raise MqtoolError(results[0].error or "the store cannot be read")
        raise MqtoolError("no store could be read: " + "; ".join(f"{r.store}: {r.error}" for r in results))
    return results


def documents(results: list[StoreKeyResult], body_limit: int | None) -> list[dict[str, Any]]:
    """The messages of every store as `query`'s message documents, each with its store."""
    from mqtool.query.view import message_document

    docs = []
    for r in results:
        for msg, consumed in zip(r.messages, r.consumed, strict=True):
            doc = {"store": r.store, **message_document(msg, None, body_limit=body_limit)}
            doc["consumedBy"] = consumed
            docs.append(doc)
    return docs
