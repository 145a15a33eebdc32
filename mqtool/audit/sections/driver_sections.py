"""The audit's driver-side sections, computed from the small config files and system queues with the
single-process library while the executors scan: consumer lag per group and queue
(`mqtool.offsets.progress`, plus the store time of the first unconsumed message), delay backlog per
ScheduleMessageService level (`mqtool.delay.delay_stats`), the 5.x timer wheel's backlog
(`mqtool.delay.timer.timer_summary`), POP groups (`mqtool.pop.pop_stats`) and transaction states
(`mqtool.transactions.list_transactions`), so they equal what `offsets show`, `delay stats`,
`pop stats` and `txn list` print; compaction topics' queues (`mqtool.compaction.compaction_summary`:
served records, keys, superseded records, tombstones, what the next compaction reclaims); and the message
trace summary (`mqtool.audit.sections.trace_stats`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING

from formats.errors import MqtoolError
from mqtool.audit.plan import AuditOptions, StorePlan

if TYPE_CHECKING:
    from store.pop.columns import PopColumns


def driver_sections(plans: list[StorePlan], opts: AuditOptions, document: dict) -> None:
    from mqtool.timeparse import now_ms

    now = opts.now if opts.now is not None else now_ms()
    document["now"] = now
    notes = document.setdefault("notes", [])
    lag, delay, timer, pop, txns, compaction = [], [], [], [], [], []
    for plan in plans:
        # the POP checkpoints are read once: the lag section and the POP section share them
        pop_once = functools.cache(functools.partial(_pop_columns, plan, now))
        for name, fn, sink in (
            ("lag", functools.partial(_lag_rows, pop=pop_once), lag),
            ("delay", _delay_rows, delay),
            ("timer", _timer_rows, timer),
            ("pop", functools.partial(_pop_rows, pop=pop_once), pop),
            ("transactions", _transaction_rows, txns),
            ("compaction", _compaction_rows, compaction),
        ):
            try:
                rows, more = fn(plan, now)
            except MqtoolError as exc:
                notes.append(f"{plan.label}: {name} not computed: {exc}")
                continue
            sink.extend(rows)
            notes.extend(f"{plan.label}: {n}" for n in more)
    document["lag"] = lag
    document["delay"] = delay
    document["timer"] = timer
    document["pop"] = pop
    document["transactions"] = txns
    document["compaction"] = compaction
    if opts.replicas:
        from mqtool.audit.plan import audit_labels
        from mqtool.audit.sections.replicas import replica_rows

        label_of = dict(zip((str(s) for s in opts.stores), audit_labels(opts.stores), strict=True))
        groups = [[label_of[m] for m in group] for group in opts.replicas]
        document["replicas"], document["replicaProblems"], more = replica_rows(plans, groups)
        notes.extend(more)
    from mqtool.audit.sections.trace_stats import trace_rows

    document["trace"], more = trace_rows([(plan.label, plan.store) for plan in plans])
    notes.extend(more)


def _pop_columns(plan: StorePlan, now: int) -> PopColumns | None:
    """The store's POP state (store.pop.columns): checkpoints, orderly pops, kvStore records."""
    from store.pop.columns import pop_columns

    return pop_columns(plan.store, now=now)


def _lag_rows(
    plan: StorePlan, now: int, pop: Callable[[], PopColumns | None]
) -> tuple[list[dict], list[str]]:
    from mqtool.offsets.progress import consumer_progress, store_time_of

    store = plan.store
    try:
        progress = consumer_progress(store, pop=pop())
    except MqtoolError as exc:
        if not (store.config_dir / "consumerOffset.json").exists():
            return [], []
        raise exc
    store_time = store_time_of(store)
    rows = []
    for r in progress.rows:
        if r.queue_id is None or r.topic is None:
            continue
        first_unconsumed = None
        if r.max_offset is not None and r.consumer_offset is not None and r.consumer_offset < r.max_offset:
            at = max(r.consumer_offset, r.min_offset or 0)
            t = store.queue(r.topic, r.queue_id).store_time_at(at, store_time)
            first_unconsumed = t if t is not None and t > 0 else None
        rows.append(
            {
                "store": plan.label,
                "group": r.group,
                "topic": r.topic,
                "queueId": r.queue_id,
                "consumerOffset": r.consumer_offset,
                "minOffset": r.min_offset,
                "maxOffset": r.max_offset,
                "lag": r.lag,
                "state": r.state,
                "firstUnconsumedStoreTimestamp": first_unconsumed,
                "lagMs": None if first_unconsumed is None else max(0, now - first_unconsumed),
                "lastConsumedTimestamp": r.last_consumed_timestamp,
            }
        )
    return rows, progress.notes


def _delay_rows(plan: StorePlan, now: int) -> tuple[list[dict], list[str]]:
    from formats.names import SCHEDULE_TOPIC
    from mqtool.delay.listing import delay_stats

    store = plan.store
    if (
        SCHEDULE_TOPIC not in store.consume_queues.topics()
        and not (store.config_dir / "delayOffset.json").exists()
    ):
        return [], []
    stats = delay_stats(store, now=now, with_timer=False)  # the timer section computes its own
    rows = []
    for r in stats.rows:
        doc = r.to_json()
        rows.append(
            {
                "store": plan.label,
                "level": doc["level"],
                "delayMs": doc["delayMs"],
                "queueId": doc["queueId"],
                "minOffset": doc["minOffset"],
                "maxOffset": doc["maxOffset"],
                "delayOffset": doc["delayOffset"],
                "startOffset": doc["startOffset"],
                "backlog": doc["backlog"],
                "pendingQueueOffsets": [doc["startOffset"], doc["maxOffset"]],
                "due": doc["due"],
                "oldestDeliverTimestamp": doc["oldestDeliverTimestamp"],
                "lateMs": doc["lateMs"],
                "stuck": doc["stuck"],
            }
        )
    return rows, stats.notes


def _timer_rows(plan: StorePlan, now: int) -> tuple[list[dict], list[str]]:
    """One row per store with a timer topic: its messages by state and backlog, as `delay stats` shows."""
    from mqtool.delay.timer import timer_summary

    summary = timer_summary(plan.store, now=now)
    if summary is None:
        return [], []
    doc = summary.to_json()
    backlog = doc["backlog"]
    return [
        {
            "store": plan.label,
            "messages": doc["messages"],
            "notEnqueued": doc["notEnqueued"],
            "waiting": doc["waiting"],
            "due": doc["due"],
            "overdue": backlog["overdue"],
            "nextHour": backlog["nextHour"],
            "nextDay": backlog["nextDay"],
            "later": backlog["later"],
            "oldestOverdueMs": doc["oldestOverdueMs"],
            "lateMs": doc["lateMs"],
            "lastReadTimeMs": doc["lastReadTimeMs"],
            "readBehindMs": doc["readBehindMs"],
            "stuck": doc["stuck"],
            "skippedOnRestart": doc["skippedOnRestart"],
            "states": ", ".join(f"{state} {n}" for state, n in doc["states"].items()),
        }
    ], []


def _compaction_rows(plan: StorePlan, now: int) -> tuple[list[dict], list[str]]:
    """One row per compaction topic queue, as `mqtool.compaction.compaction_summary` gives it."""
    from mqtool.compaction import compaction_summary

    rows = [{"store": plan.label} | row for row in compaction_summary(plan.store)]
    notes = [f"compaction {r['topic']}/{r['queueId']}: {r['error']}" for r in rows if "error" in r]
    return [r for r in rows if "error" not in r], notes


def _pop_rows(
    plan: StorePlan, now: int, pop: Callable[[], PopColumns | None]
) -> tuple[list[dict], list[str]]:
    """One row per POP group of a store, as `pop stats` shows it."""
    from mqtool.pop import summarize

    cols = pop()
    if cols is None:
        return [], []
    stats = summarize(cols)
    backlog = sum(q.backlog for q in stats.queues)
    rows = [{"store": plan.label, **g.to_json(), "reviveBacklog": backlog} for g in stats.groups]
    return rows, stats.notes


def _transaction_rows(plan: StorePlan, now: int) -> tuple[list[dict], list[str]]:
    from formats.names import TRANS_HALF_TOPIC
    from mqtool.transactions.listing import list_transactions

    store = plan.store
    if TRANS_HALF_TOPIC not in store.consume_queues.topics():
        return [], []
    report = list_transactions(store, now=now)
    rows = []
    for t in report.transactions:
        doc = t.to_json()
        rows.append(
            {
                "store": plan.label,
                "queueId": doc["queueId"],
                "halfQueueOffset": doc["halfQueueOffset"],
                "phyOffset": doc["phyOffset"],
                "state": doc["state"],
                "realTopic": doc["realTopic"],
                "realQueueId": doc["realQueueId"],
                "producerGroup": doc["producerGroup"],
                "transactionId": doc["transactionId"],
                "checkTimes": doc["checkTimes"],
                "bornTimestamp": doc["bornTimestamp"],
            }
        )
    return rows, report.notes
