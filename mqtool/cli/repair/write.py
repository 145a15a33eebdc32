"""`mqtool rebuild` and `mqtool sample create`: write paths that append and dispatch like the broker."""

from __future__ import annotations

from pathlib import Path
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

sample_app = new_app("Create realistic sample stores with the broker's own write rules.")

_HashSlotsOpt = Annotated[
    int | None,
    typer.Option("--max-hash-slot-num", help="maxHashSlotNum of the index files (broker.conf key)."),
]
_IndexNumOpt = Annotated[
    int | None,
    typer.Option("--max-index-num", help="maxIndexNum of the index files (broker.conf key)."),
]
_CqFileSizeOpt = Annotated[
    int | None,
    typer.Option(
        "--mapped-file-size-consume-queue",
        "--cq-file-size",
        help="mappedFileSizeConsumeQueue: bytes per ConsumeQueue file, a multiple of 20 (broker.conf key).",
    ),
]


def rebuild(
    target: Annotated[
        str,
        typer.Argument(
            help="What to rebuild: cq (ConsumeQueues), index, all, dledger-index (a DLedger commitlog's "
            "index units, from its entries) or compaction-cq (compaction topics' CQ files, from their "
            "compaction logs).",
            metavar="[cq|index|all|dledger-index|compaction-cq]",
        ),
    ] = "all",
    execute: Annotated[
        bool, typer.Option("--execute", help="Swap the rebuilt files in (default: dry run, print the plan).")
    ] = False,
    dry_run: DryRunOpt = False,
    broker_config: BrokerConfigOpt = None,
    hash_slot_num: _HashSlotsOpt = None,
    index_num: _IndexNumOpt = None,
    cq_file_size: _CqFileSizeOpt = None,
    prune_orphans: Annotated[
        bool,
        typer.Option(
            "--prune-orphans",
            help="Leave out of the rebuilt ConsumeQueues the queues of topics the topic config lacks "
            "(what mqadmin cleanUnusedTopic deletes; system topics and LMQ kept) and queues past both of "
            "their topic's queue counts (cq and all only).",
        ),
    ] = False,
    store: StoreOpt = None,
    fmt: FormatOpt = None,
    tz: TzOpt = None,
    wide: WideOpt = False,
    record: RecordOpt = False,
) -> None:
    """Rebuild ConsumeQueues and/or index files from the commitlog, byte for byte as the broker's dispatch
    builds them (repair after corruption, or after offline appends). The dry run compares the rebuild
    with the current files queue by queue - a consistency check. With --execute (never while a broker
    holds the store lock) the rebuilt directories are swapped in atomically. Settings: the flags, else
    --broker-config, else the size most current files have (never one outlier), else the broker defaults.
    A record whose topic or LMQ queue no queue directory may have (the broker's dispatch would build a
    path outside the store from it) is refused, naming it. On a DLedger store the queues and index come
    from its entries; `dledger-index` rebuilds DLedger's own index units (what its recovery rewrites),
    each index file that differs replaced atomically. `compaction-cq` rebuilds the CQ files of compaction
    topics (compaction/compactionCq, what their consumers are served from) from their compaction logs, as
    the broker's append writes them. --prune-orphans leaves out the queues `verify` names
    orphan_topic and orphan_queue (their committed offsets stay: `mqtool offsets prune`). In controller
    mode (--broker-config with enableControllerMode=true) the dispatch stops at the confirm offset, as the
    broker's reput does."""
    from mqtool import rebuild as ops
    from mqtool.render.output import progress

    execute = execute_flag(execute, dry_run)
    s = session(store, fmt, tz, wide, record, csv=False)
    if target == "dledger-index":
        from mqtool.cli.repair import rebuild_render

        with s.open_store(broker_config) as st:
            rebuild_render.render_dledger_index(ops.rebuild_dledger_index(st, execute=execute), s.ctx)
        return
    if target == "compaction-cq":
        from mqtool.cli.repair import rebuild_render

        with s.open_store(broker_config) as st:
            rebuild_render.render_compaction_cq(ops.rebuild_compaction_cq(st, execute=execute), s.ctx)
        return
    with s.open_store(broker_config) as st, progress(None, "rebuilding") as advance:
        report = ops.rebuild(
            st,
            target,
            execute=execute,
            cq_file_size=cq_file_size,
            hash_slot_num=hash_slot_num,
            index_num=index_num,
            zone=s.ctx.zone,
            progress=advance,
            prune_orphans=prune_orphans,
        )
    from mqtool.cli.repair import rebuild_render

    rebuild_render.render_report(report, s.ctx)


@sample_app.command("create")
def sample_create(
    directory: Annotated[
        Path, typer.Argument(help="The store root to create (must not exist, or be empty).")
    ],
    count: Annotated[
        int, typer.Option("--count", "-n", help="How many messages the simulated producers send.")
    ] = 10_000,
    seed: Annotated[
        int, typer.Option("--seed", help="Random seed: the same options give the same store.")
    ] = 20240601,
    file_size: Annotated[
        int, typer.Option("--file-size", help="mappedFileSizeCommitLog: bytes per commitlog file.")
    ] = 1024 * 1024,
    cq_file_size: Annotated[
        int,
        typer.Option(
            "--cq-file-size",
            "--mapped-file-size-consume-queue",
            help="mappedFileSizeConsumeQueue: bytes per ConsumeQueue file (multiple of 20).",
        ),
    ] = 6000,
    hash_slot_num: Annotated[
        int, typer.Option("--max-hash-slot-num", help="maxHashSlotNum of the index files.")
    ] = 4096,
    index_num: Annotated[
        int, typer.Option("--max-index-num", help="maxIndexNum of the index files.")
    ] = 16_000,
    broker_version: Annotated[
        int,
        typer.Option(
            "--broker-version", metavar="4|5", help="Broker version to imitate: 5 (5.x) or 4 (4.9.x)."
        ),
    ] = 5,
    producers: Annotated[
        int,
        typer.Option(
            "--producers",
            help="Producer connections the messages come from, each its own born host; 0 = a new "
            "connection (a new ephemeral port) per message, as producers created per request make.",
        ),
    ] = 3,
    dledger: Annotated[
        bool,
        typer.Option(
            "--dledger",
            help="Write a DLedger commitlog (enableDLegerCommitLog, a one-peer group n0): entries in "
            "dledger-n0/data with their index, checkpoint and currterm, instead of commitlog/.",
        ),
    ] = False,
    start_time: Annotated[
        str | None,
        typer.Option(
            "--start-time",
            help="Simulated clock start (epoch ms, ISO-8601, ...). Default 2024-06-01T00:00:00Z, so output "
            "is reproducible.",
        ),
    ] = None,
    fmt: FormatOpt = None,
    tz: TzOpt = None,
    wide: WideOpt = False,
    record: RecordOpt = False,
) -> None:
    """Create a realistic store through the broker's write path: TopicTest (4 queues) and OrderTopic (2)
    traffic with keys, tags and user properties, compressed bodies, delay messages (delivered when due),
    transactions (commit, rollback, pending, op messages), retry and DLQ messages, config files with
    consumer offsets, checkpoint and lock. Defaults make a small store like the golden ones; pass the
    broker's sizes (--file-size 1073741824 --cq-file-size 6000000 --max-hash-slot-num 5000000
    --max-index-num 20000000) for a benchmark-sized one."""
    from mqtool.render.output import progress
    from mqtool.sample.create import create_sample
    from mqtool.sample.options import DEFAULT_START_TIME, SampleOptions
    from mqtool.timeparse import parse_time

    s = session(None, fmt, tz, wide, record)
    start = DEFAULT_START_TIME if start_time is None else parse_time(start_time, s.ctx.zone)
    opts = SampleOptions(
        directory=directory,
        messages=count,
        seed=seed,
        file_size=file_size,
        cq_file_size=cq_file_size,
        hash_slot_num=hash_slot_num,
        index_num=index_num,
        version=broker_version,
        start_time=start,
        zone=s.ctx.zone if tz else None,
        producers=producers,
        dledger=dledger,
    )
    with progress(count, "creating sample store") as advance:
        summary = create_sample(opts, progress=advance)
    from mqtool.cli.repair import sample_render

    sample_render.render_summary(summary, s.ctx)
