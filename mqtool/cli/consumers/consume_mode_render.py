"""How `mqtool consume_mode` shows what `mqtool.consume_mode` returns: tables for people, JSON for scripts."""

from __future__ import annotations

import sys

from mqtool.consume_mode import ConsumeModeChange, ConsumeModeRow, ConsumeModes
from mqtool.render.output import Column, RenderContext, emit_document, emit_rows
from mqtool.safety import warn

MODE_COLUMNS = [
    Column("topic", kind="name"),
    Column("group", kind="name"),
    Column("mode"),
    Column("popShareQueueNum", "pop share queues", "int"),
    Column("source"),
    Column("retry", "retry topics (messages waiting)"),
    Column("retryMessagesWaiting", "waiting", "int"),
]


def _retry_text(row: ConsumeModeRow) -> str:
    parts = []
    for r in row.retry_topics:
        parts.append(f"{r.topic} ({r.messages_waiting})" if r.exists else f"{r.topic} (not created yet)")
    return ", ".join(parts) or "-"


def _say(ctx: RenderContext, text: str) -> None:
    if ctx.machine:
        sys.stderr.write(f"mqtool: note: {text}\n")
    else:
        ctx.out.write(text + "\n")


def render_modes(modes: ConsumeModes, ctx: RenderContext, *, title: str = "Consume modes") -> None:
    if ctx.machine:
        emit_rows((r.to_dict() for r in modes.rows), MODE_COLUMNS, ctx)
    else:
        rows = [{**r.to_dict(), "retry": _retry_text(r)} for r in modes.rows]
        emit_rows(rows, MODE_COLUMNS, ctx, title=title, empty="(no topic/group known)")
        for r in modes.rows:
            if r.note:
                _say(ctx, f"Note: {r.topic} / {r.group}: {r.note}")
    for text in modes.notes:
        _say(ctx, text if ctx.machine else "Note: " + text)
    if not ctx.machine and modes.broker_version.major == 5 and any(r.source == "default" for r in modes.rows):
        _say(ctx, "Note: source 'default' = no entry in messageRequestMode.json: the broker uses PULL")


def render_change(change: ConsumeModeChange, ctx: RenderContext, execute: bool) -> None:
    for w in change.warnings:
        warn(w)

    def human() -> None:
        row = {
            "topic": change.topic,
            "group": change.group,
            "mode": f"{change.mode_before} -> {change.mode}",
            "share": f"{change.pop_share_queue_num_before} -> {change.pop_share_queue_num}",
            "source": f"{change.source_before} -> file",
        }
        columns = [
            Column("topic", kind="name"),
            Column("group", kind="name"),
            Column("mode"),
            Column("share", "pop share queues"),
            Column("source"),
        ]
        emit_rows([row], columns, ctx, title="Consume mode change")
        if not change.changed:
            _say(ctx, "Nothing to change: messageRequestMode.json already has this entry.")
        elif not execute:
            _say(
                ctx,
                "Dry run: nothing was written. Add --execute to write config/messageRequestMode.json "
                "(the broker must be stopped; it reads the file at start-up).",
            )
        elif change.after is not None:
            _say(ctx, "Wrote config/messageRequestMode.json (previous content kept in .bak). Now:")
            render_modes(change.after, ctx, title="Consume mode (read back)")

    doc = change.to_dict()
    emit_document(doc, ctx, human, csv_rows=([doc], []))
