"""`mqtool topic update|delete`: topics.json edited offline as `mqadmin updateTopic` / `deleteTopic` make the
broker edit it.

Update (5.3.3 AdminBrokerProcessor.updateAndCreateTopic, broker/src/main/java/org/apache/rocketmq/broker/
processor/AdminBrokerProcessor.java:538-618; TopicConfigManager.updateTopicConfig and
updateSingleTopicConfigWithoutPersist, broker/.../topic/TopicConfigManager.java:500-528): the name must pass
`TopicValidator.validateTopic` and not be a system topic (validateSystemTopicWhenUpdateTopic, true by
default); `message.type=MIXED` is refused (enableMixedMessageType, false by default); a config equal to the
current one changes nothing (line 587); otherwise the attributes are altered as `AttributeUtil` does
(`mqtool.configedit.attributes`: `queue.type` and `cleanup.policy` only when the topic is created), the
entry replaced or added, dataVersion moved once, the file persisted. mqadmin sends every property (its
defaults for those not given: 8 read and 8 write queues, perm 6); mqtool keeps the current value of each
option not given (those defaults for a new topic). 4.9.8 (AdminBrokerProcessor.java:257-289 of
rocketmq-all-4.9.8, TopicConfigManager.updateTopicConfig): no attributes, no idempotence check (every
update moves dataVersion), and the request carries no `order` - the name server's order config sets it
again (`updateOrderTopicConfig`), so mqtool keeps the current `order` and refuses `--order` on 4.9.

mqtool refuses, where the broker would not, a readQueueNums below a queue that still holds messages
(maxOffset > minOffset): no consumer could read them again (PullMessageProcessor refuses
`queueId >= readQueueNums`). Lower writeQueueNums first and let the consumers drain those queues.

Delete (5.3.3 AdminBrokerProcessor.deleteTopic/deleteTopicInBroker, AdminBrokerProcessor.java:749-811): not
a system topic; with clearRetryTopicWhenDeleteTopic (true by default) the POP retry topics
(`%RETRY%<group>+<topic>`, `%RETRY%<group>_<topic>`) of every group with offsets on the topic
(ConsumerOffsetManager.whichGroupByTopic, ConsumerOffsetManager.java:158-174) go too; for each topic:
its config (dataVersion moved once per topic that existed: deleteTopicConfig, TopicConfigManager.java:
597-606), its static-topic mapping (refused here: topicQueueMapping.json is not edited), its consumer
offsets (cleanOffsetByTopic, ConsumerOffsetManager.java:90-104: rows `topic@group`, no dataVersion move),
its consume queues (DefaultMessageStore.deleteTopics, store/.../DefaultMessageStore.java:1391-1436:
consumequeue/, consumequeue_ext/ and batchconsumequeue/ directories of the topic). The in-memory POP
inflight counts and timer metrics it also clears are listed as what the broker would also do. 4.9.8
(AdminBrokerProcessor.java:291-330 of 4.9.8): validateTopic, not a system topic, LMQ topics refused here
(cleanUnusedLmqTopic), the config deleted, then `cleanUnusedTopic` destroys the queues of every topic no
longer in the table but SCHEDULE_TOPIC_XXXX, RMQ_SYS_TRANS_OP_HALF_TOPIC and LMQ queues (DefaultMessageStore
.java of 4.9.8: the queue directories go, the topic directories stay): mqtool removes the deleted topic's
and lists the others as what the broker would also remove; no offsets are removed.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

from formats.config.base import java_split_topic_group
from formats.config.metadata import TopicConfig, TopicConfigTable
from formats.config.offsets import ConsumerOffsetTable
from formats.names import (
    LMQ_PREFIX,
    SCHEDULE_TOPIC,
    TRANS_OP_HALF_TOPIC,
    escaped_name,
    is_system_topic,
    pop_retry_topic,
)
from mqtool.configedit.attributes import (
    TOPIC_ATTRIBUTES,
    AttributeChangeError,
    alter_attributes,
    attributes_loaded_order,
    parse_modifications,
)
from mqtool.configedit.edit import (
    PARKED_PREFIX,
    ConfigEdit,
    ConfigEditError,
    EditRow,
    FileEdit,
    apply_edit,
    check_name,
    loaded_order,
    next_version,
    planned_text,
    refuse_layout,
    table_order,
)
from mqtool.offsets.apply import check_writable
from mqtool.timeparse import now_ms
from store.io.pathnames import component_problem
from store.storedir import Store

TOPICS_FILE = "topics.json"
OFFSETS_FILE = "consumerOffset.json"
MAPPING_FILE = "topicQueueMapping.json"
# UpdateTopicSubCommand's defaults for what is not given (a new topic)
DEFAULT_QUEUES = 8
DEFAULT_PERM = 6
PERMS = (2, 4, 6)  # PermName: W, R, RW (mqadmin updateTopic -p)
MAX_QUEUES = 65_536  # mqtool's own bound: more queues than any broker serves is a typo
QUEUE_DIRS = ("consumequeue", "consumequeue_ext", "batchconsumequeue")
FIELDS = ("readQueueNums", "writeQueueNums", "perm", "order", "topicFilterType", "topicSysFlag")


def broker_system_topics(store: Store) -> set[str]:
    """The topics TopicConfigManager's constructor adds to the system set at start that have no fixed name
    (TopicConfigManager.java:119-172 of 5.3.3): the cluster's name, `<cluster>_REPLY_TOPIC` and the
    broker's name (when broker.conf says it)."""
    cfg = store.broker_config
    names = {cfg.brokerClusterName, f"{cfg.brokerClusterName}_REPLY_TOPIC"}
    if cfg.brokerName:
        names.add(cfg.brokerName)
    return names


def _refuse_system(store: Store, topic: str) -> None:
    if is_system_topic(topic) or topic in broker_system_topics(store):
        raise ConfigEditError(f"The topic[{escaped_name(topic)}] is conflict with system topic.")


def _load_topics(store: Store, edit: ConfigEdit) -> tuple[TopicConfigTable, str]:
    config = store.config(TOPICS_FILE)
    loaded = config.load()
    check_writable(loaded)
    if loaded.source == "none":
        raise ConfigEditError(
            f"{loaded.reason}: the broker would start with only its built-in topics; mqtool edits a "
            "topics.json the broker wrote",
            str(config.path),
        )
    table: TopicConfigTable = loaded.model
    if table.data_version is None:
        raise ConfigEditError("topics.json has no dataVersion: not a file the broker wrote", str(config.path))
    v5 = edit.broker_version.major >= 5
    if not v5 and table.is_v5:
        raise ConfigEditError(
            f"topics.json has 5.x properties but the store reads as 4.9 ({edit.broker_version.reason}); "
            "give --broker-version 5 if the broker is 5.x",
            str(config.path),
        )
    edit.warnings.extend(loaded.warnings)
    return table, planned_text(table)


def _normalised(table: TopicConfigTable, v5: bool) -> dict[str, TopicConfig]:
    """The entries as the broker holds them after loading: attributes in its HashMap order."""
    if not v5:
        return dict(table.topic_config_table)
    return {
        name: replace(c, attributes=attributes_loaded_order(c.attributes or {}))
        for name, c in table.topic_config_table.items()
    }


def _check_count(option: str, value: int | None) -> None:
    if value is not None and not 0 <= value <= MAX_QUEUES:
        raise ConfigEditError(f"{option} {value}: must be between 0 and {MAX_QUEUES}")


def _queues_with_messages(store: Store, topic: str, from_id: int) -> list[tuple[int, int, int]]:
    """(queueId, minOffset, maxOffset) of the topic's queues at or past `from_id` that still hold messages."""
    held = []
    for queue_id in store.queue_ids(topic):
        if queue_id < from_id:
            continue
        queue = store.queue(topic, queue_id)
        if queue.max_offset > queue.min_offset:
            held.append((queue_id, queue.min_offset, queue.max_offset))
    return held


def plan_topic_update(
    store: Store,
    topic: str,
    *,
    read_queues: int | None = None,
    write_queues: int | None = None,
    perm: int | None = None,
    order: bool | None = None,
    attributes: list[str] | tuple[str, ...] = (),
    broker_version: int | None = None,
    now: int | None = None,
) -> ConfigEdit:
    """What `mqadmin updateTopic` would leave in topics.json (the module docstring has the rules);
    read-only."""
    refuse_layout(store)
    edit = ConfigEdit("topic update", topic, store.layout.broker_version(broker_version))
    v5 = edit.broker_version.major >= 5
    check_name("topic", topic)
    _refuse_system(store, topic)
    _check_count("--read-queues", read_queues)
    _check_count("--write-queues", write_queues)
    if perm is not None and perm not in PERMS:
        raise ConfigEditError(f"--perm {perm}: must be 2 (write), 4 (read) or 6 (read and write)")
    if not v5 and order is not None:
        raise ConfigEditError(
            "--order on a 4.9 store: 4.9.8's updateTopic does not carry the order flag (the name server's "
            "order config sets it)"
        )
    if not v5 and attributes:
        raise ConfigEditError("--attr on a 4.9 store: 4.9.8 topics have no attributes")
    request = parse_modifications(attributes)
    if request.get("+message.type") == "MIXED":
        raise ConfigEditError(
            "MIXED message type is not supported. (enableMixedMessageType=false, the default)"
        )
    table, text = _load_topics(store, edit)
    entries = _normalised(table, v5)
    current = entries.get(topic)
    create = current is None
    base = current or TopicConfig.new(topic, DEFAULT_QUEUES, perm=DEFAULT_PERM, v5=v5)
    new = TopicConfig(
        topic,
        base.read_queue_nums if read_queues is None else read_queues,
        base.write_queue_nums if write_queues is None else write_queues,
        base.perm if perm is None else perm,
        base.topic_filter_type,
        base.topic_sys_flag,
        base.order if order is None else order,
        None,
    )
    if v5:
        current_attributes = {} if current is None else current.attributes or {}
        if not create and not request and not current_attributes and _same(current, new):
            edit.notes.append(f"topic {escaped_name(topic)} already has this config: nothing to change")
            return edit
        try:
            new.attributes = alter_attributes(create, TOPIC_ATTRIBUTES, current_attributes, request)
        except AttributeChangeError as exc:  # the broker's own message
            raise ConfigEditError(f"topic {escaped_name(topic)}: {exc.message}") from exc
    held = _queues_with_messages(store, topic, new.read_queue_nums)
    if held:
        queue_id, low, high = held[0]
        more = f" (and {len(held) - 1} more queue(s))" if len(held) > 1 else ""
        raise ConfigEditError(
            f"topic {escaped_name(topic)}: queue {queue_id} holds messages (offsets {low}..{high}){more}; "
            f"readQueueNums {new.read_queue_nums} would leave them unreadable: lower --write-queues first "
            "and let consumers drain those queues (the broker would accept this; mqtool refuses)"
        )
    _rows_for_update(edit, current, new)
    entries[topic] = new
    order = table_order(table.topic_config_table, [topic] if create else [])
    before = table.data_version
    written = TopicConfigTable(
        {k: entries[k] for k in order}, next_version(before, now or now_ms()), dict(table.extra)
    )
    edit.files.append(FileEdit(TOPICS_FILE, text, written, before, written.data_version))
    if not create and not edit.rows:
        edit.notes.append(
            "nothing changes but dataVersion: the broker moves it for this update too ("
            + ("4.9.8's updateTopic does on every update)" if not v5 else "the topic has attributes)")
        )
    return edit


def _same(current: TopicConfig, new: TopicConfig) -> bool:
    return all(_field(current, f) == _field(new, f) for f in FIELDS)


def _field(config: TopicConfig, name: str) -> Any:
    return config.to_json().get(name)


def _rows_for_update(edit: ConfigEdit, current: TopicConfig | None, new: TopicConfig) -> None:
    action = "create" if current is None else "update"
    for name in FIELDS:
        before = None if current is None else _field(current, name)
        after = _field(new, name)
        if current is None or before != after:
            edit.rows.append(EditRow(action, TOPICS_FILE, new.topic_name or "", name, before, after))
    if new.attributes is None:
        return
    old = {} if current is None else current.attributes or {}
    for key in sorted(set(old) | set(new.attributes)):
        if old.get(key) != new.attributes.get(key):
            edit.rows.append(
                EditRow(
                    action,
                    TOPICS_FILE,
                    new.topic_name or "",
                    f"attributes.{key}",
                    old.get(key),
                    new.attributes.get(key),
                )  # fmt: skip
            )


# --- delete ------------------------------------------------------------------------------------------


def plan_topic_delete(
    store: Store, topic: str, *, broker_version: int | None = None, now: int | None = None
) -> ConfigEdit:
    """What `mqadmin deleteTopic` would leave in the store (the module docstring has the rules). Read-only."""
    refuse_layout(store, "queues")
    edit = ConfigEdit("topic delete", topic, store.layout.broker_version(broker_version))
    v5 = edit.broker_version.major >= 5
    if not topic.strip():
        raise ConfigEditError("The specified topic is blank.")
    if not v5:
        check_name("topic", topic)
    _refuse_system(store, topic)
    if topic.startswith(LMQ_PREFIX):
        raise ConfigEditError(
            f"topic {escaped_name(topic)}: an LMQ topic (the broker's cleanUnusedLmqTopic): not supported"
        )
    if store.layout.consume_queues_in_rocksdb:
        raise ConfigEditError("the consume queues are in RocksDB: mqtool deletes only consume queue files")
    _refuse_static_topic(store, topic)
    table, text = _load_topics(store, edit)
    entries = _normalised(table, v5)
    offsets_loaded = store.config(OFFSETS_FILE).load()
    offsets: ConsumerOffsetTable = offsets_loaded.model
    doomed = [topic]
    if v5:
        for group in _groups_of(offsets, topic):
            for retry in (pop_retry_topic(topic, group, v2=True), pop_retry_topic(topic, group)):
                if retry in entries and retry not in doomed:
                    doomed.append(retry)
    removed = [t for t in doomed if t in entries]
    for t in removed:
        edit.rows.append(EditRow("delete", TOPICS_FILE, t))
        del entries[t]
    if removed:
        before = table.data_version
        written = TopicConfigTable(
            {k: entries[k] for k in table_order(table.topic_config_table) if k in entries},
            next_version(before, now or now_ms(), len(removed)),
            dict(table.extra),
        )
        edit.files.append(FileEdit(TOPICS_FILE, text, written, before, written.data_version))
    if v5:
        _plan_offsets(store, edit, offsets_loaded, doomed)
        for t in doomed:
            if component_problem(t) is not None:  # no directory has that name ("..", "a/b", ...)
                continue
            for name in QUEUE_DIRS:
                directory = store.root / name / t
                if os.path.lexists(directory) and (directory.is_symlink() or not directory.is_dir()):
                    raise ConfigEditError(
                        "not a directory where the topic's consume queues belong: mqtool does not know what "
                        "the broker would make of it",
                        str(directory),
                    )
                if directory.is_dir():
                    edit.queue_dirs.append(directory)
                    edit.rows.append(EditRow("remove-queue", f"{name}/", t))
    else:
        _plan_unused_queues(store, edit, topic, set(entries))
    for t in doomed:
        edit.rows.append(EditRow("broker-also", "(memory)", t, "popInflightMessageCounter, timerMetrics"))
    for parked in sorted(store.root.glob(PARKED_PREFIX + "*")):
        if parked.is_dir() and not parked.is_symlink():  # an interrupted delete's: finished here
            edit.queue_dirs.append(parked)
            edit.rows.append(EditRow("remove-queue", ".", parked.name, "left by an interrupted delete"))
    if not edit.changed:
        raise ConfigEditError(
            f"topic {escaped_name(topic)} is not in topics.json and has no offsets or queues: nothing to "
            "delete"
        )
    return edit


def _refuse_static_topic(store: Store, topic: str) -> None:
    path = store.config_dir / MAPPING_FILE
    if path.is_file():
        value = store.config(MAPPING_FILE).load().model.value
        table = value.get("topicQueueMappingTable") if isinstance(value, dict) else None
        if not isinstance(table, dict) or topic in table:
            raise ConfigEditError(
                f"topic {escaped_name(topic)} is a static topic (or {MAPPING_FILE} is not understood): the "
                "broker also deletes its queue mapping, which mqtool does not edit",
                str(path),
            )


def _groups_of(offsets: ConsumerOffsetTable, topic: str) -> list[str]:
    """ConsumerOffsetManager.whichGroupByTopic: groups of the `topic@group` keys (exactly two parts)."""
    groups = []
    for key in offsets.offset_table:
        parts = java_split_topic_group(key)
        if len(parts) == 2 and parts[0] == topic and parts[1] not in groups:
            groups.append(parts[1])
    return groups


def _plan_offsets(store: Store, edit: ConfigEdit, loaded, topics: list[str]) -> None:
    """cleanOffsetByTopic for each topic: its `topic@group` rows leave offsetTable (no dataVersion move)."""
    if loaded.source == "none":
        return
    check_writable(loaded)
    model: ConsumerOffsetTable = loaded.model
    text = planned_text(model)
    model.offset_table = {k: model.offset_table[k] for k in loaded_order(model.offset_table)}
    gone = []
    for key in list(model.offset_table):
        parts = java_split_topic_group(key)
        if len(parts) == 2 and parts[0] in topics:
            gone.append(key)
    if not gone:
        return
    for key in gone:
        queues = model.offset_table.pop(key)
        edit.rows.append(EditRow("remove-offsets", OFFSETS_FILE, key, "queues", len(queues), None))
    edit.files.append(FileEdit(OFFSETS_FILE, text, model, model.data_version, model.data_version))


def _plan_unused_queues(store: Store, edit: ConfigEdit, topic: str, kept: set[str]) -> None:
    """4.9.8's cleanUnusedTopic destroys the queues of every topic not in the table but
    SCHEDULE_TOPIC_XXXX's, RMQ_SYS_TRANS_OP_HALF_TOPIC's and LMQ queues (the topic directories stay). mqtool
    removes the deleted topic's queue directories and lists the others as what the broker would also
    delete: on a 4.9 store they include the transaction half topic's queue, which has no topic config."""
    base = store.root / "consumequeue"
    if not base.is_dir():
        return
    for topic_dir in sorted(base.iterdir()):
        t = topic_dir.name
        if t in kept or t in (SCHEDULE_TOPIC, TRANS_OP_HALF_TOPIC) or t.startswith(LMQ_PREFIX):
            continue
        if topic_dir.is_symlink() or not topic_dir.is_dir():
            if t == topic:
                raise ConfigEditError(
                    "not a directory where the topic's consume queues belong: mqtool does not know what "
                    "the broker would make of it",
                    str(topic_dir),
                )
            continue
        for queue_dir in sorted(topic_dir.iterdir(), key=lambda p: p.name):
            if not queue_dir.is_dir():
                continue
            if t == topic:
                edit.queue_dirs.append(queue_dir)
                edit.rows.append(EditRow("remove-queue", "consumequeue/", t, "queueId", queue_dir.name, None))
            else:
                edit.rows.append(EditRow("broker-also", "consumequeue/", t, "queueId", queue_dir.name, None))


def update_topic(store: Store, topic: str, execute: bool = False, **options: Any) -> ConfigEdit:
    """`mqadmin updateTopic`, offline: plan (`plan_topic_update` options), then write when `execute`."""
    return apply_edit(store, plan_topic_update(store, topic, **options), execute)


def delete_topic(store: Store, topic: str, execute: bool = False, **options: Any) -> ConfigEdit:
    """`mqadmin deleteTopic`, offline: plan (`plan_topic_delete` options), then write when `execute`."""
    return apply_edit(store, plan_topic_delete(store, topic, **options), execute)


__all__ = ["broker_system_topics", "delete_topic", "plan_topic_delete", "plan_topic_update", "update_topic"]
