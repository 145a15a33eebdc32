"""`mqtool dlq ...`: dead-letter queues (`%DLQ%<group>`) - what died, where it came from, how old it is.
Thin wrappers over `mqtool.dlq`."""

from __future__ import annotations

import sys
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

dlq_app = new_app("Dead-letter queues: the messages of %DLQ%<group> topics, their origin and age.")

GroupOpt = Annotated[
    str | None, typer.Option("--group", "-g", help="Only this consumer group's DLQ (%DLQ%<group>).")
]
BeginOpt = Annotated[
    str | None,
    typer.Option(
        "--begin",
        "-b",
        metavar="TIME",
        help="Only messages that died (were stored in the DLQ) at or after this time (epoch ms, ISO-8601, "
        "yyyy-MM-dd#HH:mm:ss:SSS, -2h).",
        show_default=False,
    ),
]
EndOpt = Annotated[
    str | None,
    typer.Option(
        "--end",
        "-e",
        metavar="TIME",
        help="Only messages that died at or before this time.",
        show_default=False,
    ),
]


def _listing(st, group, begin, end, zone):
    from mqtool.dlq.listing import list_dlq
    from mqtool.timeparse import parse_time

    return list_dlq(
        st,
        group=group,
        begin=None if begin is None else parse_time(begin, zone),
        end=None if end is None else parse_time(end, zone),
    )


@dlq_app.command("list")
def dlq_list(
    group: GroupOpt = None,
    begin: BeginOpt = None,
    end: EndOpt = None,
    store: StoreOpt = None,
    fmt: FormatOpt = None,
    tz: TzOpt = None,
    wide: WideOpt = False,
    record: RecordOpt = False,
    broker_config: BrokerConfigOpt = None,
) -> None:
    """Every message of the %DLQ%<group> topics: group, when it died (its store time in the DLQ), reconsume
    times, the original topic (RETRY_TOPIC), ORIGIN_MESSAGE_ID and, where that names this store, the
    original's queue and store time; the retry queue it was last consumed from (REAL_TOPIC/REAL_QID), keys,
    tags, unique key. Read-only."""
    skip_pandas_probe()
    s = session(store, fmt, tz, wide, record)
    with s.open_store(broker_config) as st:
        listing = _listing(st, group, begin, end, s.ctx.zone)
        from mqtool.cli.consumers import dlq_render

        dlq_render.render_list(listing, s.ctx)
    for text in listing.warnings:
        sys.stderr.write(f"mqtool: warning: {text}\n")


@dlq_app.command("stats")
def dlq_stats(
    group: GroupOpt = None,
    begin: BeginOpt = None,
    end: EndOpt = None,
    now: Annotated[
        str | None,
        typer.Option(
            "--now",
            metavar="TIME",
            help="The time ages are judged against. Default: now.",
            show_default=False,
        ),
    ] = None,
    store: StoreOpt = None,
    fmt: FormatOpt = None,
    tz: TzOpt = None,
    wide: WideOpt = False,
    record: RecordOpt = False,
    broker_config: BrokerConfigOpt = None,
) -> None:
    """Dead letters per group and original topic: how many, the oldest and newest death, the highest
    reconsume times, and how many died <1h, 1h-1d, 1d-7d, >=7d before --now. Read-only."""
    from mqtool.dlq.listing import dlq_stats as stats
    from mqtool.timeparse import now_ms, parse_time

    skip_pandas_probe()
    s = session(store, fmt, tz, wide, record)
    when = now_ms() if now is None else parse_time(now, s.ctx.zone)
    with s.open_store(broker_config) as st:
        listing = _listing(st, group, begin, end, s.ctx.zone)
        from mqtool.cli.consumers import dlq_render

        dlq_render.render_stats(stats(listing, when), listing, when, s.ctx)
    for text in listing.warnings:
        sys.stderr.write(f"mqtool: warning: {text}\n")
