"""`mqtool retention`: what the broker's clean services delete next, and when (a thin wrapper over
`mqtool.oncall.retention`)."""

from __future__ import annotations

from typing import Annotated

import typer

from formats.errors import UsageError
from mqtool.cli.options import BrokerConfigOpt, FormatOpt, RecordOpt, StoreOpt, TzOpt, WideOpt, session
from mqtool.cli.scheduled.delay import NowOpt, resolve_now


def retention(
    now: NowOpt = None,
    disk_used: Annotated[
        float | None,
        typer.Option(
            "--disk-used",
            metavar="RATIO",
            help="Assume the disk this used (0-1, e.g. 0.9) instead of measuring it (statvfs, as the broker)",
        ),
    ] = None,
    runs: Annotated[
        int | None,
        typer.Option("--runs", help="Exactly this many clean runs (default: until a run deletes nothing)."),
    ] = None,
    jvm_property: Annotated[
        list[str] | None,
        typer.Option(
            "--jvm-property",
            "-D",
            metavar="KEY=VALUE",
            help="A -D system property the broker runs with (rocketmq.broker.diskSpaceCleanForciblyRatio, "
            "rocketmq.broker.diskSpaceWarningLevelRatio); repeat for several.",
        ),
    ] = None,
    rate_window: Annotated[
        str,
        typer.Option(
            "--rate-window", metavar="DURATION", help="The window of the write rate (e.g. 24h, 6h)."
        ),
    ] = "24h",
    broker_version: Annotated[
        int | None,
        typer.Option(
            "--broker-version", metavar="4|5", help="Follow 4.9.x or 5.x rules (default: detected)."
        ),
    ] = None,
    broker_config: BrokerConfigOpt = None,
    store: StoreOpt = None,
    fmt: FormatOpt = None,
    tz: TzOpt = None,
    wide: WideOpt = False,
    record: RecordOpt = False,
) -> None:
    """What the broker's retention deletes on its next runs and when it acts next, offline: the
    CleanCommitLogService decision at --now (deleteWhen hour, fileReservedTime, the disk ratios
    diskMaxUsedSpaceRatio / forced clean / disk full, cleanFileForciblyEnable, deleteFileBatchMax; from
    --broker-config), each commitlog file it deletes and why, the ConsumeQueue and index files that follow,
    the messages each topic's queues lose and the unconsumed messages each consumer group loses, and a
    forecast from the commitlog's write rate: when each file expires and is deleted, and when the disk
    reaches each ratio. --tz is the broker's time zone (deleteWhen is an hour of its day)."""
    from mqtool.cli.oncall import retention_render
    from mqtool.oncall import retention as ops
    from mqtool.timeparse import parse_duration

    if broker_version not in (None, 4, 5):
        raise UsageError("--broker-version must be 4 or 5")
    if runs is not None and runs < 1:
        raise UsageError("--runs must be at least 1")
    properties = {}
    for item in jvm_property or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--jvm-property takes KEY=VALUE, not {item!r}")
        properties[key.removeprefix("-D")] = value
    s = session(store, fmt, tz, wide, record, csv=False)
    when = resolve_now(now, s.ctx.zone)
    with s.open_store(broker_config) as st:
        report = ops.retention_report(
            st,
            now_ms=when,
            zone=s.ctx.zone,
            disk_used=disk_used,
            rounds=runs,
            broker_version=broker_version,
            system_properties=properties,
            rate_window_ms=parse_duration(rate_window),
        )
    retention_render.render_retention(report.to_json(), s.ctx)


__all__ = ["retention"]
