"""store.timer and store.timer_messages on the two stores the real TimerMessageStore wrote (store-timer5,
store-timer-states; their READMEs say what ran): every timerlog unit, every non-empty wheel slot and its
chain as the real classes read them, timercheck, and each timer message's state judged against what the
real broker did (its copies in the real topic, its roll re-puts, its timercheck)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from golden import GOLDEN, expect

from formats.names import TIMER_TOPIC
from formats.structs import TIMER_LOG_UNIT_SIZE
from formats.timer import MAGIC_DELETE, MAGIC_ROLL, TIMER_WHEEL_FILE_SIZE
from store.log.mappedfile import MappedFileQueue
from store.storedir import Store
from store.timer.messages import enqueue_position, timer_messages
from store.timer.timerstore import TimerFileError, TimerStore, chain, walk_timerlog

TIMER_STORES = ("store-timer5", "store-timer-states")


def open_timer(name: str) -> tuple[Store, TimerStore]:
    store = Store.open(GOLDEN / name)
    timer = TimerStore.open(store)
    assert timer is not None
    return store, timer


@pytest.mark.parametrize("name", TIMER_STORES)
def test_every_timerlog_unit_as_the_real_timerlog_reads_it(name: str) -> None:
    want = expect(name)["timerLog"]
    store, timer = open_timer(name)
    with store:
        got = [u.to_json() for u in timer.walk]
    assert len(got) == len(want) > 0
    for g, w in zip(got, want, strict=True):
        assert {k: g[k] for k in w if k in g} == {k: w[k] for k in w if k in g}
        assert g["roll"] == bool(w["magic"] & MAGIC_ROLL) and g["delete"] == bool(w["magic"] & MAGIC_DELETE)
    # the walk ends where the real timer flushed to (clean shutdown)
    assert timer.walk.end == expect(name)["timercheck"]["lastTimerLogFlushPos"]


@pytest.mark.parametrize("name", TIMER_STORES)
def test_wheel_slots_and_chains_as_the_real_dequeue_walks_them(name: str) -> None:
    want = {s["index"]: s for s in expect(name)["timerWheel"]}
    store, timer = open_timer(name)
    with store:
        assert timer.wheel is not None
        slots = timer.wheel.non_empty()
        assert {s.index for s in slots} == set(want)
        for s in slots:
            w = want[s.index]
            assert (s.time_ms, s.first_pos, s.last_pos, s.num, s.magic) == (
                w["timeMs"],
                w["firstPos"],
                w["lastPos"],
                w["num"],
                w["magic"],
            )
            assert s.placed and timer.wheel.get_slot(s.time_ms) == s
            assert chain(timer.walk, s.last_pos) == (w["chain"], None)


@pytest.mark.parametrize("name", TIMER_STORES)
def test_timercheck(name: str) -> None:
    store, timer = open_timer(name)
    with store:
        assert timer.check is not None
        assert timer.check.to_json() == expect(name)["timercheck"]


def _real(name: str) -> tuple[list[dict], dict[int, dict]]:
    messages = [m for m in expect(name)["messages"] if m.get("kind") == "MESSAGE"]
    return messages, {m["physicalOffset"]: m for m in messages}


@pytest.mark.parametrize("name", TIMER_STORES)
def test_each_state_agrees_with_what_the_real_broker_did(name: str) -> None:
    messages, by_phy = _real(name)
    check = expect(name)["timercheck"]
    units = {u["offsetPy"]: u for u in expect(name)["timerLog"]}
    store, timer = open_timer(name)
    with store:
        rows = timer_messages(store, timer, now=check["lastReadTimeMs"])
        position = enqueue_position(store, timer)
    assert position == check["lastTimerQueueOffset"]
    timer_records = [m for m in messages if m["topic"] == TIMER_TOPIC]
    assert [r.phy_offset for r in rows] == [m["physicalOffset"] for m in timer_records]
    for r in rows:
        m = by_phy[r.phy_offset]
        props = m["properties"]
        unit = units.get(r.phy_offset)
        uniq, real_topic = props.get("UNIQ_KEY"), props.get("REAL_TOPIC")
        copies = [
            c
            for c in messages
            if c["topic"] == real_topic
            and c["properties"].get("UNIQ_KEY") == uniq
            and "TIMER_DEQUEUE_MS" in c["properties"]
        ]
        re_puts = [
            c
            for c in timer_records
            if c["physicalOffset"] > r.phy_offset
            and c["properties"].get("UNIQ_KEY") == uniq
            and c["properties"].get("TIMER_ROLL_TIMES") == str(int(props.get("TIMER_ROLL_TIMES", "0")) + 1)
            and c["properties"].get("TIMER_DEL_UNIQKEY") == props.get("TIMER_DEL_UNIQKEY")
        ]
        if unit is None:
            assert r.state == "not-enqueued" and m["queueOffset"] >= check["lastTimerQueueOffset"], r
            continue
        slot_read = unit["delayedTimeMs"] < check["lastReadTimeMs"]
        if not slot_read:
            assert r.state == "waiting", r
        elif "TIMER_DEL_UNIQKEY" in props:
            assert r.state == "recall"
        elif unit["magic"] & MAGIC_ROLL:
            assert r.state == "rolled" and len(re_puts) == 1, r
        elif copies:
            assert r.state == "delivered" and r.copy_phy_offset == copies[0]["physicalOffset"], r
        else:
            tombstone = f"{real_topic}+{uniq}"
            same_slot = [
                by_phy[u["offsetPy"]]
                for u in expect(name)["timerLog"]
                if u["delayedTimeMs"] == unit["delayedTimeMs"]
                and by_phy[u["offsetPy"]]["properties"].get("TIMER_DEL_UNIQKEY") == tombstone
            ]
            assert r.state == "recalled" and same_slot, r
        assert r.slot_ms == unit["delayedTimeMs"]


def test_the_states_fixture_has_every_state_the_broker_leaves() -> None:
    """The named messages of store-timer-states land where the real run left them (its README)."""
    events = {e["note"].split()[0]: e for e in expect("store-timer-states")["events"] if e["event"] == "put"}
    store, timer = open_timer("store-timer-states")
    with store:
        rows = {r.queue_offset: r for r in timer_messages(store, timer, now=0)}
    assert rows[events["A"]["queueOffset"]].state == "delivered"
    assert rows[events["B"]["queueOffset"]].state == "recalled"
    assert rows[events["G"]["queueOffset"]].state == "not-enqueued"
    e_uniq = rows[events["E"]["queueOffset"]].message.uniq_key
    e_rows = [r for r in rows.values() if r.message and r.message.uniq_key == e_uniq]
    assert [r.state for r in e_rows] == ["rolled", "rolled", "delivered"]
    assert [r.roll_times for r in e_rows] == [None, 1, 2]
    assert {r.state for r in rows.values()} == {
        "delivered",
        "recalled",
        "rolled",
        "recall",
        "waiting",
        "not-enqueued",
    }


def test_due_is_the_deliver_time_against_now() -> None:
    store, timer = open_timer("store-timer-states")
    with store:
        late = timer_messages(store, timer, now=2**62)
    pending = ("waiting", "not-enqueued")
    assert all(r.due == (r.state in pending and r.delete_key is None) for r in late)
    assert any(r.due for r in late)
    assert any(r.state in pending and r.delete_key is not None for r in late)  # a tombstone is never due


# --- damaged files: the walk stops where the recovery would, never loops -----------------------


def _copy(tmp_path: Path, name: str = "store-timer-states") -> Path:
    root = tmp_path / name
    shutil.copytree(GOLDEN / name, root)
    return root


def test_a_bad_unit_ends_the_walk_where_recovery_truncates(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    log = root / "timerlog" / "00000000000000000000"
    data = bytearray(log.read_bytes())
    data[5 * TIMER_LOG_UNIT_SIZE + 12 : 5 * TIMER_LOG_UNIT_SIZE + 16] = (0x10).to_bytes(4, "big")  # bad magic
    log.write_bytes(bytes(data))
    walk = walk_timerlog(MappedFileQueue.open(root / "timerlog"))
    assert len(walk) == 5 and walk.end == 5 * TIMER_LOG_UNIT_SIZE
    assert walk.stop == f"bad magic 16 at {5 * TIMER_LOG_UNIT_SIZE}" and walk.stop_file == str(log)


def test_a_blank_moves_the_walk_to_the_next_file(tmp_path: Path) -> None:
    """TimerLog.append ends a file with a 16-byte blank; the units go on in the next file."""
    root = _copy(tmp_path)
    first = root / "timerlog" / "00000000000000000000"
    data = first.read_bytes()
    size = 4 * TIMER_LOG_UNIT_SIZE + 16
    head = data[: 4 * TIMER_LOG_UNIT_SIZE]
    blank = (16).to_bytes(4, "big") + bytes(8) + (-875286124).to_bytes(4, "big", signed=True)
    first.write_bytes(head + blank)
    (root / "timerlog" / f"{size:020d}").write_bytes(
        data[4 * TIMER_LOG_UNIT_SIZE :][:size].ljust(size, b"\0")
    )
    walk = walk_timerlog(MappedFileQueue.open(root / "timerlog"))
    assert walk.blanks == [4 * TIMER_LOG_UNIT_SIZE]
    assert walk.units["position"].tolist()[:6] == [0, 52, 104, 156, size, size + 52]


def test_a_cycle_in_a_chain_ends_it(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    log = root / "timerlog" / "00000000000000000000"
    data = bytearray(log.read_bytes())
    data[4:12] = (52).to_bytes(8, "big")  # unit 0 points back at unit 1, which points at unit 0
    data[52 + 4 : 52 + 12] = (0).to_bytes(8, "big")
    log.write_bytes(bytes(data))
    walk = walk_timerlog(MappedFileQueue.open(root / "timerlog"))
    assert chain(walk, 52) == ([52, 0], "cycle at 52")


def test_a_wheel_of_the_wrong_length_is_refused_in_one_line(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    with open(root / "timerwheel", "r+b") as fh:
        fh.truncate(TIMER_WHEEL_FILE_SIZE - 32)
    with Store.open(root) as store, pytest.raises(TimerFileError) as err:
        TimerStore.open(store)
    assert err.value.file == str(root / "timerwheel")
    assert f"!= expected {TIMER_WHEEL_FILE_SIZE}" in err.value.message


def test_no_timer_files_no_timer_store() -> None:
    with Store.open(GOLDEN / "store-49a") as store:
        assert TimerStore.open(store) is None


def test_walk_is_the_declaration_unit_by_unit() -> None:
    """The numpy walk reads each unit as construct's TimerLogUnit does."""
    from formats.structs import TimerLogUnit

    data = (GOLDEN / "store-timer-states" / "timerlog" / "00000000000000000000").read_bytes()
    walk = walk_timerlog(MappedFileQueue.open(GOLDEN / "store-timer-states" / "timerlog"))
    for i, u in enumerate(walk.units):
        parsed = TimerLogUnit.parse(data[i * TIMER_LOG_UNIT_SIZE : (i + 1) * TIMER_LOG_UNIT_SIZE])
        assert [int(u[k]) for k in ("size", "prevPos", "magic", "offsetPy")] == [
            parsed.size,
            parsed.prevPos,
            parsed.magic,
            parsed.offsetPy,
        ]
    assert walk.units.dtype.isnative and isinstance(walk.units, np.ndarray)


@pytest.mark.parametrize(
    ("given", "kept"), [("50", 100), ("199", 100), ("200", 200), ("750", 500), ("5000", 1000)]
)
def test_timer_precision_is_rounded_as_the_setter_does(tmp_path: Path, given: str, kept: int) -> None:
    """MessageStoreConfig.setTimerPrecisionMs keeps the largest of 100/200/500/1000 not above the value."""
    from store.config.brokerconf import load_broker_config

    conf = tmp_path / "broker.conf"
    conf.write_text(f"timerPrecisionMs={given}\n")
    assert load_broker_config(conf).timerPrecisionMs == kept


def test_roll_window_as_the_timer_store_settles_it() -> None:
    from formats.timer import TIMER_BLANK_SLOTS, TIMER_WHEEL_SLOTS
    from store.timer.timerstore import roll_window_slots

    assert roll_window_slots(6) == 6
    assert (
        roll_window_slots(1) == roll_window_slots(TIMER_WHEEL_SLOTS) == TIMER_WHEEL_SLOTS - TIMER_BLANK_SLOTS
    )


# --- verify on the timer files ------------------------------------------------------------------


def _verify_timer(root: Path) -> tuple[bool, list[dict]]:
    from mqtool.verify import verify_store

    with Store.open(root) as store:
        report = verify_store(store)
    return report.clean, [p for p in report.problem_rows() if p["kind"].startswith("timer")]


@pytest.mark.parametrize("name", TIMER_STORES)
def test_verify_finds_the_real_timer_stores_clean(name: str) -> None:
    clean, rows = _verify_timer(GOLDEN / name)
    assert clean
    assert [r["kind"] for r in rows] == ["timer_recovery"]
    still = expect(name)["timercheck"]["lastTimerQueueOffset"]
    assert f"queue offset {still}:" in rows[0]["detail"]


def _damage(root: Path, path: str, at: int, raw: bytes) -> None:
    f = root / path
    data = bytearray(f.read_bytes())
    data[at : at + len(raw)] = raw
    f.write_bytes(bytes(data))


def test_verify_reports_a_cut_timerlog_and_a_unit_pointing_nowhere(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    log = "timerlog/00000000000000000000"
    _damage(root, log, 3 * TIMER_LOG_UNIT_SIZE + 28, (12345).to_bytes(8, "big"))  # unit 3's offsetPy
    _damage(root, log, 9 * TIMER_LOG_UNIT_SIZE, (51).to_bytes(4, "big"))  # unit 9's size
    clean, rows = _verify_timer(root)
    kinds = {r["kind"]: r for r in rows}
    assert not clean
    assert (
        kinds["timer_log_cut"]["offset"] == 9 * TIMER_LOG_UNIT_SIZE and kinds["timer_log_cut"]["file"] == log
    )
    assert kinds["timer_unit_target"]["offset"] == 3 * TIMER_LOG_UNIT_SIZE
    assert "phy 12345" in kinds["timer_unit_target"]["detail"]
    # the flush position is past the cut: units the timer had flushed are lost
    assert kinds["timer_check_ahead"]["severity"] == "error"


def test_verify_reports_a_broken_chain_a_misplaced_slot_and_a_wrong_count(tmp_path: Path) -> None:
    exp = expect("store-timer-states")
    waiting = [s for s in exp["timerWheel"] if s["timeMs"] >= exp["timercheck"]["lastReadTimeMs"]]
    assert waiting
    slot = waiting[-1]["index"] * 32
    root = _copy(tmp_path)
    _damage(root, "timerwheel", slot + 16, (999_999).to_bytes(8, "big"))  # lastPos: no unit there
    read = exp["timerWheel"][0]["index"] * 32
    _damage(root, "timerwheel", read, (123).to_bytes(8, "big"))  # a time whose slot is another
    clean, rows = _verify_timer(root)
    kinds = {r["kind"]: r for r in rows}
    assert not clean
    assert kinds["timer_slot_chain"]["offset"] == slot
    assert "no unit at 999999" in kinds["timer_slot_chain"]["detail"]
    assert kinds["timer_slot_misplaced"]["offset"] == read

    root2 = _copy(tmp_path / "2")
    _damage(root2, "timerwheel", slot + 24, (77).to_bytes(4, "big"))  # num
    clean, rows = _verify_timer(root2)
    assert clean and [r["kind"] for r in rows if r["severity"] != "info"] == ["timer_slot_count"]


def test_verify_reports_a_wheel_of_the_wrong_length(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    with open(root / "timerwheel", "r+b") as fh:
        fh.truncate(1000)
    clean, rows = _verify_timer(root)
    assert not clean and rows[0]["kind"] == "timer_file" and rows[0]["file"] == "timerwheel"


# --- delay list --timer / delay stats on the real timer store -------------------------------------


def test_delay_stats_timer_backlog_and_stuck() -> None:
    from mqtool.delay.timer import STUCK_AFTER_MS, timer_summary

    exp = expect("store-timer-states")
    read = exp["timercheck"]["lastReadTimeMs"]
    with Store.open(GOLDEN / "store-timer-states") as store:
        at_stop = timer_summary(store, now=read)
        later = timer_summary(store, now=read + 2 * 3_600_000)
        week = timer_summary(store, now=read + 8 * 86_400_000)
        rows = timer_messages(store, TimerStore.open(store), now=read + 2 * 3_600_000)
    assert at_stop is not None and later is not None and week is not None
    pending = [r for r in rows if r.state in ("waiting", "not-enqueued") and r.delete_key is None]
    assert later.backlog["overdue"] == len(pending) == later.due > 0
    assert later.oldest_overdue_ms == min(r.deliver_ms for r in pending)
    assert later.late_ms == read + 2 * 3_600_000 - later.oldest_overdue_ms
    assert later.stuck and later.read_behind_ms == 2 * 3_600_000 > STUCK_AFTER_MS
    assert not at_stop.stuck and at_stop.backlog["overdue"] == 0
    assert sum(at_stop.states.values()) == at_stop.messages == len(rows)
    # started more than the wheel's 7 days later, the broker reads past the waiting slots
    assert week.skipped_on_restart == sum(r.state == "waiting" for r in rows) > 0


def test_delay_list_timer_json() -> None:
    import json
    import subprocess
    import sys

    exp = expect("store-timer-states")
    proc = subprocess.run(
        [sys.executable, "-m", "mqtool.cli", "--store", str(GOLDEN / "store-timer-states"), "delay", "list",
         "--timer", "--now", str(exp["timercheck"]["lastReadTimeMs"]), "--format", "json"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    rows = json.loads(proc.stdout)
    units = {u["offsetPy"]: u for u in exp["timerLog"]}
    assert [r["phyOffset"] for r in rows] == [
        m["physicalOffset"] for m in exp["messages"] if m.get("topic") == TIMER_TOPIC
    ]
    for r in rows:
        unit = units.get(r["phyOffset"])
        assert r["timerLogPosition"] == (None if unit is None else unit["position"])
        assert r["slotTimestamp"] == (None if unit is None else unit["delayedTimeMs"])
    assert {r["timerState"] for r in rows} >= {"delivered", "recalled", "rolled", "waiting", "not-enqueued"}


# --- a broker killed mid-enqueue (store-timer-crash) --------------------------------------------------


def test_after_a_crash_the_enqueue_resumes_where_the_real_recovery_does() -> None:
    exp = expect("store-timer-crash")
    store, timer = open_timer("store-timer-crash")
    with store:
        position = enqueue_position(store, timer)
        rows = timer_messages(store, timer, now=0)
    assert position == exp["recovered"]["commitQueueOffset"]
    assert [u.to_json()["position"] for u in timer.walk] == [u["position"] for u in exp["timerLog"]]
    assert timer.walk.end == exp["recovered"]["timerLogMaxOffset"]
    # enqueued before the crash but past where recover() resumes: enqueued (and delivered) twice
    again = [r for r in rows if r.enqueue_again]
    assert again and all(r.unit is not None and r.queue_offset >= position for r in again)
    assert len(again) == len(exp["timerLog"]) - position


def test_verify_warns_of_the_second_enqueue() -> None:
    clean, rows = _verify_timer(GOLDEN / "store-timer-crash")
    kinds = {r["kind"]: r for r in rows}
    exp = expect("store-timer-crash")
    assert clean and kinds["timer_reenqueue"]["severity"] == "warning"
    again = len(exp["timerLog"]) - exp["recovered"]["commitQueueOffset"]
    assert kinds["timer_reenqueue"]["detail"].startswith(f"{again} messages already in the timerlog")
