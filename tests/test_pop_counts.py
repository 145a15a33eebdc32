"""What POP groups hold is counted once (`PopColumns.queue_counts`) and said alike by `pop stats`, `pop list`
and `offsets show`, orderly groups included - against store-pop, where the real 5.3.3 POP processors,
PopReviveService and ConsumerOrderInfoManager ran (expect.json: the order info as the real
ConsumerOrderInfoManager.decode read it, the pops and acks as sent)."""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest
from golden import expect, store_path
from golden import run_mqtool as mqtool

from mqtool.offsets.progress import consumer_progress
from mqtool.pop import pop_list, pop_stats
from store.pop.columns import pop_columns
from store.storedir import Store

NAME = "store-pop"
ROOT = store_path(NAME)
ORDER = expect(NAME)["configFiles"]["consumerOrderInfo"]["table"]["OrderTopic@GID_ORDER/0"]
VISIBLE_AT = ORDER["popTime"] + ORDER["invisibleTime"]
STATES = ["acked", "in-flight", "overdue", "revived"]
# before the 1 h pops turn visible again, and after
NOWS = [VISIBLE_AT - 1, VISIBLE_AT, VISIBLE_AT + 86_400_000]


def _real_orderly(now: int) -> tuple[int, int, int, int]:
    """popped, acked, in flight, overdue of GID_ORDER from the real manager's order info: bit i of
    commitOffsetBit acks offsetList[i]; the unacked are invisible until popTime + invisibleTime
    (offsetNextVisibleTime is null)."""
    assert ORDER["offsetNextVisibleTime"] is None
    popped = len(ORDER["offsetList"])
    acked = sum(1 for i in range(popped) if ORDER["commitOffsetBit"] >> i & 1)
    unacked = popped - acked
    return popped, acked, unacked if now < VISIBLE_AT else 0, 0 if now < VISIBLE_AT else unacked


@pytest.mark.parametrize("now", NOWS)
def test_pop_stats_has_a_row_for_every_group_pop_list_shows_orderly_ones_too(now: int) -> None:
    with Store.open(ROOT) as st:
        stats = {g.group: g for g in pop_stats(st, now=now).groups}
        listed = pop_list(st, now=now, states=STATES).rows
    assert set(stats) == {m.group for m in listed}
    order = stats["GID_ORDER"]
    assert (order.popped, order.acked, order.in_flight, order.overdue) == _real_orderly(now)
    assert order.orderly and order.revived == 0
    assert order.to_json()["orderly"] is True and not stats["GID_ACKED"].to_json()["orderly"]


@pytest.mark.parametrize("now", NOWS)
def test_offsets_show_pop_stats_and_pop_list_count_alike(now: int) -> None:
    with Store.open(ROOT) as st:
        cols = pop_columns(st, now=now)
        stats = {g.group: g for g in pop_stats(st, now=now).groups}
        listed = pop_list(st, now=now, states=STATES).rows
        rows = consumer_progress(st, pop=cols).rows
    per_queue = Counter((m.group, m.topic, m.queue_id, m.state) for m in listed)
    shown = 0
    for r in rows:
        if r.group not in stats or r.queue_id is None:
            assert r.pop_in_flight is None and r.pop_overdue is None
            continue
        key = (r.group, r.topic, r.queue_id)
        assert (r.pop_in_flight, r.pop_overdue) == (
            per_queue[(*key, "in-flight")],
            per_queue[(*key, "overdue")],
        )
        shown += r.pop_in_flight + r.pop_overdue
    for group, g in stats.items():
        states = Counter(m.state for m in listed if m.group == group)
        assert (g.popped, g.acked, g.in_flight, g.overdue, g.revived) == (
            sum(states.values()),
            states["acked"],
            states["in-flight"],
            states["overdue"],
            states["revived"],
        )
    # every popped-and-unacked message on a queue with a consumer offset row is on that row
    assert shown == sum(1 for m in listed if m.state in ("in-flight", "overdue"))


def test_the_cli_offsets_show_and_pop_stats_agree_on_the_clock() -> None:
    """Both at the current time (the fixture's pops are all in the past): GID_INVISIBLE's unacked message is
    overdue in both, not in flight in one and overdue in the other."""
    shown = json.loads(mqtool("offsets", "show", "-s", str(ROOT), "-f", "json").stdout)
    stats = {
        g["group"]: g
        for g in json.loads(mqtool("pop", "stats", "-s", str(ROOT), "-f", "json").stdout)["groups"]
    }
    for group, g in stats.items():
        mine = [r for r in shown if r["group"] == group and r["popInFlight"] is not None]
        assert (sum(r["popInFlight"] for r in mine), sum(r["popOverdue"] for r in mine)) == (
            g["inFlight"],
            g["overdue"],
        ), group
    assert stats["GID_INVISIBLE"]["overdue"] == 1 and stats["GID_ORDER"]["overdue"] == 2


def test_the_pop_note_is_said_once_and_names_only_the_columns_shown() -> None:
    proc = mqtool("offsets", "show", "-s", str(ROOT), "-f", "plain")
    assert proc.returncode == 0, proc.stderr
    notes = [line for line in proc.stderr.splitlines() if "POP groups" in line]
    assert len(notes) == 2  # one for the groups with checkpoints, one for the orderly ones
    header = next(line for line in proc.stdout.splitlines() if line.startswith("group"))
    for note in notes:
        named = set(re.findall(r"\b(?:pop|lag)[A-Z]\w*", note))  # the field names a note speaks of
        assert named and named <= set(header.split()), (named, header)
    assert "GID_ORDER" in notes[1] and "GID_INVISIBLE" in notes[0]
