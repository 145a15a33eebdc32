"""`mqtool query ...`: find messages by key, id, queue offset or time, from the store files alone."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from mqtool.cli.options import (
    ForceOpt,
    FormatOpt,
    RecordOpt,
    StoreLocation,
    StoreOpt,
    TieredOpt,
    TzOpt,
    WideOpt,
    new_app,
    session,
)

query_app = new_app(
    "Find messages by key, msgId / unique key, queue offset or time — with the broker down. Each message "
    "says whether each group consumed it and why (its committed offset, the subscription where the store "
    "records one); a single message on a terminal is shown one field a line (--format record: any answer)."
)

TIME_HELP = "epoch ms, 1795261179s, ISO-8601 (zone optional), yyyy-MM-dd#HH:mm:ss:SSS, now, -2h or now-30m"

BodyLimitOpt = Annotated[
    int | None,
    typer.Option(
        "--body-limit",
        help="Show at most this many bytes of each body (text, base64 and preview). Default: all "
        "(tables show a short preview).",
        min=0,
        show_default=False,
    ),
]
ExportOpt = Annotated[
    Path | None,
    typer.Option(
        "--export",
        help="Also write each body (decompressed when possible) to a file in this directory, with a "
        "manifest.json describing them. Never inside the store.",
        show_default=False,
    ),
]
ScanOpt = Annotated[
    bool,
    typer.Option(
        "--scan",
        help="Also search the part of the commitlog the index does not cover (read record by record); the "
        "whole commitlog for a topic the store does not know otherwise (a deleted topic).",
    ),
]


def note(text: str) -> None:
    sys.stderr.write(f"mqtool: note: {text}\n")


def _times(ctx, begin: str | None, end: str | None) -> tuple[int | None, int | None]:
    from mqtool.timeparse import parse_time, zone_label

    parsed = (
        parse_time(begin, ctx.zone) if begin is not None else None,
        parse_time(end, ctx.zone) if end is not None else None,
    )
    if begin is not None or end is not None:
        note(f"times read in zone {zone_label(ctx.zone)}")
    return parsed


def _check_export(st, export: Path | None, force: bool) -> None:
    """Refuse a bad --export directory before the query runs (it is checked again when written)."""
    if export is not None:
        from mqtool.query.view import export_directory

        export_directory(export, st, force=force)


def _finish(
    st, s, messages, notes, body_limit: int | None, export: Path | None, title: str, fmt, force: bool = False
) -> None:
    """Render the messages (one message on a terminal, when no --format was asked for: a field a line), print
    the notes on stderr, export when asked."""
    from mqtool.cli.find import query_render
    from mqtool.cli.options import GLOBALS
    from mqtool.query.consumed import consumer_state
    from mqtool.query.view import export_messages

    consumers = consumer_state(st)
    record = len(messages) == 1 and not (fmt or GLOBALS.fmt) and s.ctx.fmt == "table"
    query_render.render_messages(
        messages, s.ctx, consumers=consumers, body_limit=body_limit, title=title, record=record
    )
    for text in [*notes, *consumers.notes]:
        note(text)
    if not messages:
        note("no message found")
    if export is not None:
        result = export_messages(messages, export, st, consumers, force=force)
        note(f"exported {len(result.files)} bodies and {result.manifest.name} to {result.directory}")


@query_app.command("key")
def query_key(
    topic: Annotated[str, typer.Argument(help="Topic the message was sent to.")],
    key: Annotated[str, typer.Argument(help="A message key (one of its KEYS) or its UNIQ_KEY.")],
    begin: Annotated[
        str | None, typer.Option("--begin", "-b", help=f"Stored at or after this time: {TIME_HELP}.")
    ] = None,
    end: Annotated[
        str | None, typer.Option("--end", "-e", help=f"Stored at or before this time: {TIME_HELP}.")
    ] = None,
    max_num: Annotated[
        int | None,
        typer.Option("--max", "-m", help="At most this many messages (the newest). Default: no cap.", min=1),
    ] = None,
    scan: ScanOpt = False,
    scan_from: Annotated[
        int | None,
        typer.Option(
            "--scan-from",
            help="Scan the commitlog from this physical offset (a record start) instead of the index end.",
            show_default=False,
        ),
    ] = None,
    body_limit: BodyLimitOpt = None,
    export: ExportOpt = None,
    force: ForceOpt = False,
    store: Annotated[
        list[str] | None,
        typer.Option(
            "--store",
            "-s",
            click_type=StoreLocation(),
            help="Store root directory; repeat for several stores (a directory of stores and URLs too), "
            "each answering on its own. Default: $MQTOOL_STORE, else ~/store.",
            show_default=False,
        ),
    ] = None,
    spark: Annotated[
        bool, typer.Option("--spark", help="Look the key up in each store as a Spark task (one per store).")
    ] = False,
    master: Annotated[
        str, typer.Option("--master", help="With --spark: the Spark master URL (as for the audit).")
    ] = "local[*]",
    fmt: FormatOpt = None,
    tz: TzOpt = None,
    wide: WideOpt = False,
    record: RecordOpt = False,
    tiered: TieredOpt = None,
) -> None:
    """Messages with this key, from the index files (newest first, as the broker walks them), each
    confirmed on the message itself: hash collisions are dropped and counted, there is no cap of 64,
    and an index that stops before the end of the commitlog is reported (--scan searches the rest).
    Several stores (or --spark) are read each on its own, in worker processes or as Spark tasks; each
    message is shown with its store. With --tiered (or broker.conf's
    tieredStoreFilePath) the tiered store's index is searched too, for the times before the local store's
    earliest message, as the broker's plugin does."""
    from formats.indexfile import LONG_MAX
    from mqtool.query.key import query_by_key
    from mqtool.render.output import progress

    if spark or (store and len(store) > 1):
        _query_key_stores(topic, key, begin, end, max_num, scan, scan_from, body_limit, export, store, spark,
                          master, fmt, tz, wide, record)  # fmt: skip
        return
    s = session(store[0] if store else None, fmt, tz, wide, record)
    t_begin, t_end = _times(s.ctx, begin, end)
    with s.open_store(tiered=tiered, reads_tiered=True) as st:
        _check_export(st, export, force)
        with progress(None, "scanning the commitlog") as advance:
            result = query_by_key(
                st,
                topic,
                key,
                begin=t_begin if t_begin is not None else 0,
                end=t_end if t_end is not None else LONG_MAX,
                max_num=max_num,
                scan=scan,
                scan_from=scan_from,
                advance=advance,
            )
        _finish(
            st, s, result.messages, result.notes(), body_limit, export, f"Key {key!r} in {topic}", fmt, force
        )


def _query_key_stores(topic, key, begin, end, max_num, scan, scan_from, body_limit, export, stores, spark,
                      master, fmt, tz, wide, record) -> None:  # fmt: skip
    """`query key` over several stores, or with --spark (mqtool.trace.keys)."""
    from formats.errors import MqtoolError
    from formats.indexfile import LONG_MAX
    from mqtool.cli.find.trace_render import render_key_results
    from mqtool.cli.options import GLOBALS
    from mqtool.trace.keys import query_key_stores

    if scan or scan_from is not None or export is not None:
        raise MqtoolError(
            "--scan, --scan-from and --export read one store: give one --store, without --spark"
        )
    s = session(None, fmt, tz, wide, record)
    t_begin, t_end = _times(s.ctx, begin, end)
    locations = stores or [GLOBALS.store or _default_store()]
    kw = {
        "begin": t_begin or 0,
        "end": LONG_MAX if t_end is None else t_end,
        "max_num": max_num,
        "broker_config": GLOBALS.broker_config,
    }
    if spark:
        from mqtool.trace.spark import spark_runner

        with spark_runner(master, app_name="mqtool query key") as runner:
            results = query_key_stores(locations, topic, key, runner=runner, **kw)
    else:
        results = query_key_stores(locations, topic, key, **kw)
    failed = render_key_results(results, s.ctx, body_limit=body_limit, title=f"Key {key!r} in {topic}")
    if failed:
        raise MqtoolError(
            f"{len(failed)} of {len(results)} stores could not be read (the others were): {failed[0]}"
        )


def _default_store() -> str:
    import os

    from store.storedir import resolve_store_root

    return os.environ.get("MQTOOL_STORE") or str(resolve_store_root(None))


@query_app.command("id")
def query_id(
    msg_id: Annotated[
        str,
        typer.Argument(
            metavar="ID", help="An offsetMsgId or a UNIQ_KEY (client msgId): 32 or 56 hex digits."
        ),
    ],
    topic: Annotated[
        str | None,
        typer.Option(
            "--topic", "-t", help="Look the UNIQ_KEY up under this topic only. Default: every topic."
        ),
    ] = None,
    scan: ScanOpt = False,
    body_limit: BodyLimitOpt = None,
    export: ExportOpt = None,
    force: ForceOpt = False,
    store: StoreOpt = None,
    fmt: FormatOpt = None,
    tz: TzOpt = None,
    wide: WideOpt = False,
    record: RecordOpt = False,
    tiered: TieredOpt = None,
) -> None:
    """The message an offsetMsgId names (store host + physical offset; a host that is not this store's
    is reported), else every record carrying the id as its UNIQ_KEY (retries, re-puts of delay and
    transaction messages), looked up under every topic of the store unless --topic is given. With
    --tiered (or broker.conf's tieredStoreFilePath) a UNIQ_KEY is looked up in the tiered store's index
    too. An offsetMsgId of a message read from the tiered store names its tiered offset, which the broker
    looks up locally only."""
    from mqtool.query.msgid import query_by_id
    from mqtool.render.output import progress

    s = session(store, fmt, tz, wide, record)
    with s.open_store(tiered=tiered, reads_tiered=True) as st:
        _check_export(st, export, force)
        with progress(None, "scanning the commitlog") as advance:
            result = query_by_id(st, msg_id, topic=topic, scan=scan, advance=advance)
        title = f"Message id {result.msg_id}"
        _finish(st, s, result.messages, result.notes(), body_limit, export, title, fmt, force)


@query_app.command("offset")
def query_offset(
    topic: Annotated[str, typer.Argument(help="Topic.")],
    queue: Annotated[int, typer.Argument(help="Queue id.")],
    offset: Annotated[int, typer.Argument(help="Queue offset (ConsumeQueue index).")],
    count: Annotated[
        int, typer.Option("--count", "-n", help="Read this many consecutive queue offsets.", min=1)
    ] = 1,
    body_limit: BodyLimitOpt = None,
    export: ExportOpt = None,
    force: ForceOpt = False,
    store: StoreOpt = None,
    fmt: FormatOpt = None,
    tz: TzOpt = None,
    wide: WideOpt = False,
    record: RecordOpt = False,
    tiered: TieredOpt = None,
) -> None:
    """The message at a queue offset, read through the ConsumeQueue (like mqadmin queryMsgByOffset);
    offsets outside [minOffset, maxOffset) are explained. With --tiered (or broker.conf's
    tieredStoreFilePath) an offset below the local minimum is read from the tiered store, as the broker's
    fetcher serves it. On a compaction topic: what a pull at the
    offset is served from compaction/ (the next live record where the offset was compacted away)."""
    from mqtool.query.queue import query_by_queue_offset

    s = session(store, fmt, tz, wide, record)
    with s.open_store(tiered=tiered, reads_tiered=True) as st:
        _check_export(st, export, force)
        result = query_by_queue_offset(st, topic, queue, offset, count=count)
        holds = f"[{result.min_offset}, {result.max_offset})"
        title = f"{topic}/{queue} from queue offset {offset} (the queue holds {holds})"
        _finish(st, s, result.messages, result.notes(), body_limit, export, title, fmt, force)


@query_app.command("time")
def query_time(
    topic: Annotated[str, typer.Argument(help="Topic.")],
    begin: Annotated[str, typer.Option("--begin", "-b", help=f"Stored at or after this time: {TIME_HELP}.")],
    end: Annotated[str, typer.Option("--end", "-e", help=f"Stored at or before this time: {TIME_HELP}.")],
    queue: Annotated[
        int | None, typer.Option("--queue", "-q", help="Only this queue id. Default: every queue.")
    ] = None,
    tag: Annotated[
        str | None,
        typer.Option("--tag", help="Only messages with this tag (or 'A || B'): tagsCode, then exact TAGS."),
    ] = None,
    skip: Annotated[
        int, typer.Option("--skip", help="Skip this many matching messages (paging).", min=0)
    ] = 0,
    max_num: Annotated[
        int, typer.Option("--max", "-m", help="Page size: at most this many messages; 0 = no limit.", min=0)
    ] = 100,
    body_limit: BodyLimitOpt = None,
    export: ExportOpt = None,
    force: ForceOpt = False,
    store: StoreOpt = None,
    fmt: FormatOpt = None,
    tz: TzOpt = None,
    wide: WideOpt = False,
    record: RecordOpt = False,
    tiered: TieredOpt = None,
) -> None:
    """Messages of a topic stored between two times, oldest first, read through the ConsumeQueue
    (binary search by store time, as the broker's offset-by-time lookup), paged with --skip/--max. With
    --tiered (or broker.conf's tieredStoreFilePath) the offsets below the local minimum are searched in the
    tiered store, as the broker serves them."""
    from mqtool.query.queue import query_by_time

    s = session(store, fmt, tz, wide, record)
    t_begin, t_end = _times(s.ctx, begin, end)
    with s.open_store(tiered=tiered, reads_tiered=True) as st:
        _check_export(st, export, force)
        result = query_by_time(
            st,
            topic,
            begin=t_begin,
            end=t_end,
            queue_id=queue,
            tag=tag,
            skip=skip,
            max_num=max_num or None,
        )
        _finish(
            st, s, result.messages, result.notes(), body_limit, export, f"{topic} by store time", fmt, force
        )
