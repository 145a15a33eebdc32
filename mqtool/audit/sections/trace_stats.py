"""The audit's message trace section (table `trace`), computed on the driver from each store's trace topics
(`RMQ_SYS_TRACE_TOPIC`, the cloud channel's `rmq_sys_TRACE_DATA_*`): the trace topic is small next to the
store, so its records are read through its ConsumeQueue, decoded by `formats.trace` into Arrow columns, and
summed per store, record type, topic and group with pyarrow: records, failures (success false), send and
consume cost percentiles (p50, p90, p99, max of costTime, ms) and the first and last record time.

SubBefore and SubAfter records carry no topic: a consume record takes the topic of the Pub record of the same
msgId in any store of the audit (the Pub record is often on another broker; when no store audited holds it,
the topic is unknown, null). Trace messages the real decoder cannot read are counted (in the notes).
"""

from __future__ import annotations

from typing import Any

from formats.errors import MqtoolError
from formats.trace import CLOUD_TRACE_TOPIC_PREFIX, PUB, TRACE_TOPIC, decode_body
from store.storedir import Store

COLUMNS = ("traceType", "topic", "groupName", "msgId", "timeStamp", "costTime", "success")


def trace_table(store: Store):
    """Every readable trace record of the store as an Arrow table (COLUMNS), and how many trace messages
    could not be read."""
    import pyarrow as pa

    topics = [
        t for t in store.consume_queues.topics() if t == TRACE_TOPIC or t.startswith(CLOUD_TRACE_TOPIC_PREFIX)
    ]
    cols: dict[str, list[Any]] = {c: [] for c in COLUMNS}
    unreadable = 0
    for topic in topics:
        for queue_id in store.consume_queues.queue_ids(topic):
            for _q, phy, size, _tags in store.consume_queue(topic, queue_id).units().tolist():
                try:
                    msg = store.commitlog.read_message_at(phy, size)
                    contexts = decode_body(msg.decompressed_body())
                except MqtoolError:
                    unreadable += 1
                    continue
                for c in contexts:
                    cols["traceType"].append(c.trace_type)
                    cols["topic"].append(c.bean.topic)
                    cols["groupName"].append(c.group_name)
                    cols["msgId"].append(c.bean.msg_id)
                    cols["timeStamp"].append(c.time_stamp)
                    cols["costTime"].append(c.cost_time)
                    cols["success"].append(c.success)
    types = {"timeStamp": pa.int64(), "costTime": pa.int32(), "success": pa.bool_()}
    table = pa.table({c: pa.array(v, type=types.get(c, pa.string())) for c, v in cols.items()})
    return table, unreadable


def trace_rows(stores: list[tuple[str, Store]]) -> tuple[list[dict[str, Any]], list[str]]:
    """One row per (store, record type, topic, group) of the stores' trace records; cost percentiles are
    exact (nearest rank: the smallest cost at or above that share of the records). A store whose trace
    topic cannot be read is a note."""
    import pyarrow.compute as pc

    tables, notes = [], []
    for label, store in stores:
        try:
            table, unreadable = trace_table(store)
        except MqtoolError as exc:
            notes.append(f"{label}: trace not computed: {exc}")
            continue
        if unreadable:
            notes.append(f"{label}: {unreadable} trace messages the client's decoder cannot read")
        tables.append((label, table))
    # a consume record's topic: its msgId's Pub record's, in any store
    topic_of: dict[str | None, str | None] = {}
    for _label, table in tables:
        pubs = table.filter(pc.equal(table["traceType"], PUB))
        topic_of.update(zip(pubs["msgId"].to_pylist(), pubs["topic"].to_pylist(), strict=True))
    rows = []
    for label, table in tables:
        rows += _summary(label, table, topic_of)
    return rows, notes


def _summary(label: str, table, topic_of: dict[str | None, str | None]) -> list[dict[str, Any]]:
    import numpy as np

    groups: dict[tuple, dict[str, Any]] = {}
    columns = [table[c].to_pylist() for c in COLUMNS]
    for kind, topic, group, msg_id, stamp, cost, success in zip(*columns, strict=True):
        if topic is None:
            topic = topic_of.get(msg_id)
        g = groups.setdefault((kind, topic, group), {"costs": [], "times": [], "records": 0, "failed": 0})
        g["records"] += 1
        g["failed"] += success is False
        if cost is not None:
            g["costs"].append(cost)
        if stamp is not None:
            g["times"].append(stamp)
    rows = []
    for (kind, topic, group), g in groups.items():
        q = (
            np.percentile(np.array(g["costs"]), [50, 90, 99], method="inverted_cdf").tolist()
            if g["costs"]
            else [None] * 3
        )
        rows.append(
            {
                "store": label,
                "traceType": kind,
                "topic": topic,
                "group": group,
                "records": g["records"],
                "failed": g["failed"],
                "costP50": None if q[0] is None else int(q[0]),
                "costP90": None if q[1] is None else int(q[1]),
                "costP99": None if q[2] is None else int(q[2]),
                "costMax": max(g["costs"]) if g["costs"] else None,
                "firstTimeStamp": min(g["times"]) if g["times"] else None,
                "lastTimeStamp": max(g["times"]) if g["times"] else None,
            }
        )
    order = {"Pub": 0, "EndTransaction": 1, "Recall": 2, "SubBefore": 3, "SubAfter": 4}
    rows.sort(key=lambda r: (order.get(r["traceType"], 9), r["topic"] or "", r["group"] or ""))
    return rows
