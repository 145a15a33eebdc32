"""`mqtool group update|delete`: subscriptionGroup.json edited offline as `mqadmin updateSubGroup` /
`deleteSubGroup` make the broker edit it.

Update (5.3.3 AdminBrokerProcessor.updateAndCreateSubscriptionGroup, broker/src/main/java/org/apache/
rocketmq/broker/processor/AdminBrokerProcessor.java:1504-1528; SubscriptionGroupManager.
updateSubscriptionGroupConfig, broker/.../subscription/SubscriptionGroupManager.java:141-166): the config
sent replaces the entry, its attributes altered as `AttributeUtil` does over `SubscriptionGroupAttributes.ALL`
- empty in 5.3.3, so every group attribute is refused -, dataVersion moved once, the file persisted; no name
check and no idempotence check (the broker moves dataVersion even when nothing changes; mqtool writes
nothing then). mqadmin sends every property (defaults for those not given); mqtool keeps the current value
of each option not given, and the group's other properties (its subscriptionDataSet, groupRetryPolicy, ...).
4.9.8 (SubscriptionGroupManager.updateSubscriptionGroupConfig of rocketmq-all-4.9.8): the same without
attributes or the 5.x properties.

Delete (AdminBrokerProcessor.deleteSubscriptionGroup, AdminBrokerProcessor.java:1612-1634;
SubscriptionGroupManager.deleteSubscriptionGroupConfig, SubscriptionGroupManager.java:358-368): the entry and
its forbiddenTable row go, dataVersion moves when the entry existed; with `--clean-offset` (mqadmin
deleteSubGroup -r; 4.9.8's removeOffset) ConsumerOffsetManager.removeOffset (ConsumerOffsetManager.java:
402-426) drops every `topic@group` row of the group from offsetTable, resetOffsetTable and pullOffsetTable
(no dataVersion move). The group's `%RETRY%` and `%DLQ%` topics stay, as the broker leaves them.

mqtool refuses the groups the broker defines or creates itself (MixAll's predefined groups, `CID_RMQ_SYS_*`,
SubscriptionGroupManager.init's groups): the broker would accept the edit, and recreate some at start.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from formats.config.base import JAVA_INT_MAX, JAVA_INT_MIN, DataVersion, java_split_topic_group
from formats.config.metadata import SubscriptionGroupConfig, SubscriptionGroupTable
from formats.config.offsets import ConsumerOffsetTable
from formats.names import escaped_name
from mqtool.configedit.attributes import (
    GROUP_ATTRIBUTES,
    AttributeChangeError,
    alter_attributes,
    attributes_loaded_order,
    parse_modifications,
)
from mqtool.configedit.edit import (
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
from mqtool.offsets.prune import is_broker_group
from mqtool.timeparse import now_ms
from store.storedir import Store

GROUPS_FILE = "subscriptionGroup.json"
OFFSETS_FILE = "consumerOffset.json"
# the groups SubscriptionGroupManager.init puts before loading the file, in its order
# (SubscriptionGroupManager.java:70-123 of 5.3.3; 4.9.8's has all but CID_RMQ_SYS_TRANS)
INIT_ORDER = (
    "TOOLS_CONSUMER",
    "FILTERSRV_CONSUMER",
    "SELF_TEST_C_GROUP",
    "CID_ONS-HTTP-PROXY",
    "CID_ONSAPI_PULL",
    "CID_ONSAPI_PERMISSION",
    "CID_ONSAPI_OWNER",
    "CID_RMQ_SYS_TRANS",
)

# option name -> (model attribute, JSON property, 5.x only)
SETTINGS: dict[str, tuple[str, str, bool]] = {
    "retry_max_times": ("retry_max_times", "retryMaxTimes", False),
    "retry_queue_nums": ("retry_queue_nums", "retryQueueNums", False),
    "consume_enable": ("consume_enable", "consumeEnable", False),
    "consume_from_min_enable": ("consume_from_min_enable", "consumeFromMinEnable", False),
    "consume_broadcast_enable": ("consume_broadcast_enable", "consumeBroadcastEnable", False),
    "consume_message_orderly": ("consume_message_orderly", "consumeMessageOrderly", True),
    "broker_id": ("broker_id", "brokerId", False),
    "which_broker_when_consume_slowly": (
        "which_broker_when_consume_slowly",
        "whichBrokerWhenConsumeSlowly",
        False,
    ),
    "notify_consumer_ids_changed_enable": (
        "notify_consumer_ids_changed_enable",
        "notifyConsumerIdsChangedEnable",
        False,
    ),
    "consume_timeout_minute": ("consume_timeout_minute", "consumeTimeoutMinute", True),
}
INT_SETTINGS = ("retry_max_times", "retry_queue_nums", "consume_timeout_minute")
LONG_SETTINGS = ("broker_id", "which_broker_when_consume_slowly")


def _refuse_broker_group(group: str) -> None:
    if is_broker_group(group):
        raise ConfigEditError(
            f"group {escaped_name(group)} is one the broker defines or creates itself: mqtool leaves it"
        )


def _load_groups(store: Store, edit: ConfigEdit) -> tuple[SubscriptionGroupTable, str]:
    config = store.config(GROUPS_FILE)
    loaded = config.load()
    check_writable(loaded)
    if loaded.source == "none":
        raise ConfigEditError(
            f"{loaded.reason}: mqtool edits a subscriptionGroup.json the broker wrote", str(config.path)
        )
    table: SubscriptionGroupTable = loaded.model
    if table.data_version is None:
        raise ConfigEditError(
            "subscriptionGroup.json has no dataVersion: not a file the broker wrote", str(config.path)
        )
    v5 = edit.broker_version.major >= 5
    if not v5 and table.is_v5:
        raise ConfigEditError(
            f"subscriptionGroup.json has 5.x properties but the store reads as 4.9 "
            f"({edit.broker_version.reason}); give --broker-version 5 if the broker is 5.x",
            str(config.path),
        )
    edit.warnings.extend(loaded.warnings)
    return table, planned_text(table)


def _loaded_version(table: SubscriptionGroupTable, v5: bool) -> DataVersion | None:
    """The dataVersion the manager holds after loading the file. 4.9.8's has no setter (a final field,
    SubscriptionGroupManager.java:39 of rocketmq-all-4.9.8), so fastjson leaves the decoded manager's fresh
    one (counter 0) and decode() copies that (line 155): a 4.9 broker restarts the count at every load."""
    if v5 or table.data_version is None:
        return table.data_version
    return DataVersion(0, table.data_version.timestamp, None)


def _check_value(option: str, value: Any) -> None:
    if value is None or isinstance(value, bool):
        return
    low, high = (JAVA_INT_MIN, JAVA_INT_MAX) if option in INT_SETTINGS else (-(2**63), 2**63 - 1)
    if not low <= value <= high:
        raise ConfigEditError(
            f"--{option.replace('_', '-')} {value}: overflows Java "
            + ("int" if option in INT_SETTINGS else "long")
        )
    if option in ("retry_queue_nums", "retry_max_times") and value < 0:
        raise ConfigEditError(f"--{option.replace('_', '-')} {value}: must not be negative")


def plan_group_update(
    store: Store,
    group: str,
    *,
    attributes: list[str] | tuple[str, ...] = (),
    broker_version: int | None = None,
    now: int | None = None,
    **settings: Any,
) -> ConfigEdit:
    """What `mqadmin updateSubGroup` would leave in subscriptionGroup.json (see the module docstring);
    `settings`: keys of SETTINGS, None for not given. Read-only."""
    unknown = set(settings) - set(SETTINGS)
    if unknown:
        raise TypeError(f"unknown settings: {sorted(unknown)}")
    refuse_layout(store)
    edit = ConfigEdit("group update", group, store.layout.broker_version(broker_version))
    v5 = edit.broker_version.major >= 5
    check_name("group", group)
    _refuse_broker_group(group)
    for option, value in settings.items():
        _check_value(option, value)
        if value is not None and SETTINGS[option][2] and not v5:
            raise ConfigEditError(
                f"--{option.replace('_', '-')} on a 4.9 store: 4.9.8 groups have no such property"
            )
    if attributes and not v5:
        raise ConfigEditError("--attr on a 4.9 store: 4.9.8 groups have no attributes")
    request = parse_modifications(attributes)
    table, text = _load_groups(store, edit)
    current = table.subscription_group_table.get(group)
    create = current is None
    base = current or SubscriptionGroupConfig.new(group, v5=v5)
    new = replace(base, extra={})
    for option, value in settings.items():
        if value is not None:
            setattr(new, SETTINGS[option][0], value)
    if v5:
        current_attributes = {} if current is None else attributes_loaded_order(current.attributes or {})
        try:
            new.attributes = alter_attributes(create, GROUP_ATTRIBUTES, current_attributes, request)
        except AttributeChangeError as exc:
            raise ConfigEditError(f"group {escaped_name(group)}: {exc.message}") from exc
    action = "create" if create else "update"
    old_json = {} if current is None else current.to_json()
    new_json = new.to_json()
    for name in sorted(set(old_json) | set(new_json)):
        if name == "groupName" and not create:
            continue
        if create or old_json.get(name) != new_json.get(name):
            edit.rows.append(
                EditRow(action, GROUPS_FILE, group, name, old_json.get(name), new_json.get(name))
            )
    if not create and not edit.rows:
        edit.notes.append(
            f"group {escaped_name(group)} already has this config: nothing written (the broker would still "
            "move dataVersion)"
        )
        return edit
    entries = dict(table.subscription_group_table)
    entries[group] = new
    order = table_order(table.subscription_group_table, [group] if create else [], INIT_ORDER)
    before = table.data_version
    written = SubscriptionGroupTable(
        {k: entries[k] for k in order},
        next_version(_loaded_version(table, v5), now or now_ms()),
        table.forbidden_table,
        dict(table.extra),
    )
    edit.files.append(FileEdit(GROUPS_FILE, text, written, before, written.data_version))
    return edit


def plan_group_delete(
    store: Store,
    group: str,
    *,
    clean_offset: bool = False,
    broker_version: int | None = None,
    now: int | None = None,
) -> ConfigEdit:
    """What `mqadmin deleteSubGroup [-r]` would leave in the store (see the module docstring). Read-only."""
    refuse_layout(store)
    edit = ConfigEdit("group delete", group, store.layout.broker_version(broker_version))
    if not group:
        raise ConfigEditError("the group name is empty")
    _refuse_broker_group(group)
    table, text = _load_groups(store, edit)
    forbidden = None if table.forbidden_table is None else dict(table.forbidden_table)
    existed = group in table.subscription_group_table
    if existed:
        edit.rows.append(EditRow("delete", GROUPS_FILE, group))
        entries = {k: v for k, v in table.subscription_group_table.items() if k != group}
        if forbidden is not None and forbidden.pop(group, None) is not None:
            edit.rows.append(EditRow("delete", GROUPS_FILE, group, "forbiddenTable"))
        before = table.data_version
        written = SubscriptionGroupTable(
            {
                k: entries[k]
                for k in table_order(table.subscription_group_table, (), INIT_ORDER)
                if k in entries
            },
            next_version(_loaded_version(table, edit.broker_version.major >= 5), now or now_ms()),
            forbidden,
            dict(table.extra),
        )
        edit.files.append(FileEdit(GROUPS_FILE, text, written, before, written.data_version))
    if clean_offset:
        _plan_remove_offsets(store, edit, group)
    else:
        loaded = store.config(OFFSETS_FILE).load()
        rows = [k for k in loaded.model.offset_table if _group_of(k) == group]
        if rows:
            edit.notes.append(
                f"{len(rows)} offset entr{'y' if len(rows) == 1 else 'ies'} of the group stay in "
                f"{OFFSETS_FILE} "
                "(--clean-offset removes them, as deleteSubGroup -r does)"
            )
    edit.notes.append(
        f"the group's retry and dead-letter topics (%RETRY%{group}, %DLQ%{group}) stay, as the broker leaves "
        "them: `mqtool topic delete` removes them"
    )
    if not edit.changed:
        raise ConfigEditError(
            f"group {escaped_name(group)} is not in {GROUPS_FILE}"
            + (" and has no offsets" if clean_offset else "")
            + ": nothing to delete"
        )
    return edit


def _group_of(key: str) -> str | None:
    parts = java_split_topic_group(key)
    return parts[1] if len(parts) == 2 else None


def _plan_remove_offsets(store: Store, edit: ConfigEdit, group: str) -> None:
    """ConsumerOffsetManager.removeOffset: the group's rows of offsetTable, resetOffsetTable and
    pullOffsetTable."""
    if store.layout.consumer_offset_file != OFFSETS_FILE:
        raise ConfigEditError(
            f"--clean-offset: this broker keeps offsets in {store.layout.consumer_offset_file}, which mqtool "
            "does not edit for a group delete"
        )
    loaded = store.config(OFFSETS_FILE).load()
    if loaded.source == "none":
        return
    check_writable(loaded)
    model: ConsumerOffsetTable = loaded.model
    text = planned_text(model)
    for name in ("offset_table", "reset_offset_table", "pull_offset_table"):
        table = getattr(model, name)
        if table:
            setattr(model, name, {k: table[k] for k in loaded_order(table)})
    gone = 0
    for name, table in (
        ("offsetTable", model.offset_table),
        ("resetOffsetTable", model.reset_offset_table),
        ("pullOffsetTable", model.pull_offset_table),
    ):
        if not table:
            continue
        for key in [k for k in table if _group_of(k) == group]:
            queues = table.pop(key)
            gone += 1
            edit.rows.append(EditRow("remove-offsets", OFFSETS_FILE, key, name, len(queues), None))
    if gone:
        edit.files.append(FileEdit(OFFSETS_FILE, text, model, model.data_version, model.data_version))


def update_group(store: Store, group: str, execute: bool = False, **options: Any) -> ConfigEdit:
    """`mqadmin updateSubGroup`, offline: plan (`plan_group_update` options), then write when `execute`."""
    return apply_edit(store, plan_group_update(store, group, **options), execute)


def delete_group(store: Store, group: str, execute: bool = False, **options: Any) -> ConfigEdit:
    """`mqadmin deleteSubGroup`, offline: plan (`plan_group_delete` options), then write when `execute`."""
    return apply_edit(store, plan_group_delete(store, group, **options), execute)


__all__ = ["SETTINGS", "delete_group", "plan_group_delete", "plan_group_update", "update_group"]
