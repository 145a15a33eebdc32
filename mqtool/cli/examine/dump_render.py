"""How `mqtool dump` shows what `mqtool.dump` returns: tables for people, JSON for scripts."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from formats.errors import UsageError
from mqtool.cli.examine.info_render import INDEX_HEADER_COLUMNS
from mqtool.dump import index_entries, index_file, index_headers
from mqtool.info import header_json
from mqtool.render.output import (
    Column,
    RenderContext,
    emit_document,
    emit_fields,
    emit_rows,
    emit_table,
    to_json_text,
)
from store.storedir import Store

COMMITLOG_COLUMNS = [
    Column("physicalOffset", "phyOffset", "int"),
    Column("kind"),
    Column("totalSize", "size", "int"),
    Column("topic", kind="name", max_width=40),
    Column("queueId", "queue", "int"),
    Column("queueOffset", "queueOffset", "int"),
    Column("storeTimestamp", "storeTime", "time"),
    Column("tags", max_width=20),
    Column("keys", max_width=30),
    Column("uniqKey", kind="id"),
    Column("reason", max_width=60),
]


def render_commitlog(rows: Iterator[dict[str, Any]], ctx: RenderContext, *, with_body: bool = False) -> None:
    columns = COMMITLOG_COLUMNS + ([Column("body", max_width=60)] if with_body else [])
    # the record that ends the walk (blank, end, torn, corrupt) says why in `reason`, which messages lack
    emit_rows(rows, columns, ctx, title="CommitLog records", empty="(no records)", csv_fields=["reason"])


CQ_COLUMNS = [
    Column("queueOffset", kind="int"),
    Column("phyOffset", kind="int"),
    Column("size", kind="int"),
    Column("tagsCode", kind="int"),
    Column("state"),
]


BCQ_COLUMNS = [
    Column("queueOffset", "baseOffset", "int"),
    Column("batchSize", kind="int"),
    Column("phyOffset", kind="int"),
    Column("size", kind="int"),
    Column("tagsCode", kind="int"),
    Column("storeTime", kind="time"),
    Column("compactedOffset", kind="int"),
    Column("state"),
]


COMPACTION_CQ_COLUMNS = [
    Column("queueOffset", kind="int"),
    Column("logOffset", kind="int"),
    Column("size", kind="int"),
    Column("tagsCode", kind="int"),
    Column("storeTime", kind="time"),
    Column("keys", kind="name", max_width=60),
    Column("bodyLength", "body", "int"),
    Column("file"),
    Column("position", kind="int"),
    Column("state"),
]


COMPACTION_LOG_COLUMNS = [
    Column("queueOffset", kind="int"),
    Column("kind"),
    Column("keys", kind="name", max_width=40),
    Column("bodyLength", "body", "int"),
    Column("tombstone"),
    Column("served"),
    Column("nextCompaction", "next compaction"),
    Column("storeTimestamp", "storeTime", "time"),
    Column("uniqKey", kind="id"),
    Column("file", kind="token"),
    Column("position", kind="int"),
    Column("totalSize", "size", "int"),
    Column("reason", max_width=60),
]


def render_compaction_log(result: dict[str, Any], ctx: RenderContext, *, with_body: bool = False) -> None:
    title = (
        f"Compaction log {result['topic']}/{result['queueId']}: served min {result['minOffset']}, max "
        f"{result['maxOffset']}; compacted to {result['compactedTo']}; next compaction "
        + ("not due" if result["nextCompactionMapEnd"] is None else f"up to {result['nextCompactionMapEnd']}")
    )
    columns = COMPACTION_LOG_COLUMNS + ([Column("body", max_width=60)] if with_body else [])
    emit_rows(result["records"], columns, ctx, title=title, empty="(no records)", csv_fields=["reason"])


def render_cq(result: dict[str, Any], ctx: RenderContext) -> None:
    if result.get("queueType") == "CompactionCQ":
        title = (
            f"Compaction CQ {result['topic']}/{result['queueId']} (what consumers are served): "
            f"min {result['minOffset']}, max {result['maxOffset']}"
        )
        emit_rows(result["units"], COMPACTION_CQ_COLUMNS, ctx, title=title, empty="(no units)")
        return
    if result.get("queueType") == "BatchCQ":
        title = (
            f"BatchConsumeQueue {result['topic']}/{result['queueId']}: "
            f"min {result['minOffset']}, max {result['maxOffset']}"
        )
        emit_rows(result["units"], BCQ_COLUMNS, ctx, title=title, empty="(no units)")
        return
    title = (
        f"ConsumeQueue {result['topic']}/{result['queueId']}: "
        f"min {result['minOffset']}, max {result['maxOffset']}"
    )
    emit_rows(result["units"], CQ_COLUMNS, ctx, title=title, empty="(no units)")


ENTRY_COLUMNS = [
    Column("position", kind="int"),
    Column("slot", kind="int"),
    Column("keyHash", kind="int"),
    Column("phyOffset", kind="int"),
    Column("timeDiff", kind="int"),
    Column("storeTimestamp", "time (index)", "time"),
    Column("prevIndex", kind="int"),
]


def render_index(store: Store, name: str | None, entries: bool, ctx: RenderContext) -> None:
    if name is None:
        if entries:
            raise UsageError("--entries needs an index FILE (see `mqtool dump index` for their names)")
        emit_rows(
            index_headers(store), INDEX_HEADER_COLUMNS, ctx, title="Index files", empty="(no index files)"
        )
        return
    f = index_file(store, name)
    if not entries:
        emit_rows([header_json(f.name, f.header)], INDEX_HEADER_COLUMNS, ctx, title=f"Index file {f.name}")
        return
    emit_rows(index_entries(store, name), ENTRY_COLUMNS, ctx, title=f"Index file {f.name} entries")


def render_checkpoint(doc: dict[str, Any], ctx: RenderContext) -> None:
    kinds = [(k, "time" if "Timestamp" in k else "int") for k in doc]
    emit_document(
        doc,
        ctx,
        lambda: emit_fields([(k, doc[k], kind) for k, kind in kinds], ctx, title="StoreCheckpoint"),
        csv_rows=([doc], [Column(k, kind=kind) for k, kind in kinds]),
    )


TIMERLOG_COLUMNS = [
    Column("position", kind="int"),
    Column("prevPos", kind="int"),
    Column("magic", kind="int"),
    Column("roll"),
    Column("delete"),
    Column("currWriteTimeMs", "written", "time"),
    Column("delayedTimeMs", "slot", "time"),
    Column("offsetPy", "phyOffset", "int"),
    Column("sizePy", "size", "int"),
]


def render_timerlog(result: dict[str, Any], ctx: RenderContext) -> None:
    title = f"timerlog units (the walk ends at {result['end']}: {result['stop']})"
    emit_rows(result["units"], TIMERLOG_COLUMNS, ctx, title=title, empty="(no units)")


WHEEL_COLUMNS = [
    Column("index", kind="int"),
    Column("timeMs", "slot", "time"),
    Column("firstPos", kind="int"),
    Column("lastPos", kind="int"),
    Column("num", kind="int"),
    Column("chainLength", "chain", "int"),
    Column("chainEnd", "chain ends", max_width=40),
    Column("placed"),
]


def render_timerwheel(result: dict[str, Any], ctx: RenderContext) -> None:
    title = f"timerwheel slots (precision {result['precisionMs']} ms)"
    emit_rows(result["slots"], WHEEL_COLUMNS, ctx, title=title, empty="(no slots)")


def render_timercheck(doc: dict[str, Any], ctx: RenderContext) -> None:
    kinds = [(k, "time" if k in ("lastReadTimeMs", "dataVersionTimestamp") else "int") for k in doc]
    emit_document(
        doc,
        ctx,
        lambda: emit_fields([(k, doc[k], kind) for k, kind in kinds], ctx, title="TimerCheckpoint"),
        csv_rows=([doc], [Column(k, kind=kind) for k, kind in kinds]),
    )


def _int_key(key: str) -> int | str:
    """A table key that should be a number (queue id, delay level), as it is when it is not one."""
    return int(key) if key.lstrip("-").isdecimal() else key


def _entries(table: dict[str, Any], name_field: str) -> list[dict[str, Any]]:
    """The rows of a name -> object table; a damaged entry (not an object) keeps only its name."""
    return [dict(v) if isinstance(v, dict) else {name_field: k} for k, v in table.items()]


def _config_rows(doc: dict[str, Any]) -> tuple[list[dict[str, Any]], list[Column]] | None:
    content = doc["content"]
    if not isinstance(content, dict):
        return None
    if "offsetTable" in content and isinstance(content["offsetTable"], dict):
        table = content["offsetTable"]
        if not Path(doc["file"]).name.startswith("delayOffset"):  # consumerOffset.json
            rows = []
            for key, queues in table.items():
                topic, _, group = key.partition("@")
                if not isinstance(queues, dict):  # a damaged entry: shown as it is
                    rows.append({"topic": topic, "group": group, "queueId": None, "offset": queues})
                    continue
                for queue_id, offset in queues.items():
                    rows.append(
                        {"topic": topic, "group": group, "queueId": _int_key(queue_id), "offset": offset}
                    )
            return rows, [
                Column("group", kind="name"),
                Column("topic", kind="name"),
                Column("queueId", "queue", "int"),
                Column("offset", kind="int"),
            ]
        rows = [{"level": _int_key(k), "offset": v} for k, v in table.items()]  # delayOffset.json
        return rows, [Column("level", kind="int"), Column("offset", kind="int")]
    if isinstance(content.get("topicConfigTable"), dict):
        rows = _entries(content["topicConfigTable"], "topicName")
        cols = [
            "topicName",
            "readQueueNums",
            "writeQueueNums",
            "perm",
            "order",
            "topicFilterType",
            "attributes",
        ]
        return rows, [Column(c, kind="int" if "Nums" in c or c == "perm" else "text") for c in cols]
    if isinstance(content.get("subscriptionGroupTable"), dict):
        rows = _entries(content["subscriptionGroupTable"], "groupName")
        cols = [
            "groupName",
            "consumeEnable",
            "consumeBroadcastEnable",
            "retryQueueNums",
            "retryMaxTimes",
            "brokerId",
        ]
        return rows, [Column(c) for c in cols]
    if isinstance(content.get("messageRequestModeMap"), dict):
        rows = [
            row
            for topic, groups in content["messageRequestModeMap"].items()
            for row in (_entries(groups, "consumerGroup") if isinstance(groups, dict) else [{"topic": topic}])
        ]
        return rows, [
            Column("topic", kind="name"),
            Column("consumerGroup", kind="name"),
            Column("mode"),
            Column("popShareQueueNum", kind="int"),
        ]
    return None


def render_config(doc: dict[str, Any], ctx: RenderContext) -> None:
    public = {k: v for k, v in doc.items() if not k.startswith("_")}

    def human() -> None:
        title = f"{doc['file']} (loaded from {doc['source']}: {doc['reason']})"
        tabular = _config_rows(public)
        if tabular is None:
            ctx.out.write(title + "\n" + to_json_text(public["content"]) + "\n")
        else:
            emit_table(tabular[0], tabular[1], ctx, title=title)
        for warning in public.get("warnings") or []:
            ctx.out.write(f"warning: {warning}\n")

    if ctx.fmt in ("csv",):
        tabular = _config_rows(public)
        if tabular is None:
            raise UsageError(
                "--format csv: this config file has no tabular form; use --format json", doc["file"]
            )
        emit_rows(tabular[0], tabular[1], ctx)
        return
    emit_document(public, ctx, human)
