"""`mqtool replicas ...`: two replicas of one broker (master and slave stores) compared."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from mqtool.cli.options import FormatOpt, RecordOpt, TzOpt, WideOpt, new_app, session

replicas_app = new_app("Replicas of one broker (master and slave stores): compare them.")


@replicas_app.command("diff")
def replicas_diff(
    store_a: Annotated[Path, typer.Argument(metavar="A", help="One replica's store.", show_default=False)],
    store_b: Annotated[
        Path, typer.Argument(metavar="B", help="The other replica's store.", show_default=False)
    ],
    broker_config: Annotated[
        list[Path] | None,
        typer.Option(
            "--broker-config",
            help="A's broker.conf, then B's (both, in order): their names, roles and file sizes.",
            show_default=False,
        ),
    ] = None,
    fmt: FormatOpt = None,
    tz: TzOpt = None,
    wide: WideOpt = False,
    record: RecordOpt = False,
) -> None:
    """Compare two replicas of one broker with both brokers down: who they are (broker.conf's names and
    roles, the store host of the newest record), the commitlogs (min and max offsets, the first physical
    offset where their bytes differ and the record on each side there, which side is ahead and by how
    many messages per topic past the common prefix), what the classic HA rule (DefaultHAService) does with
    the pair when started now, and every row of the config tables (topics, groups, consumer offsets,
    delay offsets, consume modes) that is on one side only or differs. Controller-mode pairs: the epoch
    rule is not evaluated yet (said, never reported identical). Exit status 0: identical; 1: they differ
    (or could not all be compared). Read-only."""
    from formats.errors import UsageError
    from mqtool.replicas.diff import diff_replicas
    from store.config.brokerconf import load_broker_config
    from store.storedir import Store

    confs = list(broker_config or [])
    if len(confs) not in (0, 2):
        raise UsageError("--broker-config: give A's and B's (twice, in that order), or none")
    s = session(None, fmt, tz, wide, record, csv=False)
    configs = [load_broker_config(c) for c in confs] or [None, None]
    with Store.open(store_a, configs[0]) as a, Store.open(store_b, configs[1]) as b:
        result = diff_replicas(a, b, (str(store_a), str(store_b)))
    from mqtool.cli.oncall import replicas_render

    replicas_render.render_diff(result, s.ctx)
    raise typer.Exit(result.exit_status)
