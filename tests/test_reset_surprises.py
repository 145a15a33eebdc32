"""Resets never skip or clamp without a word: the plan says per queue and in total how many unconsumed
messages a move skips, flags forward moves and clamps to the min offset (a time before retention) and to
the max, and a bare epoch number that cannot be milliseconds is refused with the reading it likely means.
Queue answers come from the golden stores' expect.json (the real 5.3.3 classes), committed offsets from
their consumerOffset.json."""

from __future__ import annotations

import json

import pytest
from golden import expect, store_path
from golden import run_mqtool as mqtool

from formats.config.codec import decode_config
from formats.config.offsets import ConsumerOffsetTable
from mqtool.offsets.plan import reset_target
from mqtool.offsets.reset import plan_reset
from mqtool.timeparse import TimeArgumentError, parse_time, resolve_zone
from store.storedir import Store

UTC = resolve_zone("UTC")
UNITS = "units[queueOffset,phyOffset,size,tagsCode]"


def _committed(store: str, topic: str, group: str) -> dict[int, int]:
    text = (store_path(store) / "config" / "consumerOffset.json").read_text(encoding="utf-8")
    return dict(decode_config(ConsumerOffsetTable, text).get(topic, group))


def _real_max(store: str, topic: str) -> dict[int, int]:
    return {
        q["queueId"]: q["maxOffset"] for q in expect(store)["consumeQueues"].values() if q["topic"] == topic
    }


def test_by_duration_on_a_group_far_behind_moves_forward_and_says_what_it_skips() -> None:
    """`--by-duration 1h` days after the last message: every queue goes to its max - forward, skipping
    every unconsumed message - and the plan says so per queue and in total, not as a rewind."""
    committed, real_max = _committed("store-a", "TopicTest", "groupA"), _real_max("store-a", "TopicTest")
    proc = mqtool(
        "offsets", "reset", "-s", str(store_path("store-a")), "--group", "groupA", "--topic", "TopicTest",
        "--by-duration", "1h", "-f", "json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    rows = {r["queueId"]: r for r in json.loads(proc.stdout)}
    assert {q: (r["newOffset"], r["forward"], r["skippedMessages"]) for q, r in rows.items()} == {
        q: (real_max[q], True, real_max[q] - committed[q]) for q in committed
    }
    total = sum(real_max[q] - committed[q] for q in committed)
    assert total > 0
    warning = next(line for line in proc.stderr.splitlines() if "forward" in line)
    assert f"--by-duration moves {len(rows)} of {len(rows)} queue(s) forward, not back" in warning
    assert f"skips {total} unconsumed message(s) in total" in warning


def test_a_time_rewind_that_moves_some_queues_forward_flags_those() -> None:
    """A time between the messages: the LOWER answer (the first message stored at or after it: the real
    store times are in queue order here, so that is the binary search's answer) is behind the committed
    offset on some queues and ahead of it on others; only those ahead are forward, with what they skip."""
    e = expect("store-a")
    committed = _committed("store-a", "TopicTest", "groupA")
    stored = {m["physicalOffset"]: m["storeTimestamp"] for m in e["messages"] if m.get("kind") == "MESSAGE"}
    times = {}
    for q in e["consumeQueues"].values():
        if q["topic"] == "TopicTest":
            times[q["queueId"]] = [(stored[u[1]], u[0]) for u in q[UNITS]]
            assert times[q["queueId"]] == sorted(times[q["queueId"]])
    ts = 1_795_261_076_620  # 2026-11-21 11:37:56.620 UTC, among store-a's messages
    answers = {q: next(offset for t, offset in times[q] if t >= ts) for q in committed}
    assert any(answers[q] > committed[q] for q in committed)
    assert any(answers[q] < committed[q] for q in committed)
    with Store.open(store_path("store-a")) as st:
        plan = plan_reset(st, "groupA", ["TopicTest"], reset_target(to_time=ts))
    got = {r.queue_id: (r.new_offset, r.forward, r.skipped_messages, r.clamped_to) for r in plan.rows}
    assert got == {
        q: (answers[q], answers[q] > committed[q], max(0, answers[q] - committed[q]), None) for q in committed
    }
    ahead = [q for q in committed if answers[q] > committed[q]]
    assert any(
        f"--to-time moves {len(ahead)} of {len(committed)} queue(s) forward" in w for w in plan.warnings
    )


def test_a_time_before_retention_is_flagged_as_clamped_to_the_min() -> None:
    """store-c's OrderTopic lost its first messages to retention: a time among the deleted ones gets the
    min offset from the real search; the plan says the messages since that time are gone."""
    e = expect("store-c")
    q0 = e["consumeQueues"]["OrderTopic/0"]
    probe = next(p for p in e["offsetByTime"] if p["topic"] == "OrderTopic" and p["probe"] == "deleted mid")
    assert probe["offsetLower"] == q0["minOffset"] > 0
    with Store.open(store_path("store-c")) as st:
        target = reset_target(to_time=probe["timestamp"])
        plan = plan_reset(st, "groupA", ["OrderTopic"], target, queues=[0])
    (row,) = plan.rows
    assert (row.new_offset, row.clamped_to, row.target_timestamp) == (
        q0["minOffset"],
        "min",
        probe["timestamp"],
    )
    assert row.to_dict()["clampedTo"] == "min"
    assert any("OrderTopic/0: the time is before the queue's oldest message" in w for w in plan.warnings)
    # a time after the min message is no clamp, though its answer may be the min too
    later = next(
        p for p in e["offsetByTime"] if p["topic"] == "OrderTopic" and p["offsetLower"] > q0["minOffset"]
    )
    with Store.open(store_path("store-c")) as st:
        (row,) = plan_reset(
            st, "groupA", ["OrderTopic"], reset_target(to_time=later["timestamp"]), queues=[0]
        ).rows
    assert row.clamped_to is None


def test_an_offset_past_the_max_is_flagged_as_clamped_to_the_max() -> None:
    real_max = _real_max("store-a", "TopicTest")
    with Store.open(store_path("store-a")) as st:
        plan = plan_reset(st, "groupA", ["TopicTest"], reset_target(to_offset=10**6), queues=[0])
    (row,) = plan.rows
    assert (row.new_offset, row.clamped_to, row.forward) == (real_max[0], "max", True)


# --- bare epoch numbers -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1795261179000", 1_795_261_179_000),
        ("100000000000", 100_000_000_000),  # 1973-03-03: the first bare number read as milliseconds
        ("0", 0),  # the epoch, in either unit
        ("1795261179s", 1_795_261_179_000),
        ("1795261179000ms", 1_795_261_179_000),
    ],
)
def test_epoch_numbers_that_are_unambiguous(text: str, expected: int) -> None:
    assert parse_time(text, UTC) == expected


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("1795261179", "did you mean seconds? use 1795261179000 or 1795261179s"),
        ("99999999999", "did you mean seconds? use 99999999999000 or 99999999999s"),
        ("1000", "did you mean seconds? use 1000000 or 1000s"),
        ("1795261179000000", "did you mean microseconds? use 1795261179000"),
        ("-5", "before 1970"),
        ("90s", "for 90s ago write -90s"),
    ],
)
def test_epoch_numbers_that_cannot_be_what_they_say_are_refused(text: str, says: str) -> None:
    with pytest.raises(TimeArgumentError) as err:
        parse_time(text, UTC)
    assert says in err.value.message and "\n" not in err.value.message


def test_the_cli_refuses_epoch_seconds_in_one_line() -> None:
    proc = mqtool(
        "offsets", "reset", "-s", str(store_path("store-a")), "--group", "groupA", "--topic", "TopicTest",
        "--to-time", "1795261179",
    )  # fmt: skip
    assert proc.returncode != 0 and proc.stdout == ""
    (line,) = proc.stderr.strip().splitlines()
    assert "did you mean seconds? use 1795261179000 or 1795261179s" in line
