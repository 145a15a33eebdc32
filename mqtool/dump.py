"""`mqtool dump ...`: each kind of store file, record by record, as the broker reads it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from formats.config.fastjson import parse
from formats.errors import MqtoolError, UsageError
from formats.message.commitlog import Message
from formats.names import escaped_name
from mqtool.compaction import compacted_cq_units, is_served_compacted
from mqtool.info import checkpoint_json, header_json
from store.config.configfile import read_config_text
from store.rocksdb.config import RocksDBConfigFile
from store.storedir import Store
from store.timer.timerstore import TimerStore, chain

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
    the records listed (the stop record is listed whenever it is reached). In controller mode every
    message row says whether it lies past the confirm offset (`unconfirmed`: the broker does not serve it;
    `store.log.confirm`): the dump reads the raw log.
    """
    if count is not None and count < 0:
        raise UsageError("--count must not be negative")
    listed = 0
    commitlog = store.commitlog
    confirm = None if store.confirm is None else store.confirm.confirm_offset
    for record in commitlog.iter_records(from_offset, check_crc=check_crc):
        if isinstance(record, Message):
            if count is not None and listed >= count:
                return
            if topic is not None and record.topic != topic:
                continue
            row = record.to_json(include_body=with_body)
            row["kind"] = "message"
            if confirm is not None:
                row["unconfirmed"] = record.physical_offset + record.total_size > confirm
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


# --- consume queue ------------------------------------------------------------------------------


def cq_units(
    store: Store, topic: str, queue_id: int, *, from_offset: int | None = None, count: int | None = None
) -> dict[str, Any]:
    """The units of one ConsumeQueue still on disk, from its first file (or `from_offset`); `units` is an
    iterator of rows, read as they are consumed.

    A BatchCQ topic's queue (batchconsumequeue/) answers `batch_cq_units` instead, a compaction topic's
    (the broker serves it from compaction/) `compacted_cq_units`.
    """
    if is_served_compacted(store, topic):
        return compacted_cq_units(store, topic, queue_id, from_offset=from_offset, count=count)
    if topic in store.batch_consume_queues.topics():
        return batch_cq_units(store, topic, queue_id, from_offset=from_offset, count=count)
    local_ids = store.consume_queues.queue_ids(topic) if topic in store.consume_queues.topics() else []
    if queue_id not in local_ids and store.tiered is not None:
        from mqtool.tiered.fetch import tiered_queue_ids, tiered_span

        span = tiered_span(store, topic, queue_id) if queue_id in tiered_queue_ids(store, topic) else None
        if span is not None:  # a queue only the tiered store holds: the broker serves it from there
            return _with_tiered_units(store, topic, queue_id, None, span, from_offset, count)
    if topic not in store.consume_queues.topics():
        raise MqtoolError(f"no ConsumeQueue for topic {escaped_name(topic)}", str(store.consumequeue_dir))
    if queue_id not in local_ids:
        raise MqtoolError(
            f"topic {escaped_name(topic)} has no queue {queue_id} (queues: "
            f"{', '.join(map(str, store.consume_queues.queue_ids(topic)))})",
            str(store.consumequeue_dir),
        )
    queue = store.consume_queue(topic, queue_id)
    first = queue.first_queue_offset
    span = None
    if store.tiered is not None:
        from mqtool.tiered.fetch import tiered_span

        span = tiered_span(store, topic, queue_id)
    if span is not None:
        return _with_tiered_units(store, topic, queue_id, queue, span, from_offset, count)
    start = first if from_offset is None else max(from_offset, first)
    end = queue.max_offset if count is None else min(queue.max_offset, start + max(count, 0))
    return {
        "topic": topic,
        "queueId": queue_id,
        "minOffset": queue.min_offset,
        "maxOffset": queue.max_offset,
        "units": _cq_rows(queue, start, end, store.commitlog.min_offset),
    }


def _with_tiered_units(
    store: Store, topic: str, queue_id: int, queue, span, from_offset: int | None, count: int | None
) -> dict[str, Any]:
    """dump cq --tiered: the offsets the broker serves from the tiered store as the tiered ConsumeQueue's
    units (state `tiered`; phyOffset: the offset in the queue's tiered COMMIT_LOG), then the local units
    from where the local store serves (its units below, kept on disk but not served, are left out).
    `queue` None: the queue has no local files; the broker's min/max for it are then those of the empty
    queue findOrCreateConsumeQueue makes (0, 0) and the smaller minimum (`mqtool.tiered.ranges`)."""
    tiered, stop = span
    start = tiered.min_offset if from_offset is None else max(from_offset, tiered.min_offset)
    limit = None if count is None else max(count, 0)
    t_end = stop if limit is None else min(stop, start + limit)
    local_min, local_max = (0, 0) if queue is None else (queue.min_offset, queue.max_offset)
    local_start = max(start, stop, 0 if queue is None else queue.first_queue_offset)
    left = None if limit is None else limit - max(0, t_end - start)
    end = local_max if left is None else min(local_max, local_start + max(left, 0))

    def rows() -> Iterator[dict[str, Any]]:
        for q in range(start, t_end):
            unit = tiered.unit(q)
            yield {"queueOffset": q, "phyOffset": unit.phy_offset, "size": unit.size,
                   "tagsCode": unit.tags_code, "state": "tiered"}  # fmt: skip
        if queue is not None:
            yield from _cq_rows(queue, local_start, end, store.commitlog.min_offset)

    return {
        "topic": topic,
        "queueId": queue_id,
        "minOffset": min(tiered.min_offset, local_min),
        "maxOffset": local_max,
        "tieredMinOffset": tiered.min_offset,
        "tieredMaxOffset": tiered.max_offset,
        "units": rows(),
    }


CQ_CHUNK = 1 << 16  # units read at a time (1.25 MiB): a queue of any length is listed in bounded memory


def _cq_rows(queue, start: int, end: int, commitlog_min: int) -> Iterator[dict[str, Any]]:
    """The units [start, end) of a ConsumeQueue as rows, read a chunk at a time, each with its state."""
    for chunk_start in range(start, end, CQ_CHUNK):
        units = queue.units(chunk_start, min(end, chunk_start + CQ_CHUNK))
        for queue_offset, phy, size, tags in zip(
            units["queueOffset"].tolist(),
            units["phyOffset"].tolist(),
            units["size"].tolist(),
            units["tagsCode"].tolist(),
            strict=True,
        ):
            if phy == 0 and size == 0x7FFFFFFF:
                state = "filler"
            elif phy < commitlog_min:
                state = "expired"  # its record was deleted with an old commitlog file
            else:
                state = "ok"
            yield {
                "queueOffset": queue_offset,
                "phyOffset": phy,
                "size": size,
                "tagsCode": tags,
                "state": state,
            }


def batch_cq_units(
    store: Store, topic: str, queue_id: int, *, from_offset: int | None = None, count: int | None = None
) -> dict[str, Any]:
    """The units of one BatchConsumeQueue: each with the queue offsets it covers (base offset, batch size),
    from the first unit (or the unit holding `from_offset`); `count` limits the units."""
    if queue_id not in store.batch_consume_queues.queue_ids(topic):
        raise MqtoolError(
            f"BatchCQ topic {escaped_name(topic)} has no queue {queue_id} (queues: "
            f"{', '.join(map(str, store.batch_consume_queues.queue_ids(topic)))})",
            str(store.batch_consume_queues.directory),
        )
    queue = store.batch_consume_queue(topic, queue_id)
    units = queue.units()
    if from_offset is not None:
        units = units[units["msgBaseOffset"] + units["batchSize"] > from_offset]
    if count is not None:
        units = units[: max(count, 0)]
    commitlog_min = store.commitlog.min_offset
    rows = (
        {
            "queueOffset": base,
            "batchSize": batch,
            "phyOffset": phy,
            "size": size,
            "tagsCode": tags,
            "storeTime": stored,
            "compactedOffset": compacted,
            "state": "expired" if phy < commitlog_min else "ok",
        }
        for _pos, phy, size, tags, stored, base, batch, compacted, _reserved in units.tolist()
    )
    return {
        "topic": topic,
        "queueId": queue_id,
        "queueType": "BatchCQ",
        "minOffset": queue.min_offset,
        "maxOffset": queue.max_offset,
        "units": rows,
    }


# --- index --------------------------------------------------------------------------------------


def index_file(store: Store, name: str):
    """The store's index file called `name` (a path or a bare name); MqtoolError naming the others."""
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
    f = index_file(store, name)
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


# --- checkpoint ---------------------------------------------------------------------------------


def checkpoint(store: Store) -> dict[str, Any]:
    cp = store.checkpoint()
    if cp is None:
        raise MqtoolError("no checkpoint file", str(store.checkpoint_path))
    return checkpoint_json(cp) or {}


# --- the 5.x timer wheel (timerlog, timerwheel, timercheck) -------------------------------------


def timer_store(store: Store) -> TimerStore:
    timer = TimerStore.open(store)
    if timer is None:
        why = "no timer wheel files (timerlog/, timerwheel, config/timercheck): not a 5.x timer store"
        raise MqtoolError(why, str(store.root))
    return timer


def timerlog_units(
    store: Store, *, from_position: int | None = None, count: int | None = None
) -> dict[str, Any]:
    """The timerlog units the broker's recovery accepts, from `from_position`, and where the walk ended."""
    walk = timer_store(store).walk
    positions = walk.units["position"]
    start = 0 if from_position is None else int((positions < from_position).sum())
    stop = len(walk) if count is None else min(len(walk), start + max(count, 0))
    return {
        "end": walk.end,
        "stop": walk.stop,
        "stopFile": walk.stop_file,
        "blanks": walk.blanks,
        "units": (walk.unit(i).to_json() for i in range(start, stop)),
    }


def timerwheel_slots(store: Store, *, every: bool = False) -> dict[str, Any]:
    """The wheel's non-empty slots (every slot with `every`), each with the length of its chain."""
    timer = timer_store(store)
    if timer.wheel is None:
        raise MqtoolError("no timerwheel file", str(store.root / "timerwheel"))
    wheel = timer.wheel
    slots = (wheel.slot_at(i) for i in range(len(wheel.slots))) if every else wheel.non_empty()

    def rows() -> Iterator[dict[str, Any]]:
        for s in slots:
            positions, broken = chain(timer.walk, s.last_pos) if s.last_pos > 0 or s.num else ([], None)
            row = s.to_json()
            row.update(chainLength=len(positions), chainEnd=broken)
            yield row

    read_ms = None if timer.check is None else timer.check.last_read_time_ms
    return {"precisionMs": wheel.precision_ms, "lastReadTimeMs": read_ms, "slots": rows()}


def timercheck(store: Store) -> dict[str, Any]:
    check = timer_store(store).check
    if check is None:
        raise MqtoolError("no timercheck file (or shorter than the TimerCheckpoint)",
                          str(store.config_dir / "timercheck"))  # fmt: skip
    return check.to_json()


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
        text, _ = read_config_text(path)
        if text is None:
            raise MqtoolError("cannot read: no such file", str(path))
        content = _plain_json(parse(text, file=str(path)))
        return {"file": str(path), "source": "bak", "reason": "asked for the .bak copy", "content": content}
    path = store.config_dir / file_name
    kept = store.config(file_name)
    in_rocksdb = isinstance(kept, RocksDBConfigFile)  # the table the broker loads, with or without the JSON
    if not in_rocksdb and not path.exists() and not path.with_name(file_name + ".bak").exists():
        present = sorted(p.name for p in store.config_dir.glob("*")) if store.config_dir.is_dir() else []
        raise MqtoolError(
            f"no {file_name} and no {file_name}.bak (files here: {', '.join(present) or 'none'}); "
            "a broker would start with empty tables",
            str(path),
        )
    loaded = kept.load()
    return {
        "file": str(loaded.path) if loaded.path else str(store.config_dir / file_name),
        "source": loaded.source,
        "reason": loaded.reason,
        "warnings": list(loaded.warnings),
        "content": _plain_json(loaded.model.to_json()),
        "_model": loaded.model,
    }
