"""Options every command shares (--store, --format, --tz, --wide, -x) and the session they resolve to,
and the dry-run pair (--execute, --dry-run) of the commands that write.

Each command group lives in its own module of `mqtool/cli/` and imports these, so the options read the
same everywhere and are documented once. Global options given before the command act as defaults.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import click
import typer

from formats.errors import UsageError


class StoreLocation(click.ParamType):
    """A store (or output) directory: a Path, or a URL kept as it is (s3://, gs://, hdfs://, file://, ...)
    for the commands that read stores through store.remote."""

    name = "path"

    def convert(self, value, param, ctx):
        from store.io.remote import is_url

        return value if isinstance(value, Path) or is_url(value) else Path(value)


FORMAT_HELP = (
    "Output: table (terminal default: fitted to its width), plain (piped default), markdown, record (one "
    "field per line), json, jsonl, csv."
)

StoreOpt = Annotated[
    str | None,  # a Path, or a URL string (StoreLocation)
    typer.Option(
        "--store",
        "-s",
        click_type=StoreLocation(),
        help="Store root directory (storePathRootDir). Default: $MQTOOL_STORE, else ~/store.",
        show_default=False,
    ),
]
FormatOpt = Annotated[str | None, typer.Option("--format", "-f", help=FORMAT_HELP, show_default=False)]
TzOpt = Annotated[
    str | None,
    typer.Option("--tz", help="Time zone for reading and showing times (IANA name or UTC). Default: local."),
]
WideOpt = Annotated[
    bool,
    typer.Option(
        "--wide", help="Tables: every column at full width, even past the terminal's edge (no column hidden)."
    ),
]
RecordOpt = Annotated[
    bool,
    typer.Option("-x", help="Same as --format record: one field per line, a block per row (psql's \\x)."),
]
BrokerConfigOpt = Annotated[
    Path | None,
    typer.Option(
        "--broker-config",
        help="The broker.conf the broker runs with (file sizes, index geometry, delay levels).",
        show_default=False,
    ),
]
TieredOpt = Annotated[
    Path | None,
    typer.Option(
        "--tiered",
        help="The broker's tiered store tree (tieredStoreFilePath, POSIX provider): its segments are read "
        "below the local minimum, as the broker's fetcher does. Default: broker.conf's tieredStoreFilePath.",
        show_default=False,
    ),
]

JobsOpt = Annotated[
    int | None,
    typer.Option(
        "--jobs",
        "-j",
        help="Worker processes that decode the commitlog, in byte ranges. Default: the cores.",
        show_default=False,
    ),
]

ForceOpt = Annotated[
    bool,
    typer.Option(
        "--force",
        help="Let the output option replace an existing file that mqtool did not write (a store's "
        "files never).",
    ),
]

FailOnOpt = Annotated[
    str | None,
    typer.Option(
        "--fail-on",
        metavar="error|warning|never",
        help="The least severe problem that makes the exit status 1: error (default), warning, or never.",
        show_default=False,
    ),
]


def jobs_count(jobs: int | None) -> int:
    """--jobs as a worker count (None: the cores)."""
    from store.log.ranges import default_jobs

    if jobs is None:
        return default_jobs()
    if jobs < 1:
        raise UsageError(f"--jobs must be 1 or more, not {jobs}")
    return jobs


def fail_on_level(fail_on: str | None, strict: bool = False) -> str:
    """--fail-on checked (a usage error otherwise); `strict` (verify --strict) means warning."""
    from mqtool.exitstatus import FAIL_ON

    if fail_on is not None and fail_on not in FAIL_ON:
        raise click.BadParameter(f"choose one of {', '.join(FAIL_ON)}", param_hint="--fail-on")
    if strict and fail_on not in (None, "warning"):
        raise click.BadParameter(f"--strict means --fail-on warning, not {fail_on}", param_hint="--fail-on")
    return fail_on or ("warning" if strict else "error")


ExecuteOpt = Annotated[bool, typer.Option("--execute", help="Write (default: dry run, print the plan).")]
DryRunOpt = Annotated[
    bool,
    typer.Option("--dry-run", help="Print the plan and write nothing (the default; excludes --execute)."),
]


def execute_flag(execute: bool, dry_run: bool) -> bool:
    """Whether to write: --execute, refused together with --dry-run (kafka-consumer-groups' spelling of the
    default)."""
    if execute and dry_run:
        raise UsageError("--execute and --dry-run exclude each other")
    return execute


@dataclass
class Globals:
    store: Path | str | None = None
    fmt: str | None = None
    tz: str | None = None
    wide: bool = False
    record: bool = False
    broker_config: Path | None = None
    tiered: Path | None = None


GLOBALS = Globals()


def new_app(help_text: str) -> typer.Typer:
    """A command group with the project's settings."""
    # click names a mistyped command itself ("Did you mean ...?"); typer's own suggestion would repeat it
    return typer.Typer(help=help_text, no_args_is_help=True, rich_markup_mode=None, suggest_commands=False)


@dataclass
class Session:
    """What a command needs besides its own arguments."""

    store_path: Path | str | None  # a str only for a URL
    ctx: object  # mqtool.render.RenderContext (imported lazily to keep --help fast)

    def open_store(
        self,
        broker_config: Path | None = None,
        *,
        url_ok: bool = False,
        tiered: Path | None = None,
        reads_tiered: bool = False,
    ):
        """The store; a URL only where the command reads stores through store.io.remote (`url_ok`).
        `reads_tiered`: the command reads a tiered store's segments when its tree is named (--tiered,
        broker.conf), so the tiered warning is printed only when it is not."""
        from store.config.brokerconf import load_broker_config
        from store.kind import TIERED_PART
        from store.storedir import Store

        broker_config = broker_config or GLOBALS.broker_config
        config = load_broker_config(broker_config) if broker_config else None
        if url_ok:
            store = Store.open_location(self.store_path, config)
        else:
            store = Store.open(self.store_path, config)
        store.tiered_path = tiered or GLOBALS.tiered
        for part in store.layout.kind.unsupported_reads():
            readable = _tiered_tree_readable(store) if part.name == TIERED_PART and reads_tiered else False
            if readable is not False:
                if readable is None:
                    sys.stderr.write(
                        f"mqtool: warning: this store has a {part.name} ({part.evidence}) and no tiered tree "
                        "is named: only the local store is read (name the tree with --tiered PATH or "
                        "broker.conf's tieredStoreFilePath)\n"
                    )
                continue
            sys.stderr.write(
                f"mqtool: warning: this store has a {part.name} ({part.evidence}), which mqtool does not "
                f"read exactly: {part.note}\n"
            )
        return store


def _tiered_tree_readable(store) -> bool | None:
    """True: a tiered tree is named and opens; None: none is named; False: one is named and does not open
    (the command says why, as before)."""
    from formats.errors import MqtoolError

    try:
        return None if store.tiered is None else True
    except MqtoolError:
        return False


def session(
    store: Path | str | None,
    fmt: str | None,
    tz: str | None,
    wide: bool = False,
    record: bool = False,
    *,
    csv: bool = True,
) -> Session:
    """Resolve the store, output format, zone and table width from the command's options, else the global
    ones. `csv=False`: the command's output is not one table, and --format csv is refused before any work."""
    from mqtool.render.output import FORMATS, RenderContext, default_format, terminal_width
    from mqtool.timeparse import resolve_zone

    chosen = default_format(_format(fmt, record) or _format(GLOBALS.fmt, GLOBALS.record))
    if chosen not in FORMATS:
        raise UsageError(f"unknown --format {chosen!r}; choose one of {', '.join(FORMATS)}")
    if chosen == "csv" and not csv:
        raise UsageError(
            f"--format csv: {_command_name()} prints several tables, not one; use --format json or jsonl"
        )
    width = None if (wide or GLOBALS.wide) or chosen != "table" else terminal_width()
    ctx = RenderContext(fmt=chosen, zone=resolve_zone(tz or GLOBALS.tz), width=width)
    return Session(store or GLOBALS.store, ctx)


def skip_pandas_probe() -> None:
    """pyarrow looks for pandas on its first `pa.array` call (importing pandas costs ~0.4 s); the commands
    that use pyarrow (all but the audit) never hand pandas objects to it, so that one probe is made to
    fail fast. A later `to_pandas()` still imports pandas normally."""
    import contextlib
    import sys
    import types

    if "pandas" in sys.modules:
        return

    class _Absent(types.ModuleType):
        def __getattr__(self, name: str):
            raise ImportError("pandas is not used here")

    import pyarrow as pa

    sys.modules["pandas"] = _Absent("pandas")
    try:
        for _ in range(2):  # the Cython shim's probe, then the C++ converter's
            with contextlib.suppress(ImportError):
                pa.array([0])
    finally:
        del sys.modules["pandas"]


def _command_name() -> str:
    """`mqtool dump checkpoint` for the command running (however the program was started)."""
    names = []
    ctx = click.get_current_context(silent=True)
    while ctx is not None and ctx.parent is not None:
        names.append(ctx.info_name or "")
        ctx = ctx.parent
    return "`" + " ".join(["mqtool", *reversed(names)]) + "`" if names else "this command"


def _format(fmt: str | None, record: bool) -> str | None:
    """--format, or -x (the same as --format record)."""
    if record and fmt not in (None, "record"):
        raise UsageError(f"-x (--format record) and --format {fmt} exclude each other")
    return "record" if record else fmt
