"""Options every command shares (--store, --format, --tz) and the session they resolve to.

Each command group lives in its own module of `mqtool/cli/` and imports these, so the options read the
same everywhere and are documented once. Global options given before the command act as defaults.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer

from formats.errors import MqtoolError

FORMAT_HELP = "Output: table (terminal default), plain (piped default), markdown, json, jsonl, csv."

StoreOpt = Annotated[
    Path | None,
    typer.Option(
        "--store",
        "-s",
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


@dataclass
class Globals:
    store: Path | None = None
    fmt: str | None = None
    tz: str | None = None


GLOBALS = Globals()


def new_app(help_text: str) -> typer.Typer:
    """A command group with the project's settings."""
    return typer.Typer(help=help_text, no_args_is_help=True, rich_markup_mode=None)


@dataclass
class Session:
    """What a command needs besides its own arguments."""

    store_path: Path | None
    ctx: object  # mqtool.render.RenderContext (imported lazily to keep --help fast)

    def open_store(self, broker_config: Path | None = None):
        from store.brokerconf import load_broker_config
        from store.storedir import Store

        return Store.open(self.store_path, load_broker_config(broker_config) if broker_config else None)


def session(store: Path | None, fmt: str | None, tz: str | None) -> Session:
    """Resolve the store, output format and zone from the command's options, else the global ones."""
    from mqtool.render import FORMATS, RenderContext, default_format
    from mqtool.timeparse import resolve_zone

    chosen = default_format(fmt or GLOBALS.fmt)
    if chosen not in FORMATS:
        raise MqtoolError(f"unknown --format {chosen!r}; choose one of {', '.join(FORMATS)}")
    ctx = RenderContext(fmt=chosen, zone=resolve_zone(tz or GLOBALS.tz))
    return Session(store or GLOBALS.store, ctx)
