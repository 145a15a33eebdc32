"""`mqtool info` and `mqtool dump ...`: summarise a store, dump each kind of file record by record."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from formats.errors import UsageError
from mqtool.cli.options import (
    GLOBALS,
    ForceOpt,
    FormatOpt,
    JobsOpt,
    RecordOpt,
    StoreOpt,
    TieredOpt,
    TzOpt,
    WideOpt,
    jobs_count,
    new_app,
    session,
)

dump_app = new_app("Dump one kind of store file record by record (like kafka-dump-log).")


def info(
    jobs: JobsOpt = None,
    store: StoreOpt = None,
    fmt: FormatOpt = None,
    tz: TzOpt = None,
    wide: WideOpt = False,
    record: RecordOpt = False,
    tiered: TieredOpt = None,
) -> None:
    """Summarise a store: commitlog range and times, topics and queues, index files, checkpoint, config
    files, the 5.x timer wheel, and whether a broker is running on it; with --tiered (or broker.conf's
    tieredStoreFilePath) each tiered queue's local and tiered ranges side by side; in controller mode
    (--broker-config with enableControllerMode=true, or the files alone: then said to be ambiguous) the
    confirm offset the recovery computes and the unconfirmed tail past it. The walks of broker-sized
    commitlog files (where the data ends, the newest record) run over --jobs worker processes."""
    from mqtool import info as info_ops

    workers = jobs_count(jobs)
    s = session(store, fmt, tz, wide, record, csv=False)
    with s.open_store(url_ok=True, tiered=tiered, reads_tiered=True) as st:
        from mqtool.cli.examine import info_render

        info_render.render_info(info_ops.store_info(st, jobs=workers), s.ctx)


@dump_app.command("commitlog")
def dump_commitlog(
    from_offset: Annotated[
        int | None,
        typer.Option("--from-offset", help="Physical offset of the first record (a record start)."),
    ] = None,
    count: Annotated[int | None, typer.Option("--count", "-n", help="Stop after this many records.")] = None,
    topic: Annotated[str | None, typer.Option("--topic", "-t", help="Only messages of this topic.")] = None,
    body: Annotated[bool, typer.Option("--body", help="Include message bodies (base64 in JSON).")] = False,
    no_crc: Annotated[bool, typer.Option("--no-crc", help="Do not verify body CRCs.")] = False,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="With --format parquet: the Parquet file to write.")
    ] = None,
    jobs: JobsOpt = None,
    force: ForceOpt = False,
    store: StoreOpt = None,
    fmt: Annotated[
        str | None,
        typer.Option(
            "--format", "-f", help="As for every command, plus parquet (with --output; columnar path)."
        ),
    ] = None,
    tz: TzOpt = None,
    wide: WideOpt = False,
    record: RecordOpt = False,
) -> None:
    """Dump commitlog records in physical order: messages, blank end-of-file markers, and the record where
    the broker's recovery would stop (torn or corrupt), if any. `--format parquet --output FILE` writes the
    messages through the fast columnar decoder instead (there --count counts messages, and --jobs worker
    processes decode)."""
    from mqtool import dump

    if (fmt or GLOBALS.fmt) == "parquet":
        from mqtool import export

        if output is None:
            raise UsageError("--format parquet needs --output FILE")
        workers = jobs_count(jobs)
        s = session(store, None, tz, wide, record)
        with s.open_store() as st:
            summary = export.dump_commitlog_parquet(
                st,
                output,
                from_offset=from_offset,
                count=count,
                topic=topic,
                with_body=body,
                check_crc=not no_crc,
                jobs=workers,
                force=force,
            )
        from mqtool.cli.examine import export_render

        export_render.render_summary(summary, s.ctx)
        return
    if output is not None:
        raise UsageError("--output goes with --format parquet")
    s = session(store, fmt, tz, wide, record)
    with s.open_store() as st:
        rows = dump.commitlog_records(
            st, from_offset=from_offset, count=count, topic=topic, with_body=body, check_crc=not no_crc
        )
        from mqtool.cli.examine import dump_render

        dump_render.render_commitlog(rows, s.ctx, with_body=body)


@dump_app.command("cq")
def dump_cq(
    topic: Annotated[str, typer.Argument(help="Topic name.")],
    queue: Annotated[int, typer.Argument(help="Queue id.")],
    from_offset: Annotated[int | None, typer.Option("--from-offset", help="First queue offset.")] = None,
    count: Annotated[int | None, typer.Option("--count", "-n", help="Stop after this many units.")] = None,
    store: StoreOpt = None,
    fmt: FormatOpt = None,
    tz: TzOpt = None,
    wide: WideOpt = False,
    record: RecordOpt = False,
    tiered: TieredOpt = None,
) -> None:
    """Dump the ConsumeQueue units of one queue (queueOffset, phyOffset, size, tagsCode). On a compaction
    topic: the compaction CQ units consumers are served (compaction/), with each record's keys. With
    --tiered (or broker.conf's tieredStoreFilePath): the offsets the broker serves from the tiered store as
    the tiered ConsumeQueue's units first (state tiered, phyOffset in the queue's tiered COMMIT_LOG), then
    the local ones."""
    from mqtool import dump

    s = session(store, fmt, tz, wide, record)
    with s.open_store(tiered=tiered, reads_tiered=True) as st:
        from mqtool.cli.examine import dump_render

        dump_render.render_cq(dump.cq_units(st, topic, queue, from_offset=from_offset, count=count), s.ctx)


@dump_app.command("compactionlog")
def dump_compactionlog(
    topic: Annotated[str, typer.Argument(help="A compaction topic (cleanup.policy=COMPACTION).")],
    queue: Annotated[int, typer.Argument(help="Queue id.")],
    from_offset: Annotated[int | None, typer.Option("--from-offset", help="First queue offset.")] = None,
    count: Annotated[int | None, typer.Option("--count", "-n", help="Stop after this many messages.")] = None,
    body: Annotated[bool, typer.Option("--body", help="Include message bodies (base64 in JSON).")] = False,
    store: StoreOpt = None,
    fmt: FormatOpt = None,
    tz: TzOpt = None,
    wide: WideOpt = False,
    record: RecordOpt = False,
) -> None:
    """Dump one compaction topic queue's compaction log (compaction/compactionLog: the records its consumers
    are served from) in physical order: each message with its file and position, whether a CQ unit serves
    it, whether it is a tombstone (empty body), and what the next compaction would do with it (keep, drop;
    empty where it would not touch it); each file's BLANK, end of data or bad record."""
    from mqtool import compaction

    s = session(store, fmt, tz, wide, record)
    with s.open_store() as st:
        from mqtool.cli.examine import dump_render

        result = compaction.compaction_log_records(
            st, topic, queue, from_offset=from_offset, count=count, with_body=body
        )
        dump_render.render_compaction_log(result, s.ctx, with_body=body)


@dump_app.command("index")
def dump_index(
    file: Annotated[
        str | None, typer.Argument(help="Index file name or path. Default: every index file's header.")
    ] = None,
    entries: Annotated[bool, typer.Option("--entries", help="Also list the entries of the file.")] = False,
    store: StoreOpt = None,
    fmt: FormatOpt = None,
    tz: TzOpt = None,
    wide: WideOpt = False,
    record: RecordOpt = False,
) -> None:
    """Dump IndexFile headers, and with --entries the hash entries of one file."""

    s = session(store, fmt, tz, wide, record)
    with s.open_store() as st:
        from mqtool.cli.examine import dump_render

        dump_render.render_index(st, file, entries, s.ctx)


@dump_app.command("checkpoint")
def dump_checkpoint(
    store: StoreOpt = None,
    fmt: FormatOpt = None,
    tz: TzOpt = None,
    wide: WideOpt = False,
    record: RecordOpt = False,
) -> None:
    """Dump the StoreCheckpoint file."""
    from mqtool import dump

    s = session(store, fmt, tz, wide, record)
    with s.open_store() as st:
        from mqtool.cli.examine import dump_render

        dump_render.render_checkpoint(dump.checkpoint(st), s.ctx)


@dump_app.command("timerlog")
def dump_timerlog(
    from_position: Annotated[
        int | None,
        typer.Option("--from-position", help="First timerlog position (units before it are skipped)."),
    ] = None,
    count: Annotated[int | None, typer.Option("--count", "-n", help="Stop after this many units.")] = None,
    store: StoreOpt = None,
    fmt: FormatOpt = None,
    tz: TzOpt = None,
    wide: WideOpt = False,
    record: RecordOpt = False,
) -> None:
    """Dump the 5.x timerlog units (TimerMessageStore): position, previous unit in the slot, magic (roll,
    delete), write time, delayed time, the commitlog message; and where the broker's recovery stops."""
    from mqtool import dump

    s = session(store, fmt, tz, wide, record)
    with s.open_store() as st:
        from mqtool.cli.examine import dump_render

        dump_render.render_timerlog(dump.timerlog_units(st, from_position=from_position, count=count), s.ctx)


@dump_app.command("timerwheel")
def dump_timerwheel(
    every: Annotated[
        bool, typer.Option("--all", help="Every slot, empty ones too (1,209,600 rows).")
    ] = False,
    store: StoreOpt = None,
    fmt: FormatOpt = None,
    tz: TzOpt = None,
    wide: WideOpt = False,
    record: RecordOpt = False,
) -> None:
    """Dump the 5.x timer wheel's non-empty slots: slot time, first and last unit, count, the length of
    the chain the dequeue walks, and whether the slot sits where its time puts it."""
    from mqtool import dump

    s = session(store, fmt, tz, wide, record)
    with s.open_store() as st:
        from mqtool.cli.examine import dump_render

        dump_render.render_timerwheel(dump.timerwheel_slots(st, every=every), s.ctx)


@dump_app.command("timercheck")
def dump_timercheck(
    store: StoreOpt = None,
    fmt: FormatOpt = None,
    tz: TzOpt = None,
    wide: WideOpt = False,
    record: RecordOpt = False,
) -> None:
    """Dump config/timercheck (TimerCheckpoint): the wheel's read time, timerlog flush position, queue
    offsets, data version."""
    from mqtool import dump

    s = session(store, fmt, tz, wide, record)
    with s.open_store() as st:
        from mqtool.cli.examine import dump_render

        dump_render.render_timercheck(dump.timercheck(st), s.ctx)


@dump_app.command("config")
def dump_config(
    name: Annotated[
        str,
        typer.Argument(
            help="Config file: consumerOffset, delayOffset, topics, subscriptionGroup, messageRequestMode "
            "(with or without .json), or a file name under config/."
        ),
    ],
    bak: Annotated[bool, typer.Option("--bak", help="Read the .bak copy instead.")] = False,
    store: StoreOpt = None,
    fmt: FormatOpt = None,
    tz: TzOpt = None,
    wide: WideOpt = False,
    record: RecordOpt = False,
) -> None:
    """Dump a config JSON file as the broker loads it (falling back to .bak as the broker does)."""
    from mqtool import dump

    s = session(store, fmt, tz, wide, record)
    with s.open_store() as st:
        from mqtool.cli.examine import dump_render

        dump_render.render_config(dump.config(st, name, bak=bak), s.ctx)
