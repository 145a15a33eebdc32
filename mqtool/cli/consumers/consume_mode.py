"""`mqtool consume-mode show|set`: messageRequestMode.json, PULL or POP per topic and group."""

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

consume_mode_app = new_app("Consume mode per topic/group (PULL or POP), as mqadmin setConsumeMode sets it.")

BrokerVersionOpt = Annotated[
    int | None,
    typer.Option(
        "--broker-version",
        metavar="4|5",
        help="4 or 5: the broker version (4.9.x has no consume-mode switch). Default: detected.",
        show_default=False,
    ),
]


@consume_mode_app.command("show")
def show(
    group: Annotated[str | None, typer.Option("--group", "-g", help="Only this consumer group.")] = None,
    topic: Annotated[str | None, typer.Option("--topic", "-t", help="Only this topic.")] = None,
    broker_version: BrokerVersionOpt = None,
    broker_config: BrokerConfigOpt = None,
    store: StoreOpt = None,
    fmt: FormatOpt = None,
    tz: TzOpt = None,
    wide: WideOpt = False,
    record: RecordOpt = False,
) -> None:
    """Show the consume mode of each topic/group: the messageRequestMode.json entry, else the broker's
    default PULL; the retry topics that apply (%RETRY%group for PULL, %RETRY%group_topic and with retry
    topic V2 %RETRY%group+topic for POP) and how many messages wait in them for the group. The other
    mode's retry topics are listed too while they hold messages for the group, with a note: this mode's
    consumers never read them, so they must be consumed in the other mode or they are lost."""
    from mqtool import consume_mode

    s = session(store, fmt, tz, wide, record)
    with s.open_store(broker_config) as st:
        modes = consume_mode.consume_modes(st, group, topic, broker_version=broker_version)
        from mqtool.cli.consumers import consume_mode_render

        consume_mode_render.render_modes(modes, s.ctx)


@consume_mode_app.command("set")
def set_mode(
    topic: Annotated[str, typer.Option("--topic", "-t", help="Topic (not a %RETRY% topic).")],
    group: Annotated[str, typer.Option("--group", "-g", help="Consumer group.")],
    mode: Annotated[str, typer.Option("--mode", metavar="PULL|POP", help="PULL or POP.")],
    pop_share_queue_num: Annotated[
        int,
        typer.Option(
            "--pop-share-queue-num",
            help="POP: how many other consumers' queues each consumer also pops (0 or less: all queues).",
        ),
    ] = 0,
    execute: Annotated[
        bool, typer.Option("--execute", help="Write messageRequestMode.json (default: dry run).")
    ] = False,
    dry_run: DryRunOpt = False,
    allow_new_group: Annotated[
        bool, typer.Option("--allow-new-group", help="Accept a group that is not in subscriptionGroup.json.")
    ] = False,
    broker_version: BrokerVersionOpt = None,
    broker_config: BrokerConfigOpt = None,
    store: StoreOpt = None,
    fmt: FormatOpt = None,
    tz: TzOpt = None,
    wide: WideOpt = False,
    record: RecordOpt = False,
) -> None:
    """Set the consume mode of a topic/group like mqadmin setConsumeMode: dry run by default (prints
    old -> new); --execute writes messageRequestMode.json while the broker is stopped, then reads it
    back and prints the new state."""
    from mqtool import consume_mode

    execute = execute_flag(execute, dry_run)
    s = session(store, fmt, tz, wide, record)
    with s.open_store(broker_config) as st:
        change = consume_mode.set_consume_mode(
            st,
            topic,
            group,
            mode,
            pop_share_queue_num,
            execute,
            broker_version=broker_version,
            allow_new_group=allow_new_group,
        )
        from mqtool.cli.consumers import consume_mode_render

        consume_mode_render.render_change(change, s.ctx, execute)
