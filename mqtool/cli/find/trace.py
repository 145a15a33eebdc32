"""`mqtool trace` (one message's history across stores) and `mqtool dump trace` (every trace record of a
store): thin wrappers over `mqtool.trace`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from formats.errors import MqtoolError
from mqtool.cli.options import GLOBALS, FormatOpt, RecordOpt, StoreLocation, StoreOpt, TzOpt, WideOpt, session
from mqtool.cli.scheduled.delay import NowOpt, resolve_now

TIME_HELP = "epoch ms, ISO-8601 (zone optional), yyyy-MM-dd#HH:mm:ss:SSS, now, -2h or now-30m"

TraceTopicOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--trace-topic",
        help="A custom trace topic the clients write to (repeat for several). RMQ_SYS_TRACE_TOPIC and the "
        "cloud channel's rmq_sys_TRACE_DATA_* topics are always read.",
        show_default=False,
    ),
]


def trace(
    msg_id: Annotated[
        str | None,
        typer.Argument(
            metavar="[ID]",
            help="The message's id: its UNIQ_KEY (the msgId clients and trace records show), or an "
            "offsetMsgId.",
            show_default=False,
        ),
    ] = None,
    key: Annotated[
        str | None, typer.Option("--key", "-k", help="Instead of an id: a key of the message (with --topic).")
    ] = None,
    topic: Annotated[str | None, typer.Option("--topic", "-t", help="The topic of --key.")] = None,
    store: Annotated[
        list[str] | None,
        typer.Option(
            "--store",
            "-s",
            click_type=StoreLocation(),
            help="A broker store; repeat for several. A directory whose subdirectories are stores stands "
            "for them; URLs (s3://, gs://, hdfs://, file://) as for the audit. Default: $MQTOOL_STORE, else "
            "~/store.",
            show_default=False,
        ),
    ] = None,
    trace_topic: TraceTopicOpt = None,
    now: NowOpt = None,
    html: Annotated[
        Path | None,
        typer.Option("--html", help="Also write the report as one self-contained HTML page to this file."),
    ] = None,
    workers: Annotated[
        int | None,
        typer.Option("--workers", help="Processes reading stores at once. Default: one per core.", min=1),
    ] = None,
    spark: Annotated[
        bool, typer.Option("--spark", help="Run the per-store lookups as Spark tasks (one per store).")
    ] = False,
    master: Annotated[
        str, typer.Option("--master", help="With --spark: the Spark master URL (as for the audit).")
    ] = "local[*]",
    fmt: FormatOpt = None,
    tz: TzOpt = None,
    wide: WideOpt = False,
    record: RecordOpt = False,
) -> None:
    """One message's whole history across broker stores, in time order: its trace records (Pub with
    producer group, client host and cost; SubBefore/SubAfter per consumer group with cost and success;
    EndTransaction; Recall) joined with what the stores hold (the record on each broker, its delay copy
    and the delay level's progress, its timer-wheel state, retry copies in %RETRY%group and the POP retry
    topics, the DLQ copy, POP checkpoint/ack state, a transaction's half and commit copy, a recall
    tombstone) and, per consumer group, whether its committed offset has passed the message. Gaps are
    named: no trace records, no Pub record, consumed by offset without a SubAfter record. Stores are read
    in parallel; one that cannot be read is reported and the others are used (exit status 1)."""
    from mqtool.cli.find.trace_render import render_report, write_html
    from mqtool.trace.fleet import TraceQuery
    from mqtool.trace.fleet import trace as run_trace

    s = session(None, fmt, tz, wide, record, csv=False)  # a timeline, a groups table, the stores read
    stores = list(store) if store else [GLOBALS.store if GLOBALS.store is not None else _default_store()]
    query = TraceQuery(
        stores,
        msg_id=msg_id,
        key=key,
        topic=topic,
        now=resolve_now(now, s.ctx.zone),
        extra_topics=tuple(trace_topic or ()),
        broker_config=GLOBALS.broker_config,  # the global --broker-config, as for query
        workers=workers,
    )
    if spark:
        from mqtool.trace.spark import spark_runner

        with spark_runner(master) as runner:
            report = run_trace(query, runner)
    else:
        report = run_trace(query)
    render_report(report, s.ctx)
    if html is not None:
        path = write_html(report, html, s.ctx.zone)
        sys.stderr.write(f"mqtool: note: wrote {path}\n")
    if report.failed:
        count, first = len(report.failed), report.failed[0]
        raise MqtoolError(
            f"{count} of {len(report.stores)} stores could not be read (the others were): {first.error}"
        )


def _default_store() -> str:
    import os

    from store.storedir import resolve_store_root

    return os.environ.get("MQTOOL_STORE") or str(resolve_store_root(None))


def dump_trace(
    trace_type: Annotated[
        list[str] | None,
        typer.Option(
            "--type",
            help="Pub, SubBefore, SubAfter, EndTransaction or Recall (repeat for several).",
            show_default=False,
        ),
    ] = None,
    topic: Annotated[
        str | None,
        typer.Option(
            "--topic",
            "-t",
            help="Records of this topic (Pub, EndTransaction and Recall carry one; SubBefore "
            "and SubAfter do not).",
        ),
    ] = None,
    group: Annotated[
        str | None, typer.Option("--group", "-g", help="Records of this producer or consumer group.")
    ] = None,
    msg_id: Annotated[
        str | None, typer.Option("--msg-id", help="Records about this msgId (UNIQ_KEY).")
    ] = None,
    begin: Annotated[
        str | None, typer.Option("--begin", "-b", help=f"Records at or after: {TIME_HELP}.")
    ] = None,
    end: Annotated[
        str | None, typer.Option("--end", "-e", help=f"Records at or before: {TIME_HELP}.")
    ] = None,
    trace_topic: TraceTopicOpt = None,
    store: StoreOpt = None,
    fmt: FormatOpt = None,
    tz: TzOpt = None,
    wide: WideOpt = False,
    record: RecordOpt = False,
) -> None:
    """Every message trace record of the store's trace topics (RMQ_SYS_TRACE_TOPIC, rmq_sys_TRACE_DATA_*,
    --trace-topic), decoded as the client's TraceDataEncoder reads it: type, time, group, topic, msgId,
    keys, cost, success, retry times, client and broker hosts, and where the trace message is stored. A
    trace message whose body the real decoder cannot read is listed with the reason."""
    from mqtool.cli.find.trace_render import render_records
    from mqtool.timeparse import parse_time
    from mqtool.trace.records import trace_rows

    s = session(store, fmt, tz, wide, record)
    t_begin = parse_time(begin, s.ctx.zone) if begin is not None else None
    t_end = parse_time(end, s.ctx.zone) if end is not None else None
    if t_begin is not None and t_end is not None and t_begin > t_end:
        raise MqtoolError("--begin is after --end")
    with s.open_store() as st:
        rows = trace_rows(
            st,
            extra_topics=tuple(trace_topic or ()),
            types=trace_type,
            topic=topic,
            group=group,
            begin=t_begin,
            end=t_end,
            msg_id=msg_id,
        )
        render_records(rows, s.ctx)
