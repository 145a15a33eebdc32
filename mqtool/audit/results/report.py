"""The self-contained HTML report of `mqtool audit --output DIR` (report.html).

One file, no network, no JavaScript: inline CSS and inline SVG plots drawn here from the audit document
(`mqtool.audit`): message rate per topic over time, consumer lag per group, disk used per topic, body
size distribution, problems by kind, then the tables (stores, problems, queues, lag, delay backlog, the
5.x timer wheel, transactions, message trace, duplicates, retry/DLQ). It opens in any browser offline.
"""

from __future__ import annotations

import html
from datetime import UTC, datetime
from typing import Any

from mqtool.render.output import size_text

PALETTE = (
    "#4e79a7",
    "#f28e2b",
    "#e15759",
    "#76b7b2",
    "#59a14f",
    "#edc948",
    "#b07aa1",
    "#ff9da7",
    "#9c755f",
    "#bab0ac",
)
MAX_SERIES = 8
MAX_TABLE_ROWS = 500
FEW_BUCKETS = 12  # a rate chart of this many buckets or fewer shows each as a point
SEVERITY_RANK = {"error": 0, "warning": 1, "info": 2}

# Long names (topics, stores, files) wrap anywhere instead of widening a table, a legend or a caption
# past the page; charts scale down with the page (viewBox).
CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#222;max-width:1200px}
h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ddd;padding-bottom:4px}
h3{font-size:15px;margin:18px 0 6px}
table{border-collapse:collapse;font-size:12px;margin:8px 0;max-width:100%}
th,td{border:1px solid #ddd;padding:3px 6px;text-align:left;vertical-align:top;overflow-wrap:anywhere}
th{background:#f4f4f4}td.n{text-align:right;font-variant-numeric:tabular-nums;overflow-wrap:normal}
.sev-error{color:#b00020;font-weight:600}.sev-warning{color:#a15c00}.sev-info{color:#555}
.note{color:#666;font-size:12px;overflow-wrap:anywhere}.ok{color:#2e7d32;font-weight:600}
figure{margin:12px 0;max-width:100%}
figcaption{font-size:13px;font-weight:600;overflow-wrap:anywhere}
svg{background:#fff;border:1px solid #eee;margin:4px 0;max-width:100%;height:auto}
svg text{font-size:11px;fill:#333}
.legend{max-width:100%}
.legend span{display:inline-block;max-width:100%;margin-right:12px;font-size:12px;overflow-wrap:anywhere}
.legend i{display:inline-block;width:10px;height:10px;margin-right:4px;vertical-align:middle}
"""


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def _time(ms: int | None) -> str:
    if ms is None:
        return ""
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _num(n: float | int | None) -> str:
    if n is None:
        return ""
    if isinstance(n, float):
        return f"{n:,.2f}"
    return f"{n:,}"


def _nice_max(v: float) -> float:
    """A round axis maximum >= v."""
    if v <= 0:
        return 1
    exp = 10 ** (len(str(int(v))) - 1)
    for m in (1, 2, 2.5, 5, 10):
        if m * exp >= v:
            return m * exp
    return 10 * exp


# --- plots -----------------------------------------------------------------------------------------


def duration_text(ms: int) -> str:
    """A bucket width for people: `2 ms`, `500 ms`, `30 s`, `5 min`, `3 h`, `7 d`."""
    for unit, scale in (("d", 86_400_000), ("h", 3_600_000), ("min", 60_000), ("s", 1_000)):
        if ms >= scale and ms % scale == 0:
            return f"{ms // scale} {unit}"
    return f"{ms} ms"


def _time_label(x: float, span: float) -> str:
    moment = datetime.fromtimestamp(x / 1000, UTC)
    if span < 60_000:  # seconds apart: the milliseconds tell the ticks apart
        return moment.strftime("%H:%M:%S.%f")[:-3]
    return moment.strftime("%m-%d %H:%M:%S")


def _figure(title: str, svg: str, legend: str = "") -> str:
    return f"<figure><figcaption>{_e(title)}</figcaption>{svg}{legend}</figure>"


def line_chart(
    series: dict[str, list[tuple[int, int]]],
    *,
    title: str,
    width: int = 1000,
    height: int = 260,
    step: int = 0,
) -> str:
    """Lines of (x=epoch ms, y) points, one per series, with time ticks. With `step`, each point is a
    bucket [x, x + step) of a histogram over time: drawn as a step line, or, when the axis holds
    FEW_BUCKETS buckets or fewer, as a marker in the middle of each bucket (joined by a thin line), so a
    store whose messages fill one bucket is one point, not a line across the axis."""
    points = [p for pts in series.values() for p in pts]
    if not points:
        return f"<p class='note'>{_e(title)}: no data</p>"
    x0 = min(p[0] for p in points)
    x1 = max(p[0] for p in points) + step
    few = step > 0 and (x1 - x0) // step <= FEW_BUCKETS
    if few:
        series = {k: [(x + step / 2, y) for x, y in sorted(pts)] for k, pts in series.items()}
    elif step > 0:
        series = {
            k: [q for x, y in sorted(pts) for q in ((x, y), (x + step, y))] for k, pts in series.items()
        }
    if x1 == x0:
        x1 = x0 + 1
    left, right, top, bottom = 60, 20, 12, 40
    y1 = _nice_max(max(p[1] for p in points))
    w, h = width - left - right, height - top - bottom

    def sx(x: float) -> float:
        return left + (x - x0) / (x1 - x0) * w

    def sy(y: float) -> float:
        return top + h - y / y1 * h

    out = [
        f"<svg width='{width}' height='{height}' viewBox='0 0 {width} {height}' role='img' "
        f"aria-label='{_e(title)}'>"
    ]
    for k in range(5):
        y = y1 * k / 4
        out.append(f"<line x1='{left}' x2='{left + w}' y1='{sy(y):.1f}' y2='{sy(y):.1f}' stroke='#eee'/>")
        out.append(f"<text x='{left - 6}' y='{sy(y) + 4:.1f}' text-anchor='end'>{_num(int(y))}</text>")
    for k in range(5):
        x = x0 + (x1 - x0) * k / 4
        anchor = "start" if k == 0 else "end" if k == 4 else "middle"
        label = _time_label(x, x1 - x0)
        out.append(f"<text x='{sx(x):.1f}' y='{top + h + 16}' text-anchor='{anchor}'>{label}</text>")
    out.append(f"<text x='{left + w}' y='{height - 6}' text-anchor='end' class='note'>UTC</text>")
    for i, (name, pts) in enumerate(series.items()):
        color = PALETTE[i % len(PALETTE)]
        pts = pts if step else sorted(pts)
        tip = f"<title>{_e(name)}</title>"
        if len(pts) > 1:
            path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in pts)
            stroke = 1 if few else 1.6
            line = f"fill='none' stroke='{color}' stroke-width='{stroke}'"
            out.append(f"<polyline {line} points='{path}'>{tip}</polyline>")
        if few or len(pts) == 1:
            out += [
                f"<circle cx='{sx(x):.1f}' cy='{sy(y):.1f}' r='3.5' fill='{color}'>{tip}</circle>"
                for x, y in pts
            ]
    out.append("</svg>")
    legend = "".join(
        f"<span><i style='background:{PALETTE[i % len(PALETTE)]}'></i>{_e(name)}</span>"
        for i, name in enumerate(series)
    )
    return _figure(title, "".join(out), f"<div class='legend'>{legend}</div>")


def bar_chart(bars: list[tuple[str, float, str]], *, title: str, width: int = 1000, unit: str = "") -> str:
    """Horizontal bars: (label, value, value text)."""
    if not bars:
        return f"<p class='note'>{_e(title)}: no data</p>"
    row, label_w, top = 20, 320, 6
    height = top + row * len(bars) + 10
    vmax = max(v for _, v, _ in bars) or 1
    w = width - label_w - 140
    out = [
        f"<svg width='{width}' height='{height}' viewBox='0 0 {width} {height}' role='img' "
        f"aria-label='{_e(title)}'>"
    ]
    for i, (label, value, text) in enumerate(bars):
        y = top + i * row
        short = label if len(label) <= 48 else label[:47] + "…"
        bw = max(1.0, value / vmax * w) if value > 0 else 0
        color = PALETTE[i % len(PALETTE)]
        tip = f"<title>{_e(label)}</title>"
        out.append(f"<text x='{label_w - 6}' y='{y + 13}' text-anchor='end'>{tip}{_e(short)}</text>")
        out.append(f"<rect x='{label_w}' y='{y + 3}' width='{bw:.1f}' height='{row - 6}' fill='{color}'/>")
        out.append(f"<text x='{label_w + bw + 6:.1f}' y='{y + 13}'>{_e(text)}{_e(unit)}</text>")
    out.append("</svg>")
    return _figure(title, "".join(out))


# --- tables ----------------------------------------------------------------------------------------


def table(rows: list[dict[str, Any]], columns: list[tuple[str, str, str]], *, empty: str = "none") -> str:
    """columns: (key, header, kind) with kind text | int | time | size | sev."""
    if not rows:
        return f"<p class='note'>{_e(empty)}</p>"
    head = "".join(f"<th>{_e(h)}</th>" for _, h, _ in columns)
    body = []
    for r in rows[:MAX_TABLE_ROWS]:
        cells = []
        for key, _, kind in columns:
            v = r.get(key)
            if kind == "int":
                cells.append(f"<td class='n'>{_num(v)}</td>")
            elif kind == "time":
                cells.append(f"<td>{_e(_time(v))}</td>")
            elif kind == "size":
                cells.append(f"<td class='n'>{_e(size_text(v))}</td>")
            elif kind == "sev":
                cells.append(f"<td class='sev-{_e(v)}'>{_e(v)}</td>")
            else:
                cells.append(f"<td>{_e(v)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    more = ""
    if len(rows) > MAX_TABLE_ROWS:
        more = (
            f"<p class='note'>{len(rows) - MAX_TABLE_ROWS} more rows in the Parquet tables / audit.json</p>"
        )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>{more}"


# --- the report ------------------------------------------------------------------------------------


def _rates(doc: dict[str, Any], store: str) -> str:
    rows = [r for r in doc.get("rates", []) if r["store"] == store]
    totals: dict[str, int] = {}
    for r in rows:
        totals[r["topic"]] = totals.get(r["topic"], 0) + r["messages"]
    top = [t for t, _ in sorted(totals.items(), key=lambda kv: -kv[1])[:MAX_SERIES]]
    series: dict[str, dict[int, int]] = {t: {} for t in top}
    other: dict[int, int] = {}
    for r in rows:
        target = series.get(r["topic"], other)
        target[r["bucketStart"]] = target.get(r["bucketStart"], 0) + r["messages"]
    if other:
        series["(other topics)"] = other
    bucket = doc.get("scan", {}).get("bucketMs", 0)
    starts = [x for v in series.values() for x in v]
    if starts and bucket > 0 and (max(starts) - min(starts)) // bucket <= 5000:
        span = range(min(starts), max(starts) + bucket, bucket)  # empty buckets are zeros, not gaps
        series = {k: {x: v.get(x, 0) for x in span} for k, v in series.items()}
    title = f"{store}: messages per {duration_text(bucket)}" if bucket > 0 else f"{store}: messages"
    return line_chart({k: sorted(v.items()) for k, v in series.items()}, title=title, step=bucket)


def header_text(doc: dict[str, Any]) -> str:
    """Where and how long the audit ran, and when: only the figures the document has."""
    scan = doc.get("scan", {})
    secs = scan.get("seconds", {})
    pieces = []
    if scan.get("master") is not None:
        cores = f", {scan['parallelism']} cores" if scan.get("parallelism") is not None else ""
        pieces.append(f"Spark {scan['master']}{cores}")
    if scan.get("splits") is not None:
        size = f" of up to {size_text(scan['splitSize'])}" if scan.get("splitSize") else ""
        pieces.append(f"{scan['splits']} ranges{size}")
    if secs.get("total") is not None:
        pieces.append(f"total {secs['total']:.1f} s")
    if doc.get("now") is not None:
        pieces.append(f"generated {_time(doc['now'])}")
    return "; ".join(pieces) + "." if pieces else ""


def render_html(doc: dict[str, Any]) -> str:
    """The whole report as one HTML string."""
    stores = doc.get("stores", [])
    # worst first (as the audit sorts them; a document from elsewhere too), the order kept within a severity
    problems = sorted(
        doc.get("problems", []), key=lambda p: SEVERITY_RANK.get(p.get("severity") or "error", 0)
    )
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        "<title>mqtool audit</title>",
        f"<style>{CSS}</style></head><body>",
        "<h1>mqtool audit</h1>",
    ]
    if header := header_text(doc):
        parts.append(f"<p class='note'>{_e(header)}</p>")
    parts.append("<h2>Stores</h2>")
    parts.append(
        table(
            stores,
            [
                ("store", "store", "text"),
                ("commitlogFiles", "files", "int"),
                ("commitlogBytes", "commitlog", "size"),
                ("records", "records", "int"),
                ("messages", "messages", "int"),
                ("firstStoreTimestamp", "first store time", "time"),
                ("lastStoreTimestamp", "last store time", "time"),
                ("validEnd", "valid end", "int"),
                ("end", "walk ends at", "text"),
                ("errors", "errors", "int"),
                ("problems", "problems", "int"),
            ],
        )
    )
    parts.append("<h2>Message rate per topic</h2>")
    for s in stores:
        parts.append(_rates(doc, s["store"]))
    parts.append("<h2>Consumer lag per group</h2>")
    for s in stores:
        lag: dict[str, int] = {}
        for r in doc.get("lag", []):
            if r["store"] == s["store"] and r.get("lag") is not None:
                lag[r["group"]] = lag.get(r["group"], 0) + r["lag"]
        bars = [(g, v, _num(v)) for g, v in sorted(lag.items(), key=lambda kv: -kv[1])]
        parts.append(bar_chart(bars, title=f"{s['store']}: messages behind (sum over queues)"))
    parts.append("<h2>Disk used per topic</h2>")
    for s in stores:
        rows = [t for t in doc.get("topics", []) if t["store"] == s["store"]]
        bars = [
            (t["topic"], t["bytes"], f"{size_text(t['bytes'])} ({100 * (t['share'] or 0):.1f} %)")
            for t in rows[:30]
        ]
        parts.append(
            bar_chart(bars, title=f"{s['store']}: record bytes per topic (share of commitlog files)")
        )
    parts.append("<h2>Body sizes</h2>")
    for s in stores:
        classes: dict[tuple[int, int], int] = {}
        for r in doc.get("bodySizes", []):
            if r["store"] == s["store"]:
                key = (r["minSize"], r["maxSize"])
                classes[key] = classes.get(key, 0) + r["messages"]
        bars = [(f"{lo}–{hi} B" if hi else "empty", n, _num(n)) for (lo, hi), n in sorted(classes.items())]
        parts.append(bar_chart(bars, title=f"{s['store']}: messages by body size"))
    parts.append("<h2>Problems</h2>")
    if not problems:
        parts.append("<p class='ok'>No problems found.</p>")
    else:
        kinds: dict[str, int] = {}
        for p in problems:
            label = f"{p.get('severity') or ''} {p['kind']}".strip()
            kinds[label] = kinds.get(label, 0) + 1
        bars = [(k, v, _num(v)) for k, v in sorted(kinds.items(), key=lambda kv: -kv[1])]
        parts.append(bar_chart(bars, title="problems by kind"))
        parts.append(
            table(
                problems,
                [
                    ("store", "store", "text"),
                    ("severity", "severity", "sev"),
                    ("kind", "kind", "text"),
                    ("file", "file", "text"),
                    ("offset", "offset", "int"),
                    ("detail", "detail", "text"),
                ],
            )
        )
    parts.append("<h2>Queues</h2>")
    parts.append(f"<p class='note'>{_e(doc.get('definitions', {}).get('messages'))}</p>")
    parts.append(
        table(
            doc.get("queues", []),
            [
                ("store", "store", "text"),
                ("topic", "topic", "text"),
                ("queueId", "queue", "int"),
                ("messages", "messages", "int"),
                ("bytes", "bytes", "int"),
                ("cqMinOffset", "cq min", "int"),
                ("cqMaxOffset", "cq max", "int"),
                ("firstStoreTimestamp", "first", "time"),
                ("lastStoreTimestamp", "last", "time"),
            ],
        )
    )
    parts.append("<h2>Consumer lag</h2>")
    parts.append(
        table(
            doc.get("lag", []),
            [
                ("store", "store", "text"),
                ("group", "group", "text"),
                ("topic", "topic", "text"),
                ("queueId", "queue", "int"),
                ("consumerOffset", "offset", "int"),
                ("maxOffset", "max", "int"),
                ("lag", "lag", "int"),
                ("firstUnconsumedStoreTimestamp", "first unconsumed", "time"),
                ("state", "state", "text"),
            ],
            empty="no consumer offsets",
        )
    )
    parts.append("<h2>Delay backlog</h2>")
    parts.append(
        table(
            doc.get("delay", []),
            [
                ("store", "store", "text"),
                ("level", "level", "int"),
                ("delayMs", "delay ms", "int"),
                ("startOffset", "progress", "int"),
                ("maxOffset", "max", "int"),
                ("backlog", "backlog", "int"),
                ("due", "due", "int"),
                ("oldestDeliverTimestamp", "oldest", "time"),
            ],
            empty="no delay queue",
        )
    )
    if doc.get("replicas"):
        parts.append("<h2>Replicas</h2>")
        parts.append(
            table(
                doc["replicas"],
                [
                    ("storeA", "store A", "text"),
                    ("storeB", "store B", "text"),
                    ("identical", "identical", "text"),
                    ("commonPrefixEnd", "common prefix ends", "int"),
                    ("firstDifference", "first difference", "int"),
                    ("ahead", "ahead", "text"),
                    ("messagesPastPrefixA", "messages past it (A)", "int"),
                    ("messagesPastPrefixB", "messages past it (B)", "int"),
                    ("ha", "classic HA", "text"),
                    ("notCompared", "not compared", "text"),
                    ("configRowsDiffering", "config rows differing", "int"),
                    ("queuesDiffering", "queues differing", "int"),
                ],
                empty="no replica group",
            )
        )
    if doc.get("compaction"):
        parts.append("<h2>Compaction topics (5.x)</h2>")
        parts.append(
            table(
                doc["compaction"],
                [
                    ("store", "store", "text"),
                    ("topic", "topic", "text"),
                    ("queueId", "queue", "int"),
                    ("records", "served", "int"),
                    ("keys", "keys", "int"),
                    ("superseded", "superseded", "int"),
                    ("tombstones", "tombstones", "int"),
                    ("logBytes", "log bytes", "int"),
                    ("reclaimableRecords", "next compaction drops", "int"),
                    ("reclaimableBytes", "bytes reclaimable", "int"),
                ],
                empty="no compaction topic",
            )
        )
    if doc.get("tiered"):
        parts.append("<h2>Tiered storage (5.x)</h2>")
        parts.append(
            table(
                doc["tiered"],
                [
                    ("store", "store", "text"),
                    ("topic", "topic", "text"),
                    ("queueId", "queue", "int"),
                    ("localMinOffset", "local min", "int"),
                    ("tieredMinOffset", "tiered min", "int"),
                    ("tieredMaxOffset", "tiered max", "int"),
                    ("scannedMessages", "tiered messages", "int"),
                    ("scannedBytes", "tiered bytes", "int"),
                    ("servedMessages", "served from tiered", "int"),
                    ("damagedSegments", "damaged segments", "int"),
                ],
                empty="no tiered queue",
            )
        )
    parts.append("<h2>Timer wheel (5.x)</h2>")
    parts.append(
        table(
            doc.get("timer", []),
            [
                ("store", "store", "text"),
                ("messages", "messages", "int"),
                ("notEnqueued", "not enqueued", "int"),
                ("waiting", "waiting", "int"),
                ("overdue", "overdue", "int"),
                ("nextHour", "next hour", "int"),
                ("nextDay", "next day", "int"),
                ("later", "later", "int"),
                ("oldestOverdueMs", "oldest overdue", "time"),
                ("lastReadTimeMs", "wheel read time", "time"),
                ("stuck", "stuck", "text"),
                ("states", "by state", "text"),
            ],
            empty="no timer wheel",
        )
    )
    parts.append("<h2>POP groups (5.x)</h2>")
    parts.append(
        table(
            doc.get("pop", []),
            [
                ("store", "store", "text"),
                ("group", "group", "text"),
                ("popped", "popped", "int"),
                ("acked", "acked", "int"),
                ("inFlight", "in flight", "int"),
                ("oldestInvisibleUntil", "oldest invisible until", "time"),
                ("overdue", "overdue", "int"),
                ("oldestOverdue", "oldest overdue", "time"),
                ("revived", "revived", "int"),
                ("reviveBacklog", "revive backlog", "int"),
            ],
            empty="no POP checkpoints",
        )
    )
    parts.append("<h2>Transactions</h2>")
    parts.append(
        table(
            doc.get("transactions", []),
            [
                ("store", "store", "text"),
                ("queueId", "half queue", "int"),
                ("halfQueueOffset", "half offset", "int"),
                ("state", "state", "text"),
                ("realTopic", "real topic", "text"),
                ("realQueueId", "queue", "int"),
                ("producerGroup", "producer group", "text"),
                ("bornTimestamp", "born", "time"),
            ],
            empty="no transaction half queue",
        )
    )
    parts.append("<h2>Message trace</h2>")
    parts.append(
        table(
            doc.get("trace", []),
            [
                ("store", "store", "text"),
                ("traceType", "type", "text"),
                ("topic", "topic", "text"),
                ("group", "group", "text"),
                ("records", "records", "int"),
                ("failed", "failed", "int"),
                ("costP50", "cost p50 ms", "int"),
                ("costP90", "p90", "int"),
                ("costP99", "p99", "int"),
                ("costMax", "max", "int"),
                ("firstTimeStamp", "first", "time"),
                ("lastTimeStamp", "last", "time"),
            ],
            empty="no trace topic (RMQ_SYS_TRACE_TOPIC) or no trace record",
        )
    )
    parts.append("<h2>Duplicates</h2>")
    dup_rows = []
    for d in doc.get("duplicates", []):
        for t in d["top"]:
            dup_rows.append({"store": d["store"], "by": d["by"], **t})
    parts.append(
        table(
            [{**d, "top": len(d["top"])} for d in doc.get("duplicates", [])],
            [
                ("store", "store", "text"),
                ("by", "by", "text"),
                ("groups", "keys in more than one message", "int"),
                ("extraMessages", "extra messages", "int"),
            ],
        )
    )
    parts.append(
        table(
            dup_rows,
            [
                ("store", "store", "text"),
                ("by", "by", "text"),
                ("topic", "topic", "text"),
                ("key", "key", "text"),
                ("messages", "messages", "int"),
                ("firstPhyOffset", "first phy", "int"),
                ("lastPhyOffset", "last phy", "int"),
            ],
            empty="no duplicates",
        )
    )
    parts.append("<h2>Retry and DLQ</h2>")
    parts.append(
        table(
            [
                {
                    **r,
                    "byReconsume": ", ".join(
                        f"{k}×{v}" for k, v in sorted(r["reconsumeTimes"].items(), key=lambda kv: int(kv[0]))
                    ),
                }
                for r in doc.get("retry", [])
            ],
            [
                ("store", "store", "text"),
                ("group", "group", "text"),
                ("kind", "kind", "text"),
                ("topic", "topic", "text"),
                ("messages", "messages", "int"),
                ("bytes", "bytes", "int"),
                ("byReconsume", "reconsumeTimes × messages", "text"),
            ],
            empty="no retry or DLQ messages",
        )
    )
    notes = doc.get("notes", [])
    if notes:
        parts.append("<h2>Notes</h2><ul>" + "".join(f"<li>{_e(n)}</li>" for n in notes) + "</ul>")
    parts.append("</body></html>\n")
    return "\n".join(parts)


__all__ = ["bar_chart", "duration_text", "header_text", "line_chart", "render_html", "table"]
