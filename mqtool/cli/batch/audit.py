"""`mqtool audit`: audit whole stores on Spark (a thin wrapper over `mqtool.audit`)."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from mqtool.cli.options import (
    GLOBALS,
    BrokerConfigOpt,
    FailOnOpt,
    FormatOpt,
    RecordOpt,
    StoreLocation,
    StoreOpt,
    TieredOpt,
    TzOpt,
    WideOpt,
    fail_on_level,
    session,
)

StoresArg = Annotated[
    list[str] | None,  # Paths, or URL strings (StoreLocation)
    typer.Argument(
        metavar="[STORE]...",
        click_type=StoreLocation(),
        help="Store root directories or URLs (s3://, gs://, hdfs://, file://; several: a cluster's brokers, "
        "or a store's history; every row is tagged with its store). Default: --store, $MQTOOL_STORE, "
        "else ~/store.",
        show_default=False,
    ),
]


def parse_size(text: str) -> int:
    """`64MiB`, `128m`, `1g`, `4096` -> bytes."""
    from formats.errors import UsageError

    units = {"": 1, "b": 1, "k": 1 << 10, "kib": 1 << 10, "kb": 1 << 10, "m": 1 << 20, "mib": 1 << 20}
    units |= {"mb": 1 << 20, "g": 1 << 30, "gib": 1 << 30, "gb": 1 << 30}
    raw = text.strip().lower().replace(" ", "")
    number = raw.rstrip("abcdefghijklmnopqrstuvwxyz")
    unit = raw[len(number) :]
    try:
        value = float(number) * units[unit]
    except (ValueError, KeyError):
        raise UsageError(f"not a size: {text!r} (e.g. 64MiB, 512k, 1g)") from None
    if value < 1:
        raise UsageError(f"--split-size must be at least 1 byte, not {text!r}")
    return int(value)


class _Bar:
    """A rich progress bar on stderr while Spark starts, scans and aggregates (nothing when piped)."""

    def __init__(self) -> None:
        self.progress = None
        self.tasks: dict[str, int] = {}
        if sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn

            self.progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                TaskProgressColumn(),
                TimeElapsedColumn(),
                console=Console(file=sys.stderr),
                transient=True,
            )

    def __enter__(self) -> _Bar:
        if self.progress is not None:
            self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.progress is not None:
            self.progress.stop()

    def __call__(self, phase: str, done: int, total: int) -> None:
        if self.progress is None:
            return
        labels = {
            "session": "starting Spark",
            "scan": f"scanning {total} ranges",
            "aggregate": "aggregating (Spark SQL)",
        }
        if phase not in self.tasks:
            for task in self.tasks.values():
                self.progress.update(task, completed=self.progress.tasks[task].total or 1)
            total_value = total if phase != "session" else None
            self.tasks[phase] = self.progress.add_task(labels.get(phase, phase), total=total_value)
        self.progress.update(self.tasks[phase], completed=done, total=total if phase != "session" else None)


def audit(
    stores: StoresArg = None,
    master: Annotated[
        str,
        typer.Option(
            "--master",
            help="Spark master URL: local[*] (embedded, needs only Java 17+), local[N], spark://host:7077, "
            "yarn, k8s://... Under spark-submit the running session is used.",
        ),
    ] = "local[*]",
    output: Annotated[
        str | None,  # a Path, or a URL string (StoreLocation)
        typer.Option(
            "--output",
            "-o",
            click_type=StoreLocation(),
            help="Write Parquet tables (messages metadata without bodies, queues, problems, lag, ...), "
            "audit.json and a self-contained report.html here (a new or empty directory, or an earlier "
            "audit's), or a URL (s3://...). On a cluster it must be on a file system every executor sees.",
            show_default=False,
        ),
    ] = None,
    split_size: Annotated[
        str | None,
        typer.Option(
            "--split-size",
            metavar="SIZE",
            help="Bytes per task (e.g. 64MiB). Default: several tasks per core, 4-128 MiB.",
            show_default=False,
        ),
    ] = None,
    no_crc: Annotated[
        bool, typer.Option("--no-crc", help="Skip the body CRC check (faster; the broker checks it).")
    ] = False,
    no_checks: Annotated[
        bool,
        typer.Option(
            "--no-checks", help="Skip the verify checks of ConsumeQueues, index and checkpoint (counts only)."
        ),
    ] = False,
    deep: Annotated[
        bool,
        typer.Option(
            "--deep", help="Also check that every message key and UNIQ_KEY is reachable through the index."
        ),
    ] = False,
    top: Annotated[int, typer.Option("--top", help="Duplicate keys to name per store and kind.")] = 20,
    replicas: Annotated[
        list[str] | None,
        typer.Option(
            "--replicas",
            metavar="A,B[,...]",
            help="Stores that are replicas of one broker (comma-separated; repeat for more groups; added to "
            "the audited stores): the first is compared with each other as `replicas diff` does, one row per "
            "pair (Replicas table, replicas.parquet) and a problem where they differ.",
            show_default=False,
        ),
    ] = None,
    fail_on: FailOnOpt = None,
    store: StoreOpt = None,
    fmt: FormatOpt = None,
    tz: TzOpt = None,
    wide: WideOpt = False,
    record: RecordOpt = False,
    broker_config: BrokerConfigOpt = None,
    tiered: TieredOpt = None,
) -> None:
    """Audit whole stores on Spark: per topic/queue counts, bytes, first/last store time, message rate over
    time, body sizes; integrity (the verify checks: CRC, size chain, truncation point, ConsumeQueue
    agreement, index entries, checkpoint); duplicates by UNIQ_KEY and by key; retry/DLQ volume per group;
    delay backlog per level; the 5.x timer wheel's backlog and POP groups; transaction states; consumer lag
    per group/topic/queue with the store time of the first unconsumed message; disk used per topic. The
    commitlog is split into byte ranges decoded in parallel by Spark tasks; the figures do not depend on the
    split. A store that cannot be opened (missing, not a store) or cannot be read while scanned is reported
    (problem kind 'store', failedStores) while the others are audited; the exit status is then 3. Otherwise
    it says whether any problem reached the --fail-on severity (default: error), like verify's. Stores and
    --output may be URLs (s3://, gs://, hdfs://, file://; credentials from the filesystem's standard
    environment and config). With --tiered (one store) or broker.conf's tieredStoreFilePath, every tiered
    COMMIT_LOG segment is scanned too, a Spark task each (Tiered table: per queue the ranges the broker
    answers, the messages the tiered store holds and serves), and the tree is checked as verify --tiered
    checks it."""
    from mqtool.audit.plan import AuditOptions
    from mqtool.audit.run import run_audit
    from mqtool.cli.batch.audit_render import render_audit
    from mqtool.exitstatus import check_status

    threshold = fail_on_level(fail_on)
    s = session(store, fmt, tz, wide, record, csv=False)
    groups = [[m for m in g.split(",") if m] for g in replicas or []]
    chosen = list(stores) if stores else [] if groups else [s.store_path]
    if chosen == [None]:
        from store.storedir import resolve_store_root

        chosen = [resolve_store_root(None)]
    given = {str(c) for c in chosen}
    for member in (m for g in groups for m in g):
        if member not in given:
            chosen.append(member)
            given.add(member)
    opts = AuditOptions(
        stores=chosen,
        master=master,
        split_size=parse_size(split_size) if split_size else None,
        check_crc=not no_crc,
        output=output,
        top=top,
        broker_config=broker_config,
        checks=not no_checks,
        deep=deep,
        replicas=groups,
        tiered=tiered or GLOBALS.tiered,
    )
    with _Bar() as bar:
        result = run_audit(opts, progress=bar)
    render_audit(result, s.ctx)
    failed = result.document["failedStores"]
    for failure in failed:
        sys.stderr.write(f"mqtool: error: store not audited: {failure['error']}\n")
    counts: dict[str, int] = {}
    for problem in result.document["problems"]:
        counts[problem.get("severity") or "error"] = counts.get(problem.get("severity") or "error", 0) + 1
    status = check_status(counts, threshold, unreadable=bool(failed))
    if status:
        raise typer.Exit(status)
