"""`mqtool offsets ...`: consumer progress (consumerOffset.json against the queues), and offset resets."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from mqtool.cli.options import (
    GLOBALS,
    BrokerConfigOpt,
    DryRunOpt,
    ForceOpt,
    FormatOpt,
    RecordOpt,
    StoreOpt,
    TzOpt,
    WideOpt,
    execute_flag,
    new_app,
    session,
    skip_pandas_probe,
)

offsets_app = new_app("Consumer offsets: progress and lag per group/topic/queue, and planned resets.")

# --- offsets show (consumer progress) -----------------------------------------------------------


@offsets_app.command("show")
def offsets_show(
    group: Annotated[str | None, typer.Option("--group", "-g", help="Only this consumer group.")] = None,
    all_groups: Annotated[
        bool, typer.Option("--all-groups", help="Every group (the default; excludes --group).")
    ] = False,
    topic: Annotated[
        str | None,
        typer.Option(
            "--topic",
            "-t",
            metavar="TOPIC[:QUEUES]",
            help="Only this topic and the retry topics of its groups; TOPIC:0,1 only those queues of it.",
        ),
    ] = None,
    include_system: Annotated[
        bool, typer.Option("--system", help="Also list the broker's built-in groups that have no offsets.")
    ] = False,
    store: StoreOpt = None,
    fmt: FormatOpt = None,
    tz: TzOpt = None,
    wide: WideOpt = False,
    record: RecordOpt = False,
) -> None:
    """Consumer progress like mqadmin consumerProgress, from consumerOffset.json: per group/topic/queue
    the consumer offset, min and max offset, lag, the store time of the last consumed and of the newest
    message, and totals per group. Offsets outside [min, max] and groups without a committed offset are
    flagged in the state column, never shown as lag 0 or -1."""
    from formats.errors import UsageError
    from mqtool.offsets import progress
    from mqtool.offsets.reset import parse_topic_queues

    if group is not None and all_groups:
        raise UsageError("give --group or --all-groups, not both")
    topic_name, queues = None, None
    if topic is not None:
        ((topic_name, queues),) = parse_topic_queues([topic]).items()
    skip_pandas_probe()
    s = session(store, fmt, tz, wide, record)
    with s.open_store(reads_tiered=True) as st:
        result = progress.consumer_progress(
            st, group=group, topic=topic_name, queues=queues, include_system=include_system
        )
        from mqtool.cli.consumers import offsets_render

        offsets_render.render_progress(result, s.ctx)
    for text in result.notes:
        sys.stderr.write(f"mqtool: note: {text}\n")


# --- offsets reset (the offset planner) ---------------------------------------------------------

_BrokerVersionOpt = Annotated[
    int | None,
    typer.Option(
        "--broker-version",
        metavar="4|5",
        help="4 or 5: the broker version whose algorithms to use (4 = 4.9.x, also right for 5.0.x-5.1.0 "
        "time searches). Default: detected from the store's files.",
        show_default=False,
    ),
]
_ExecuteOffsetsOpt = Annotated[
    bool, typer.Option("--execute", help="Write consumerOffset.json (default: dry run, print the plan).")
]
_AllowNewGroupOpt = Annotated[
    bool,
    typer.Option("--allow-new-group", help="Accept a group that is not in subscriptionGroup.json."),
]


@offsets_app.command("reset")
def offsets_reset(
    group: Annotated[str | None, typer.Option("--group", "-g", help="Consumer group.")] = None,
    all_groups: Annotated[
        bool,
        typer.Option(
            "--all-groups",
            help="Every group with committed offsets on the topics (the broker's built-in groups left out), "
            "each only on the topics it has offsets for.",
        ),
    ] = False,
    topic: Annotated[
        list[str] | None,
        typer.Option(
            "--topic",
            "-t",
            metavar="TOPIC[:QUEUES]",
            help="Topic to reset (repeatable); TOPIC:0,1 resets only those queues of it (as Kafka's "
            "TOPIC:PARTITIONS).",
        ),
    ] = None,
    all_topics: Annotated[
        bool, typer.Option("--all-topics", help="Every topic the group has committed offsets for.")
    ] = False,
    queue: Annotated[
        list[str] | None,
        typer.Option(
            "--queue", "-q", metavar="QUEUE", help="Only these queue ids (repeatable, or comma-separated)."
        ),
    ] = None,
    to_time: Annotated[
        str | None,
        typer.Option(
            "--to-time",
            metavar="TIME",
            help="Reset to a time (epoch ms, 1795261179s, ISO-8601, yyyy-MM-dd#HH:mm:ss:SSS, now, -2h), "
            "searched as the broker's getOffsetInQueueByTime does.",
        ),
    ] = None,
    boundary: Annotated[
        str | None,
        typer.Option(
            "--boundary",
            metavar="lower|upper",
            help="lower (default, the broker's): first message stored at or after the time; upper: last "
            "message stored at or before it. 5.1.1+ only.",
        ),
    ] = None,
    by_duration: Annotated[
        str | None,
        typer.Option(
            "--by-duration",
            metavar="DURATION",
            help="Reset to this long before now: 90m, 2h, 1d2h, or ISO-8601 as Kafka takes it (PT2H, "
            "P1DT2H).",
        ),
    ] = None,
    to_offset: Annotated[
        int | None, typer.Option("--to-offset", help="Reset every queue to this offset.")
    ] = None,
    shift_by: Annotated[
        int | None, typer.Option("--shift-by", help="Move the committed offsets by N (negative: back).")
    ] = None,
    to_earliest: Annotated[bool, typer.Option("--to-earliest", help="Reset to the min offsets.")] = False,
    to_latest: Annotated[bool, typer.Option("--to-latest", help="Reset to the max offsets.")] = False,
    to_current: Annotated[
        bool,
        typer.Option(
            "--to-current",
            help="Keep the committed offsets as they are (Kafka's --to-current); queues without one get the "
            "max offset. With --export: a plan file of the current offsets.",
        ),
    ] = False,
    from_file: Annotated[
        str | None,
        typer.Option(
            "--from-file",
            metavar="CSV",
            help="Apply a plan CSV (group,topic,queue,offset; as written by --export). With --group, "
            "topic,queue,offset rows are accepted too.",
        ),
    ] = None,
    export: Annotated[
        str | None, typer.Option("--export", metavar="CSV", help="Also write the plan to this CSV file.")
    ] = None,
    execute: _ExecuteOffsetsOpt = False,
    dry_run: DryRunOpt = False,
    force: ForceOpt = False,
    broker_version: _BrokerVersionOpt = None,
    allow_new_group: _AllowNewGroupOpt = False,
    store: StoreOpt = None,
    fmt: FormatOpt = None,
    tz: TzOpt = None,
    wide: WideOpt = False,
    record: RecordOpt = False,
    broker_config: BrokerConfigOpt = None,
) -> None:
    """Plan, and with --execute apply, a reset of consumer offsets (like mqadmin resetOffsetByTime and
    kafka-consumer-groups --reset-offsets): per queue the current and new offset, min, max, lag before
    and after, for time targets the store time of the message the new offset points at, how many
    unconsumed messages each move skips, and flags: forward (past the committed offset), clamped to min (a
    target below the min offset, or a time before the queue's oldest message after retention) or to max.
    Targets outside [min, max] are clamped with a warning. Dry run unless --execute; never while a broker
    holds the store lock."""
    from mqtool.offsets import reset as ops
    from mqtool.offsets.apply import apply_plan
    from mqtool.offsets.plan_file import export_plan, plan_output
    from mqtool.timeparse import parse_duration, parse_time

    execute = execute_flag(execute, dry_run)
    s = session(store, fmt, tz, wide, record)
    with s.open_store(broker_config) as st:
        target = None if export is None else plan_output(export, stores=[st.root], force=force)
        plan = ops.plan_offsets_reset(
            st,
            group=group,
            topics=topic,
            all_topics=all_topics,
            queues=ops.parse_queue_ids(queue),
            to_time=None if to_time is None else parse_time(to_time, s.ctx.zone),
            by_duration_ms=None if by_duration is None else parse_duration(by_duration),
            to_offset=to_offset,
            shift_by=shift_by,
            to_earliest=to_earliest,
            to_latest=to_latest,
            to_current=to_current,
            all_groups=all_groups,
            boundary=boundary,
            from_file=from_file,
            broker_version=broker_version,
            allow_new_group=allow_new_group,
        )
        from mqtool.cli.consumers import offset_reset_render

        offset_reset_render.render_plan(plan, s.ctx)
        if target is not None:
            export_plan(plan, target)
            sys.stderr.write(f"mqtool: plan written to {export}\n")
        result = apply_plan(st, plan, execute)
        from mqtool.cli.consumers import offset_reset_render

        offset_reset_render.render_apply(result, plan, s.ctx, execute)


# --- offsets merge (replicas) -------------------------------------------------------------------


@offsets_app.command("merge")
def offsets_merge(
    stores: Annotated[
        list[Path],
        typer.Argument(
            metavar="STORE...",
            help="Two or more replica stores of one broker (master and slaves), the --into one among them.",
            show_default=False,
        ),
    ],
    into: Annotated[
        Path,
        typer.Option("--into", metavar="STORE", help="The store whose consumerOffset.json is written."),
    ],
    prefer: Annotated[
        str,
        typer.Option(
            "--prefer",
            metavar="max|STORE",
            help="max (default): per queue the largest committed offset on any side; STORE: that side's "
            "offset where it has one, the max elsewhere.",
        ),
    ] = "max",
    group: Annotated[
        list[str] | None, typer.Option("--group", "-g", help="Only this consumer group (repeatable).")
    ] = None,
    execute: Annotated[
        bool,
        typer.Option(
            "--execute", help="Write --into's consumerOffset.json (default: dry run, print the plan)."
        ),
    ] = False,
    dry_run: DryRunOpt = False,
    fmt: FormatOpt = None,
    tz: TzOpt = None,
    wide: WideOpt = False,
    record: RecordOpt = False,
    broker_config: BrokerConfigOpt = None,
) -> None:
    """Merge consumer offsets across replicas of one broker (the fix of apache/rocketmq #1094: a master
    restarted after its slave served, and the slave's offset sync wrote older offsets back): per
    group/topic/queue the offset on each side, the one chosen (the max, or --prefer's) and why, and what
    --into gets - clamped into its queue's [min, max] as its broker would serve it. Dry run unless
    --execute; writes as offsets reset does (store lock, .bak, atomic replace, read back)."""
    from contextlib import ExitStack

    from mqtool.offsets.apply import apply_plan
    from mqtool.offsets.merge import MergeOptionError, plan_offsets_merge
    from store.config.brokerconf import load_broker_config
    from store.storedir import Store

    execute = execute_flag(execute, dry_run)
    labels = [str(s) for s in stores]
    where = [s.resolve() for s in stores]

    def side(path: Path, option: str) -> int:
        if path.resolve() not in where:
            raise MergeOptionError(f"{option} {path} is not one of the stores given ({', '.join(labels)})")
        return where.index(path.resolve())

    target = side(into, "--into")
    prefer = prefer if prefer == "max" else labels[side(Path(prefer), "--prefer")]
    s = session(None, fmt, tz, wide, record)
    conf = broker_config or GLOBALS.broker_config  # replicas of one broker share its store settings
    settings = load_broker_config(conf) if conf else None
    with ExitStack() as stack:
        opened = [stack.enter_context(Store.open(path, settings)) for path in stores]
        plan = plan_offsets_merge(opened, labels, into=target, prefer=prefer, groups=group or None)
        from mqtool.cli.consumers import offset_merge_render

        offset_merge_render.render_merge(plan, s.ctx)
        result = apply_plan(opened[plan.into], plan.reset, execute)
        offset_merge_render.render_merge_apply(result, plan, s.ctx, execute)


# --- offsets clone ------------------------------------------------------------------------------


@offsets_app.command("clone")
def offsets_clone(
    from_group: Annotated[
        str, typer.Option("--from-group", metavar="GROUP", help="The group whose offsets are copied.")
    ],
    to_group: Annotated[
        str, typer.Option("--to-group", metavar="GROUP", help="The group that gets them (new or existing).")
    ],
    topic: Annotated[
        list[str] | None,
        typer.Option(
            "--topic",
            "-t",
            metavar="TOPIC[:QUEUES]",
            help="Only this topic (repeatable); TOPIC:0,1 only those queues. Default: every topic the source "
            "group has offsets for, its retry topics left out.",
        ),
    ] = None,
    execute: _ExecuteOffsetsOpt = False,
    dry_run: DryRunOpt = False,
    broker_version: _BrokerVersionOpt = None,
    allow_new_group: _AllowNewGroupOpt = False,
    store: StoreOpt = None,
    fmt: FormatOpt = None,
    tz: TzOpt = None,
    wide: WideOpt = False,
    record: RecordOpt = False,
    broker_config: BrokerConfigOpt = None,
) -> None:
    """Plan, and with --execute apply, copying one consumer group's committed offsets to another in one
    step (like mqadmin cloneGroupOffset, offline): per queue the destination's current offset and the
    source's, copied as it is. Written as offsets reset writes (consumerOffset.json, or where the store's
    broker keeps its offsets), with the same guards: dry run unless --execute, never while a broker holds
    the store lock, .bak kept, atomic replace."""
    from mqtool.offsets.apply import apply_plan
    from mqtool.offsets.clone import plan_clone

    execute = execute_flag(execute, dry_run)
    s = session(store, fmt, tz, wide, record)
    with s.open_store(broker_config) as st:
        plan = plan_clone(
            st,
            from_group,
            to_group,
            topic,
            allow_new_group=allow_new_group,
            broker_version=broker_version,
        )
        from mqtool.cli.consumers import offset_reset_render

        title = f"Offset clone plan: group {from_group} -> group {to_group}"
        offset_reset_render.render_plan(plan, s.ctx, title=title)
        result = apply_plan(st, plan, execute)
        offset_reset_render.render_apply(result, plan, s.ctx, execute)


# --- offsets prune ------------------------------------------------------------------------------


@offsets_app.command("prune")
def offsets_prune(
    execute: _ExecuteOffsetsOpt = False,
    dry_run: DryRunOpt = False,
    store: StoreOpt = None,
    fmt: FormatOpt = None,
    tz: TzOpt = None,
    wide: WideOpt = False,
    record: RecordOpt = False,
    broker_config: BrokerConfigOpt = None,
) -> None:
    """Plan, and with --execute apply, removing the offset rows nothing consumes any more: of groups not
    in subscriptionGroup.json (judged only when the broker wrote one), of topics not in topics.json, of
    queue ids at or past the topic's readQueueNums. The broker's own groups and topics, LMQ topics and a
    live group's retry topic are never pruned. Every row is named with its reason. Dry run unless
    --execute; never while a broker holds the store lock; refused where the broker keeps offsets in
    RocksDB (it would bring the rows back)."""
    from mqtool.offsets.prune import apply_prune, plan_prune

    execute = execute_flag(execute, dry_run)
    s = session(store, fmt, tz, wide, record)
    with s.open_store(broker_config) as st:
        plan = plan_prune(st)
        from mqtool.cli.consumers import offset_prune_render

        offset_prune_render.render_plan(plan, s.ctx)
        result = apply_prune(st, plan, execute)
        offset_prune_render.render_apply(result, plan, s.ctx, execute)
