"""The self-contained HTML page of `mqtool trace --html FILE`, in the audit report's style
(`mqtool.audit.results.report`: inline CSS, inline SVG, no JavaScript, no network): per message a lane chart
of its events over time (the producer, each consumer group, each store), the timeline table, the consumer
groups and the gaps; then the stores read."""

from __future__ import annotations

import html
from datetime import tzinfo
from typing import Any

from mqtool.audit.results.report import CSS, PALETTE, table
from mqtool.timeparse import format_time, zone_label
from mqtool.trace.timeline import MessageTimeline, TraceReport

_EXTRA_CSS = ".gap{color:#b00020}.lane{font-size:11px}"


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def _lane(e) -> str:
    if e.source == "trace":
        return (
            f"group {e.group}"
            if e.kind in ("sub-before", "sub-after")
            else f"producer {e.group or ''}".strip()
        )
    if e.group:
        return f"group {e.group}"
    return e.store.rstrip("/").rsplit("/", 1)[-1]


def lanes_chart(m: MessageTimeline, zone: tzinfo, width: int = 1000) -> str:
    """One lane per actor, a dot per timed event (hover: what happened)."""
    timed = [e for e in m.events if e.time is not None]
    if not timed:
        return "<p class='note'>no timed event</p>"
    lanes = list(dict.fromkeys(_lane(e) for e in timed))
    left, right, top, row = 220, 20, 28, 26
    height = top + row * len(lanes) + 36
    t0, t1 = min(e.time for e in timed), max(e.time for e in timed)
    span = max(1, t1 - t0)
    w = width - left - right

    def sx(t: int) -> float:
        return left + (t - t0) / span * w

    out = [f"<svg width='{width}' height='{height}' role='img' aria-label='timeline'>"]
    out.append(
        f"<text x='4' y='16' font-weight='600'>{_e(format_time(t0, zone))} to {_e(format_time(t1, zone))} "
        f"({_e(zone_label(zone))}, {span} ms)</text>"
    )
    for i, lane in enumerate(lanes):
        y = top + i * row + row / 2
        out.append(f"<text x='{left - 8}' y='{y + 4:.1f}' text-anchor='end' class='lane'>{_e(lane)}</text>")
        out.append(f"<line x1='{left}' x2='{left + w}' y1='{y:.1f}' y2='{y:.1f}' stroke='#eee'/>")
    for e in timed:
        i = lanes.index(_lane(e))
        y = top + i * row + row / 2
        failed = "FAILED" in e.text or e.kind == "dlq"
        color = "#b00020" if failed else PALETTE[i % len(PALETTE)]
        shape = "rect" if e.source == "store" else "circle"
        tip = f"<title>{_e(format_time(e.time, zone))} {_e(e.describe(zone))}</title>"
        if shape == "rect":
            out.append(
                f"<rect x='{sx(e.time) - 4:.1f}' y='{y - 4:.1f}' width='8' height='8' "
                f"fill='{color}'>{tip}</rect>"
            )
        else:
            out.append(f"<circle cx='{sx(e.time):.1f}' cy='{y:.1f}' r='4.5' fill='{color}'>{tip}</circle>")
    out.append(
        f"<text x='{left}' y='{height - 8}' class='note'>circles: trace records; squares: store records; "
        "red: failed or dead-lettered</text>"
    )
    out.append("</svg>")
    return "".join(out)


def render_html(report: TraceReport, zone: tzinfo) -> str:
    """The whole page as one HTML string."""
    query = report.query
    what = (
        f"id {query['msgId']}"
        if query.get("msgId")
        else f"key {query.get('key')} of topic {query.get('topic')}"
    )
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>mqtool trace {_e(what)}</title>",
        f"<style>{CSS}{_EXTRA_CSS}</style></head><body>",
        f"<h1>mqtool trace: {_e(what)}</h1>",
        f"<p class='note'>{len(report.stores)} store(s) read; now {_e(format_time(query.get('now'), zone))} "
        f"({_e(zone_label(zone))}).</p>",
    ]
    for note in report.notes:
        parts.append(f"<p class='note'>{_e(note)}</p>")
    for m in report.messages:
        parts.append(f"<h2>Message {_e(m.msg_id)}</h2>")
        facts = [("topic", m.topic), ("keys", m.keys), ("tags", m.tags), ("producer group", m.producer_group)]
        parts.append("<p>" + "; ".join(f"{_e(k)} <b>{_e(v)}</b>" for k, v in facts if v) + "</p>")
        parts.append(lanes_chart(m, zone))
        if m.gaps:
            parts.append(
                "<h3>Gaps</h3><ul>" + "".join(f"<li class='gap'>{_e(g)}</li>" for g in m.gaps) + "</ul>"
            )
        parts.append("<h3>Timeline</h3>")
        rows = [
            {
                "time": format_time(e.time, zone) if e.time is not None else "",
                "store": e.store,
                "source": e.source,
                "group": e.group,
                "what": e.describe(zone),
            }
            for e in m.events
        ]
        parts.append(
            table(
                rows,
                [
                    ("time", f"time ({zone_label(zone)})", "text"),
                    ("source", "source", "text"),
                    ("store", "store", "text"),
                    ("group", "group", "text"),
                    ("what", "what", "text"),
                ],
                empty="no record, no trace record",
            )
        )
        parts.append("<h3>Consumer groups</h3>")
        parts.append(
            table(
                [g.to_json() for g in m.groups],
                [
                    ("group", "group", "text"),
                    ("state", "state", "text"),
                    ("consumedByOffset", "offset past it", "text"),
                    ("subBefore", "SubBefore", "int"),
                    ("subAfterSuccess", "SubAfter ok", "int"),
                    ("subAfterFailed", "SubAfter failed", "int"),
                    ("costMs", "cost ms", "text"),
                    ("retries", "retries", "int"),
                    ("deadLettered", "DLQ", "text"),
                ],
                empty="no consumer group",
            )
        )
    parts.append("<h2>Stores</h2>")
    parts.append(
        table(
            [s.to_json() for s in report.stores],
            [
                ("store", "store", "text"),
                ("ok", "ok", "text"),
                ("records", "records", "int"),
                ("traceRecords", "trace records", "int"),
                ("seconds", "seconds", "text"),
                ("error", "error", "text"),
            ],
        )
    )
    notes = [f"{s.store}: {n}" for s in report.stores for n in s.notes]
    if notes:
        parts.append("<ul>" + "".join(f"<li class='note'>{_e(n)}</li>" for n in notes) + "</ul>")
    parts.append("</body></html>")
    return "\n".join(parts)
