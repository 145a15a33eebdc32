"""`mqtool dlq ...`: dead-letter queues (`%DLQ%<group>`) - what died, where it came from, how old it is.
Thin wrappers over `mqtool.dlq`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from mqtool.cli.options import (
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
from mqtool.cli.scheduled.delay import BrokerVersionOpt

dlq_app = new_app("Dead-letter queues: the messages of %DLQ%<group> topics, their origin and age.")

GroupOpt = Annotated[
    str | None, typer.Option("--group", "-g", help="Only this consumer group's DLQ (%DLQ%<group>).")
]
BeginOpt = Annotated[
    str | None,
    typer.Option(
        "--begin",
        "-b",
        metavar="TIME",
        help="Only messages that died (were stored in the DLQ) at or after this time (epoch ms, ISO-8601, "
        "yyyy-MM-dd#HH:mm:ss:SSS, -2h).",
        show_default=False,
    ),
]
EndOpt = Annotated[
    str | None,
    typer.Option(
        "--end",
        "-e",
        metavar="TIME",
        help="Only messages that died at or before this time.",
        show_default=False,
    ),
]


def _listing(st, group, begin, end, zone):
    from mqtool.dlq.listing import list_dlq
    from mqtool.timeparse import parse_time

    return list_dlq(
        st,
        group=group,
        begin=None if begin is None else parse_time(begin, zone),
        end=None if end is None else parse_time(end, zone),
    )


@dlq_app.command("list")
def dlq_list(
    group: GroupOpt = None,
    begin: BeginOpt = None,
    end: EndOpt = None,
    store: StoreOpt = None,
    fmt: FormatOpt = None,
    tz: TzOpt = None,
    wide: WideOpt = False,
    record: RecordOpt = False,
    broker_config: BrokerConfigOpt = None,
) -> None:
    """Every message of the %DLQ%<group> topics: group, when it died (its store time in the DLQ), reconsume
    times, the original topic (RETRY_TOPIC), ORIGIN_MESSAGE_ID and, where that names this store, the
    original's queue and store time; the retry queue it was last consumed from (REAL_TOPIC/REAL_QID), keys,
    tags, unique key. Read-only."""
    skip_pandas_probe()
    s = session(store, fmt, tz, wide, record)
    with s.open_store(broker_config) as st:
        listing = _listing(st, group, begin, end, s.ctx.zone)
        from mqtool.cli.consumers import dlq_render

        dlq_render.render_list(listing, s.ctx)
    for text in listing.warnings:
        sys.stderr.write(f"mqtool: warning: {text}\n")


@dlq_app.command("stats")
def dlq_stats(
    group: GroupOpt = None,
    begin: BeginOpt = None,
    end: EndOpt = None,
    now: Annotated[
        str | None,
        typer.Option(
            "--now",
            metavar="TIME",
            help="The time ages are judged against. Default: now.",
            show_default=False,
        ),
    ] = None,
    store: StoreOpt = None,
    fmt: FormatOpt = None,
    tz: TzOpt = None,
    wide: WideOpt = False,
    record: RecordOpt = False,
    broker_config: BrokerConfigOpt = None,
) -> None:
    """Dead letters per group and original topic: how many, the oldest and newest death, the highest
    reconsume times, and how many died <1h, 1h-1d, 1d-7d, >=7d before --now. Read-only."""
    from mqtool.dlq.listing import dlq_stats as stats
    from mqtool.timeparse import now_ms, parse_time

    skip_pandas_probe()
    s = session(store, fmt, tz, wide, record)
    when = now_ms() if now is None else parse_time(now, s.ctx.zone)
    with s.open_store(broker_config) as st:
        listing = _listing(st, group, begin, end, s.ctx.zone)
        from mqtool.cli.consumers import dlq_render

        dlq_render.render_stats(stats(listing, when), listing, when, s.ctx)
    for text in listing.warnings:
        sys.stderr.write(f"mqtool: warning: {text}\n")


MsgIdOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--msg-id",
        metavar="ID",
        help="Only this message: its DLQ offsetMsgId, its UNIQ_KEY (client msgId) or its ORIGIN_MESSAGE_ID "
        "(repeatable: any of them).",
        show_default=False,
    ),
]
KeyOpt = Annotated[
    str | None,
    typer.Option(
        "--key", "-k", metavar="KEY", help="Only messages with this key (one of KEYS).", show_default=False
    ),
]
OriginTopicOpt = Annotated[
    str | None,
    typer.Option(
        "--origin-topic",
        metavar="TOPIC",
        help="Only messages first sent to this topic (RETRY_TOPIC).",
        show_default=False,
    ),
]


def _selector(msg_ids, key, begin, end, origin_topic, zone):
    from mqtool.dlq.selection import DlqSelector
    from mqtool.timeparse import parse_time

    return DlqSelector(
        msg_ids=tuple(msg_ids or ()),
        key=key,
        begin=None if begin is None else parse_time(begin, zone),
        end=None if end is None else parse_time(end, zone),
        origin_topic=origin_topic,
    )


@dlq_app.command("export")
def dlq_export(
    output: Annotated[Path, typer.Option("--output", "-o", metavar="FILE", help="The file to write.")],
    file_format: Annotated[
        str | None,
        typer.Option(
            "--file-format",
            metavar="jsonl|csv|parquet",
            help="The file to write. Default: from the --output suffix (.jsonl, .csv, .parquet), else jsonl.",
            show_default=False,
        ),
    ] = None,
    bodies: Annotated[
        bool, typer.Option("--bodies", help="Include message bodies (as stored; base64 in JSONL and CSV).")
    ] = False,
    group: GroupOpt = None,
    msg_id: MsgIdOpt = None,
    key: KeyOpt = None,
    begin: BeginOpt = None,
    end: EndOpt = None,
    origin_topic: OriginTopicOpt = None,
    force: ForceOpt = False,
    store: StoreOpt = None,
    fmt: FormatOpt = None,
    tz: TzOpt = None,
    wide: WideOpt = False,
    record: RecordOpt = False,
    broker_config: BrokerConfigOpt = None,
) -> None:
    """Write the dead letters (one row each, the fields of `dlq list` plus the properties, and the body with
    --bodies) to a JSONL, CSV or Parquet file, replaced atomically; the file may not be inside a store, and
    an existing file is replaced only if a dlq export wrote it (or with --force). --file-format chooses the
    file; --format, as everywhere, how the summary prints. Read-only for the store."""
    from mqtool.dlq.export import export_dead_letters

    skip_pandas_probe()
    s = session(store, fmt, tz, wide, record)
    with s.open_store(broker_config) as st:
        selector = _selector(msg_id, key, begin, end, origin_topic, s.ctx.zone)
        summary = export_dead_letters(
            st, output, fmt=file_format, with_body=bodies, group=group, selector=selector, force=force
        )
    from mqtool.cli.consumers import dlq_render

    dlq_render.render_export(summary, s.ctx)
    for text in summary.warnings:
        sys.stderr.write(f"mqtool: warning: {text}\n")


@dlq_app.command("resend")
def dlq_resend(
    group: Annotated[
        str, typer.Option("--group", "-g", help="The consumer group whose %DLQ%<group> to resend from.")
    ],
    to: Annotated[
        str,
        typer.Option(
            "--to",
            metavar="retry|origin",
            help="retry: into %RETRY%<group> (only the group gets them again, with its full retries); "
            "origin: into the queue the message was first stored in (every group of that topic gets it).",
        ),
    ] = "retry",
    msg_id: MsgIdOpt = None,
    key: KeyOpt = None,
    begin: BeginOpt = None,
    end: EndOpt = None,
    origin_topic: OriginTopicOpt = None,
    execute: Annotated[bool, typer.Option("--execute", help="Write the records (default: dry run).")] = False,
    dry_run: DryRunOpt = False,
    broker_version: BrokerVersionOpt = None,
    store: StoreOpt = None,
    fmt: FormatOpt = None,
    tz: TzOpt = None,
    wide: WideOpt = False,
    record: RecordOpt = False,
    broker_config: BrokerConfigOpt = None,
) -> None:
    """Resend selected dead letters as the broker's own re-put builds them: --to retry writes the record the
    consumer send-back, the delay hook and ScheduleMessageService leave in %RETRY%<group> for a first
    failure (the DLQ copy's properties, REAL_TOPIC/REAL_QID, DELAY 3, reconsumeTimes 1: the group gets its
    full retries again); --to origin puts the copy back into its original queue (reconsumeTimes 0).
    Idempotent: a dead letter whose ORIGIN_MESSAGE_ID and UNIQ_KEY a later record of the target topic
    already carries is skipped. The plan lists every selected message: resend, skip or refuse, and why.
    Dry run unless --execute; never while a broker holds the store lock."""
    from mqtool.cli.consumers import dlq_render
    from mqtool.dlq.resend import execute_resend, plan_resend

    execute = execute_flag(execute, dry_run)
    s = session(store, fmt, tz, wide, record, csv=False)
    with s.open_store(broker_config) as st:
        selector = _selector(msg_id, key, begin, end, origin_topic, s.ctx.zone)

        def make_plan(fresh):
            return plan_resend(fresh, group, selector, to, broker_version=broker_version)

        plan = make_plan(st)
        result = execute_resend(st, plan, execute, replan=make_plan)
        dlq_render.render_resend(plan, result, s.ctx, execute)
