"""Pruning consumer offsets nothing consumes any more (`mqtool offsets prune`): plan, and writing it.

An offset row (`topic@group`, queue id) is pruned when
- `group-missing`: its group is not in subscriptionGroup.json - as `mqadmin deleteSubGroup` with
  cleanOffset leaves the table (AdminBrokerProcessor.deleteSubscriptionGroup ->
  ConsumerOffsetManager.removeOffset, broker/src/main/java/org/apache/rocketmq/broker/processor/
  AdminBrokerProcessor.java:1612-1625 and broker/.../offset/ConsumerOffsetManager.java:402-426 of
  rocketmq-all-5.3.3);
- `topic-missing`: its topic is not in topics.json - as `mqadmin deleteTopic` leaves it
  (AdminBrokerProcessor.deleteTopicInBroker -> ConsumerOffsetManager.cleanOffsetByTopic,
  AdminBrokerProcessor.java:804-811, ConsumerOffsetManager.java:90-104);
- `queue-out-of-range`: its queue id is negative or >= the topic's readQueueNums - no consumer can pull it
  (PullMessageProcessor.java:370 refuses `queueId >= topicConfig.getReadQueueNums()`), and the broker's own
  cleaner of the sibling table drops such rows by the same three rules (ConsumerOrderInfoManager.autoClean,
  broker/.../offset/ConsumerOrderInfoManager.java:259-304: topic config missing, group missing,
  `queueId >= readQueueNums`).

Never pruned: the broker's own groups (MixAll's predefined groups, `CID_RMQ_SYS_*`, the groups the
SubscriptionGroupManager creates) and topics (TopicValidator.isSystemTopic, common/.../topic/
TopicValidator.java:49-60,139-141: its set and the `rmq_sys_` prefix); LMQ topics (`%LMQ%...`, never in
topics.json); a `%RETRY%<group>` topic missing from topics.json while its group exists (the broker creates
it again on the group's next heartbeat: ClientManageProcessor.java:108-123); keys that are not exactly
`topic@group` (ConsumerOffsetManager's cleaners skip them too, `arrays.length == 2`). The group rule runs
only when the store holds a subscriptionGroup.json the broker wrote (a 4.9 store may have none: the groups
are then not judged, and the plan says so); the topic rules only with a topics.json.

Writing: dry run unless `execute`; under the store lock the file is re-read, each planned row must still
hold the planned offset (else `PlanOutdatedError`), the rows are removed (a `topic@group` entry left with
no queue goes), dataVersion bumped, saved atomically with `.bak`, read back. Refused where the broker keeps
its offsets in RocksDB: its v1 manager imports consumerOffset.json at start by putting each entry into the
KV store and never deletes a key the JSON lacks (RocksDBConsumerOffsetManager.merge/persist,
broker/.../config/v1/RocksDBConsumerOffsetManager.java:66-88,118-137), so a pruned row would come back; a v2
manager never reads an offline change at all.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from formats.batchconsumequeue import BATCH_CQ_DIR
from formats.config.base import java_split_topic_group
from formats.config.offsets import ConsumerOffsetTable, offset_key
from formats.errors import MqtoolError
from formats.names import INIT_SUBSCRIPTION_GROUPS, LMQ_PREFIX, RETRY_PREFIX, escaped_name, is_system_topic
from mqtool.offsets.apply import ApplyResult, PlanOutdatedError, check_writable
from mqtool.offsets.progress import is_system_group
from mqtool.offsets.reset import StoreCatalog
from mqtool.safety import refuse_unsupported_layout, warn, write_guard
from mqtool.timeparse import now_ms
from store.checks.orphans import find_orphans, report_orphans
from store.checks.problems import ProblemList
from store.io.filewrites import crash_point
from store.storedir import Store

# MixAll.PREDEFINE_GROUP_SET (common/src/main/java/org/apache/rocketmq/common/MixAll.java:124-139 of 5.3.3)
PREDEFINED_GROUPS = frozenset(
    {
        "DEFAULT_CONSUMER",
        "DEFAULT_PRODUCER",
        "TOOLS_CONSUMER",
        "SCHEDULE_CONSUMER",
        "FILTERSRV_CONSUMER",
        "__MONITOR_CONSUMER",
        "CLIENT_INNER_PRODUCER",
        "SELF_TEST_P_GROUP",
        "SELF_TEST_C_GROUP",
        "CID_ONS-HTTP-PROXY",
        "CID_ONSAPI_PERMISSION",
        "CID_ONSAPI_OWNER",
        "CID_ONSAPI_PULL",
        "CID_RMQ_SYS_TRANS",
    }
)

REASONS = ("group-missing", "topic-missing", "queue-out-of-range")


class PruneRefusedError(MqtoolError):
    """A prune the store's broker would undo or never see."""


def is_broker_group(group: str) -> bool:
    """A group the broker itself defines or creates (never pruned)."""
    return group in PREDEFINED_GROUPS or group in INIT_SUBSCRIPTION_GROUPS or is_system_group(group)


@dataclass
class PruneRow:
    """One offset row to remove and why."""

    group: str
    topic: str
    queue_id: int
    offset: int
    reason: str  # one of REASONS
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "topic": self.topic,
            "queueId": self.queue_id,
            "offset": self.offset,
            "reason": self.reason,
            "detail": self.detail,
        }


@dataclass
class PrunePlan:
    """The rows to remove, what was judged and what was not."""

    rows: list[PruneRow]
    file: str  # the offset table's file (consumerOffset.json, lmqConsumerOffset.json)
    groups_judged: bool
    topics_judged: bool
    backend: str  # "json", "rocksdb" (v1) or "rdb" (v2)
    kept: int = 0  # rows looked at and kept
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> list[dict[str, Any]]:
        return [r.to_dict() for r in self.rows]


def plan_prune(store: Store) -> PrunePlan:
    """Every offset row of a missing group, a missing topic or a queue past the topic's readQueueNums,
    each with its reason (the module docstring has the rules). Read-only."""
    refuse_unsupported_layout(store, "config")
    catalog = StoreCatalog.load(store)
    groups_file = _present(store, "subscriptionGroup.json")
    topics_file = _present(store, "topics.json")
    plan = PrunePlan(
        [],
        store.layout.consumer_offset_file,
        groups_judged=catalog.groups is not None and groups_file,
        topics_judged=catalog.topics is not None and topics_file,
        backend=store.layout.config_backend,
    )
    plan.warnings.extend(catalog.notes)
    if not plan.groups_judged:
        plan.notes.append(
            "groups not judged: the store has no subscriptionGroup.json the broker wrote (a 4.9 broker may "
            "never have written one), so a group missing from it says nothing"
        )
    if not plan.topics_judged:
        plan.notes.append("topics and queues not judged: the store has no usable topics.json")
    odd = 0
    for key, queues in catalog.offsets.offset_table.items():
        parts = java_split_topic_group(key)
        if len(parts) != 2 or offset_key(*parts) != key:
            odd += 1
            continue
        topic, group = parts
        for queue_id, offset in queues.items():
            row = _judge(catalog, plan, group, topic, queue_id, offset)
            if row is None:
                plan.kept += 1
            else:
                plan.rows.append(row)
    if odd:
        plan.notes.append(
            f"{odd} key(s) that are not exactly topic@group left alone (the broker's cleaners skip them)"
        )
    if plan.rows and plan.backend != "json":
        plan.warnings.append(_rocksdb_refusal(plan.backend))
    return plan


def report_store_orphans(
    store: Store,
    queues: Iterable[tuple[str, int]],
    batch_queues: Iterable[tuple[str, int]],
    problems: ProblemList,
    topic_queues: dict[str, tuple[int, int]] | None,
) -> int | None:
    """verify's and the audit's orphan rows: `orphan_topic` / `orphan_queue` warnings for the consume queues
    no topic config serves (`store.checks.orphans`), and `orphan_offsets` infos for the committed offsets
    `plan_prune` would remove (one per group, topic and reason). `topic_queues`: the topic config's counts
    (`topic_queue_counts`). Returns the number of orphan queues (None: no topic config to judge by)."""
    count = None
    if topic_queues is not None:
        orphans = find_orphans(topic_queues, {"consumequeue": list(queues), BATCH_CQ_DIR: list(batch_queues)})
        report_orphans(orphans, problems)
        count = len(orphans)
    try:
        plan = plan_prune(store)
    except MqtoolError:
        return count  # a layout prune does not judge (it says why when run)
    grouped: dict[tuple[str, str, str], list[int]] = {}
    for row in plan.rows:
        grouped.setdefault((row.group, row.topic, row.reason), []).append(row.queue_id)
    for (group, topic, reason), queue_ids in grouped.items():
        shown = ", ".join(map(str, sorted(queue_ids)[:8])) + (", ..." if len(queue_ids) > 8 else "")
        problems.add(
            "orphan_offsets",
            f"config/{plan.file}",
            None,
            f"{len(queue_ids)} committed offset(s) of group {escaped_name(group)} on topic "
            f"{escaped_name(topic)} ({reason}: queues {shown}): consumer-progress tools count them as "
            "backlog; `mqtool offsets prune` removes them",
        )
    return count


def _present(store: Store, name: str) -> bool:
    """The file or its .bak exists as the broker writes them (RocksDB tables count for the RocksDB
    backends: the broker keeps the table there)."""
    if store.layout.config_backend != "json":
        return True
    path = store.config_dir / name
    return path.is_file() or path.with_name(name + ".bak").is_file()


def _judge(
    catalog: StoreCatalog, plan: PrunePlan, group: str, topic: str, queue_id: int, offset: int
) -> PruneRow | None:
    if is_broker_group(group) or is_system_topic(topic) or topic.startswith(LMQ_PREFIX):
        return None
    if plan.groups_judged and group not in catalog.groups.subscription_group_table:
        return PruneRow(
            group, topic, queue_id, offset, "group-missing", "group not in subscriptionGroup.json"
        )
    if not plan.topics_judged:
        return None
    config = catalog.topic_config(topic)
    if config is None:
        if topic == RETRY_PREFIX + group:
            return None  # the broker recreates it on the group's next heartbeat
        return PruneRow(group, topic, queue_id, offset, "topic-missing", "topic not in topics.json")
    if queue_id < 0 or queue_id >= config.read_queue_nums:
        return PruneRow(
            group,
            topic,
            queue_id,
            offset,
            "queue-out-of-range",
            f"queue {queue_id} not below readQueueNums {config.read_queue_nums}",
        )
    return None


def _rocksdb_refusal(backend: str) -> str:
    if backend == "rdb":
        return (
            "the broker keeps its offsets in RocksDB config/rdb (configManagerVersion=v2) and never loads "
            "an offline change: --execute is refused; use mqadmin deleteSubGroup / deleteTopic on the broker"
        )
    return (
        "the broker keeps its offsets in RocksDB (config/consumerOffsets): it imports consumerOffset.json "
        "at start by putting each entry and deletes no key the file lacks, so pruned rows would come back: "
        "--execute is refused; use mqadmin deleteSubGroup --clean-offset / deleteTopic on the broker"
    )


def apply_prune(
    store: Store,
    plan: PrunePlan,
    execute: bool,
    *,
    now: int | None = None,
    note: Callable[[str], None] = warn,
) -> ApplyResult:
    """Remove the plan's rows from the offset table (dry run unless `execute`)."""
    config = store.config(plan.file)
    result = ApplyResult(False, config.path, len(plan.rows))
    if execute and plan.rows and plan.backend != "json":
        raise PruneRefusedError(_rocksdb_refusal(plan.backend), str(store.config_dir))
    targets = config.write_targets if plan.rows else None
    with write_guard(store, execute, note=note, touches="config", targets=targets) as may_write:
        if not may_write or not plan.rows:
            return result
        crash_point("locked")
        loaded = config.load()
        check_writable(loaded)
        model: ConsumerOffsetTable = loaded.model
        for r in plan.rows:
            found = model.offset_table.get(offset_key(r.topic, r.group), {}).get(r.queue_id)
            if found != r.offset:
                raise PlanOutdatedError(
                    f"{escaped_name(r.group)} {escaped_name(r.topic)}/{r.queue_id} is now at {found}, not "
                    f"{r.offset} as planned: {config.name} changed since the plan was made; plan again",
                    str(config.path),
                )
        result.data_version_before = model.data_version
        for r in plan.rows:
            key = offset_key(r.topic, r.group)
            queues = model.offset_table[key]
            del queues[r.queue_id]
            if not queues:
                del model.offset_table[key]
        model.bump_version(now or now_ms())
        result.data_version_after = model.data_version
        crash_point("loaded")
        result.text = config.save(model)
        crash_point("saved")
        result.executed = True
        _verify(config, plan)
    return result


def _verify(config, plan: PrunePlan) -> None:
    back = config.load()
    if back.source != "file":
        raise MqtoolError(f"read-back failed: {back.reason}", str(config.path))
    for r in plan.rows:
        if r.queue_id in back.model.offset_table.get(offset_key(r.topic, r.group), {}):
            raise MqtoolError(
                f"read-back still shows {escaped_name(r.group)} {escaped_name(r.topic)}/{r.queue_id}",
                str(config.path),
            )


__all__ = ["PruneRefusedError", "PrunePlan", "PruneRow", "apply_prune", "is_broker_group", "plan_prune"]
