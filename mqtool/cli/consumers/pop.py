"""`mqtool pop ...`: POP consumption offline — what each POP group holds in flight, what the revive service
has still to revive, what it revived. Thin wrappers over `mqtool.pop`."""

from __future__ import annotations

from typing import Annotated

import typer

from mqtool.cli.options import (
    BrokerConfigOpt,
    FormatOpt,
    RecordOpt,
    StoreOpt,
    TzOpt,
    WideOpt,
    new_app,
    session,
    skip_pandas_probe,
)
from mqtool.cli.scheduled.delay import NowOpt, resolve_now

pop_app = new_app("POP consumption: messages in flight per group, the revive backlog, what was revived.")


@pop_app.command("list")
def pop_list(
    group: Annotated[str | None, typer.Option("--group", "-g", help="Only this consumer group.")] = None,
    topic: Annotated[str | None, typer.Option("--topic", "-t", help="Only this topic.")] = None,
    state: Annotated[
        list[str] | None,
        typer.Option(
            "--state",
            help="in-flight, overdue, revived or acked (repeat for several). Default: all but acked.",
        ),
    ] = None,
    now: NowOpt = None,
    store: StoreOpt = None,
    fmt: FormatOpt = None,
    tz: TzOpt = None,
    wide: WideOpt = False,
    record: RecordOpt = False,
    broker_config: BrokerConfigOpt = None,
) -> None:
    """Every message a POP handed out that the revive topic (rmq_sys_REVIVE_LOG_<cluster>) knows of, paired
    as PopReviveService pairs checkpoints and acks: group, topic, queue and queue offset, popped at,
    invisible until, revive queue, state at --now (in-flight: unacked and still invisible; overdue: the
    revive service has not revived it yet; revived: copied into the POP retry topic, shown when found;
    acked), keys, tags, unique key. Checkpoints and acks still in the timer wheel count too. Orderly pops
    (consumerOrderInfo.json, no checkpoint, revive queue 999) are marked orderly: overdue there means
    visible again, and the next orderly pop hands the message out again."""
    from mqtool.cli.consumers import pop_render as show
    from mqtool.pop import pop_list as listing

    skip_pandas_probe()
    s = session(store, fmt, tz, wide, record)
    when = resolve_now(now, s.ctx.zone)
    with s.open_store(broker_config) as st:
        show.render_list(listing(st, now=when, group=group, topic=topic, states=state), s.ctx)


@pop_app.command("stats")
def pop_stats(
    now: NowOpt = None,
    store: StoreOpt = None,
    fmt: FormatOpt = None,
    tz: TzOpt = None,
    wide: WideOpt = False,
    record: RecordOpt = False,
    broker_config: BrokerConfigOpt = None,
) -> None:
    """Per POP group: messages popped, acked, in flight (and the oldest invisible-until), overdue (the
    revive backlog, with how late its oldest is) and revived; per revive queue: the revive group's offset
    against the queue, records not yet revived, records still in the timer wheel, overdue messages."""
    from mqtool.cli.consumers import pop_render as show
    from mqtool.pop import pop_stats as stats

    skip_pandas_probe()
    s = session(store, fmt, tz, wide, record, csv=False)
    when = resolve_now(now, s.ctx.zone)
    with s.open_store(broker_config) as st:
        show.render_stats(stats(st, now=when), s.ctx)
