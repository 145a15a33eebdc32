"""How `mqtool query` shows what `mqtool.query.lookup` returns: tables for people, JSON for scripts."""

from __future__ import annotations

from formats.message.commitlog import Message
from mqtool.offsets.progress import CommittedOffsets
from mqtool.query.view import body_view, message_document

TABLE_BODY_PREVIEW = 60  # characters of body text in a table cell


def _preview(msg: Message, width: int) -> str:
    view = body_view(msg)
    if view.text is not None:
        text = view.text.replace("\n", "\\n")
        return text if len(text) <= width else text[: width - 1] + "…"
    shown = view.data[: width // 2 - 2]
    return "hex:" + shown.hex() + ("…" if len(view.data) > len(shown) else "")


def _consumed_text(consumed: dict[str, bool]) -> str:
    return " ".join(f"{g}:{'yes' if c else 'no'}" for g, c in consumed.items())


def render_messages(
    messages: list[Message],
    ctx,
    *,
    committed: CommittedOffsets | None = None,
    body_limit: int | None = None,
    title: str | None = None,
) -> None:
    """A table for people; for scripts one JSON list of message objects (or JSONL / CSV rows)."""
    from mqtool.render import Column, emit_rows, emit_table

    columns = [
        Column("physicalOffset", "phyOffset", "int"),
        Column("topic", kind="name", max_width=32, priority=0),
        Column("queueId", "queue", "int", priority=0),
        Column("queueOffset", "qOffset", "int", priority=0),
        Column("storeTimestamp", "storeTime", "time", priority=0),
        Column("keys", max_width=30, priority=2),
        Column("uniqKey", kind="id"),
        Column("tags", kind="name", max_width=20, priority=2),
        Column("preview", "body", priority=3),
        Column("consumed", "consumed", max_width=40),
    ]
    docs = [message_document(m, committed, body_limit=body_limit) for m in messages]
    if ctx.machine:
        emit_rows(docs, columns, ctx)
        return
    width = min(body_limit, TABLE_BODY_PREVIEW) if body_limit is not None else TABLE_BODY_PREVIEW
    for doc, msg in zip(docs, messages, strict=True):
        doc["preview"] = _preview(msg, max(width, 8))
        doc["consumed"] = _consumed_text(doc["consumedBy"])
    emit_table(docs, columns, ctx, title=title, empty="(no message found)")
