"""The compaction store's part of the start-up verdict (5.x topics with `cleanup.policy=COMPACTION`).

With `enableCompaction` (5.3.3 MessageStoreConfig.java:67, default true) `DefaultMessageStore.load()` calls
`CompactionService.load` (DefaultMessageStore.java:356-358), which returns false when
`CompactionStore.load` throws (CompactionService.java:72-80): the store's load fails and BrokerStartup exits
(-3). `CompactionStore.load` (CompactionStore.java:85-123) opens every
`compaction/compactionLog/<topic>/<queueId>`: a queue directory not named by an int throws (:102,109-113);
one without its `compactionCq` directory is skipped (:104-108); each queue's files are judged by
`store.kv.compaction.CompactionLog.load_problems` (a file of another size: the queue is not served; a
`.delete` leftover or a log file without its CQ file: the load fails). The position-checkpoint is loaded by
the CompactionPositionMgr constructor, whose result nobody reads (CompactionPositionMgr.java:38-42): it never
stops the start. 4.x has no compaction store.
"""

from __future__ import annotations

from formats.errors import MqtoolError
from store.startup.verdict import REFUSE, START, StartupVerdict

_SKIPPED = "the broker skips it"  # the one load_listing problem that does not fail the load


def judge_compaction(store, verdict: StartupVerdict) -> None:
    """Add the compaction store's start-up reasons to `verdict` (nothing without compaction/compactionLog)."""
    from formats.compaction import COMPACTION_LOG_DIR

    log_root = store.root / "compaction" / COMPACTION_LOG_DIR
    if not log_root.is_dir():
        return
    if verdict.major < 5:
        verdict.add(
            "compaction_ignored",
            START,
            "a 4.x broker has no compaction store: compaction/ is left "
            "as it is and its topics are served from the ConsumeQueues",
            "compaction",
            "5.x store/kv/CompactionStore",
        )
        return
    cfg = store.layout.broker_config
    if "enableCompaction" in cfg.explicit and not cfg.enableCompaction:
        verdict.add(
            "compaction_disabled",
            START,
            "broker.conf sets enableCompaction=false: compaction/ is not loaded",
            "compaction",
            "DefaultMessageStore.java:356",
        )
        return
    cs = store.compaction
    queues, problems = cs.load_listing
    for message in problems:
        skipped = _SKIPPED in message
        verdict.add(
            "compaction_skipped" if skipped else "compaction_load_fails",
            START if skipped else REFUSE,
            message if skipped else f"{message}: CompactionService.load returns false",
            "compaction/" + message.split(" ", 1)[0].split(":", 1)[0],
            "CompactionStore.java:100-113, CompactionService.java:72-80",
        )
    for topic, queue_id in queues:
        where = f"compaction/{COMPACTION_LOG_DIR}/{topic}/{queue_id}"
        for effect, message in cs.log(topic, queue_id).load_problems():
            if effect == "start fails":
                verdict.add(
                    "compaction_load_fails",
                    REFUSE,
                    f"{topic}/{queue_id}: {message}: the store's load fails and BrokerStartup exits (-3)",
                    where,
                    "CompactionLog.java:1045-1059, CompactionService.java:72-80",
                )
            else:
                verdict.add(
                    "compaction_not_served",
                    START,
                    f"{topic}/{queue_id}: {message}: the queue's "
                    "CompactionLog is not opened, every pull of it answers NO_MATCHED_LOGIC_QUEUE",
                    where,
                    "CompactionStore.loadAndGetClog",
                )
    try:
        cs.position_checkpoint  # noqa: B018 - read for its error
    except MqtoolError as exc:
        verdict.add(
            "compaction_checkpoint_unreadable",
            START,
            f"{exc.message}: the broker starts with no "
            "compacted positions (CompactionPositionMgr's load result is not read)",
            "compaction/position-checkpoint",
            "CompactionPositionMgr.java:38-42",
        )
