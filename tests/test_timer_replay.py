"""`delay replay --timer`: TimerMessageStore's dequeue offline, against stores the real 5.3.3 timer wrote.

The records the dequeue writes are compared byte for byte with the ones the real put service wrote
(`timer_time_up` rebuilt from the timer record and its timerlog unit); the slots read, the actions and
the read time are derived from the fixture's expect.json (the real code's view of the wheel), not from
mqtool. The end-to-end proof that the broker does not deliver a replayed message again runs with the real
TimerMessageStore in tests/oracle (`timer-run`).
"""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest
from golden import copy_store, expect, rebuild_matches, snapshot
from golden import run_mqtool as mqtool

from formats.errors import MqtoolError
from formats.names import TIMER_TOPIC
from formats.timer import MAGIC_DELETE, MAGIC_ROLL, TIMER_WHEEL_SLOTS
from mqtool.delay.timer_replay import execute_timer_replay, plan_timer_replay
from store.storedir import Store
from store.timer.dequeue import recovered_wheel, timer_time_up
from store.timer.messages import timer_messages
from store.timer.timerstore import TimerStore, read_timercheck

TIMER_STORES = ("store-timer-states", "store-timer5", "store-timer-crash")


def _copy(name: str, tmp_path: Path) -> Path:
    root = copy_store(name, tmp_path / name)
    for leftover in ("abort", "abort.bak"):
        (root / leftover).unlink(missing_ok=True)
    return root


def _now_past_every_slot(name: str) -> int:
    """A --now after the last slot of the fixture's wheel."""
    return max(s["timeMs"] for s in _wheel_read(name)) + 1500


def _now_after(name: str, ticks: int) -> int:
    """A --now `ticks` seconds after the fixture's read time (its wheel is 1 s per slot)."""
    return expect(name)["timercheck"]["lastReadTimeMs"] + ticks * 1000


# --- the record the put service writes ----------------------------------------------------------


@pytest.mark.parametrize("name", ["store-timer-states", "store-timer5"])  # the crash store never dequeued
def test_the_dequeue_record_is_the_brokers(name: str) -> None:
    """Every record the real put service wrote (it carries TIMER_DEQUEUE_MS), rebuilt from its timer record
    and timerlog unit: equal in every field, properties byte for byte."""
    exp = expect(name)
    written = [m for m in exp["messages"] if "TIMER_DEQUEUE_MS" in m.get("properties", {})]
    assert written, "the fixture has records the real dequeue wrote"
    with Store.open(Path(f"tests/data/{name}")) as st:
        timer = TimerStore.open(st)
        assert timer is not None
        sources = [(u, st.commitlog.read_message_at(u.offset_py, u.size_py)) for u in timer.walk]
        for m in written:
            props = m["properties"]
            got = st.commitlog.read_message_at(m["physicalOffset"], m["totalSize"])
            rebuilt = []
            for unit, src in sources:
                if (
                    src.uniq_key != props["UNIQ_KEY"]
                    or str(unit.curr_write_time_ms) != props["TIMER_ENQUEUE_MS"]
                    or unit.roll != (m["topic"] == TIMER_TOPIC)
                    or src.properties.get("TAGS") != props.get("TAGS")
                ):
                    continue
                rebuilt.append(
                    timer_time_up(
                        src,
                        unit,
                        dequeue_ms=int(props["TIMER_DEQUEUE_MS"]),
                        store_timestamp=m["storeTimestamp"],
                    )
                )
            assert rebuilt, f"no timer record for the record at {m['physicalOffset']}"
            r = rebuilt[-1]
            assert r.properties_raw.decode() == m["propertiesRaw"]
            assert (r.topic, r.queue_id, r.flag, r.sys_flag, r.body) == (
                m["topic"],
                m["queueId"],
                m["flag"],
                m["sysFlag"],
                got.body,
            )
            assert (r.born_timestamp, r.born_host, r.born_port) == (
                m["bornTimestamp"],
                got.born_host,
                got.born_port,
            )
            assert (r.store_host, r.store_port, r.reconsume_times) == (
                got.store_host,
                got.store_port,
                m["reconsumeTimes"],
            )
            assert r.total_size == m["totalSize"]


# --- the plan: which slots, which units ------------------------------------------------------------


def _wheel_read(name: str) -> list[dict]:
    """The slots the real dequeue reads: the wheel in memory after the real recover() (expect.json's
    `recovered.timerWheel`, where a crash left the file behind the timerlog), else the wheel file as the
    real TimerWheel read it (a clean shutdown flushed it)."""
    exp = expect(name)
    return exp.get("recovered", {}).get("timerWheel") or exp["timerWheel"]


def _chain(units: dict[int, dict], last: int) -> list[dict]:
    out, pos = [], last
    while pos != -1:
        out.append(units[pos])
        pos = units[pos]["prevPos"]
    return out


def _expected_actions(name: str, start: int, end: int) -> list[tuple[int, int, str]]:
    """(slot, timerlog position, action) for the slots in [start, end), from the real code's wheel and
    timerlog in expect.json: tombstones are not written; roll units go back to the timer topic; a message
    a tombstone of its slot names is dropped."""
    exp = expect(name)
    units = {u["position"]: u for u in exp["timerLog"]}
    messages = {m["physicalOffset"]: m for m in exp["messages"]}
    out = []
    for slot in sorted(_wheel_read(name), key=lambda s: s["timeMs"]):
        if (
            not start <= slot["timeMs"] < end
            or slot["timeMs"] // 1000 % (2 * TIMER_WHEEL_SLOTS) != slot["index"]
        ):
            continue
        chain = _chain(units, slot["lastPos"])
        tombstones = {
            messages[u["offsetPy"]]["properties"]["TIMER_DEL_UNIQKEY"]
            for u in chain
            if u["magic"] & MAGIC_DELETE and not u["magic"] & MAGIC_ROLL
        }
        for u in reversed(chain):
            if u["magic"] & MAGIC_DELETE and not u["magic"] & MAGIC_ROLL:
                continue
            props = messages[u["offsetPy"]]["properties"]
            if u["magic"] & MAGIC_ROLL:
                action = "roll"
            elif f"{props['REAL_TOPIC']}+{props['UNIQ_KEY']}" in tombstones:
                action = "recalled"
            else:
                action = "deliver"
            out.append((slot["timeMs"], u["position"], action))
    return out


@pytest.mark.parametrize("name", TIMER_STORES)
def test_the_wheel_read_is_the_one_recover_leaves(name: str) -> None:
    """The wheel the dequeue reads: after a crash, the file revised from the timerlog as the real recover()
    revised it; after a clean shutdown, the file itself."""
    with Store.open(Path(f"tests/data/{name}")) as st:
        wheel = recovered_wheel(TimerStore.open(st))
    got = [(s.index, s.time_ms, s.first_pos, s.last_pos) for s in wheel.non_empty()]
    want = [(s["index"], s["timeMs"], s["firstPos"], s["lastPos"]) for s in _wheel_read(name)]
    assert sorted(got) == sorted(want)


@pytest.mark.parametrize("name", TIMER_STORES)
@pytest.mark.parametrize("ticks", [0, 1, 3, 120, None])
def test_plan_reads_the_slots_the_broker_reads(name: str, ticks: int | None) -> None:
    root = Path(f"tests/data/{name}")
    # the slot of now itself is not read yet; None: past every slot of the wheel
    now = _now_past_every_slot(name) if ticks is None else _now_after(name, ticks) + 500
    check = expect(name)["timercheck"]
    with Store.open(root) as st:
        plan = plan_timer_replay(st, now=now)
    d = plan.dequeue
    assert (d.stored_read_time, d.read_from) == (check["lastReadTimeMs"], check["lastReadTimeMs"])
    assert d.read_to == now // 1000 * 1000
    want = _expected_actions(name, d.read_from, d.read_to)
    assert [(x.slot_ms, x.unit.position, x.action) for x in d.deliveries] == want
    assert plan.changes_anything == bool(want)


def test_a_read_time_older_than_the_wheel_starts_where_recover_does() -> None:
    name = "store-timer-states"
    check = expect(name)["timercheck"]
    now = check["lastReadTimeMs"] + 8 * 86_400_000
    with Store.open(Path(f"tests/data/{name}")) as st:
        d = plan_timer_replay(st, now=now).dequeue
    assert d.read_from == now - (TIMER_WHEEL_SLOTS - 60) * 1000 > check["lastReadTimeMs"]
    assert d.deliveries == [] and any("more than 7 days old" in n for n in d.notes)


# --- execute ---------------------------------------------------------------------------------------


def _records_after(root: Path, phy: int) -> list:
    with Store.open(root) as st:
        out = []
        pos = phy
        while pos < st.commitlog.max_offset:
            m = st.commitlog.read_message_at(pos, None)
            out.append(m)
            pos += m.total_size
        return out


@pytest.mark.parametrize("name", TIMER_STORES)
def test_execute_writes_the_plan_moves_the_read_time_and_a_second_run_has_nothing(
    name: str, tmp_path: Path
) -> None:
    root = _copy(name, tmp_path)
    now = _now_past_every_slot(name)
    with Store.open(root) as st:
        end = st.commitlog.max_offset
        before = read_timercheck(st)
        plan = plan_timer_replay(st, now=now)
        result = execute_timer_replay(st, plan, execute=True)
    assert result.executed
    planned = [d.record for d in plan.to_write]
    written = _records_after(root, end)
    assert [(m.topic, m.queue_id, m.queue_offset, m.properties_raw, m.body) for m in written] == [
        (r.topic, r.queue_id, r.queue_offset, r.properties_raw, r.body) for r in planned
    ]
    with Store.open(root) as st:
        after = read_timercheck(st)
        assert after.last_read_time_ms == now // 1000 * 1000
        assert after.data_version[2] == before.data_version[2] + 1
        assert (after.last_timer_queue_offset, after.last_timer_log_flush_pos) == (
            before.last_timer_queue_offset,
            before.last_timer_log_flush_pos,
        )
        again = plan_timer_replay(st, now=now + 60_000)
        assert not again.changes_anything and again.to_write == []
        # every message the replay delivered is now `delivered`, pointing at the copy just written
        states = {
            (r.phy_offset, r.unit.position if r.unit else None): r
            for r in timer_messages(st, TimerStore.open(st), now=now)
        }
        for d in plan.to_write:
            row = states[(d.unit.offset_py, d.unit.position)]
            if d.action == "deliver":
                assert row.state == "delivered" and row.copy_phy_offset == d.written.physical_offset
            else:
                assert row.state == ("recall" if row.delete_key else "rolled")
    rebuild_matches(root)
    proc = mqtool("verify", "-s", str(root), "-f", "json")
    assert proc.returncode in (0, 1), proc.stderr


def test_the_cli_dry_run_writes_nothing_and_says_what_it_would_do(tmp_path: Path) -> None:
    name = "store-timer-states"
    root = _copy(name, tmp_path)
    before = snapshot(root)
    now = _now_after(name, 5)
    proc = mqtool("delay", "replay", "--timer", "-s", str(root), "--now", str(now), "-f", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["executed"] is False
    assert [(d["slotTimestamp"], d["timerLogPosition"], d["action"]) for d in doc["deliveries"]] == (
        _expected_actions(name, doc["readTimeStart"], doc["readTimeTo"])
    )
    assert snapshot(root) == before


def test_killed_before_the_read_time_moves(tmp_path: Path) -> None:
    """Records written, timercheck not: the next run recognises them (`done`) and only moves the read time."""
    name = "store-timer-states"
    root = _copy(name, tmp_path)
    args = ("delay", "replay", "--timer", "-s", str(root), "--now", str(_now_after(name, 30)), "--execute")
    proc = mqtool(*args, MQTOOL_TEST_CRASH_AT="timer-appended")
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    with Store.open(root) as st:
        end = st.commitlog.max_offset
        assert read_timercheck(st).last_read_time_ms == expect(name)["timercheck"]["lastReadTimeMs"]
    proc = mqtool(*args, "-f", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["executed"] is True and doc["deliveries"]
    assert {d["action"] for d in doc["deliveries"]} <= {"done", "recalled", "skip"}
    with Store.open(root) as st:
        assert st.commitlog.max_offset == end
        assert read_timercheck(st).last_read_time_ms == _now_after(name, 30)


def test_real_topic_stops_at_the_first_slot_for_another_topic(tmp_path: Path) -> None:
    name = "store-timer-states"
    now = _now_after(name, 30)
    with Store.open(Path(f"tests/data/{name}")) as st:
        full = plan_timer_replay(st, now=now).dequeue
        other = plan_timer_replay(st, now=now, real_topic="NoSuchTopic").dequeue
        same = plan_timer_replay(st, now=now, real_topic="TimerTopic").dequeue
    first = min(d.slot_ms for d in full.to_write)
    assert other.to_write == [] and other.read_to == first
    assert [(d.unit.position, d.action) for d in same.deliveries] == [
        (d.unit.position, d.action) for d in full.deliveries
    ]


def test_a_cycle_in_a_due_slot_stops_the_read_time_there(tmp_path: Path) -> None:
    """The broker's dequeue never leaves a slot whose chain loops: the replay reads up to it, not past it."""
    name = "store-timer-crash"
    root = _copy(name, tmp_path)
    exp = expect(name)
    now = _now_past_every_slot(name)
    due = sorted(
        (s for s in _wheel_read(name) if exp["timercheck"]["lastReadTimeMs"] <= s["timeMs"] < now),
        key=lambda s: s["timeMs"],
    )
    assert len(due) >= 2
    looped = due[1]
    log = root / "timerlog" / "00000000000000000000"
    data = bytearray(log.read_bytes())
    last = looped["lastPos"]
    data[last + 4 : last + 12] = last.to_bytes(8, "big")  # prevPos := itself
    log.write_bytes(bytes(data))
    with Store.open(root) as st:
        d = plan_timer_replay(st, now=now).dequeue
    assert d.read_to == looped["timeMs"]
    assert {x.slot_ms for x in d.deliveries} == {due[0]["timeMs"]}
    assert any("cycle" in n for n in d.notes)


def test_a_store_without_timercheck_is_refused_in_one_line(tmp_path: Path) -> None:
    root = _copy("store-timer5", tmp_path)
    (root / "config" / "timercheck").unlink()
    proc = mqtool("delay", "replay", "--timer", "-s", str(root))
    assert proc.returncode != 0
    assert "timercheck" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    with Store.open(root) as st, pytest.raises(MqtoolError):
        plan_timer_replay(st, now=_now_after("store-timer5", 10))
