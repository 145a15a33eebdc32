"""Delay queue (`mqtool delay`): listing against the golden stores, the broker's property rebuild, replay
plans equal to what the real ScheduleMessageService wrote, and --execute (idempotent, crash-safe,
consistent with a rebuild of the ConsumeQueues and index)."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from golden import LOCK_HOLDER as HOLDER
from golden import copy_store as _copy_store
from golden import expect, rebuild_matches, recover_like_the_broker, snapshot, store_path
from golden import run_mqtool as mqtool

from formats.java.hash import tags_code
from formats.message.commitlog import encode_message
from mqtool.delay.listing import delay_stats, list_delayed
from mqtool.delay.replay import execute_replay, plan_replay
from mqtool.delay.timer import list_timer_messages
from store.broker.messagerebuild import (
    BrokerVersionError,
    WriteNotAvailableError,
    broker_major,
    java_hashmap_order,
    rebuild_properties,
)
from store.broker.schedule import (
    DelayError,
    correct_deliver_timestamp,
    iter_pending_units,
    load_delay_progress,
    message_time_up,
)
from store.config.brokerconf import load_broker_config
from store.liveness import BrokerRunningError
from store.storedir import Store

UNITS = "units[queueOffset,phyOffset,size,tagsCode]"
SCHEDULE = "SCHEDULE_TOPIC_XXXX"
LATE = 1_900_000_000_000  # long after every golden store was written: everything is due
COPIED = ("commitlog", "consumequeue", "config", "checkpoint", "lock", "abort", "abort.bak", "index")
ROOT = Path(__file__).resolve().parents[1]


def copy_store(name: str, dest: Path) -> Path:
    return _copy_store(name, dest, parts=COPIED)


def golden_messages(name: str) -> dict[int, dict]:
    return {m["physicalOffset"]: m for m in expect(name)["messages"] if m["kind"] == "MESSAGE"}


def delivered_copies(name: str) -> dict[str, dict]:
    """The broker's own delivered copies in real topics, by UNIQ_KEY (DELAY kept, not the schedule topic)."""
    return {
        m["uniqKey"]: m
        for m in golden_messages(name).values()
        if m["topic"] != SCHEDULE and "DELAY" in m["properties"] and "REAL_TOPIC" in m["properties"]
    }


def reset_progress(root: Path, levels: dict[int, int]) -> None:
    with Store.open(root) as st:
        model = load_delay_progress(st).model
        model.offset_table.update(levels)
        st.config("delayOffset.json").save(model)


# --- the broker's property rebuild ------------------------------------------------------------------

# Real java.util.HashMap iteration orders (OpenJDK 17), keys put in the listed order.
JAVA_ORDERS = [
    (
        ["UNIQ_KEY", "CLUSTER", "DELAY", "TAGS", "KEYS", "WAIT", "REAL_TOPIC", "REAL_QID"],
        "REAL_TOPIC,KEYS,UNIQ_KEY,CLUSTER,DELAY,WAIT,TAGS,REAL_QID",
        "UNIQ_KEY,CLUSTER,DELAY,TAGS,KEYS,WAIT,REAL_TOPIC,REAL_QID",
    ),
    (["TAGS", "WAIT"], "WAIT,TAGS", "TAGS,WAIT"),
    (
        [
            "UNIQ_KEY", "CLUSTER", "PGROUP", "__transactionId__", "TAGS", "TRAN_MSG", "KEYS", "WAIT",
            "REAL_TOPIC", "REAL_QID", "TRANSACTION_CHECK_TIMES", "CHECK_IMMUNITY_TIME_IN_SECONDS",
            "TRAN_PREPARED_QUEUE_OFFSET", *"abcdefghijklmnopq",
        ],
        "TRAN_MSG,KEYS,UNIQ_KEY,CLUSTER,PGROUP,WAIT,CHECK_IMMUNITY_TIME_IN_SECONDS,a,b,"
        "TRAN_PREPARED_QUEUE_OFFSET,c,d,TRANSACTION_CHECK_TIMES,e,f,g,h,i,j,k,l,m,n,o,p,REAL_TOPIC,q,"
        "__transactionId__,TAGS,REAL_QID",
        "UNIQ_KEY,CLUSTER,PGROUP,__transactionId__,TAGS,TRAN_MSG,KEYS,WAIT,CHECK_IMMUNITY_TIME_IN_SECONDS,a,b,"
        "TRAN_PREPARED_QUEUE_OFFSET,c,d,TRANSACTION_CHECK_TIMES,e,f,g,h,i,j,k,l,m,n,o,p,REAL_TOPIC,q,REAL_QID",
    ),
    (
        [f"k{i}" for i in range(40)],
        "k31,k30,k11,k33,k10,k32,k13,k35,k12,k34,k15,k37,k14,k36,k17,k39,k16,k38,k19,k18,k0,k1,k2,k3,k20,"
        "k4,k5,k22,k6,k21,k7,k24,k8,k23,k9,k26,k25,k28,k27,k29",
        "k31,k30,k33,k32,k35,k34,k37,k36,k39,k38,k0,k1,k2,k3,k4,k5,k6,k7,k8,k9,k11,k10,k13,k12,k15,k14,"
        "k17,k16,k19,k18,k20,k22,k21,k24,k23,k26,k25,k28,k27,k29",
    ),
    (
        ["Aa", "BB", "AaAa", "BBBB", "AaBB", "BBAa", "C#", "DB", "ORIGIN_MESSAGE_ID", "RETRY_TOPIC", "seq",
         "äöü", "日本"],
        "Aa,BB,C#,äöü,日本,ORIGIN_MESSAGE_ID,RETRY_TOPIC,DB,seq,AaAa,BBBB,AaBB,BBAa",
        "ORIGIN_MESSAGE_ID,RETRY_TOPIC,AaAa,BBBB,AaBB,BBAa,äöü,Aa,BB,C#,seq,日本,DB",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("keys", "order16", "order128"), JAVA_ORDERS)
def test_java_hashmap_order_matches_java(keys: list[str], order16: str, order128: str) -> None:
    assert java_hashmap_order(keys, 16) == order16.split(",")
    assert java_hashmap_order(keys, 128) == order128.split(",")
    assert java_hashmap_order(keys + keys[:3], 16) == order16.split(",")  # re-put keeps the node


@pytest.mark.parametrize(("name", "major"), [("store-a", 5), ("store-49a", 4)])
def test_rebuild_properties_reproduces_every_string_the_broker_rebuilt(name: str, major: int) -> None:
    """Schedule records, delivered copies, half messages and commit copies: all broker-serialised."""
    checked = 0
    for m in golden_messages(name).values():
        props = m["properties"]
        if m["topic"] in (SCHEDULE, "RMQ_SYS_TRANS_HALF_TOPIC") or "REAL_TOPIC" in props:
            raw = m["propertiesRaw"].encode("utf-8")
            assert rebuild_properties(raw, major) == raw, m["physicalOffset"]
            checked += 1
    assert checked >= 30


@pytest.mark.parametrize(("name", "major"), [("store-a", 5), ("store-49a", 4), ("store-c", 5)])
def test_broker_version_is_detected(name: str, major: int) -> None:
    with Store.open(store_path(name)) as st:
        assert broker_major(st).major == major
        assert broker_major(st, 4).major == 4
        with pytest.raises(BrokerVersionError):
            broker_major(st, 3)


def test_correct_deliver_timestamp() -> None:
    assert correct_deliver_timestamp(1000, 1500, 1000) == 1500
    assert correct_deliver_timestamp(1000, 2000, 1000) == 2000
    assert correct_deliver_timestamp(1000, 2001, 1000) == 1000  # clock went back: due now


# --- delay list / stats -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["store-a", "store-49a", "store-c"])
def test_list_is_every_schedule_unit_after_the_progress(name: str) -> None:
    exp = expect(name)
    progress = {int(k): v for k, v in exp["scheduleOffsetTable"].items()}
    messages = golden_messages(name)
    want = []
    for key, queue in exp["consumeQueues"].items():
        if not key.startswith(SCHEDULE + "/"):
            continue
        level = queue["queueId"] + 1
        start = max(progress.get(level, 0), queue["minOffset"])
        for q, phy, size, tags in queue[UNITS]:
            if q >= start:
                m = messages[phy]
                want.append(
                    (level, q, phy, tags, m["properties"]["REAL_TOPIC"], int(m["properties"]["REAL_QID"]),
                     m["uniqKey"], m["keys"], size)
                )  # fmt: skip
    with Store.open(store_path(name)) as st:
        listing = list_delayed(st, now=LATE)
    got = [
        (r.level, r.queue_offset, r.phy_offset, r.deliver_timestamp, r.real_topic, r.real_queue_id,
         r.uniq_key, r.keys, r.size)
        for r in listing.rows
    ]  # fmt: skip
    assert sorted(got) == sorted(want)
    assert all(r.due for r in listing.rows)
    assert {"store-a": 4, "store-49a": 4, "store-c": 1}[name] == len(got)


def test_list_due_and_pending_at_a_given_time() -> None:
    with Store.open(store_path("store-a")) as st:
        rows = list_delayed(st, now=0).rows
        now = sorted(r.deliver_timestamp for r in rows)[1]  # the two earliest are due
        due = list_delayed(st, now=now, only="due").rows
        pending = list_delayed(st, now=now, only="pending").rows
        assert [r.level for r in due] == [3, 4]
        assert [r.level for r in pending] == [16, 18]
        assert list_delayed(st, now=now, level=16).rows[0].due is False
        assert list_delayed(st, now=now, level=2).rows == []  # delivered
        assert due[0].late_ms == now - due[0].deliver_timestamp


def test_stats_per_level() -> None:
    with Store.open(store_path("store-49a")) as st:
        stats = delay_stats(st, now=LATE)
    rows = {r.level: r.to_json() for r in stats.rows}
    assert sorted(rows) == [1, 2, 3, 4, 16, 18]
    assert rows[1]["delayOffset"] == 4 and rows[1]["backlog"] == 0
    assert rows[3]["delivered"] == 2 and rows[3]["stuck"] is False
    assert rows[18]["delayOffset"] is None and rows[18]["backlog"] == 2 and rows[18]["due"] == 2
    assert rows[18]["stuck"] is True and rows[18]["lateMs"] == LATE - rows[18]["oldestDeliverTimestamp"]
    assert stats.levels.source == "default" and stats.levels.table[18] == 7_200_000
    assert stats.timer is None


def test_levels_from_a_broker_config(tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text("messageDelayLevel=1s 5s 10s 1m\n")
    with Store.open(store_path("store-a"), load_broker_config(conf)) as st:
        stats = delay_stats(st, now=LATE)
        listing = list_delayed(st, now=LATE)
        plan = plan_replay(st, now=LATE)
    rows = {r.level: r for r in stats.rows}
    assert stats.levels.source == "broker-config"
    assert rows[4].delay_ms == 60_000 and rows[16].delay_ms is None and rows[16].stuck
    assert [r.due for r in listing.rows if r.level in (16, 18)] == [False, False]
    assert any("level 18 is not in messageDelayLevel" in n for n in plan.notes)
    assert {d.level for d in plan.to_deliver} == {3, 4}


# --- replay: the plan equals what the broker wrote --------------------------------------------------


@pytest.mark.parametrize(("name", "major"), [("store-a", 5), ("store-49a", 4)])
def test_message_time_up_is_byte_exact_with_the_broker(name: str, major: int) -> None:
    """Given the broker's own store time, queue offset and position, the record is the broker's, byte
    for byte, for every message the real ScheduleMessageService delivered."""
    copies = delivered_copies(name)
    assert len(copies) == {"store-a": 6, "store-49a": 8}[name]
    with Store.open(store_path(name)) as st:
        schedule = {
            m.uniq_key: m
            for lv in range(1, 19)
            if lv - 1 in st.consume_queues.queue_ids(SCHEDULE)
            for _, phy, size, _t in iter_pending_units(st, lv, 0, 10**9)
            if (m := st.commitlog.read_message_at(phy, size))
        }
        for uniq, golden in copies.items():
            record = message_time_up(
                schedule[uniq],
                major,
                store_timestamp=golden["storeTimestamp"],
                queue_offset=golden["queueOffset"],
                physical_offset=golden["physicalOffset"],
            )
            actual = st.commitlog.read_raw(golden["physicalOffset"], golden["totalSize"])
            assert encode_message(record) == actual, uniq
            assert record.tags_code() == golden["dispatch"]["tagsCode"] == tags_code(record.tags)


@pytest.mark.parametrize(("name", "levels"), [("store-a", {1: 0, 2: 0}), ("store-49a", {1: 0, 2: 0, 3: 0})])
def test_replay_recognises_the_brokers_own_deliveries(tmp_path: Path, name: str, levels: dict) -> None:
    """With the delivered levels' progress set back, the plan finds every broker-delivered copy as the
    very record it would write (all fields but store time, queue offset, position) and delivers nothing
    twice; only the progress moves back to where the broker had it."""
    root = copy_store(name, tmp_path / "s")
    reset_progress(root, levels)
    copies = delivered_copies(name)
    with Store.open(root) as st:
        plan = plan_replay(st, now=LATE)
        found = {d.source.uniq_key: d.written.physical_offset for d in plan.deliveries if d.action == "done"}
        assert found == {u: m["physicalOffset"] for u, m in copies.items()}
        for d in plan.deliveries:
            if d.action == "done":
                golden = copies[d.source.uniq_key]
                assert d.written.queue_offset == golden["queueOffset"]
                assert d.written.store_timestamp >= d.deliver_timestamp
        after = {lv: plan.progress_after[lv] for lv in levels}
        assert after == {lv: expect(name)["scheduleOffsetTable"][str(lv)] for lv in levels}


# --- replay: --execute ------------------------------------------------------------------------------


def _replay(root: Path, now: int, execute: bool = True, level: int | None = None):
    with Store.open(root) as st:
        plan = plan_replay(st, now=now, level=level)
        result = execute_replay(st, plan, execute)
    return plan, result


@pytest.mark.parametrize(("name", "major"), [("store-a", 5), ("store-49a", 4)])
def test_replay_execute_writes_the_brokers_records(tmp_path: Path, name: str, major: int) -> None:
    root = copy_store(name, tmp_path / "s")
    with Store.open(root) as st:
        end_before = st.commitlog.valid_end()
        queue_max = {
            (t, q): st.consume_queue(t, q).max_offset
            for t, q in st.consume_queues.queues()
            if t == "TopicTest"
        }
    started = int(time.time() * 1000)
    plan, result = _replay(root, LATE)
    assert result.executed and result.delay_offset_written
    written = result.written
    assert len(written) == len(plan.to_deliver) == {"store-a": 4, "store-49a": 4}[name]
    assert written[0].physical_offset == end_before
    with Store.open(root) as st:
        for d, w in zip(plan.to_deliver, written, strict=True):
            stored = st.commitlog.read_message_at(w.physical_offset)
            expected = message_time_up(
                d.source,
                major,
                store_timestamp=stored.store_timestamp,
                queue_offset=stored.queue_offset,
                physical_offset=stored.physical_offset,
            )
            assert encode_message(stored) == encode_message(expected)
            assert stored.store_timestamp >= started
            key = (stored.topic, stored.queue_id)
            assert stored.queue_offset == queue_max[key]
            queue_max[key] += 1
            unit = st.consume_queue(*key).unit(stored.queue_offset)
            assert (unit.phy_offset, unit.size, unit.tags_code) == (
                stored.physical_offset,
                stored.total_size,
                tags_code(stored.tags),
            )
            hits = st.index_service.query_offset(stored.topic, stored.uniq_key, 64, 0, 2**63 - 1)
            assert stored.physical_offset in hits.phy_offsets
        progress = load_delay_progress(st).table
    last = {d.level: d.queue_offset + 1 for d in plan.to_deliver}
    assert {lv: progress[lv] for lv in last} == last
    rebuild_matches(root)
    # running it again delivers nothing
    before = snapshot(root)
    plan2, result2 = _replay(root, LATE)
    assert plan2.to_deliver == [] and not result2.executed
    assert snapshot(root) == before


def test_replay_stops_at_the_first_message_not_due(tmp_path: Path) -> None:
    root = copy_store("store-49a", tmp_path / "s")
    with Store.open(root) as st:
        first = list_delayed(st, now=LATE, level=18).rows[0]
    plan, result = _replay(root, first.deliver_timestamp - 1, level=18)
    assert [d.action for d in plan.deliveries] == ["stop"] and not result.executed
    plan, result = _replay(root, first.deliver_timestamp, level=18)
    assert [d.action for d in plan.deliveries] == ["deliver", "stop"]
    assert load_delay_progress(Store.open(root)).table[18] == 1


def test_dry_run_changes_nothing(tmp_path: Path) -> None:
    root = copy_store("store-a", tmp_path / "s")
    before = snapshot(root)
    plan, result = _replay(root, LATE, execute=False)
    assert len(plan.to_deliver) == 4 and not result.executed
    assert snapshot(root) == before


def test_a_held_lock_refuses_the_replay(tmp_path: Path) -> None:
    root = copy_store("store-a", tmp_path / "s")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(root / "lock")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        before = snapshot(root)
        with pytest.raises(BrokerRunningError):
            _replay(root, LATE)
        assert snapshot(root) == before
    finally:
        holder.kill()
        holder.wait()


def test_replay_refuses_a_crashed_store(tmp_path: Path) -> None:
    root = copy_store("store-c", tmp_path / "s")  # abort present, torn tail
    before = snapshot(root)
    with pytest.raises(Exception, match="abort"):
        _replay(root, LATE)
    assert snapshot(root) == before


# --- crashes ----------------------------------------------------------------------------------------


def _uniq_counts(root: Path, topic: str = "TopicTest") -> dict[str, int]:
    counts: dict[str, int] = {}
    with Store.open(root) as st:
        for q in st.consume_queues.queue_ids(topic):
            for _, phy, size, _t in st.consume_queue(topic, q).units().tolist():
                m = st.commitlog.read_message_at(phy, size)
                if "DELAY" in m.properties:
                    counts[m.uniq_key] = counts.get(m.uniq_key, 0) + 1
    return counts


def test_killed_before_the_progress_is_saved(tmp_path: Path) -> None:
    """Records written, delayOffset.json not: the next run recognises them and only saves the progress."""
    root = copy_store("store-a", tmp_path / "s")
    args = ("delay", "replay", "-s", str(root), "--now", str(LATE), "--execute")
    proc = mqtool(*args, MQTOOL_TEST_CRASH_AT="delay-appended")
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert load_delay_progress(Store.open(root)).table[3] == 0
    proc = mqtool(*args, "-f", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["executed"] is True
    assert [d["action"] for d in doc["deliveries"]] == ["done"] * 4
    assert load_delay_progress(Store.open(root)).table == {1: 4, 2: 2, 3: 1, 4: 1, 16: 1, 18: 1}
    assert set(_uniq_counts(root).values()) == {1}
    rebuild_matches(root)


def test_killed_inside_the_append_then_recovered(tmp_path: Path) -> None:
    """SIGKILL after the n-th write call of the append: a later run (after recovery) completes the replay
    and no message is ever delivered twice."""
    args = ("delay", "replay", "--now", str(LATE), "--execute")
    n = 1
    outcomes = set()
    while True:
        root = copy_store("store-a", tmp_path / f"k{n}")
        proc = mqtool(*args, "-s", str(root), MQTOOL_CRASH_AFTER_WRITES=str(n))
        if proc.returncode == 0:
            break
        assert proc.returncode == -signal.SIGKILL, proc.stderr
        if (root / "abort").exists():
            with pytest.raises(WriteNotAvailableError, match="abort"):
                _replay(root, LATE)
            recover_like_the_broker(root)
        plan, result = _replay(root, LATE)
        assert result.executed
        outcomes.add(tuple(d.action for d in plan.deliveries))
        assert set(_uniq_counts(root).values()) == {1}
        assert len(_uniq_counts(root)) == 10
        assert load_delay_progress(Store.open(root)).table == {1: 4, 2: 2, 3: 1, 4: 1, 16: 1, 18: 1}
        shutil.rmtree(root)
        n += 1 if n < 8 else 2  # every early write call, then a sample of the rest
    assert n > 8 and len(outcomes) >= 2, outcomes


# --- timer-wheel messages ---------------------------------------------------------------------------


def test_timer_messages_are_listed_not_replayed(tmp_path: Path) -> None:
    from store.appender import CommitLogAppender, NewMessage

    root = copy_store("store-a", tmp_path / "s")
    deliver = 1_795_261_100_000
    with CommitLogAppender(root) as app:
        app.append(
            NewMessage(
                topic="rmq_sys_wheel_timer",
                body=b"timer",
                properties={
                    "UNIQ_KEY": "TIMER-1",
                    "KEYS": "tk",
                    "TIMER_OUT_MS": str(deliver),
                    "REAL_TOPIC": "TopicTest",
                    "REAL_QID": "1",
                    "TAGS": "t",
                },
            )
        )
    with Store.open(root) as st:
        rows = list_timer_messages(st, now=LATE)
        plan = plan_replay(st, now=LATE)
        stats = delay_stats(st, now=LATE)
    assert [
        (r.deliver_timestamp, r.real_topic, r.real_queue_id, r.uniq_key, r.state, r.due) for r in rows
    ] == [(deliver, "TopicTest", 1, "TIMER-1", "unknown", True)]
    assert plan.timer_messages == 1 and any("delay replay --timer" in n for n in plan.notes)
    assert all(
        d.record is None or d.record.topic != "TopicTest" or d.source.topic == SCHEDULE
        for d in plan.deliveries
    )
    assert stats.timer is not None and stats.timer.messages == 1
    proc = mqtool("delay", "list", "--timer", "-s", str(root), "--now", str(LATE), "-f", "json")
    assert json.loads(proc.stdout)[0]["realTopic"] == "TopicTest"


# --- command line -----------------------------------------------------------------------------------


def test_cli_list_json_rows() -> None:
    proc = mqtool("delay", "list", "-s", str(store_path("store-a")), "--now", str(LATE), "-f", "json")
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    required = {"level", "queueOffset", "phyOffset", "deliverTimestamp", "realTopic", "realQueueId", "due",
                "uniqKey", "keys"}  # fmt: skip
    assert len(rows) == 4 and all(required <= set(r) for r in rows)
    assert rows[0]["level"] == 3 and rows[0]["keys"] == "delay-key-5" and rows[0]["due"] is True


def test_cli_stats_and_replay_dry_run() -> None:
    src = str(store_path("store-49a"))
    stats = mqtool("delay", "stats", "-s", src, "--now", str(LATE), "-f", "json")
    assert json.loads(stats.stdout)["levels"][0]["level"] == 1
    plain = mqtool("delay", "replay", "-s", src, "--now", str(LATE), "--tz", "UTC")
    assert plain.returncode == 0 and "dry run: 4 message(s) would be delivered" in plain.stdout
    both = mqtool("delay", "list", "-s", src, "--due", "--pending")
    assert both.returncode == 2 and "exclude each other" in both.stderr  # a usage error
    future = mqtool("delay", "replay", "-s", src, "--now", "+3650d")
    assert future.returncode == 0 and "ahead of the clock" in future.stdout


def test_unknown_level_arguments() -> None:
    with Store.open(store_path("store-a")) as st, pytest.raises(DelayError):
        list_delayed(st, now=LATE, level=0)


def test_a_property_order_mqtool_cannot_reproduce_stops_the_level() -> None:
    """Nine property names in one Java HashMap bucket (a tree bin, whose order mqtool does not reproduce):
    messageTimeUp is refused as a DelayError naming the record, which the planner turns into a stop."""
    import itertools
    from dataclasses import replace

    from formats.message.properties import decode_properties, encode_properties

    with Store.open(store_path("store-a")) as st:
        lv, _, phy, size, _t = next(
            (lv, *unit)
            for lv in range(1, 19)
            if lv - 1 in st.consume_queues.queue_ids(SCHEDULE)
            for unit in iter_pending_units(st, lv, 0, 10**9)
        )
        msg = st.commitlog.read_message_at(phy, size)
    colliding = ["".join(p) for p in itertools.product(["Aa", "BB"], repeat=4)]  # same String.hashCode
    pairs = [*decode_properties(msg.properties_raw).items(), *((k, "x") for k in colliding)]
    crowded = replace(msg, properties_raw=encode_properties(pairs, trailing_separator=True))
    with pytest.raises(DelayError, match=f"schedule record at {phy}.*tree bin"):
        message_time_up(crowded, 5, store_timestamp=0)


@pytest.mark.parametrize("store", ["store-a", "store-49a", "store-c"])
def test_stats_agree_with_the_listing_at_any_now(store) -> None:
    """delay stats' vectorised due counts and oldest times equal what `delay list` (unit by unit, with
    correctDeliverTimestamp) says, at times before, among and long after the delivery times: a time
    further ahead than now + delay counts as due."""
    with Store.open(store_path(store)) as st:
        times = sorted(r.deliver_timestamp for r in list_delayed(st, now=0).rows)
        assert times
        for now in {0, times[0] - 1, times[0], times[len(times) // 2], times[-1], LATE, times[0] - 7_300_000}:
            listing = list_delayed(st, now=now).rows
            for row in delay_stats(st, now=now, with_timer=False).rows:
                mine = [r for r in listing if r.level == row.level]
                assert row.due == sum(r.due for r in mine), (now, row.level)
                expected = min((r.deliver_timestamp for r in mine), default=None)
                assert row.oldest_deliver_timestamp == expected
