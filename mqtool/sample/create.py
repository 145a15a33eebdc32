"""`mqtool sample create` itself: the store built in a directory beside DIR (the simulated broker's run,
then its config files as the broker writes them: topics.json, subscriptionGroup.json, consumerOffset.json,
delayOffset.json, 5.x messageRequestMode.json) and renamed into place, so DIR either does not exist or is
complete; `SampleSummary` says what was created."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from formats.config.base import DataVersion, java_hash_order
from formats.config.metadata import (
    MessageRequestModeTable,
    SubscriptionGroupConfig,
    SubscriptionGroupTable,
    TopicConfig,
    TopicConfigTable,
)
from formats.config.offsets import ConsumerOffsetTable, DelayOffsetTable
from formats.names import INIT_SUBSCRIPTION_GROUPS, SCHEDULE_TOPIC, TRANS_GROUP
from mqtool.outputs import output_directory
from mqtool.sample.broker import _SampleWriter
from mqtool.sample.options import (
    BROKER_NAME,
    CLUSTER,
    DLQ_A,
    GROUP_A,
    GROUP_B,
    HALF_TOPIC,
    OP_TOPIC,
    RETRY_A,
    SampleError,
    SampleOptions,
)
from store.config.configfile import ConfigFile
from store.dledgerappend import SELF_ID
from store.index.indexwriter import list_index_files
from store.io.filewrites import TMP_PREFIX, fsync_dir

SYSTEM_TOPICS_5 = (
    (SCHEDULE_TOPIC, 18, 6, False),
    ("SELF_TEST_TOPIC", 1, 6, False),
    ("rmq_sys_wheel_timer", 1, 6, False),
    (CLUSTER, 16, 7, False),
    (f"{CLUSTER}_REPLY_TOPIC", 1, 6, False),
    (f"rmq_sys_REVIVE_LOG_{CLUSTER}", 8, 6, False),
    (HALF_TOPIC, 1, 6, False),
    (f"rmq_sys_SYNC_BROKER_MEMBER_{BROKER_NAME}", 1, 1, False),
    (BROKER_NAME, 1, 7, False),
    (OP_TOPIC, 1, 6, False),
    ("TBW102", 8, 7, False),
    ("BenchmarkTest", 1024, 6, False),
    ("OFFSET_MOVED_EVENT", 1, 6, False),
)
SYSTEM_TOPICS_4 = tuple(t for t in SYSTEM_TOPICS_5 if not t[0].startswith("rmq_sys_"))
SYSTEM_GROUPS = INIT_SUBSCRIPTION_GROUPS
# what the broker of a `--dledger` sample runs with: a one-peer group (the peer's address is not on disk)
DLEDGER_CONF = {
    "enableDLegerCommitLog": True,
    "dLegerGroup": BROKER_NAME,
    "dLegerSelfId": SELF_ID,
    "dLegerPeers": f"{SELF_ID}-127.0.0.1:40911",
}


@dataclass
class SampleSummary:
    """What was created."""

    directory: Path
    version: int
    produced: int
    records: int
    records_by_topic: dict[str, int]
    commitlog_files: int
    commitlog_bytes: int
    queues: int
    index_files: int
    first_store_time: int
    last_store_time: int
    seconds: float
    broker_conf: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "directory": str(self.directory),
            "brokerVersion": self.version,
            "producedMessages": self.produced,
            "records": self.records,
            "recordsByTopic": self.records_by_topic,
            "commitlogFiles": self.commitlog_files,
            "commitlogBytes": self.commitlog_bytes,
            "consumeQueues": self.queues,
            "indexFiles": self.index_files,
            "firstStoreTime": self.first_store_time,
            "lastStoreTime": self.last_store_time,
            "seconds": round(self.seconds, 3),
            "brokerConf": self.broker_conf,
        }


# --- config files ----------------------------------------------------------------------------------


def _write_configs(w: _SampleWriter, root: Path) -> None:
    v5, ts = w.v5, w.opts.start_time
    appender = w.appender

    def dv(counter: int) -> DataVersion:
        return DataVersion(counter=counter, timestamp=ts, state_version=0 if v5 else None)

    topics = TopicConfigTable(data_version=dv(5))
    own = [
        ("TopicTest", 4, 6, False),
        ("OrderTopic", 2, 6, True),
        (RETRY_A, 1, 6, False),
        (DLQ_A, 1, 6, False),
    ]
    system = SYSTEM_TOPICS_5 if v5 else (*SYSTEM_TOPICS_4, (HALF_TOPIC, 1, 6, False), (OP_TOPIC, 1, 6, False))
    for name, queues, perm, order in [system[0], *own, *system[1:]]:
        topics.topic_config_table[name] = TopicConfig.new(name, queues, perm=perm, order=order, v5=v5)
    ConfigFile(root, "topics.json").save(topics, pretty=True)

    groups = SubscriptionGroupTable(data_version=dv(3), forbidden_table={} if v5 else None)
    for name in (*SYSTEM_GROUPS, GROUP_B, GROUP_A):
        config = SubscriptionGroupConfig.new(name, v5=v5)
        if name == GROUP_B:
            config.retry_max_times = 5
            if v5:
                config.consume_message_orderly = True
        groups.subscription_group_table[name] = config
    ConfigFile(root, "subscriptionGroup.json").save(groups, pretty=True)

    def max_offset(topic: str, queue_id: int) -> int:
        return appender.next_queue_offset(topic, queue_id)

    offsets: dict[str, dict[int, int]] = {
        f"OrderTopic@{GROUP_A}": {q: max_offset("OrderTopic", q) // 2 for q in range(2)},
        f"TopicTest@{GROUP_B}": {q: max_offset("TopicTest", q) for q in range(4)},
        f"TopicTest@{GROUP_A}": {q: max_offset("TopicTest", q) // 2 for q in range(4)},
        f"{RETRY_A}@{GROUP_A}": {0: max_offset(RETRY_A, 0) // 2},
    }
    first_pending = next((h for h, state in w.halves if state == "pending"), max_offset(HALF_TOPIC, 0))
    if w.halves:
        offsets[f"{HALF_TOPIC}@{TRANS_GROUP}"] = {0: first_pending}
        offsets[f"{OP_TOPIC}@{TRANS_GROUP}"] = {0: max_offset(OP_TOPIC, 0)}
    table = ConsumerOffsetTable(
        offset_table={k: offsets[k] for k in java_hash_order(offsets, 512)},
        data_version=dv(0) if v5 else None,
        with_group_topic_map=v5,
    )
    ConfigFile(root, "consumerOffset.json").save(table, pretty=True)

    levels = sorted(w.delay_used if v5 else w.delivered_levels)
    delay = DelayOffsetTable(
        offset_table={level: w.delay_next.get(level, 0) for level in levels},
        data_version=dv(1) if v5 else None,
    )
    ConfigFile(root, "delayOffset.json").save(delay, pretty=True)

    if v5:
        modes = MessageRequestModeTable()
        modes.set_mode("TopicTest", GROUP_B, "POP", 8)
        modes.set_mode("OrderTopic", GROUP_A, "PULL", 0)
        ConfigFile(root, "messageRequestMode.json").save(modes, pretty=True)


# --- entry point -----------------------------------------------------------------------------------


def create_sample(opts: SampleOptions, progress: Callable[[int], None] | None = None) -> SampleSummary:
    """Build the store in a directory beside `opts.directory`, then rename it into place."""
    target = opts.directory
    if opts.messages < 0:
        raise SampleError("--messages must be >= 0")
    if opts.version not in (4, 5):
        raise SampleError(f"--version must be 4 or 5, not {opts.version}")
    output_directory(target, option="DIRECTORY")  # never a store inside a store (mqtool.outputs)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise SampleError("exists and is not an empty directory; choose a new one", str(target))
    parent = target.parent
    parent.mkdir(parents=True, exist_ok=True)
    staging = parent / f"{TMP_PREFIX}{os.getpid()}-{target.name}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    started = time.monotonic()
    try:
        (staging / "lock").write_bytes(b"lock")
        if opts.version >= 5:
            (staging / "abort.bak").write_bytes(b"")
        writer = _SampleWriter(opts, staging, progress)
        writer.run()
        writer.appender.close()
        _write_configs(writer, staging)
        fsync_dir(staging)
        if target.exists():
            target.rmdir()
        os.rename(staging, target)
        fsync_dir(parent)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    log_dir = target / f"dledger-{SELF_ID}" / "data" if opts.dledger else target / "commitlog"
    commitlog = sorted(log_dir.iterdir())
    queues = sum(1 for t in (target / "consumequeue").iterdir() for _ in t.iterdir())
    return SampleSummary(
        directory=target,
        version=opts.version,
        produced=opts.messages,
        records=writer.appender.appended,
        records_by_topic=dict(sorted(writer.records_by_topic.items())),
        commitlog_files=len(commitlog),
        commitlog_bytes=writer.appender.position,
        queues=queues,
        index_files=len(list_index_files(target / "index")),
        first_store_time=writer.first_store_time,
        last_store_time=writer.appender.last_store_timestamp,
        seconds=time.monotonic() - started,
        broker_conf={
            "storePathRootDir": str(target),
            "mappedFileSizeCommitLog": opts.file_size,
            "mappedFileSizeConsumeQueue": opts.cq_file_size,
            "maxHashSlotNum": opts.hash_slot_num,
            "maxIndexNum": opts.index_num,
            **(DLEDGER_CONF if opts.dledger else {}),
        },
    )
