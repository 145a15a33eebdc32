"""The stores of a trace query and the lookups run over them: `--store` given several times, a directory
whose subdirectories are broker stores, URLs (read through `store.io.remote`, as the audit reads them).

Each store is looked up on its own (`mqtool.trace.lookup.lookup_store`) - in this process for one store, in
worker processes for several (the lookups are Python work: threads would share one core), or as Spark
tasks (`mqtool.trace.spark`). A store that cannot be opened or read is reported in the answer and the others
are used. When one store resolves the query to a UNIQ_KEY the others were not asked about (an offsetMsgId,
a key), a second round asks them for it: the trace records of a message usually sit on another broker.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from formats.errors import MqtoolError
from mqtool.trace.lookup import StoreFindings, lookup_store
from mqtool.trace.timeline import TraceReport, join
from store.io.remote import is_url, redact

STORE_MARKERS = ("commitlog", "consumequeue", "index", "config")


class TraceQueryError(MqtoolError):
    """A trace query that cannot run as asked."""


def is_store_dir(path: Path) -> bool:
    return path.is_dir() and any((path / m).is_dir() for m in STORE_MARKERS)


def expand_locations(given: Iterable[str | Path]) -> list[str | Path]:
    """Each store given; a local directory that is not a store itself but holds stores stands for them (its
    subdirectories that are stores, by name). Order kept, repeats dropped."""
    out: list[str | Path] = []
    for g in given:
        if is_url(g):
            out.append(str(g))
            continue
        path = Path(g).expanduser()
        if path.is_dir() and not is_store_dir(path):
            children = sorted(p for p in path.iterdir() if is_store_dir(p))
            if children:
                out.extend(children)
                continue
        out.append(path)
    seen: set[str] = set()
    unique = []
    for loc in out:
        key = str(loc) if is_url(loc) else str(Path(loc).resolve())
        if key not in seen:
            seen.add(key)
            unique.append(loc)
    return unique


def label_of(location: str | Path) -> str:
    return redact(str(location)) if is_url(location) else str(location)


@dataclass(frozen=True)
class Lookup:
    """One store's task: what to look up there (picklable: it travels to worker processes and executors)."""

    location: str
    msg_id: str | None = None
    key: str | None = None
    topic: str | None = None
    ids: tuple[str, ...] | None = None
    now: int | None = None
    extra_topics: tuple[str, ...] = ()
    broker_config: str | None = None


def layout_notes(store) -> list[str]:
    """The parts of the store's layout mqtool does not read exactly (as every command warns of them)."""
    return [
        f"this store has a {p.name} ({p.evidence}), which mqtool does not read exactly: {p.note}"
        for p in store.layout.kind.unsupported_reads()
    ]


def run_lookup(task: Lookup) -> StoreFindings:
    """Open the store and look the query up; a store that cannot be read gives findings with its error."""
    from store.config.brokerconf import load_broker_config
    from store.storedir import Store

    started = time.perf_counter()
    label = label_of(task.location)
    try:
        config = load_broker_config(Path(task.broker_config)) if task.broker_config else None
        with Store.open_location(task.location, config) as store:
            found = lookup_store(
                store,
                msg_id=task.msg_id,
                key=task.key,
                topic=task.topic,
                ids=None if task.ids is None else list(task.ids),
                now=task.now,
                extra_topics=task.extra_topics,
            )
            found.store = label
            found.notes += layout_notes(store)
            for r in found.records:
                r.store = label
            for t in found.traces:
                t.store = label
    except (MqtoolError, OSError) as exc:
        text = str(exc) if isinstance(exc, MqtoolError) else f"{getattr(exc, 'filename', '') or label}: {exc}"
        found = StoreFindings(label, error=text)
    found.seconds = time.perf_counter() - started
    return found


# runner(fn, tasks) -> [fn(task) for task in tasks], wherever it runs them (in order)
Runner = Callable[[Callable[[Any], Any], list[Any]], list[Any]]


def inline_runner(fn: Callable[[Any], Any], tasks: list[Any]) -> list[Any]:
    return [fn(t) for t in tasks]


def process_runner(workers: int) -> Runner:
    """Tasks in `workers` forked processes (forked: they start with this interpreter's modules loaded)."""

    def run(fn: Callable[[Any], Any], tasks: list[Any]) -> list[Any]:
        if len(tasks) <= 1 or workers <= 1:
            return inline_runner(fn, tasks)
        with ProcessPoolExecutor(min(workers, len(tasks)), mp_context=get_context("fork")) as pool:
            return list(pool.map(fn, tasks, chunksize=max(1, len(tasks) // (workers * 2))))

    return run


@dataclass
class TraceQuery:
    """`mqtool trace`'s question: an id, or a key of a topic, over stores."""

    stores: list[str | Path]
    msg_id: str | None = None
    key: str | None = None
    topic: str | None = None
    now: int | None = None
    extra_topics: tuple[str, ...] = ()
    broker_config: Path | None = None
    workers: int | None = None  # None: one per core
    stats: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> dict[str, Any]:
        if self.msg_id is not None:
            return {"msgId": self.msg_id}
        return {"key": self.key, "topic": self.topic}


def trace(query: TraceQuery, runner: Runner | None = None) -> TraceReport:
    """The timeline of the message(s) the query names, over every store (see the module docstring)."""
    from mqtool.query.msgid import normalize_msg_id

    if (query.msg_id is None) == (query.key is None):
        raise TraceQueryError("give a message id, or --key with --topic")
    if query.key is not None and not query.topic:
        raise TraceQueryError("--key needs --topic (the index is keyed by topic#key)")
    msg_id = None if query.msg_id is None else normalize_msg_id(query.msg_id)
    locations = expand_locations(query.stores)
    if not locations:
        raise TraceQueryError("no store to read")
    now = int(time.time() * 1000) if query.now is None else query.now
    workers = query.workers or os.cpu_count() or 1
    run = runner or process_runner(workers)
    common = {"now": now, "extra_topics": tuple(query.extra_topics)}
    config = None if query.broker_config is None else str(query.broker_config)
    started = time.perf_counter()
    first = [
        Lookup(str(loc), msg_id=msg_id, key=query.key, topic=query.topic, broker_config=config, **common)
        for loc in locations
    ]
    findings = run(run_lookup, first)
    ids = list(dict.fromkeys(i for f in findings for i in f.ids))
    second = []
    for task, f in zip(first, findings, strict=True):
        missing = [i for i in ids if i not in f.ids]
        if f.error is None and missing:
            second.append((f, Lookup(task.location, ids=tuple(missing), broker_config=config, **common)))
    if second:
        for (f, _task), more in zip(second, run(run_lookup, [t for _, t in second]), strict=True):
            _merge(f, more)
    query.stats = {
        "stores": len(locations),
        "seconds": time.perf_counter() - started,
        "rounds": 2 if second else 1,
    }
    report = join(findings, {**query.describe(), "now": now}, ids or ([msg_id] if msg_id else []))
    if len(report.failed) == len(findings):
        if len(findings) == 1:
            raise MqtoolError(findings[0].error or "the store cannot be read")
        raise TraceQueryError(
            "no store could be read: " + "; ".join(f"{f.store}: {f.error}" for f in findings)
        )
    return report


def _merge(into: StoreFindings, more: StoreFindings) -> None:
    if more.error is not None:
        into.notes.append(f"second round: {more.error}")
        return
    into.ids += [i for i in more.ids if i not in into.ids]
    known = {r.physical_offset for r in into.records}
    into.records += [r for r in more.records if r.physical_offset not in known]
    marks = {(t.physical_offset, t.record_index) for t in into.traces}
    into.traces += [t for t in more.traces if (t.physical_offset, t.record_index) not in marks]
    into.notes += [n for n in more.notes if n not in into.notes]
    into.seconds += more.seconds
