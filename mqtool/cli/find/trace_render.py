"""How `mqtool trace` and `mqtool dump trace` show what `mqtool.trace` returns: a timeline per message, its
groups and gaps for people; the report document for scripts."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path

from mqtool.render.output import Column, RenderContext, emit_document, emit_rows, emit_table
from mqtool.trace.records import TraceRecordRow
from mqtool.trace.timeline import TraceReport


def _short(stores: list[str]) -> dict[str, str]:
    """Store labels as shown in tables: the last path part when that is unique, else the whole label."""
    names = {s: s.rstrip("/").rsplit("/", 1)[-1] or s for s in stores}
    clash = len(set(names.values())) < len(names)
    return {s: (s if clash else n) for s, n in names.items()}


_EVENT_COLUMNS = [
    Column("time", kind="time"),
    Column("store", max_width=24),
    Column("source"),
    Column("what", max_width=140),
]
_GROUP_COLUMNS = [
    Column("group", max_width=40),
    Column("state", max_width=44),
    Column("consumedByOffset", "offset past it", kind="bool"),
    Column("subBefore", "SubBefore", kind="int"),
    Column("subAfterSuccess", "SubAfter ok", kind="int"),
    Column("subAfterFailed", "SubAfter failed", kind="int"),
    Column("costMs", "cost ms"),
    Column("retries", kind="int"),
    Column("deadLettered", "DLQ", kind="bool"),
]
_STORE_COLUMNS = [
    Column("store"),
    Column("ok", kind="bool"),
    Column("records", kind="int"),
    Column("traceRecords", "trace records", kind="int"),
    Column("seconds"),
    Column("error", max_width=80),
]


def _note(text: str) -> None:
    sys.stderr.write(f"mqtool: note: {text}\n")


def render_report(report: TraceReport, ctx: RenderContext) -> None:
    def human() -> None:
        short = _short([s.store for s in report.stores])
        for m in report.messages:
            head = f"Message {m.msg_id}"
            facts = [f"topic {m.topic}" if m.topic else None, f"keys {m.keys}" if m.keys else None]
            facts += [
                f"tags {m.tags}" if m.tags else None,
                f"producer {m.producer_group}" if m.producer_group else None,
            ]
            head += "".join(f", {f}" for f in facts if f)
            rows = [
                {
                    "time": e.time,
                    "store": short.get(e.store, e.store),
                    "source": e.source,
                    "what": e.describe(ctx.zone),
                }
                for e in m.events
            ]
            emit_table(rows, _EVENT_COLUMNS, ctx, title=head, empty="(no record, no trace record)")
            emit_table(
                [g.to_json() for g in m.groups], _GROUP_COLUMNS, ctx, title="Consumer groups", empty="(none)"
            )
            for gap in m.gaps:
                ctx.out.write(f"gap: {gap}\n")
            if m.gaps:
                ctx.out.write("\n")
        if len(report.stores) > 1 or report.failed:
            emit_table([s.to_json() for s in report.stores], _STORE_COLUMNS, ctx, title="Stores read")
        for s in report.stores:  # the notes of stores that hold nothing of it are in the JSON document
            if s.records or s.traces or not s.ok:
                for n in s.notes:
                    _note(f"{short.get(s.store, s.store)}: {n}")
        for n in report.notes:
            _note(n)

    emit_document(report.to_json(), ctx, human)


def write_html(report: TraceReport, path: Path, zone) -> Path:
    from mqtool.trace.html import render_html

    path = Path(path)
    path.write_text(render_html(report, zone), encoding="utf-8")
    return path


_RECORD_COLUMNS = [
    Column("timeStamp", "time", kind="time"),
    Column("traceType", "type"),
    Column("groupName", "group", max_width=30),
    Column("topic", max_width=30),
    Column("msgId", "msgId"),
    Column("keys", max_width=24),
    Column("costTime", "cost ms", kind="int"),
    Column("success", kind="bool"),
    Column("retryTimes", "retry", kind="int"),
    Column("clientHost", "client"),
    Column("storeHost", "broker"),
    Column("traceTopic", "trace topic", max_width=24),
    Column("physicalOffset", "trace phy", kind="int"),
    Column("error", max_width=80),
]


def render_records(rows: Iterable[TraceRecordRow], ctx: RenderContext) -> int:
    return emit_rows(
        (r.to_json() for r in rows), _RECORD_COLUMNS, ctx, title=None if ctx.machine else "Trace records"
    )


_KEY_COLUMNS = [
    Column("store", max_width=30),
    Column("physicalOffset", "phyOffset", "int"),
    Column("topic", max_width=32),
    Column("queueId", "queue", "int"),
    Column("queueOffset", "queueOffset", "int"),
    Column("storeTimestamp", "storeTime", "time"),
    Column("keys", max_width=30),
    Column("uniqKey"),
    Column("tags", max_width=20),
    Column("consumed", "consumed", max_width=40),
]


def render_key_results(results, ctx: RenderContext, *, body_limit: int | None, title: str) -> list[str]:
    """`query key` over several stores: one table (or document list) of every store's messages, notes per
    store; returns the errors of the stores that could not be read."""
    from mqtool.trace.keys import documents

    docs = documents(results, body_limit)
    if not ctx.machine:
        short = _short([r.store for r in results])
        for d in docs:
            d["store"] = short.get(d["store"], d["store"])
            d["consumed"] = " ".join(f"{g}:{'yes' if c else 'no'}" for g, c in d["consumedBy"].items())
    emit_rows(docs, _KEY_COLUMNS, ctx, title=None if ctx.machine else title)
    failed = []
    for r in results:
        for n in r.notes:
            _note(f"{r.store}: {n}")
        if r.error:
            failed.append(f"{r.store}: {r.error}")
    if not docs:
        _note("no message found")
    return failed
