"""`mqtool replicas ...`: two replicas of one broker (master and slave stores) compared."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from mqtool.cli.options import DryRunOpt, FormatOpt, RecordOpt, TzOpt, WideOpt, execute_flag, new_app, session

replicas_app = new_app(
    "Replicas of one broker (master and slave stores): compare them, salvage what only one holds."
)


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
    delay offsets, consume modes) that is on one side only or differs, every consume queue whose served
    range differs or that one side lacks (a deleted topic's queues left on a slave), and each side's
    dispatch, index coverage and checkpoint side by side. Controller-mode pairs: the epoch
    rule (AutoSwitchHAClient's truncation to the newest epoch both epoch files share), when both have one,
    and what a master restarted at the epoch it holds would do instead.
    Exit status 0: identical; 1: they differ (or could not all be compared). Read-only."""
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


@replicas_app.command("salvage")
def replicas_salvage(
    source: Annotated[
        Path,
        typer.Option("--from", help="The replica that holds messages the other lacks.", show_default=False),
    ],
    into: Annotated[
        Path, typer.Option("--into", help="The replica to append them to (the master).", show_default=False)
    ],
    execute: Annotated[
        bool, typer.Option("--execute", help="Append the messages (default: dry run, print the plan).")
    ] = False,
    dry_run: DryRunOpt = False,
    broker_config: Annotated[
        list[Path] | None,
        typer.Option(
            "--broker-config",
            help="--into's broker.conf, then --from's (both, in order): names, roles and file sizes.",
            show_default=False,
        ),
    ] = None,
    fmt: FormatOpt = None,
    tz: TzOpt = None,
    wide: WideOpt = False,
    record: RecordOpt = False,
) -> None:
    """Append to --into the messages only --from holds: --from's messages past the prefix both commitlogs
    share (a dead master's tail, a slave's records past the point where the new master diverged), each
    appended as a producer re-sending it would be stored (new offsets and store time on --into, everything
    else kept) and dispatched to ConsumeQueues and index, unless --into already holds its UNIQ_KEY (a
    second run copies nothing). System topics, PREPARED/ROLLBACK and LMQ records are skipped, messages of
    queues --into lacks refused; every message is in the plan with its action and reason. Refused into a
    slave (broker.conf): a classic slave's log must stay a byte prefix of its master's. Dry run unless
    --execute; never while a broker holds --into's lock."""
    from formats.errors import UsageError
    from mqtool.replicas.salvage import salvage
    from store.config.brokerconf import load_broker_config
    from store.storedir import Store

    confs = list(broker_config or [])
    if len(confs) not in (0, 2):
        raise UsageError("--broker-config: give --into's and --from's (twice, in that order), or none")
    s = session(None, fmt, tz, wide, record)
    configs = [load_broker_config(c) for c in confs] or [None, None]
    with Store.open(into, configs[0]) as a, Store.open(source, configs[1]) as b:
        plan = salvage(a, b, execute=execute_flag(execute, dry_run))
    from mqtool.cli.oncall import replicas_render

    replicas_render.render_salvage(plan, s.ctx)
