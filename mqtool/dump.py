"""`mqtool dump ...`: each kind of store file, record by record, as the broker reads it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from formats.commitlog import Message
from formats.errors import MqtoolError
from formats.fastjson import parse
from mqtool.info import INDEX_HEADER_COLUMNS, checkpoint_json, header_json
from mqtool.render import (
    Column,
    RenderContext,
    emit_document,
    emit_fields,
    emit_rows,
    emit_table,
    to_json_text,
)
from store.storedir import Store

# --- commitlog ----------------------------------------------------------------------------------


def commitlog_records(
    store: Store,
    *,
    from_offset: int | None = None,
    count: int | None = None,
    topic: str | None = None,
    with_body: bool = False,
    check_crc: bool = True,
) -> Iterator[dict[str, Any]]:
    """Records in physical order as JSON-ready dicts; the last one says where the valid data ends.

    With `topic`, only that topic's messages are listed (plus the final stop record). `count` limits
    the records listed (the stop record is listed whenever it is reached).
    """
    if count is not None and count < 0:
        raise MqtoolError("--count must not be negative")
    listed = 0
    commitlog = store.commitlog
    for record in commitlog.iter_records(from_offset, check_crc=check_crc):
        if isinstance(record, Message):
            if count is not None and listed >= count:
                return
            if topic is not None and record.topic != topic:
                continue
            row = record.to_json(include_body=with_body)
            row["kind"] = "message"
            listed += 1
            yield row
        elif record.kind == "blank":
            if topic is not None:
                continue
            if count is not None and listed >= count:
                return
            listed += 1
            yield record.to_json()
        else:
            yield record.to_json()
            return


COMMITLOG_COLUMNS = [
    Column("physicalOffset", "phyOffset", "int"),
    Column("kind"),
    Column("totalSize", "size", "int"),
    Column("topic", max_width=40),
    Column("queueId", "queue", "int"),
    Column("queueOffset", "queueOffset", "int"),
    Column("storeTimestamp", "storeTime", "time"),
    Column("tags", max_width=20),
    Column("keys", max_width=30),
    Column("uniqKey"),
    Column("reason", max_width=60),
]


def render_commitlog(rows: Iterator[dict[str, Any]], ctx: RenderContext, *, with_body: bool = False) -> None:
    columns = COMMITLOG_COLUMNS + ([Column("body", max_width=60)] if with_body else [])
    emit_rows(rows, columns, ctx, title="CommitLog records", empty="(no records)")


# --- consume queue ------------------------------------------------------------------------------


def cq_units(
    store: Store, topic: str, queue_id: int, *, from_offset: int | None = None, count: int | None = None
) -> dict[str, Any]:
    """The units of one ConsumeQueue still on disk, from its first file (or `from_offset`)."""
    if topic not in store.consume_queues.topics():
        raise MqtoolError(f"no ConsumeQueue for topic {topic!r}", str(store.consumequeue_dir))
    if queue_id not in store.consume_queues.queue_ids(topic):
        raise MqtoolError(
            f"topic {topic!r} has no queue {queue_id} (queues: "
            f"{', '.join(map(str, store.consume_queues.queue_ids(topic)))})",
            str(store.consumequeue_dir / topic),
        )
    queue = store.consume_queue(topic, queue_id)
    first = queue.first_queue_offset
    start = first if from_offset is None else max(from_offset, first)
    end = queue.max_offset if count is None else min(queue.max_offset, start + max(count, 0))
    units = queue.units(start, end) if end > start else []
    commitlog_min = store.commitlog.min_offset
    rows = []
    for unit in units:
        phy, size = int(unit["phyOffset"]), int(unit["size"])
        if phy == 0 and size == 0x7FFFFFFF:
            state = "filler"
        elif phy < commitlog_min:
            state = "expired"  # its record was deleted with an old commitlog file
        else:
            state = "ok"
        rows.append(
            {
                "queueOffset": int(unit["queueOffset"]),
                "phyOffset": phy,
                "size": size,
                "tagsCode": int(unit["tagsCode"]),
                "state": state,
            }
        )
    return {
        "topic": topic,
        "queueId": queue_id,
        "minOffset": queue.min_offset,
        "maxOffset": queue.max_offset,
        "units": rows,
    }


CQ_COLUMNS = [
    Column("queueOffset", kind="int"),
    Column("phyOffset", kind="int"),
    Column("size", kind="int"),
    Column("tagsCode", kind="int"),
    Column("state"),
]


def render_cq(result: dict[str, Any], ctx: RenderContext) -> None:
    title = (
        f"ConsumeQueue {result['topic']}/{result['queueId']}: "
        f"min {result['minOffset']}, max {result['maxOffset']}"
    )
    emit_rows(result["units"], CQ_COLUMNS, ctx, title=title, empty="(no units)")


# --- index --------------------------------------------------------------------------------------


def _index_file(store: Store, name: str):
    service = store.index_service
    wanted = Path(name).name
    for f in service.files:
        if f.name == wanted:
            return f
    names = ", ".join(n for n, _ in service.headers() if n) or "none"
    raise MqtoolError(f"no index file {wanted!r} (index files: {names})", str(store.index_dir))


def index_headers(store: Store) -> list[dict[str, Any]]:
    return [header_json(name, header) for name, header in store.index_service.headers()]


def index_entries(store: Store, name: str) -> Iterator[dict[str, Any]]:
    """Entries of one index file with the store time the broker reconstructs for each."""
    f = _index_file(store, name)
    begin = f.header.begin_timestamp
    for entry in f.iter_entries():
        yield {
            "file": f.name,
            "position": entry.position,
            "slot": entry.key_hash % f.geometry.hash_slot_num,
            "keyHash": entry.key_hash,
            "phyOffset": entry.phy_offset,
            "timeDiff": entry.time_diff,
            "storeTimestamp": begin + entry.time_diff * 1000,
            "prevIndex": entry.prev_index,
        }


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
            raise MqtoolError("--entries needs an index FILE (see `mqtool dump index` for their names)")
        emit_rows(
            index_headers(store), INDEX_HEADER_COLUMNS, ctx, title="Index files", empty="(no index files)"
        )
        return
    f = _index_file(store, name)
    if not entries:
        emit_rows([header_json(f.name, f.header)], INDEX_HEADER_COLUMNS, ctx, title=f"Index file {f.name}")
        return
    emit_rows(index_entries(store, name), ENTRY_COLUMNS, ctx, title=f"Index file {f.name} entries")


# --- checkpoint ---------------------------------------------------------------------------------


def checkpoint(store: Store) -> dict[str, Any]:
    cp = store.checkpoint()
    if cp is None:
        raise MqtoolError("no checkpoint file", str(store.checkpoint_path))
    return checkpoint_json(cp) or {}


def render_checkpoint(doc: dict[str, Any], ctx: RenderContext) -> None:
    emit_document(
        doc,
        ctx,
        lambda: emit_fields(
            [(k, v, "time" if "Timestamp" in k else "int") for k, v in doc.items()],
            ctx,
            title="StoreCheckpoint",
        ),
    )


# --- config -------------------------------------------------------------------------------------

_CONFIG_ALIASES = {
    "consumeroffset": "consumerOffset.json",
    "delayoffset": "delayOffset.json",
    "topics": "topics.json",
    "subscriptiongroup": "subscriptionGroup.json",
    "messagerequestmode": "messageRequestMode.json",
    "consumerfilter": "consumerFilter.json",
    "consumerorderinfo": "consumerOrderInfo.json",
}


def config_file_name(name: str) -> str:
    key = name.removesuffix(".json").lower()
    return _CONFIG_ALIASES.get(key, name)


def _plain_json(value: Any) -> Any:
    """fastjson values (int keys, tuples) as standard JSON values (keys become strings)."""
    if isinstance(value, dict):
        return {str(k): _plain_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain_json(v) for v in value]
    return value


def config(store: Store, name: str, *, bak: bool = False) -> dict[str, Any]:
    """A config file as the broker loads it: its content and where it came from (file, .bak, none)."""
    file_name = config_file_name(name)
    if "/" in file_name or file_name in ("", ".", ".."):
        raise MqtoolError(f"bad config file name {name!r}")
    if bak:
        path = store.config_dir / (file_name + ".bak")
        try:
            if path.exists() and not path.is_file():  # a FIFO would block, a device never end
                raise MqtoolError("cannot read: not a regular file", str(path))
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise MqtoolError(f"cannot read: {exc.strerror}", str(path)) from exc
        content = _plain_json(parse(text, file=str(path)))
        return {"file": str(path), "source": "bak", "reason": "asked for the .bak copy", "content": content}
    path = store.config_dir / file_name
    if not path.exists() and not path.with_name(file_name + ".bak").exists():
        present = sorted(p.name for p in store.config_dir.glob("*")) if store.config_dir.is_dir() else []
        raise MqtoolError(
            f"no {file_name} and no {file_name}.bak (files here: {', '.join(present) or 'none'}); "
            "a broker would start with empty tables",
            str(path),
        )
    loaded = store.config(file_name).load()
    return {
        "file": str(loaded.path) if loaded.path else str(store.config_dir / file_name),
        "source": loaded.source,
        "reason": loaded.reason,
        "warnings": list(loaded.warnings),
        "content": _plain_json(loaded.model.to_json()),
        "_model": loaded.model,
    }


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
                Column("group"),
                Column("topic"),
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
            Column("topic"),
            Column("consumerGroup"),
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
            raise MqtoolError("this config file has no tabular form; use --format json", doc["file"])
        emit_rows(tabular[0], tabular[1], ctx)
        return
    emit_document(public, ctx, human)
