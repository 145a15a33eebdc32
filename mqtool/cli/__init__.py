"""The `mqtool` command line: the top-level app, global options, and the one-line error handler.

Every command is a thin wrapper over a library function (see docs/ARCHITECTURE.md); command groups live
in the modules of this package (`mqtool/cli/*.py`). Heavy imports happen inside commands so
`mqtool --help` stays fast.
"""

from __future__ import annotations

import os
import sys
from typing import Annotated

# Before numpy is loaded (commands import it when they run): numpy asks for 2 MiB pages for each array of
# 4 MiB or more, and the kernel zeroes a whole huge page at its first touch. The scans size their output
# arrays for the most records a range could hold and fill a tenth, and make many short-lived temporaries:
# verify --jobs 2 spent a third of its system time zeroing memory nothing read (1.4 GB store: sys 0.84 ->
# 0.56 s). Plain pages are zeroed as they are touched. A user's own setting is kept.
os.environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")

import click
import typer
from typer.core import TyperGroup

from formats.errors import MqtoolError, UsageError
from mqtool import exitstatus
from mqtool.cli.batch.audit import audit
from mqtool.cli.configure.topic import group_app, topic_app
from mqtool.cli.consumers.consume_mode import consume_mode_app
from mqtool.cli.consumers.dlq import dlq_app
from mqtool.cli.consumers.offsets import offsets_app
from mqtool.cli.consumers.pop import pop_app
from mqtool.cli.examine.dump import dump_app, info
from mqtool.cli.examine.verify import export, verify
from mqtool.cli.find.query import query_app
from mqtool.cli.find.trace import dump_trace, trace
from mqtool.cli.manual.examples import add_examples
from mqtool.cli.manual.manual_sections import help_summary
from mqtool.cli.oncall.bundle import bundle
from mqtool.cli.oncall.replicas import replicas_app
from mqtool.cli.oncall.retention import retention
from mqtool.cli.options import (
    GLOBALS,
    BrokerConfigOpt,
    FormatOpt,
    RecordOpt,
    StoreOpt,
    TieredOpt,
    TzOpt,
    WideOpt,
)
from mqtool.cli.repair.write import rebuild, sample_app
from mqtool.cli.scheduled.delay import delay_app
from mqtool.cli.scheduled.txn import txn_app
from mqtool.cli.tiered.metadata import tiered_app

HELP = (
    "Admin and storage-inspection toolkit for Apache RocketMQ broker stores (4.9.x and 5.x), "
    "working on the store files with the broker down."
)


class PipeClosed(Exception):
    """stdout's reader closed the pipe. Not an OSError, so that click, which ends every command that
    meets EPIPE with status 1, lets it through to `main`."""


class _Group(TyperGroup):
    def invoke(self, ctx: click.Context):
        try:
            result = super().invoke(ctx)
            sys.stdout.flush()  # what is still buffered meets a closed pipe here, not at interpreter exit
            return result
        except BrokenPipeError as exc:
            raise PipeClosed() from exc


app = typer.Typer(
    cls=_Group,
    name="mqtool",
    help=HELP,
    no_args_is_help=True,
    add_completion=True,  # --install/--show-completion: no start-up cost, typer.completion is loaded anyway
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    suggest_commands=False,  # click names a mistyped command itself; typer's suggestion would repeat it
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
app.command()(info)
app.add_typer(dump_app, name="dump")
app.add_typer(query_app, name="query")
app.add_typer(offsets_app, name="offsets")
app.add_typer(consume_mode_app, name="consume-mode")
app.add_typer(topic_app, name="topic")
app.add_typer(group_app, name="group")
app.command()(rebuild)
app.add_typer(sample_app, name="sample")
app.add_typer(delay_app, name="delay")
app.add_typer(txn_app, name="txn")
app.add_typer(pop_app, name="pop")
app.add_typer(replicas_app, name="replicas")
app.command(epilog=exitstatus.exit_status_help())(verify)
app.command()(export)
app.command(epilog=exitstatus.exit_status_help())(audit)
app.command()(trace)
app.add_typer(dlq_app, name="dlq")
app.add_typer(tiered_app, name="tiered")
dump_app.command("trace")(dump_trace)
app.command()(retention)
app.command()(bundle)
add_examples(app)
app.info.epilog += "\n\n" + help_summary()


def _print_version(value: bool) -> None:
    # eager: runs before click asks for a command, so `mqtool --version` alone works
    if value:
        from mqtool import __version__

        print(f"mqtool {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    store: StoreOpt = None,
    fmt: FormatOpt = None,
    tz: TzOpt = None,
    wide: WideOpt = False,
    record: RecordOpt = False,
    broker_config: BrokerConfigOpt = None,
    tiered: TieredOpt = None,
    version: Annotated[
        bool,
        typer.Option("--version", help="Print the version and exit.", is_eager=True, callback=_print_version),
    ] = False,
) -> None:
    GLOBALS.store, GLOBALS.fmt, GLOBALS.tz, GLOBALS.broker_config = store, fmt, tz, broker_config
    GLOBALS.wide, GLOBALS.record, GLOBALS.tiered = wide, record, tiered


def main() -> None:
    """Console entry point: one clear line and a non-zero exit for every error, never a traceback."""
    # A name from a damaged file can hold a lone surrogate (a JSON "\ud800" escape), which UTF-8 cannot
    # encode: write it as that escape (valid inside JSON strings) instead of failing mid-output.
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure is not None:
        reconfigure(errors="backslashreplace")
    try:
        app()
    except UsageError as exc:
        _fail(str(exc), exitstatus.USAGE)
    except MqtoolError as exc:  # an error class may carry its own status (mqtool.exitstatus)
        _fail(str(exc), getattr(exc, "exit_status", exitstatus.FOUND))
    except (BrokenPipeError, PipeClosed):
        # the reader downstream has all it wanted (`| head`): not an error; stdout goes to /dev/null so
        # the interpreter's last flush has nowhere to fail
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(0)
    except KeyboardInterrupt:
        _fail("interrupted", exitstatus.INTERRUPTED)
    except MemoryError:
        _fail("out of memory", 1)
    except OSError as exc:  # a file the lower layers did not wrap (permission, loop, I/O): still one line
        if os.environ.get("MQTOOL_DEBUG"):
            raise
        where = f"{exc.filename}: " if exc.filename else ""
        _fail(f"{where}{exc.strerror or exc}", 1)
    except Exception as exc:  # the last line of defence: one line, not a traceback
        if os.environ.get("MQTOOL_DEBUG"):
            raise
        _fail(
            f"internal error: {type(exc).__name__}: {exc} (set MQTOOL_DEBUG=1 for a traceback)",
            exitstatus.INTERNAL,
        )


def _fail(message: str, code: int) -> None:
    # one line, whatever a corrupt file put into the names the message quotes
    message = message.replace("\r", "\\r").replace("\n", "\\n")
    sys.stderr.write(f"mqtool: error: {message}\n")
    sys.exit(code)
