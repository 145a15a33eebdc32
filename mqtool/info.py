"""`mqtool info`: one look at a store — commitlog range and times, queues, index files, checkpoint,
config files, the 5.x timer wheel, and whether a broker is running on it."""

from __future__ import annotations

from typing import Any

from formats.errors import MqtoolError
from mqtool.compaction import compaction_info
from mqtool.tiered.ranges import tiered_info
from store.queue.lmq import is_lmq, lmq_queue_names
from store.rocksdb.config import RocksDBConfigFile
from store.storedir import Store

CONFIG_FILES = (
    "topics.json",
    "subscriptionGroup.json",
    "consumerOffset.json",
    "lmqConsumerOffset.json",
    "delayOffset.json",
    "messageRequestMode.json",
    "consumerFilter.json",
    "consumerOrderInfo.json",
    "timermetrics",
    "transactionMetrics",
)


def commitlog_info(store: Store, jobs: int = 1) -> dict[str, Any]:
    """The commitlog's files, range, end (the broker's recovery walk) and first/last store times; the
    walks of broker-sized files run over `jobs` worker processes."""
    commitlog = store.commitlog
    jobs = 1 if store.is_remote else jobs
    stop = commitlog.stop_record(commitlog.recovery_start_offset, check_crc=True, jobs=jobs)
    first = commitlog.first_record()
    last = commitlog.last_record(jobs=jobs)
    return {
        "directory": str(commitlog.directory),
        "fileSize": commitlog.file_size,
        "files": [
            {"file": f.name, "startOffset": f.start_offset, "size": f.size} for f in commitlog.queue.files
        ],
        "minOffset": commitlog.min_offset,
        "maxOffset": stop.physical_offset,
        "end": stop.to_json(),
        "firstStoreTimestamp": first.store_timestamp if first else None,
        "lastStoreTimestamp": last.store_timestamp if last else None,
    }


def _min_max(store: Store, topic: str, queue_id: int) -> tuple[int, int]:
    queue = store.consume_queues.open(topic, queue_id)  # closed at once: a store may hold 100,000+ queues
    try:
        return queue.min_offset, queue.max_offset
    finally:
        queue.close()


def queues_info(store: Store) -> list[dict[str, Any]]:
    """A row per queue; LMQ queues (`%LMQ%...`, up to 100,000+) are only counted, by `lmq_info`."""
    rows = []
    for topic in store.consume_queues.topics():
        if is_lmq(topic):
            continue
        for queue_id in store.consume_queues.queue_ids(topic):
            try:
                lo, hi = _min_max(store, topic, queue_id)
                rows.append(
                    {
                        "topic": topic,
                        "queueId": queue_id,
                        "minOffset": lo,
                        "maxOffset": hi,
                        "messages": hi - lo,
                    }
                )
            except MqtoolError as exc:
                rows.append({"topic": topic, "queueId": queue_id, "error": str(exc)})
    return rows


def batch_queues_info(store: Store) -> list[dict[str, Any]]:
    """The BatchCQ topics' queues (batchconsumequeue/): min/max queue offsets, messages, units (records).
    A BatchCQ topic of topics.json without a directory is listed with no queue."""
    rows: list[dict[str, Any]] = []
    listed = set()
    for topic, queue_id in store.batch_consume_queues.queues():
        listed.add(topic)
        try:
            queue = store.batch_consume_queue(topic, queue_id)
            lo, hi = queue.min_offset, queue.max_offset
            rows.append(
                {
                    "topic": topic,
                    "queueId": queue_id,
                    "minOffset": lo,
                    "maxOffset": hi,
                    "messages": queue.message_count if lo >= 0 else 0,
                    "units": queue.unit_count,
                }
            )
        except MqtoolError as exc:
            rows.append({"topic": topic, "queueId": queue_id, "error": str(exc)})
    for topic in sorted(store.batch_cq_topics - listed):
        rows.append({"topic": topic, "queueId": None, "messages": 0, "units": 0})
    return rows


def lmq_info(store: Store) -> dict[str, Any] | None:
    """The LMQ queues in one line: how many (directories only: opening 100,000+ queues to count their
    messages would take minutes); None when there are none and the broker does not multi-dispatch."""
    settings = store.layout.lmq
    queues = sum(len(store.consume_queues.queue_ids(t)) for t in lmq_queue_names(store.consumequeue_dir))
    if not queues and not settings.enable_multi_dispatch:
        return None
    return {
        "queues": queues,
        "enableLmq": settings.enable_lmq,
        "enableMultiDispatch": settings.enable_multi_dispatch,
        "settingsFrom": settings.source,
    }


def index_info(store: Store) -> dict[str, Any]:
    service = store.index_service
    geometry = service.geometry
    return {
        "hashSlotNum": geometry.hash_slot_num if geometry else None,
        "indexNum": geometry.index_num if geometry else None,
        "files": [header_json(name, header) for name, header in service.headers()],
    }


def header_json(name: str, header: Any) -> dict[str, Any]:
    return {
        "file": name,
        "beginTimestamp": header.begin_timestamp,
        "endTimestamp": header.end_timestamp,
        "beginPhyOffset": header.begin_phy_offset,
        "endPhyOffset": header.end_phy_offset,
        "hashSlotCount": header.hash_slot_count,
        "indexCount": header.index_count,
    }


def checkpoint_json(checkpoint: Any) -> dict[str, Any] | None:
    if checkpoint is None:
        return None
    return {
        "physicMsgTimestamp": checkpoint.physic_msg_timestamp,
        "logicsMsgTimestamp": checkpoint.logics_msg_timestamp,
        "indexMsgTimestamp": checkpoint.index_msg_timestamp,
        "masterFlushedOffset": checkpoint.master_flushed_offset,
        "confirmPhyOffset": checkpoint.confirm_phy_offset,
        "minTimestamp": checkpoint.min_timestamp,
        "minTimestampIndex": checkpoint.min_timestamp_index,
    }


OFFSET_FILES = ("consumerOffset.json", "lmqConsumerOffset.json")


def config_files_info(store: Store) -> list[dict[str, Any]]:
    rows = []
    for name in CONFIG_FILES:
        path = store.config_dir / name
        bak = path.with_name(name + ".bak")
        in_rocksdb = isinstance(store.config(name), RocksDBConfigFile)  # a row even without the JSON
        if not path.exists() and not bak.exists() and not in_rocksdb:
            continue
        row: dict[str, Any] = {
            "file": name,
            "size": path.stat().st_size if path.exists() else None,
            "bak": bak.exists(),
        }
        offsets = store.layout.consumer_offset_file
        if name in OFFSET_FILES and name != offsets:
            row["loadedFrom"] = None
            used = store.config(offsets)
            where = f"RocksDB config/{used.kv_path.name}" if isinstance(used, RocksDBConfigFile) else offsets
            row["note"] = f"not read: the store's broker loads its consumer offsets from {where}"
            rows.append(row)
            continue
        try:
            loaded = store.config(name).load()
            row["loadedFrom"] = loaded.source
            row["note"] = loaded.reason
        except MqtoolError as exc:
            row["loadedFrom"] = None
            row["note"] = str(exc)
        rows.append(row)
    return rows


def dispatch_info(store: Store, commitlog_end: int) -> dict[str, Any]:
    """How far the ConsumeQueues and the index cover the commitlog (the reput position after a restart); in
    controller mode the bytes past the confirm offset are the unconfirmed tail, not undispatched ones."""
    cq_end = store.consume_queue_end
    headers = store.index_service.headers()
    index_end = headers[-1][1].end_phy_offset if headers else None
    doc = {
        "consumeQueueEnd": cq_end,
        "indexLastPhyOffset": index_end,
        "commitlogEnd": commitlog_end,
        "undispatchedBytes": max(0, commitlog_end - cq_end),
    }
    if store.confirm is not None:  # controller mode: the reput stops at the confirm offset
        confirm = min(commitlog_end, store.confirm.confirm_offset)
        doc["servedEnd"] = store.served_end
        doc["undispatchedBytes"] = max(0, confirm - cq_end)
        doc["undispatchedUnconfirmedBytes"] = max(0, commitlog_end - max(confirm, cq_end))
    return doc


def controller_info(store: Store) -> dict[str, Any] | None:
    """Controller mode and the confirm offset its recovery computes (`store.log.confirm`): None when the
    store's broker does not run in controller mode; else the mode and its evidence, the checkpoint's
    confirmPhyOffset, the confirm offset after recovery (the dispatch and serving end), the max physical
    offset, and the unconfirmed tail past it (bytes, and messages per topic from a walk of the tail)."""
    from store.log.confirm import unconfirmed_topics

    state = store.confirm
    if state is None:
        return None
    topics = unconfirmed_topics(store, state)
    return {
        **state.as_dict(),
        "unconfirmedMessages": sum(topics.values()),
        "unconfirmedByTopic": topics,
        "servedEnd": store.served_end,
    }


def dledger_info(store: Store) -> dict[str, Any] | None:
    """A DLedger commitlog in brief (None for a classic one): where its files are, the entries, what
    DLedger's recovery keeps and rewrites (`store.log.dledger.DLedgerRecovery`), its checkpoint and term."""
    from store.log.dledger import DLedgerCommitLog

    commitlog = store.commitlog
    if not isinstance(commitlog, DLedgerCommitLog):
        return None
    log = commitlog.log
    r = log.recovery
    paths = commitlog.paths
    term, leader = log.currterm()
    try:
        checkpoint = log.checkpoint()
        checkpoint_text = None if checkpoint is None else checkpoint.text
    except MqtoolError as exc:
        checkpoint_text = f"unreadable: {exc.message}"
    data = log.data_files
    return {
        "selfId": paths.self_id,
        "home": str(paths.home),
        "dataDirectories": [str(d) for d in paths.data_dirs],
        "readOnlyDirectories": [str(d) for d in paths.read_only_dirs],
        "dataFiles": len(data),
        "dataFileSize": log.file_size,
        "indexFiles": [f.name for f in log.index_files],
        "dividedCommitlogOffset": commitlog.divided_offset,
        "ledgerBeginIndex": r.begin_index,
        "ledgerEndIndex": r.last_index,
        "ledgerEndTerm": r.last_term,
        "recoveryStartFile": data[r.start_file].name if r.start_file is not None and data else None,
        "dataEnd": r.end,
        "dataEndReason": r.reason,
        "filesDeleted": r.files_deleted,
        "indexUnitsOnDisk": r.index_units_on_disk,
        "indexRewriteFrom": r.index_rewrite_from,
        "committedIndex": r.committed_index,
        "committedPos": r.committed_pos,
        "checkpoint": checkpoint_text,
        "currTerm": term,
        "voteLeader": leader,
        "loadProblems": [f"{file}: {why}" for file, _offset, why in log.load_problems()],
        "brokerDoesNotStart": r.exits,
    }


def timer_info(store: Store) -> dict[str, Any] | None:
    """The 5.x timer wheel in brief (None without timer files): the timerlog's units and where its walk
    ends, the wheel's non-empty slots, timercheck's read time and where the enqueue resumes."""
    from formats.names import TIMER_TOPIC
    from store.timer.messages import enqueue_position
    from store.timer.timerstore import TimerStore

    timer = TimerStore.open(store)
    if timer is None:
        return None
    queue = store.consume_queue(TIMER_TOPIC, 0) if 0 in store.consume_queues.queue_ids(TIMER_TOPIC) else None
    slots = timer.wheel.non_empty() if timer.wheel is not None else []
    read_ms = None if timer.check is None else timer.check.last_read_time_ms
    return {
        "precisionMs": timer.precision_ms,
        "units": len(timer.walk),
        "logEnd": timer.walk.end,
        "logStop": timer.walk.stop,
        "slots": len(slots),
        "slotsToRead": sum(read_ms is None or s.time_ms >= read_ms for s in slots),
        "lastReadTimeMs": read_ms,
        "timerTopicMessages": None if queue is None else queue.max_offset - queue.min_offset,
        "enqueuePosition": enqueue_position(store, timer),
        "timerTopicMaxOffset": None if queue is None else queue.max_offset,
    }


def startup_info(store: Store) -> dict[str, Any] | None:
    """The start-up verdict of the store's broker version (`store.startup`); None for a store read by URL
    (its files are fetched on demand: the verdict reads every file's size and the recovery's walk)."""
    from store.startup import startup_verdict

    if store.location != str(store.root):
        return None
    return startup_verdict(store).as_dict()


def _section(fn, store: Store) -> Any:
    try:
        return fn(store)
    except MqtoolError as exc:
        return {"error": str(exc)}


def store_info(store: Store, jobs: int = 1) -> dict[str, Any]:
    """Everything `mqtool info` shows, as one JSON-ready document (`jobs`: commitlog_info's)."""
    live = store.liveness()
    commitlog = _section(lambda st: commitlog_info(st, jobs), store)
    return {
        "store": store.location,
        "layout": _section(lambda st: st.layout.kind.as_dict(), store),
        "broker": {
            "running": live.locked,
            "pid": live.holder_pid,
            "abortFile": live.abort_present,
            "status": live.describe(),
        },
        "commitlog": commitlog,
        "queues": _section(queues_info, store),
        "batchQueues": _section(batch_queues_info, store),
        "lmq": _section(lmq_info, store),
        "compaction": _section(compaction_info, store),
        "tiered": _section(tiered_info, store),
        "dispatch": _section(lambda st: dispatch_info(st, commitlog.get("maxOffset", 0)), store),
        "index": _section(index_info, store),
        "checkpoint": _section(lambda st: checkpoint_json(st.checkpoint()), store),
        "configFiles": _section(config_files_info, store),
        "timer": _section(timer_info, store),
        "dledger": _section(dledger_info, store),
        "controller": _section(controller_info, store),
        "startup": _section(startup_info, store),
    }
