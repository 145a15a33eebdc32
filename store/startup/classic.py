"""The classic store's part of the start-up verdict: the metadata files `initialize()` loads, the commitlog
and ConsumeQueue files `DefaultMessageStore.load()` maps, and the commitlog recovery (normal, or abnormal
after a crash: `abort`). See `store.startup` for how the verdict follows from them."""

from __future__ import annotations

from formats.errors import MqtoolError
from store.config.configfile import ConfigFile, ConfigLoadError
from store.log.recovery import recovery_start_abnormal
from store.startup.verdict import EXIT, REFUSE, START, StartupVerdict, check_file_queue, data_end, rel

# the ConfigManager files initialize() loads, in order (a false load refuses the start)
METADATA_5X = (
    "topics.json",
    "topicQueueMapping.json",
    "consumerOffset.json",
    "subscriptionGroup.json",
    "consumerFilter.json",
    "consumerOrderInfo.json",
    "delayOffset.json",
)
METADATA_49 = (
    "topics.json",
    "consumerOffset.json",
    "subscriptionGroup.json",
    "consumerFilter.json",
    "delayOffset.json",
)


def commitlog_checks(store, verdict: StartupVerdict) -> list:
    configured = store.layout.configured("mappedFileSizeCommitLog")
    files = store.commitlog.queue.files
    sizes = [f.size for f in files if f.size]
    size = configured or (max(set(sizes), key=sizes.count) if sizes else 0)
    source = "broker.conf's mappedFileSizeCommitLog" if configured else "the other files (no --broker-config)"
    files = check_file_queue(store, verdict, store.commitlog_dir, size, source, "commitlog")
    for before, after in zip(files, files[1:], strict=False):
        if before.start_offset + before.size != after.start_offset:
            gap = (before.start_offset + before.size, after.start_offset)
            verdict.add(
                "commitlog_gap",
                START,
                f"no commitlog file holds [{gap[0]}, {gap[1]}): the broker starts (its checkSelf logs "
                '"[BUG]The mappedFile queue\'s data is damaged"), but every message there is gone '
                "and a consumer whose offset points there gets nothing (#2141)" + _units_in(store, *gap),
                rel(store, after.path),
                "MappedFileQueue.checkSelf (5.3.3 :64-83)",
            )
    return files


def _units_in(store, lo: int, hi: int) -> str:
    """How many ConsumeQueue units point into [lo, hi), per queue (the messages consumers cannot read)."""
    hits = []
    try:
        for topic, queue_id in store.consume_queues.queues():
            queue = store.consume_queues.open(topic, queue_id)
            try:
                units = queue.units(0)
                n = int(((units["phyOffset"] >= lo) & (units["phyOffset"] < hi)).sum())
            finally:
                queue.close()
            if n:
                hits.append(f"{topic}/{queue_id}: {n}")
    except MqtoolError:
        return ""
    return f"; units pointing there: {', '.join(hits)}" if hits else ""


def queue_checks(store, verdict: StartupVerdict) -> None:
    if store.layout.consume_queues_in_rocksdb:
        return
    setting = store.layout.cq_file_size()
    source = {
        "broker.conf": "broker.conf's mappedFileSizeConsumeQueue",
        "current files": "the queue files (no --broker-config)",
    }.get(setting.source, setting.source)
    try:
        queues = list(store.consume_queues.queues())
    except MqtoolError as exc:
        verdict.add("cq_unloadable", REFUSE, exc.message, exc.file, "ConsumeQueueStore.load")
        return
    for topic, queue_id in queues:
        directory = store.consumequeue_dir / topic / str(queue_id)
        before = len(verdict.reasons)
        check_file_queue(store, verdict, directory, setting.value, source, "cq")
        if any(r.effect == REFUSE for r in verdict.reasons[before:]):
            return  # the load stops at the first queue that fails


def config_checks(store, verdict: StartupVerdict) -> None:
    if store.layout.config_backend != "json":
        return  # RocksDB config managers: opened by RocksDB, not ConfigManager.load
    names = METADATA_5X if verdict.major >= 5 else METADATA_49
    offsets = store.layout.consumer_offset_file
    for name in names:
        name = offsets if name == "consumerOffset.json" else name
        try:
            loaded = ConfigFile(store.root, name).load()
        except ConfigLoadError as exc:
            verdict.add(
                "config_unloadable",
                REFUSE,
                f"{exc.message}: its manager's ConfigManager.load() returns false and BrokerStartup "
                "exits (-3)",
                rel(store, store.config_dir / name),
                "ConfigManager.load/loadBak (5.3.3 ConfigManager.java:29-70)",
            )
            continue
        except MqtoolError as exc:
            verdict.add("config_unreadable", REFUSE, exc.message, exc.file, "ConfigManager.load")
            continue
        if loaded.source == "bak":
            verdict.add(
                "config_bak",
                START,
                f"{loaded.reason}: the broker starts with the .bak's content",
                rel(store, store.config_dir / name),
                "ConfigManager.loadBak",
            )
        elif loaded.source == "none" and (store.config_dir / name).exists():
            verdict.add(
                "config_lost",
                START,
                f"{loaded.reason}: every entry of {name} is lost (the next flush writes the empty tables)",
                rel(store, store.config_dir / name),
                "ConfigManager.load/loadBak (5.3.3 ConfigManager.java:29-70)",
            )


def recovery(store, verdict: StartupVerdict, files: list) -> None:
    """Normal or abnormal recovery (`abort`), where it walks from and where it ends the commitlog."""
    live = store.liveness()
    if live.locked:
        verdict.add(
            "store_locked",
            EXIT,
            f'{live.describe()}: start() cannot lock the store ("Lock failed,MQ already started") '
            "and BrokerStartup exits (-1)",
            "lock",
            "DefaultMessageStore.start (5.3.3 :408-411)",
        )
    files = [f for f in files if f.size]
    if not files or _dledger_recovers(store):
        # DLedger's own recovery replaces CommitLog's once its data list is not empty (5.3.3
        # DLedgerCommitLog.java:291-330): store.startup.dledger judges it
        verdict.recovery = {"mode": "abnormal" if live.abort_present else "normal", "commitlogEnd": 0}
        return
    log = store.commitlog
    if live.abort_present:
        cp = store.checkpoint()
        bound = cp.min_timestamp if cp is not None else 0
        firsts = []
        for f in files:
            stamp = log.store_time_at(f.start_offset)
            firsts.append(None if stamp is None else (1, stamp))
        start = files[recovery_start_abnormal(firsts, bound)].start_offset
        mode = "abnormal"
        verdict.add(
            "abnormal_recovery",
            START,
            f"abort is present: the broker recovers abnormally, walking the commitlog from "
            f"{start} (the last file stored before the checkpoint's min time {bound}) and "
            "dispatching again every record after the consume queues' end",
            "abort",
            "CommitLog.recoverAbnormally (5.3.3 :712-800)",
        )
    else:
        start = log.recovery_start_offset
        mode = "normal"
    end = log.valid_end(start, check_crc=True)
    verdict.recovery = {"mode": mode, "walkFrom": start, "commitlogEnd": end}
    written_end = data_end(files)
    if written_end > end:
        verdict.recovery["truncatedBytes"] = written_end - end
        verdict.add(
            "commitlog_truncated",
            START,
            f"the recovery ends the commitlog at {end} and drops the {written_end - end} bytes written "
            "after it (a torn or corrupt record)",
            None,
            "CommitLog.recover*",
        )


def _dledger_recovers(store) -> bool:
    from store.log.dledger import DLedgerCommitLog

    log = store.commitlog
    return isinstance(log, DLedgerCommitLog) and bool(log.log.data_files)
