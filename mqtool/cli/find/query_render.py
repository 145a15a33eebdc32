"""How `mqtool query` shows what `mqtool.query` returns: a table for people, every field of a message a line
(the record view: `--format record`, and the default on a terminal for a single message), JSON for scripts."""

from __future__ import annotations

from formats.message.commitlog import Message
from mqtool.query.consumed import ConsumerState
from mqtool.query.view import body_view, message_document

TABLE_BODY_PREVIEW = 60  # characters of body text in a table cell
RECORD_BODY_PREVIEW = 1000  # characters of body text in the record view, unless --body-limit says otherwise
STATE_WORDS = {"consumed": "yes", "not-consumed": "no", "filtered": "filtered", "dead-letter": "dead-letter"}


def _preview(msg: Message, width: int) -> str:
    view = body_view(msg)
    if view.text is not None:
        text = view.text.replace("\n", "\\n")
        return text if len(text) <= width else text[: width - 1] + "…"
    shown = view.data[: width // 2 - 2]
    return "hex:" + shown.hex() + ("…" if len(view.data) > len(shown) else "")


def _record_body(msg: Message, body_limit: int | None) -> str:
    """The body in the record view: text (newlines as \\n) or hex, whole up to a limit, then its size."""
    view = body_view(msg)
    limit = body_limit if body_limit is not None else RECORD_BODY_PREVIEW
    rest = " ({} {} in all: --export DIR writes the body to a file)"
    if view.text is not None:
        text = view.text.replace("\n", "\\n")
        return text if len(text) <= limit else text[:limit] + "…" + rest.format(len(view.text), "characters")
    shown = view.data[: limit // 2]
    more = len(view.data) > len(shown)
    return "hex:" + shown.hex() + ("…" + rest.format(len(view.data), "bytes") if more else "")


def _record_columns():
    """mqadmin queryMsgById's fields in its order (QueryMsgByIdSubCommand.printMsg), then the rest."""
    from mqtool.render.output import Column

    return [
        Column("offsetMsgId", "OffsetID"),
        Column("uniqKey", "MsgId (UNIQ_KEY)"),
        Column("topic", "Topic"),
        Column("tags", "Tags"),
        Column("keys", "Keys"),
        Column("queueId", "Queue ID", "int"),
        Column("queueOffset", "Queue Offset", "int"),
        Column("physicalOffset", "CommitLog Offset", "int"),
        Column("reconsumeTimes", "Reconsume Times", "int"),
        Column("bornTimestamp", "Born Timestamp", "time"),
        Column("storeTimestamp", "Store Timestamp", "time"),
        Column("bornHost", "Born Host"),
        Column("storeHost", "Store Host"),
        Column("sysFlag", "System Flag", "int"),
        Column("flag", "Flag", "int"),
        Column("preparedTransactionOffset", "Prepared Txn Offset", "int"),
        Column("totalSize", "Total Size", "int"),
        Column("bodyCRC", "Body CRC", "int"),
        Column("bodyLength", "Body Length", "int"),
        Column("bodyCompression", "Body Compression"),
    ]


def _emit_records(docs: list[dict], messages: list[Message], ctx, title, body_limit: int | None) -> None:
    """The record view: each message a block, a field a line, each property and each group's reason on a
    line of its own (indented under Properties and Consumed), through the `record` format's writer."""
    from mqtool.render.output import Column
    from mqtool.render.pages import RecordPages

    props = list(dict.fromkeys(k for doc in docs for k in doc["properties"]))
    groups = list(dict.fromkeys(g for doc in docs for g in doc["consumedReason"]))
    columns = [
        *_record_columns(),
        Column("_properties", "Properties"),
        *(Column(f"property:{k}", f"  {k}", "token") for k in props),
        Column("preview", "Body"),
        Column("_consumed", "Consumed"),
        *(Column(f"consumed:{g}", f"  {g}", "token") for g in groups),
    ]
    rows = []
    for doc, msg in zip(docs, messages, strict=True):
        row = dict(
            doc, preview=_record_body(msg, body_limit), bodyCompression=doc["bodyCompression"] or "none"
        )
        row.update({f"property:{k}": v for k, v in doc["properties"].items()})
        row.update({f"consumed:{g}": v for g, v in doc["consumedReason"].items()})
        row["_consumed"] = "" if doc["consumedReason"] else "(no group has an offset on its queue)"
        rows.append(row)
    writer = RecordPages(columns, ctx, title)
    if rows:
        writer.page(rows)
    writer.finish("(no message found)")


def render_messages(
    messages: list[Message],
    ctx,
    *,
    consumers: ConsumerState | None = None,
    body_limit: int | None = None,
    title: str | None = None,
    record: bool = False,
) -> None:
    """A table for people (with `record`, or in the record format, one field a line per message); for
    scripts one JSON list of message objects (or JSONL / CSV rows)."""
    from mqtool.render.output import Column, emit_rows, emit_table

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
    docs = [message_document(m, consumers, body_limit=body_limit) for m in messages]
    if ctx.machine:
        emit_rows(docs, columns, ctx)
        return
    if record or ctx.fmt == "record":
        _emit_records(docs, messages, ctx, title, body_limit)
        return
    width = min(body_limit, TABLE_BODY_PREVIEW) if body_limit is not None else TABLE_BODY_PREVIEW
    verdicts = [consumers.verdicts(m) if consumers is not None else {} for m in messages]
    for doc, msg, by_group in zip(docs, messages, verdicts, strict=True):
        doc["preview"] = _preview(msg, max(width, 8))
        doc["consumed"] = " ".join(f"{g}:{STATE_WORDS[v.state]}" for g, v in by_group.items())
    emit_table(docs, columns, ctx, title=title, empty="(no message found)")
