"""How `mqtool export` shows what `mqtool.export` returns: tables for people, JSON for scripts."""

from __future__ import annotations

from typing import Any

from mqtool.export import ExportSummary
from mqtool.render.output import RenderContext, emit_document, emit_fields


def render_summary(summary: ExportSummary, ctx: RenderContext) -> None:
    """The summary for people; for scripts one JSON document (a line in jsonl, a row in csv)."""
    doc = summary.to_json()
    emit_document(doc, ctx, lambda: _human(summary, ctx), csv_rows=([doc], []))


def _human(summary: ExportSummary, ctx: RenderContext) -> None:
    stop = summary.stop
    pairs: list[tuple[str, Any, str]] = [
        ("output", summary.output, "text"),
        ("messages", summary.messages, "int"),
        ("record bytes read", summary.bytes_read, "int"),
        ("first physical offset", summary.first_offset, "int"),
        ("last physical offset", summary.last_offset, "int"),
        (
            "walk stopped",
            f"{stop['status']} at phy {stop['physicalOffset']}" if stop else "end of range",
            "text",
        ),
    ]
    for name, n in sorted(summary.topics.items()):
        pairs.append((f"messages in {name}", n, "int"))
    if summary.tiered is not None:
        pairs.append(("read from the tiered store", summary.tiered.messages, "int"))
        pairs.extend(("tiered problem", problem, "text") for problem in summary.tiered.problems)
    emit_fields(pairs, ctx, title="Export")
