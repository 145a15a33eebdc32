"""`mqtool txn ...`: the transaction queue — half messages and their state, and ending them offline exactly
as the broker's EndTransactionProcessor does. Thin wrappers over `mqtool.transactions`."""

from __future__ import annotations

from typing import Annotated

import typer

from mqtool.cli.options import (
    BrokerConfigOpt,
    DryRunOpt,
    FormatOpt,
    RecordOpt,
    Session,
    StoreOpt,
    TzOpt,
    WideOpt,
    execute_flag,
    new_app,
    session,
)
from mqtool.cli.scheduled.delay import BrokerVersionOpt, NowOpt, resolve_now

txn_app = new_app("Transaction messages: list half messages by state; commit, roll back or resolve them.")

HalvesArg = Annotated[
    list[int], typer.Argument(metavar="HALF...", help="Half queue offsets (RMQ_SYS_TRANS_HALF_TOPIC).")
]
QueueOpt = Annotated[int, typer.Option("--queue", "-q", help="Half queue id.")]
ExecuteOpt = Annotated[
    bool, typer.Option("--execute", help="Write the commit copies and op messages (default: dry run).")
]


@txn_app.command("list")
def txn_list(
    state: Annotated[
        str,
        typer.Option("--state", help="pending, committed, rolled-back, discarded or all."),
    ] = "all",
    now: NowOpt = None,
    broker_version: BrokerVersionOpt = None,
    store: StoreOpt = None,
    fmt: FormatOpt = None,
    tz: TzOpt = None,
    wide: WideOpt = False,
    record: RecordOpt = False,
    broker_config: BrokerConfigOpt = None,
) -> None:
    """Half messages of RMQ_SYS_TRANS_HALF_TOPIC paired with the op messages of RMQ_SYS_TRANS_OP_HALF_TOPIC
    (4.9.x and 5.x op bodies): done when an op names the half, committed when a commit copy in the real
    topic points back at it, rolled back otherwise; discarded when the check service gave up on it
    (TRANS_CHECK_MAX_TIME_TOPIC). Shows producer group, transaction id, real topic/queue, keys, age, check
    times against transactionCheckMax and the check immunity."""
    from mqtool.cli.scheduled import txn_render as show
    from mqtool.transactions.listing import filter_state, list_transactions

    s = session(store, fmt, tz, wide, record)
    when = resolve_now(now, s.ctx.zone)
    with s.open_store(broker_config) as st:
        report = list_transactions(st, now=when, broker_version=broker_version)
        show.render_list(report, filter_state(report, state), s.ctx)


def _end(
    s: Session,
    action: str,
    halves: list[int] | None,
    queue: int,
    execute: bool,
    now: str | None,
    broker_version: int | None,
    broker_config,
    *,
    older_than: str | None = None,
    producer_group: str | None = None,
) -> None:
    from mqtool.cli.scheduled import txn_render as show
    from mqtool.timeparse import parse_duration
    from mqtool.transactions.end_transaction import execute_end, plan_end, select_for_resolve, select_halves
    from mqtool.transactions.listing import list_transactions

    when = resolve_now(now, s.ctx.zone)
    older_ms = None if older_than is None else parse_duration(older_than)

    def make_plan(st):
        report = list_transactions(st, now=when, broker_version=broker_version)
        if halves is None:
            chosen = select_for_resolve(report, older_than_ms=older_ms, producer_group=producer_group)
        else:
            chosen = select_halves(report, halves, queue)
        return plan_end(st, report, chosen, action)

    with s.open_store(broker_config) as st:
        plan = make_plan(st)
        result = execute_end(st, plan, execute, replan=make_plan)
        show.render_plan(plan, result, s.ctx, execute)


@txn_app.command("commit")
def txn_commit(
    halves: HalvesArg,
    queue: QueueOpt = 0,
    execute: ExecuteOpt = False,
    dry_run: DryRunOpt = False,
    now: NowOpt = None,
    broker_version: BrokerVersionOpt = None,
    store: StoreOpt = None,
    fmt: FormatOpt = None,
    tz: TzOpt = None,
    wide: WideOpt = False,
    record: RecordOpt = False,
    broker_config: BrokerConfigOpt = None,
) -> None:
    """Commit half messages as EndTransactionProcessor does: a commit copy in the real topic/queue (SYSFLAG
    type COMMIT, preparedTransactionOffset = the half's offset, the half's properties) and an op message
    marking the half done. Dry run unless --execute; idempotent."""
    s = session(store, fmt, tz, wide, record, csv=False)
    _end(s, "commit", halves, queue, execute_flag(execute, dry_run), now, broker_version, broker_config)


@txn_app.command("rollback")
def txn_rollback(
    halves: HalvesArg,
    queue: QueueOpt = 0,
    execute: ExecuteOpt = False,
    dry_run: DryRunOpt = False,
    now: NowOpt = None,
    broker_version: BrokerVersionOpt = None,
    store: StoreOpt = None,
    fmt: FormatOpt = None,
    tz: TzOpt = None,
    wide: WideOpt = False,
    record: RecordOpt = False,
    broker_config: BrokerConfigOpt = None,
) -> None:
    """Roll back half messages as EndTransactionProcessor does: only an op message marking each half done.
    Dry run unless --execute; idempotent."""
    s = session(store, fmt, tz, wide, record, csv=False)
    _end(s, "rollback", halves, queue, execute_flag(execute, dry_run), now, broker_version, broker_config)


@txn_app.command("resolve")
def txn_resolve(
    policy: Annotated[str, typer.Option("--policy", metavar="commit|rollback", help="What to do with them.")],
    older_than: Annotated[
        str | None,
        typer.Option(
            "--older-than", metavar="DURATION", help="Only transactions born at least this long ago."
        ),
    ] = None,
    producer_group: Annotated[
        str | None, typer.Option("--producer-group", help="Only transactions of this producer group.")
    ] = None,
    execute: ExecuteOpt = False,
    dry_run: DryRunOpt = False,
    now: NowOpt = None,
    broker_version: BrokerVersionOpt = None,
    store: StoreOpt = None,
    fmt: FormatOpt = None,
    tz: TzOpt = None,
    wide: WideOpt = False,
    record: RecordOpt = False,
    broker_config: BrokerConfigOpt = None,
) -> None:
    """Commit or roll back every pending transaction (optionally only those older than --older-than, or of
    one producer group), as `txn commit` / `txn rollback` do. Dry run unless --execute; idempotent."""
    from formats.errors import UsageError

    if policy not in ("commit", "rollback"):
        raise UsageError(f"--policy must be commit or rollback, not {policy!r}")
    s = session(store, fmt, tz, wide, record, csv=False)
    _end(
        s,
        policy,
        None,
        0,
        execute_flag(execute, dry_run),
        now,
        broker_version,
        broker_config,
        older_than=older_than,
        producer_group=producer_group,
    )
