"""POP consumption offline (store.pop, mqtool.pop, `mqtool pop`) against tests/data/store-pop, where the real
5.3.3 PopMessageProcessor, AckMessageProcessor, PopBufferMergeService and PopReviveService ran; expect.json's
`pairing` is the real `consumeReviveMessage` run over every revive queue, `pop` every ck / ack / bAck as the
real fastjson parsed it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from golden import expect
from golden import run_mqtool as mqtool

from formats.names import TIMER_TOPIC
from mqtool.pop import pop_list, pop_stats
from store.pop.revive import REVIVE_GROUP, pop_state
from store.storedir import Store

NAME = "store-pop"
ROOT = Path(__file__).parent / "data" / NAME


def _key(ck: dict) -> tuple:
    return (ck["cid"], ck["topic"], ck["queueId"], ck["startOffset"], ck["popTime"])


@pytest.fixture(scope="module")
def state():
    with Store.open(ROOT) as st:
        return pop_state(st, now=_end_of_run())


def _end_of_run() -> int:
    """A --now after every checkpoint the revive service scanned (its scan end time), before the 1 h ones."""
    return max(q["scanEndTime"] for q in expect(NAME)["pairing"]["queues"])


def test_revive_queues_and_the_revive_groups_offsets(state) -> None:
    pairing = expect(NAME)["pairing"]
    assert state.revive_topic == pairing["reviveTopic"]
    offsets = expect(NAME)["configFiles"]["consumerOffset"]["offsetTable"]
    revive = offsets[f"{pairing['reviveTopic']}@{REVIVE_GROUP}"]
    for q in state.queues:
        real = next(x for x in pairing["queues"] if x["queueId"] == q.queue_id)
        assert q.max_offset == real["maxOffset"]
        assert q.revive_offset == revive.get(str(q.queue_id))


def test_checkpoints_pair_with_their_acks_as_the_revive_service_pairs_them(state) -> None:
    """Every checkpoint the real consumeReviveMessage found: the same bitmap once acks are merged, revived
    when at or behind the revive group's offset, each revived message pointing at its retry copy."""
    mine = {
        (c.ck.cid, c.ck.topic, c.ck.queue_id, c.ck.start_offset, c.ck.pop_time): c
        for c in state.checkpoints
        if not c.record.in_timer
    }
    real = [ck for q in expect(NAME)["pairing"]["queues"] for ck in q["checkpoints"]]
    assert real and sorted(mine) == sorted(_key(ck) for ck in real)
    rows = {(m.group, m.topic, m.queue_id, m.queue_offset, m.pop_time): m for m in state.messages}
    for ck in real:
        c = mine[_key(ck)]
        assert (c.bits, c.revived, c.record.queue_offset) == (
            ck["bitMap"],
            ck["behindReviveGroupOffset"],
            ck["reviveOffset"],
        )
        for unacked in ck["unacked"]:
            row = rows[(ck["cid"], ck["topic"], ck["queueId"], unacked["queueOffset"], ck["popTime"])]
            if ck["behindReviveGroupOffset"]:
                assert row.state == "revived"
                assert row.retry_phy_offset in unacked["retryRecords"]
            else:
                assert row.state == ("overdue" if ck["reviveTime"] <= state.now else "in-flight")
                assert row.retry_phy_offset is None
        for index in ck["ackedIndexes"]:
            offset = ck["startOffset"] + index  # these checkpoints' diffs are consecutive
            assert rows[(ck["cid"], ck["topic"], ck["queueId"], offset, ck["popTime"])].state == "acked"


def test_checkpoints_still_in_the_timer_wheel_count_with_their_acks(state) -> None:
    """A ck (and its acks) not yet delivered into the revive topic: its messages are in flight, those an
    ack (also still in the wheel) names are acked."""
    pop = expect(NAME)["pop"]
    in_revive = {json.dumps(r["parsed"], sort_keys=True) for r in pop if r["topic"] != TIMER_TOPIC}
    waiting_cks = [
        r["parsed"]
        for r in pop
        if r["topic"] == TIMER_TOPIC
        and r["tag"] == "ck"
        and json.dumps(r["parsed"], sort_keys=True) not in in_revive
    ]
    assert waiting_cks
    for ck in waiting_cks:
        acked: set[int] = set()
        for r in pop:
            a = r["parsed"]
            if (
                r["topic"] == TIMER_TOPIC
                and r["tag"] in ("ack", "bAck")
                and (
                    a["consumerGroup"],
                    a["topic"],
                    a["queueId"],
                    a["popTime"],
                )
                == (ck["cid"], ck["topic"], ck["queueId"], ck["popTime"])
            ):
                acked.update(a["ackOffsetList"] if r["tag"] == "bAck" else [a["ackOffset"]])
        got = {
            m.queue_offset: m.state
            for m in state.messages
            if (m.group, m.pop_time) == (ck["cid"], ck["popTime"])
        }
        assert got == {o: ("acked" if o in acked else "in-flight") for o in ck["ackOffsets"]}


def test_pop_list_filters_and_the_cli_agree(state) -> None:
    now = state.now
    with Store.open(ROOT) as st:
        listing = pop_list(st, now=now, group="GID_BATCH")
        everything = pop_list(st, now=now, states=["acked", "in-flight", "overdue", "revived"])
    assert {m.group for m in listing.rows} == {"GID_BATCH"}
    assert all(m.state != "acked" for m in listing.rows)
    assert len(everything.rows) == len(state.messages)
    proc = mqtool("pop", "list", "-s", str(ROOT), "--now", str(now), "--state", "overdue", "-f", "json")
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    assert rows and {r["state"] for r in rows} == {"overdue"}
    assert {r["uniqKey"] for r in rows} == {
        m.message.uniq_key for m in state.messages if m.state == "overdue"
    }


def test_pop_stats_sums_per_group_and_revive_queue(state) -> None:
    with Store.open(ROOT) as st:
        stats = pop_stats(st, now=state.now)
    by_group = {g.group: g for g in stats.groups}
    for g in by_group.values():
        states = [m.state for m in state.messages if m.group == g.group]
        assert (g.popped, g.acked, g.in_flight, g.overdue, g.revived) == (
            len(states),
            states.count("acked"),
            states.count("in-flight"),
            states.count("overdue"),
            states.count("revived"),
        )
    real = [ck for q in expect(NAME)["pairing"]["queues"] for ck in q["checkpoints"]]
    overdue_groups = {ck["cid"] for ck in real if not ck["behindReviveGroupOffset"] and ck["unacked"]}
    assert {g for g, s in by_group.items() if s.overdue} == overdue_groups
    proc = mqtool("pop", "stats", "-s", str(ROOT), "--now", str(state.now), "-f", "json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == json.loads(json.dumps(stats.to_json()))


def test_a_store_without_pop_says_so(tmp_path: Path) -> None:
    proc = mqtool("pop", "stats", "-s", str(Path(__file__).parent / "data" / "store-a"), "-f", "json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["groups"] == []


def test_offsets_show_marks_pop_groups_with_their_popped_unacked_messages(state) -> None:
    """A POP group's offset moved at pop time: offsets show adds what is popped and not acked (in flight or
    overdue: the sum does not depend on the clock) and the lag that counts them as not consumed."""
    proc = mqtool("offsets", "show", "-s", str(ROOT), "-f", "json")
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    held: dict[tuple, int] = {}
    for m in state.messages:
        if m.state in ("in-flight", "overdue") and not m.orderly:
            held[(m.group, m.topic, m.queue_id)] = held.get((m.group, m.topic, m.queue_id), 0) + 1
    pop_groups = {m.group for m in state.messages if not m.orderly}
    assert held
    for r in rows:
        if r["group"] in pop_groups and r["queueId"] is not None:
            assert r["popInFlight"] == held.get((r["group"], r["topic"], r["queueId"]), 0)
            assert r["lagWithInFlight"] == (None if r["lag"] is None else r["lag"] + r["popInFlight"])
        else:
            assert r["popInFlight"] is None and r["lagWithInFlight"] is None
    # an orderly POP writes no checkpoint; its offset stays at the first unacked one (test_pop_order.py)
    assert "GID_ORDER" not in pop_groups and "GID_ORDER" in {m.group for m in state.messages}
    assert all(f"{g} consumes by POP" in proc.stderr for g in pop_groups)


def test_offsets_reset_of_a_pop_group_says_its_unacked_messages_still_revive(state) -> None:
    """The broker's server-side reset clears only its in-memory in-flight counter: the checkpoints stay and
    PopReviveService still revives the unacked messages into the retry topic."""
    held = [m for m in state.messages if m.group == "GID_OVERDUE" and m.state in ("in-flight", "overdue")]
    assert held
    args = ("offsets", "reset", "-s", str(ROOT), "--group", "GID_OVERDUE", "--topic", "PopTopicB")
    proc = mqtool(*args, "--to-offset", "0", "-f", "plain")
    assert proc.returncode == 0, proc.stderr
    note = next(line for line in proc.stdout.splitlines() if "by POP" in line)
    assert f"{len(held)} popped message(s) not acked" in note and "%RETRY%GID_OVERDUE_PopTopicB" in note
    other = mqtool(
        "offsets",
        "reset",
        "-s",
        str(ROOT),
        "--group",
        "GID_ACKED",
        "--topic",
        "PopTopicA",
        "--to-offset",
        "0",
        "-f",
        "plain",
    )
    assert other.returncode == 0 and "by POP" not in other.stdout  # everything it popped is acked
