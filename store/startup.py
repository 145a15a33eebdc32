"""Would a broker started on this store now come up? The verdict of `BrokerStartup` and its reasons.

`BrokerStartup.createBrokerController` (5.3.3 BrokerStartup.java:244-258; 4.9.8 :218-250) calls
`BrokerController.initialize()`, which loads the metadata managers (5.3.3 BrokerController.java:805-817:
topics, topic queue mapping, consumer offsets, subscription groups, consumer filters, consumer order info;
4.9.8 :242-246), then `DefaultMessageStore.load()` (the commitlog, ConsumeQueue and index files, the
recovery) and the schedule service's delayOffset.json (5.3.3 :886-894). When any returns false the broker
calls `System.exit(-3)`: the verdict is **refuse**. `controller.start()` then takes the store lock
(`DefaultMessageStore.start`, 5.3.3 DefaultMessageStore.java:408-411, "Lock failed,MQ already started"); a
throw there is `System.exit(-1)`: **exit**. Otherwise **start**, and the reasons say what its recovery does.

Each reason names the real code that decides it; tests/data/startup/expect.json records the real `load`
on stores mutated each way (tests/oracle/startup_cases.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from formats.errors import MqtoolError
from store.config.configfile import ConfigFile, ConfigLoadError
from store.log.mappedfile import MappedFileQueue
from store.log.recovery import recovery_start_abnormal

START, REFUSE, EXIT = "start", "refuse", "exit"
SEVERITY = {START: 0, REFUSE: 1, EXIT: 2}

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


@dataclass(frozen=True)
class StartupReason:
    """One thing the broker's start-up does with this store: its effect, what and where, and the code."""

    code: str
    effect: str  # start (a note), refuse, exit
    message: str
    file: str | None = None
    code_ref: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "effect": self.effect,
            "message": self.message,
            "file": self.file,
            "source": self.code_ref,
        }


@dataclass
class StartupVerdict:
    """start / refuse / exit for a broker of `major`, the reasons, and what its recovery does."""

    major: int
    reasons: list[StartupReason] = field(default_factory=list)
    recovery: dict[str, Any] = field(default_factory=dict)

    @property
    def verdict(self) -> str:
        return max((r.effect for r in self.reasons), key=SEVERITY.__getitem__, default=START)

    def add(self, *args: Any, **kwargs: Any) -> None:
        self.reasons.append(StartupReason(*args, **kwargs))

    def as_dict(self) -> dict[str, Any]:
        return {
            "broker": f"{self.major}.x",
            "verdict": self.verdict,
            "reasons": [r.as_dict() for r in self.reasons],
            "recovery": self.recovery,
        }


def rel(store, path: Any) -> str:
    try:
        return str(Path(path).relative_to(store.root))
    except ValueError:
        return str(path)


def check_file_queue(
    store, verdict: StartupVerdict, directory, size: int, size_source: str, what: str
) -> list:
    """`MappedFileQueue.load` -> `doLoad` (5.3.3 MappedFileQueue.java:246-290; 4.9.8 :158-190): every
    file must be `size` bytes; 5.3.3 deletes a zero-length last file first (4.9.8 refuses it). Returns the
    files."""
    try:
        queue = MappedFileQueue.open(directory)
    except MqtoolError as exc:
        verdict.add(
            f"{what}_unloadable",
            REFUSE,
            f"{exc.message}: the store's load() fails",
            exc.file,
            "MappedFileQueue.doLoad",
        )
        return []
    files = list(queue.files)
    if files and files[-1].size == 0 and verdict.major >= 5:
        verdict.add(
            f"{what}_empty_last_file",
            START,
            "a zero-length last file: the 5.x load deletes it and goes on",
            rel(store, files[-1].path),
            "5.3.3 MappedFileQueue.java:255-260",
        )
        files.pop()
    for f in files:
        if f.size != size:
            verdict.add(
                f"{what}_file_size",
                REFUSE,
                f"{f.size} bytes, not the {size} of {size_source}: MappedFileQueue.doLoad returns "
                "false, the store's load() fails and BrokerStartup exits (-3)",
                rel(store, f.path),
                "MappedFileQueue.doLoad (5.3.3 :262-266, 4.9.8 :163-167)",
            )
            break
    return files


def _commitlog_checks(store, verdict: StartupVerdict) -> list:
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


def _queue_checks(store, verdict: StartupVerdict) -> None:
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


def _config_checks(store, verdict: StartupVerdict) -> None:
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


def _recovery(store, verdict: StartupVerdict, files: list) -> None:
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
    if not files:
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


def data_end(files: list) -> int:
    """The end of the last non-zero byte of the last file holding data."""
    from store.io.filereads import last_nonzero_end

    for f in reversed(files):
        end = last_nonzero_end(f.path, 0, f.size)
        if end:
            return f.start_offset + end
    return 0


def startup_verdict(store, major: int | None = None) -> StartupVerdict:
    """What a broker of version `major` (default: the store's) does when started on `store` now.

    The parts beside the classic store have their own modules: `store.startup_dledger`,
    `store.startup_compaction`, `store.startup_timer`, `store.startup_pop`, `store.startup_controller`. A
    layout part none of them judges (store.kind: a commitlog elsewhere or on several paths, tiered storage, a
    controller-mode broker.conf, the KV POP service) is named as not judged."""
    from store.startup_compaction import judge_compaction
    from store.startup_controller import judge_controller
    from store.startup_dledger import judge_dledger
    from store.startup_pop import judge_pop
    from store.startup_timer import judge_timer

    major = major or store.layout.broker_version().major
    verdict = StartupVerdict(major)
    judged = {"controller-mode replica"} if judge_controller(store, verdict) else set()
    for part in store.layout.kind.unsupported_reads():
        if part.name not in judged:
            _not_judged(verdict, f"a {part.name} ({part.evidence})")
    _config_checks(store, verdict)
    if not judge_pop(store, verdict):
        _not_judged(verdict, "the KV POP service (broker.conf popConsumerKVServiceInit=true)")
    files = _commitlog_checks(store, verdict)
    _queue_checks(store, verdict)
    _recovery(store, verdict, files)
    judge_dledger(store, verdict)
    judge_compaction(store, verdict)
    judge_timer(store, verdict)
    return verdict


def _not_judged(verdict: StartupVerdict, what: str) -> None:
    verdict.add("layout_unsupported", START, f"{what}: its own start-up conditions are not judged here", None,
                "store.kind")  # fmt: skip
