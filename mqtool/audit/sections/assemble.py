"""The audit's result document assembled on the driver: the SQL rows of queues, rates, body sizes and
retry volume, the per-store summary (files, where the recovery walk ends, records, problems), disk per
topic, and %RETRY%/%DLQ% topics mapped to their consumer groups (`group_of`).
"""

from __future__ import annotations

import contextlib
from typing import Any

from formats.errors import MqtoolError
from mqtool.audit.plan import StorePlan, relative_path
from mqtool.audit.schema import BODY, RATE
from store.io.remote import redact, store_url
from store.storedir import Store

DISPATCHED_NOTE = (
    "messages = records in the commitlog (up to the truncation point) that the dispatcher puts in the "
    "ConsumeQueue (PREPARED and ROLLBACK transaction records are not), for a BatchCQ queue the messages "
    "those records hold (each one's batch size); records = every message record "
    "of the queue; cqMinOffset/cqMaxOffset = the ConsumeQueue as the broker loads it"
)


def _controller(plan) -> dict | None:
    """Controller mode's confirm offset and unconfirmed tail (`store.log.confirm`; the scan's figures leave
    the tail out, as the broker serves none of it); None when the store's broker is not in controller mode."""
    from store.log.confirm import unconfirmed_topics

    state = plan.store.confirm
    if state is None:
        return None
    topics = unconfirmed_topics(plan.store, state)
    return {**state.as_dict(), "unconfirmedMessages": sum(topics.values()), "unconfirmedByTopic": topics}


def assemble(plans, splits, stops, cuts, queues, small, problems, bucket, document) -> None:
    labels = {p.index: p.label for p in plans}
    for q in queues:
        q["store"] = labels[q["store"]]
    document["queues"] = queues
    document["definitions"] = {"messages": DISPATCHED_NOTE}
    document["problems"] = problems
    stores = []
    for plan in plans:
        cut = cuts[plan.index]
        valid = set(cut.valid_seqs)
        own = [stops[s.seq] for s in splits if s.store == plan.index and s.seq in valid]
        rows = [q for q in queues if q["store"] == plan.label]
        firsts = [q["firstStoreTimestamp"] for q in rows if q["firstStoreTimestamp"] is not None]
        lasts = [q["lastStoreTimestamp"] for q in rows if q["lastStoreTimestamp"] is not None]
        stores.append(
            {
                "store": plan.label,
                "root": redact(store_url(plan.root) or "") or str(plan.root),
                "commitlogFiles": len(plan.files),
                "commitlogBytes": plan.file_bytes,
                "minOffset": plan.files[0].start_offset if plan.files else 0,
                "validEnd": cut.end_offset,
                "end": cut.kind,
                "endFile": relative_path(plan, cut.file) if cut.file else None,
                "records": sum(st.records for st in own),
                "recordBytes": sum(st.bytes for st in own),
                "messages": sum(q["messages"] for q in rows),
                "firstStoreTimestamp": min(firsts) if firsts else None,
                "lastStoreTimestamp": max(lasts) if lasts else None,
                "splits": sum(1 for s in splits if s.store == plan.index),
                "problems": sum(1 for p in problems if p["store"] == plan.label),
                "errors": sum(
                    1 for p in problems if p["store"] == plan.label and p.get("severity") == "error"
                ),
                "controller": _controller(plan),
            }
        )
    document["stores"] = stores
    document["topics"] = _topics(queues, stores)
    rates, sizes, retry_rows = [], [], []
    for r in small:
        label = labels[r["store"]]
        if r["kind"] == RATE:
            rates.append(
                {
                    "store": label,
                    "topic": r["topic"],
                    "bucketStart": r["key"] * bucket,
                    "messages": r["n"],
                    "bytes": r["bytes"],
                }
            )
        elif r["kind"] == BODY:
            k = r["key"]
            sizes.append(
                {
                    "store": label,
                    "topic": r["topic"],
                    "minSize": 0 if k == 0 else 1 << (k - 1),
                    "maxSize": 0 if k == 0 else (1 << k) - 1,
                    "messages": r["n"],
                    "bodyBytes": r["bytes"],
                }
            )
        else:
            retry_rows.append((label, r["topic"], r["key"], r["n"], r["bytes"]))
    document["rates"] = rates
    document["bodySizes"] = sizes
    document["retry"] = _retry(plans, retry_rows)


def _topics(queues: list[dict], stores: list[dict]) -> list[dict]:
    """Disk per topic: record bytes and their share of the store's commitlog files."""
    disk = {s["store"]: s["commitlogBytes"] for s in stores}
    by: dict[tuple[str, str], dict[str, Any]] = {}
    for q in queues:
        if q["records"] == 0 and q["messages"] == 0:
            continue
        row = by.setdefault(
            (q["store"], q["topic"]),
            {"store": q["store"], "topic": q["topic"], "queues": 0, "messages": 0, "records": 0, "bytes": 0},
        )
        row["queues"] += 1
        row["messages"] += q["messages"]
        row["records"] += q["records"]
        row["bytes"] += q["recordBytes"]
    out = sorted(by.values(), key=lambda r: (r["store"], -r["bytes"], r["topic"]))
    for row in out:
        total = disk.get(row["store"]) or 0
        row["share"] = round(row["bytes"] / total, 6) if total else None
    return out


def _known_groups(store: Store) -> set[str]:
    groups: set[str] = set()
    with contextlib.suppress(MqtoolError, AttributeError):
        groups |= set(store.config("subscriptionGroup.json").load().model.subscription_group_table)
    try:
        for key in store.config("consumerOffset.json").load().model.offset_table:
            groups.add(key.rpartition("@")[2])
    except MqtoolError:
        pass
    return groups


def group_of(topic: str, groups: set[str]) -> tuple[str, str]:
    """(group, kind) of a %RETRY%/%DLQ% topic; a POP retry topic `%RETRY%<group>_<topic>` (or `+`)
    maps to the longest known group it starts with."""
    from formats.names import DLQ_PREFIX, RETRY_PREFIX

    kind, rest = ("dlq", topic[len(DLQ_PREFIX) :]) if topic.startswith(DLQ_PREFIX) else ("retry", topic)
    if kind == "retry":
        rest = topic[len(RETRY_PREFIX) :]
    if rest in groups:
        return rest, kind
    matches = [g for g in groups if rest.startswith(g + "_") or rest.startswith(g + "+")]
    return (max(matches, key=len), kind) if matches else (rest, kind)


def _retry(plans: list[StorePlan], rows: list[tuple]) -> list[dict]:
    groups = {plan.label: _known_groups(plan.store) for plan in plans}
    by: dict[tuple, dict[str, Any]] = {}
    for label, topic, reconsume, n, size in rows:
        group, kind = group_of(topic, groups[label])
        row = by.setdefault(
            (label, topic),
            {
                "store": label,
                "group": group,
                "topic": topic,
                "kind": kind,
                "messages": 0,
                "bytes": 0,
                "reconsumeTimes": {},
                "maxReconsumeTimes": None,
            },
        )
        row["messages"] += n
        row["bytes"] += size
        row["reconsumeTimes"][str(reconsume)] = row["reconsumeTimes"].get(str(reconsume), 0) + n
        row["maxReconsumeTimes"] = max(reconsume, row["maxReconsumeTimes"] or 0)
    return sorted(by.values(), key=lambda r: (r["store"], r["group"], r["kind"], r["topic"]))
