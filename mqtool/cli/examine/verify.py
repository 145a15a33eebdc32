"""`mqtool verify` and `mqtool export`: whole-store checks and columnar exports (thin typer wrappers)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from formats.errors import MqtoolError, UsageError
from mqtool.cli.options import (
    GLOBALS,
    BrokerConfigOpt,
    FailOnOpt,
    ForceOpt,
    FormatOpt,
    JobsOpt,
    RecordOpt,
    StoreOpt,
    TieredOpt,
    TzOpt,
    WideOpt,
    fail_on_level,
    jobs_count,
    session,
    skip_pandas_probe,
)

_SEVERITIES = ("error", "warning", "info")


def verify(
    deep: Annotated[
        bool,
        typer.Option(
            "--deep", help="Also check that every message key and UNIQ_KEY is reachable through the index."
        ),
    ] = False,
    no_crc: Annotated[
        bool, typer.Option("--no-crc", help="Do not verify body CRCs (the broker does, by default).")
    ] = False,
    strict: Annotated[bool, typer.Option("--strict", help="The same as --fail-on warning.")] = False,
    fail_on: FailOnOpt = None,
    show: Annotated[
        str,
        typer.Option("--show", metavar="error|warning|info", help="Least severe problems to list."),
    ] = "info",
    max_problems: Annotated[
        int,
        typer.Option(
            "--max-problems", help="Rows listed per check before they are summarised (0: no limit)."
        ),
    ] = 1000,
    startup: Annotated[
        bool,
        typer.Option(
            "--startup",
            help="Only the start-up verdict: would a broker started on this store now start, refuse or exit, "
            "and what would its recovery truncate or rebuild.",
        ),
    ] = False,
    broker_version: Annotated[
        int | None,
        typer.Option(
            "--broker-version",
            metavar="4|5",
            help="Check as this broker reads: 4 rejects V2 records (default: 5; --startup: detected).",
        ),
    ] = None,
    broker_config: BrokerConfigOpt = None,
    jobs: JobsOpt = None,
    store: StoreOpt = None,
    fmt: FormatOpt = None,
    tz: TzOpt = None,
    wide: WideOpt = False,
    record: RecordOpt = False,
    tiered: TieredOpt = None,
) -> None:
    """Check a whole store as the broker would read it, and say where its recovery would cut: record
    magic, size chain, body CRC, PHYSICALOFFSET fields, BLANKs and zero tails, ConsumeQueue units against
    their records (size, topic, queue, queue offset, tags code) and records against their units, index
    headers and hash chains (--deep: every key reachable), checkpoint and abort state, and on a 5.x store
    the timer wheel (timerlog cut, units without their record, slots, chains, counts, timercheck), every
    mapped file against the one size the broker requires, and record topics and LMQ queue names the
    broker's dispatch would turn into a path outside the store. Problems are listed by file and offset
    with a severity, worst first; the exit status says whether any reached the --fail-on severity
    (default: error). With --tiered (or broker.conf's tieredStoreFilePath): the tiered tree against its
    metadata (missing, unlisted, resized or gapped segments, ConsumeQueue units outside the tiered log).
    Undispatched records after a crash, retention-deleted prefixes and the recovery plan are warnings or
    infos, not errors; in controller mode the records past the confirm offset are the unconfirmed tail
    (a warning), not undispatched. With --startup, only the verdict of a broker started on the store now
    (start, refuse, exit: exit status 1 unless start), each reason with the real code that decides it,
    and what its recovery does."""
    skip_pandas_probe()
    from mqtool import verify as ops
    from mqtool.exitstatus import StoreUnreadableError, check_status
    from mqtool.render.output import progress
    from store.config.brokerconf import load_broker_config

    if show not in _SEVERITIES:
        raise UsageError(f"--show must be one of {', '.join(_SEVERITIES)}")
    if broker_version not in (None, 4, 5):
        raise UsageError("--broker-version must be 4 or 5")
    if startup:
        s = session(store, fmt, tz, wide, record, csv=False)
        with s.open_store(broker_config) as st:
            doc = ops.startup_check(st, broker_version)
        from mqtool.cli.examine import verify_render

        verify_render.render_startup(doc, s.ctx)
        if doc["verdict"] != "start":
            raise typer.Exit(1)
        return
    threshold = fail_on_level(fail_on, strict)
    workers = jobs_count(jobs)
    s = session(store, fmt, tz, wide, record)
    # a bad --broker-config is bad input (exit 1), not a store that could not be read (3): read it first
    if broker_config or GLOBALS.broker_config:
        load_broker_config(broker_config or GLOBALS.broker_config)
    try:
        with (
            s.open_store(broker_config, url_ok=True, tiered=tiered, reads_tiered=True) as st,
            progress(ops.verify_total(st), "verifying") as advance,
        ):
            report = ops.verify_store(
                st,
                deep=deep,
                check_crc=not no_crc,
                accept_v2=broker_version != 4,
                max_rows=max_problems or None,
                progress=advance,
                jobs=workers,
            )
    except UsageError:
        raise
    except (MqtoolError, OSError) as exc:  # the store, or a file of it, could not be read
        raise StoreUnreadableError.of(exc) from exc
    from mqtool.cli.examine import verify_render

    verify_render.render_verify(report, s.ctx, min_severity=show)
    status = check_status(report.counts, threshold)
    if status:
        raise typer.Exit(status)


def export(
    output: Annotated[
        Path, typer.Option("--output", "-o", help="Directory to write messages.parquet / messages.jsonl to.")
    ],
    topic: Annotated[str | None, typer.Option("--topic", "-t", help="Only messages of this topic.")] = None,
    from_offset: Annotated[
        int | None, typer.Option("--from-offset", help="Physical offset to start at (a record start).")
    ] = None,
    to_offset: Annotated[
        int | None, typer.Option("--to-offset", help="Physical offset to stop before (exclusive).")
    ] = None,
    file_format: Annotated[
        str | None,
        typer.Option(
            "--file-format", metavar="parquet|jsonl", help="The file to write: parquet (default) or jsonl."
        ),
    ] = None,
    bodies: Annotated[bool, typer.Option("--bodies", help="Include message bodies (as stored).")] = False,
    crc: Annotated[
        bool, typer.Option("--crc", help="Verify body CRCs; the walk stops at a bad one.")
    ] = False,
    jobs: JobsOpt = None,
    force: ForceOpt = False,
    tiered: TieredOpt = None,
    store: StoreOpt = None,
    fmt: FormatOpt = None,
    tz: TzOpt = None,
    wide: WideOpt = False,
    record: RecordOpt = False,
) -> None:
    """Export the messages of a commitlog range (metadata, properties, optionally bodies) to Parquet or
    JSONL files through the columnar decoder, in physical order, stopping where the broker's recovery
    would. With --tiered (or broker.conf's tieredStoreFilePath) and no offset range, the messages the broker
    serves from the tiered store come first, queue by queue (their physicalOffset is the tiered
    COMMIT_LOG's). --file-format chooses the file; --format, as everywhere, how the summary of what was
    written prints."""
    skip_pandas_probe()
    import sys

    from mqtool import export as ops
    from mqtool.render.output import progress

    if file_format is not None and file_format not in ops.EXPORT_FORMATS:
        raise UsageError(f"--file-format must be one of {', '.join(ops.EXPORT_FORMATS)}, not {file_format!r}")
    if fmt == "parquet":  # as `dump commitlog --format parquet --output`: Parquet to the output
        if file_format not in (None, "parquet"):
            raise UsageError(f"--format parquet and --file-format {file_format} exclude each other")
        fmt, file_format = None, "parquet"
    elif fmt == "jsonl" and file_format is None:  # export's --format named the file format: keep it so
        sys.stderr.write(
            "mqtool: note: export --format jsonl writes messages.jsonl as it always did; spell it "
            "--file-format jsonl (--format is how the summary prints, as everywhere)\n"
        )
        file_format = "jsonl"  # and the summary prints as JSONL, as --format says
    workers = jobs_count(jobs)
    s = session(store, fmt, tz, wide, record)
    with s.open_store(tiered=tiered, reads_tiered=True) as st:
        total = sum(f.size for f in st.commitlog.files)
        with progress(total, "exporting") as advance:
            summary = ops.export_range(
                st,
                output,
                fmt=file_format or "parquet",
                topic=topic,
                from_offset=from_offset,
                to_offset=to_offset,
                with_body=bodies,
                check_crc=crc,
                progress=advance,
                jobs=workers,
                force=force,
            )
    from mqtool.cli.examine import export_render

    export_render.render_summary(summary, s.ctx)


__all__ = ["export", "verify"]
