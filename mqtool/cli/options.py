"""Options every command shares (--store, --format, --tz) and the session they resolve to.

Each command group lives in its own module of `mqtool/cli/` and imports these, so the options read the
same everywhere and are documented once. Global options given before the command act as defaults.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import click
import typer

from formats.errors import MqtoolError


class StoreLocation(click.ParamType):
    """A store (or output) directory: a Path, or a URL kept as it is (s3://, gs://, hdfs://, file://, ...)
    for the commands that read stores through store.remote."""

    name = "path"

    def convert(self, value, param, ctx):
        from store.io.remote import is_url

        return value if isinstance(value, Path) or is_url(value) else Path(value)


FORMAT_HELP = "Output: table (terminal default), plain (piped default), markdown, json, jsonl, csv."

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
BrokerConfigOpt = Annotated[
    Path | None,
    typer.Option(
        "--broker-config",
        help="The broker.conf the broker runs with (file sizes, index geometry, delay levels).",
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


def fail_on_level(fail_on: str | None, strict: bool = False) -> str:
    """--fail-on checked (a usage error otherwise); `strict` (verify --strict) means warning."""
    from mqtool.exitstatus import FAIL_ON

    if fail_on is not None and fail_on not in FAIL_ON:
        raise click.BadParameter(f"choose one of {', '.join(FAIL_ON)}", param_hint="--fail-on")
    if strict and fail_on not in (None, "warning"):
        raise click.BadParameter(f"--strict means --fail-on warning, not {fail_on}", param_hint="--fail-on")
    return fail_on or ("warning" if strict else "error")


@dataclass
class Globals:
    store: Path | str | None = None
    fmt: str | None = None
    tz: str | None = None


GLOBALS = Globals()


def new_app(help_text: str) -> typer.Typer:
    """A command group with the project's settings."""
    return typer.Typer(help=help_text, no_args_is_help=True, rich_markup_mode=None)


@dataclass
class Session:
    """What a command needs besides its own arguments."""

    store_path: Path | str | None  # a str only for a URL
    ctx: object  # mqtool.render.RenderContext (imported lazily to keep --help fast)

    def open_store(self, broker_config: Path | None = None, *, url_ok: bool = False):
        """The store; a URL only where the command reads stores through store.io.remote (`url_ok`)."""
        from store.config.brokerconf import load_broker_config
        from store.storedir import Store

        config = load_broker_config(broker_config) if broker_config else None
        if url_ok:
            return Store.open_location(self.store_path, config)
        return Store.open(self.store_path, config)


def session(store: Path | str | None, fmt: str | None, tz: str | None) -> Session:
    """Resolve the store, output format and zone from the command's options, else the global ones."""
    from mqtool.render import FORMATS, RenderContext, default_format
    from mqtool.timeparse import resolve_zone

    chosen = default_format(fmt or GLOBALS.fmt)
    if chosen not in FORMATS:
        raise MqtoolError(f"unknown --format {chosen!r}; choose one of {', '.join(FORMATS)}")
    ctx = RenderContext(fmt=chosen, zone=resolve_zone(tz or GLOBALS.tz))
    return Session(store or GLOBALS.store, ctx)
