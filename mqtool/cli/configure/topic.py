"""`mqtool topic update|delete` and `mqtool group update|delete`: topics.json and subscriptionGroup.json
edited offline as mqadmin updateTopic / deleteTopic / updateSubGroup / deleteSubGroup make the broker edit
them."""

from __future__ import annotations

from typing import Annotated

import typer

from mqtool.cli.options import (
    BrokerConfigOpt,
    DryRunOpt,
    FormatOpt,
    RecordOpt,
    StoreOpt,
    TzOpt,
    WideOpt,
    execute_flag,
    new_app,
    session,
)

topic_app = new_app(
    "Create, change or delete a topic in topics.json, as mqadmin updateTopic / deleteTopic (broker stopped)."
)
group_app = new_app(
    "Create, change or delete a subscription group in subscriptionGroup.json, as mqadmin updateSubGroup / "
    "deleteSubGroup (broker stopped)."
)

BrokerVersionOpt = Annotated[
    int | None,
    typer.Option(
        "--broker-version",
        metavar="4|5",
        help="4 or 5: the broker version whose rules and file layout apply. Default: detected.",
        show_default=False,
    ),
]
AttrOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--attr",
        metavar="+KEY=VALUE|-KEY",
        help="Add or change (+key=value) or remove (-key) an attribute, as mqadmin's -a (5.x; repeatable).",
        show_default=False,
    ),
]
_ExecuteConfigOpt = Annotated[
    bool, typer.Option("--execute", help="Write the config files (default: dry run, print the changes).")
]


def _render(edit, s, execute: bool) -> None:
    from mqtool.cli.configure import configedit_render

    configedit_render.render_edit(edit, s.ctx, execute)


@topic_app.command("update")
def topic_update(
    topic: Annotated[str, typer.Argument(help="The topic (created when topics.json lacks it).")],
    read_queues: Annotated[
        int | None,
        typer.Option(
            "--read-queues",
            help="readQueueNums (default: the current value; 8 for a new topic).",
            show_default=False,
        ),
    ] = None,
    write_queues: Annotated[
        int | None,
        typer.Option(
            "--write-queues",
            help="writeQueueNums (default: the current value; 8 for a new topic).",
            show_default=False,
        ),
    ] = None,
    perm: Annotated[
        int | None,
        typer.Option(
            "--perm",
            metavar="2|4|6",
            help="2 write, 4 read, 6 both (default: current; 6).",
            show_default=False,
        ),
    ] = None,
    order: Annotated[
        bool | None,
        typer.Option(
            "--order/--no-order", help="The order flag (5.x; default: the current value).", show_default=False
        ),
    ] = None,
    attr: AttrOpt = None,
    execute: _ExecuteConfigOpt = False,
    dry_run: DryRunOpt = False,
    broker_version: BrokerVersionOpt = None,
    broker_config: BrokerConfigOpt = None,
    store: StoreOpt = None,
    fmt: FormatOpt = None,
    tz: TzOpt = None,
    wide: WideOpt = False,
    record: RecordOpt = False,
) -> None:
    """Create or change a topic as mqadmin updateTopic makes the broker do it (AdminBrokerProcessor
    .updateAndCreateTopic, TopicConfigManager.updateTopicConfig): topics.json written byte for byte as the
    broker persists it, dataVersion moved. Options not given keep the topic's current values (mqadmin would
    send its defaults). Refused as the broker refuses: system topics, invalid names, attributes it does not
    know or may not change (queue.type and cleanup.policy only at creation), MIXED message type; and, where
    the broker would accept it, a --read-queues below a queue that still holds messages (named with its
    offsets). Dry run by default: prints each change; --execute writes with the broker stopped."""
    from mqtool.configedit.topic import update_topic

    execute = execute_flag(execute, dry_run)
    s = session(store, fmt, tz, wide, record)
    with s.open_store(broker_config) as st:
        edit = update_topic(
            st,
            topic,
            execute,
            read_queues=read_queues,
            write_queues=write_queues,
            perm=perm,
            order=order,
            attributes=attr or [],
            broker_version=broker_version,
        )
        _render(edit, s, execute)


@topic_app.command("delete")
def topic_delete(
    topic: Annotated[str, typer.Argument(help="The topic to delete.")],
    execute: _ExecuteConfigOpt = False,
    dry_run: DryRunOpt = False,
    broker_version: BrokerVersionOpt = None,
    broker_config: BrokerConfigOpt = None,
    store: StoreOpt = None,
    fmt: FormatOpt = None,
    tz: TzOpt = None,
    wide: WideOpt = False,
    record: RecordOpt = False,
) -> None:
    """Delete a topic as mqadmin deleteTopic makes the broker do it: its topics.json entry (5.x: with the POP
    retry topics of the groups consuming it), its consumer offsets (5.x) and its consume queue directories.
    What the broker would also clear in memory is listed (broker-also). Refused for system topics, static
    topics and LMQ topics. Dry run by default; --execute writes with the broker stopped."""
    from mqtool.configedit.topic import delete_topic

    execute = execute_flag(execute, dry_run)
    s = session(store, fmt, tz, wide, record)
    with s.open_store(broker_config) as st:
        edit = delete_topic(st, topic, execute, broker_version=broker_version)
        _render(edit, s, execute)


def _flag(name: str, what: str) -> object:
    return typer.Option(
        f"--{name}/--no-{name}", help=f"{what} (default: the current value).", show_default=False
    )


@group_app.command("update")
def group_update(
    group: Annotated[str, typer.Argument(help="The subscription group (created when missing).")],
    retry_max_times: Annotated[
        int | None,
        typer.Option("--retry-max-times", help="retryMaxTimes (default: current; 16).", show_default=False),
    ] = None,
    retry_queues: Annotated[
        int | None,
        typer.Option("--retry-queues", help="retryQueueNums (default: current; 1).", show_default=False),
    ] = None,
    consume_enable: Annotated[bool | None, _flag("consume-enable", "consumeEnable")] = None,
    consume_from_min: Annotated[bool | None, _flag("consume-from-min", "consumeFromMinEnable")] = None,
    consume_broadcast: Annotated[bool | None, _flag("consume-broadcast", "consumeBroadcastEnable")] = None,
    consume_orderly: Annotated[bool | None, _flag("consume-orderly", "consumeMessageOrderly (5.x)")] = None,
    notify_ids_changed: Annotated[
        bool | None, _flag("notify-consumer-ids-changed", "notifyConsumerIdsChangedEnable")
    ] = None,
    broker_id: Annotated[
        int | None,
        typer.Option(
            "--broker-id", help="brokerId to consume from (default: current; 0).", show_default=False
        ),
    ] = None,
    which_broker: Annotated[
        int | None,
        typer.Option(
            "--which-broker-when-consume-slowly",
            help="whichBrokerWhenConsumeSlowly (default: current; 1).",
            show_default=False,
        ),
    ] = None,
    consume_timeout: Annotated[
        int | None,
        typer.Option(
            "--consume-timeout-minute",
            help="consumeTimeoutMinute (5.x; default: current; 15).",
            show_default=False,
        ),
    ] = None,
    attr: AttrOpt = None,
    execute: _ExecuteConfigOpt = False,
    dry_run: DryRunOpt = False,
    broker_version: BrokerVersionOpt = None,
    broker_config: BrokerConfigOpt = None,
    store: StoreOpt = None,
    fmt: FormatOpt = None,
    tz: TzOpt = None,
    wide: WideOpt = False,
    record: RecordOpt = False,
) -> None:
    """Create or change a subscription group as mqadmin updateSubGroup makes the broker do it
    (SubscriptionGroupManager.updateSubscriptionGroupConfig): subscriptionGroup.json written byte for byte as
    the broker persists it, dataVersion moved. Options not given keep the group's current values. Refused:
    the broker's own groups, invalid names, any --attr (5.3.3 knows no group attribute). Dry run by default;
    --execute writes with the broker stopped."""
    from mqtool.configedit.group import update_group

    execute = execute_flag(execute, dry_run)
    s = session(store, fmt, tz, wide, record)
    with s.open_store(broker_config) as st:
        edit = update_group(
            st,
            group,
            execute,
            attributes=attr or [],
            broker_version=broker_version,
            retry_max_times=retry_max_times,
            retry_queue_nums=retry_queues,
            consume_enable=consume_enable,
            consume_from_min_enable=consume_from_min,
            consume_broadcast_enable=consume_broadcast,
            consume_message_orderly=consume_orderly,
            notify_consumer_ids_changed_enable=notify_ids_changed,
            broker_id=broker_id,
            which_broker_when_consume_slowly=which_broker,
            consume_timeout_minute=consume_timeout,
        )
        _render(edit, s, execute)


@group_app.command("delete")
def group_delete(
    group: Annotated[str, typer.Argument(help="The subscription group to delete.")],
    clean_offset: Annotated[
        bool,
        typer.Option(
            "--clean-offset", help="Also remove the group's consumer offsets (mqadmin deleteSubGroup -r)."
        ),
    ] = False,
    execute: _ExecuteConfigOpt = False,
    dry_run: DryRunOpt = False,
    broker_version: BrokerVersionOpt = None,
    broker_config: BrokerConfigOpt = None,
    store: StoreOpt = None,
    fmt: FormatOpt = None,
    tz: TzOpt = None,
    wide: WideOpt = False,
    record: RecordOpt = False,
) -> None:
    """Delete a subscription group as mqadmin deleteSubGroup makes the broker do it: its entry in
    subscriptionGroup.json (and its forbiddenTable row), with --clean-offset its consumer offsets. Its %RETRY%
    and %DLQ% topics stay, as the broker leaves them. Refused for the broker's own groups. Dry run by
    default; --execute writes with the broker stopped."""
    from mqtool.configedit.group import delete_group

    execute = execute_flag(execute, dry_run)
    s = session(store, fmt, tz, wide, record)
    with s.open_store(broker_config) as st:
        edit = delete_group(st, group, execute, clean_offset=clean_offset, broker_version=broker_version)
        _render(edit, s, execute)
