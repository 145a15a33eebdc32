"""`mqtool replicas diff`, `info` and `verify` on a controller-mode pair the real AutoSwitchHAService of 5.3.3
made (tests/data/autoswitch-pair): A master at epoch 1 with an unconfirmed tail when it crashed, B master at
epoch 2 with puts of its own (`diverged`), then A rejoined as B's slave and truncated by the real
AutoSwitchHAClient (`rejoined`). Every expected value comes from the fixture's expect.json (what the real
client truncated, what a real controller-mode load serves), never from mqtool's answer."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from golden import run_mqtool

from mqtool.replicas.diff import diff_replicas
from mqtool.verify import verify_store
from store.config.brokerconf import load_broker_config
from store.ha.epochcache import load_epochs, reanchored
from store.storedir import Store

PAIR = Path(__file__).parent / "data" / "autoswitch-pair"
EXPECT = json.loads((PAIR / "expect.json").read_text())
EVENTS = EXPECT["events"]
READS = EXPECT["reads"]
REJOIN = EXPECT["rejoin"]
SNAPSHOTS = ("diverged/a", "diverged/b", "rejoined/a", "rejoined/b")


def _truncation() -> int:
    """The offset the real client truncated A to (AutoSwitchHAClient.doTruncate -> truncateFiles)."""
    (call,) = [t for t in REJOIN["truncationsA"] if t["via"] == "truncateFiles"]
    assert call["thread"] == "AutoSwitchHAClient"
    assert REJOIN["slaveRequestOffset"] == call["offset"]  # what A then reported to B
    return call["offset"]


def _conf(tmp_path: Path) -> Path:
    """What both brokers ran with (no role: in controller mode the controller decides it)."""
    conf = tmp_path / "broker.conf"
    conf.write_text("brokerName=broker-a\nenableControllerMode=true\n")
    return conf


def _open(name: str, conf: Path | None = None) -> Store:
    return Store.open(PAIR / name, load_broker_config(conf) if conf else None)


def _diff(a: str, b: str, conf: Path):
    with _open(a, conf) as sa, _open(b, conf) as sb:
        return diff_replicas(sa, sb)


def test_the_fixture_is_the_story_the_issue_asks_for() -> None:
    """Two epochs, a confirm offset below A's end, and the real client truncated A (not B) below A's end."""
    point = _truncation()
    div = EXPECT["diverged"]
    assert div["checkpointA"]["confirmPhyOffset"] == div["syncedEnd"] == point < div["aEnd"]
    assert READS["diverged/a"]["recovery"] == "abnormal"
    (call,) = [t for t in REJOIN["truncationsA"] if t["via"] == "truncateFiles"]
    assert call["maxPhyOffsetBefore"] == div["aEnd"]
    # B's only truncation is changeToMaster's truncateInvalidMsg at its own end: nothing cut
    assert all(t["offset"] == t["maxPhyOffsetBefore"] for t in REJOIN["truncationsB"])
    assert [e[:2] for e in READS["diverged/b"]["epochEntries[epoch,start,end]"]] == [[1, 0], [2, point]]


@pytest.mark.parametrize("name", SNAPSHOTS)
def test_epoch_files_read_as_the_real_cache_holds_them(name: str) -> None:
    real = READS[name]["epochEntries[epoch,start,end]"]
    with _open(name) as store:
        epochs = load_epochs(store.root, store.commitlog.max_offset)
    assert [[e.epoch, e.start_offset] for e in epochs.entries] == [r[:2] for r in real]
    assert list(epochs.ends[:-1]) == [r[2] for r in real[:-1]]
    assert epochs.ends[-1] == READS[name]["maxPhyOffset"]  # doTruncate's setLastEpochEntryEndOffset


def test_diff_names_the_divergence_and_the_truncation_the_real_client_made(tmp_path: Path) -> None:
    point = _truncation()
    div = EXPECT["diverged"]
    result = _diff("diverged/a", "diverged/b", _conf(tmp_path))
    log = result.log
    assert log.max_offsets == (div["aEnd"], div["b"]["maxPhyOffset"])
    assert log.record_start == point
    first_a = next(e for e in EVENTS if e["store"] == "a" and e["physicalOffset"] >= point)
    first_b = next(e for e in EVENTS if e["store"] == "b")
    ra, rb = log.records
    assert (ra.physical_offset, ra.uniq_key) == (point, first_a["uniqKey"])
    assert (rb.physical_offset, rb.uniq_key) == (point, first_b["uniqKey"])
    verdict = next(v for v in result.ha if v.master == "B")  # the controller elected B at epoch 2
    assert (verdict.outcome, verdict.truncates, verdict.refuses) == ("truncate", True, False)
    dropped = f"[{point}, {div['aEnd']})"
    assert f"the slave A truncates its commitlog to {point}, dropping {dropped}" in verdict.text
    assert result.ha_not_compared is None


def test_the_rejoined_pair_agrees(tmp_path: Path) -> None:
    """After the real truncation and transfer A holds B's log: the same bytes, the same epochs, in sync."""
    result = _diff("rejoined/a", "rejoined/b", _conf(tmp_path))
    assert result.log.identical and result.identical and not result.configs.rows
    assert result.log.max_offsets == (REJOIN["b"]["maxPhyOffset"],) * 2
    assert {v.master: v.outcome for v in result.ha} == {"A": "in-sync", "B": "in-sync"}
    # what A kept is its own prefix: the bytes before the truncation did not change
    point = _truncation()
    for name in ("00000000000000000000",):
        kept = (PAIR / "diverged/a/commitlog" / name).read_bytes()[:point]
        assert (PAIR / "rejoined/a/commitlog" / name).read_bytes()[:point] == kept


def test_the_cli_names_the_controller_rule(tmp_path: Path) -> None:
    """The text said `HA (classic DefaultHAService)` above the controller mode's epoch verdicts."""
    conf = str(_conf(tmp_path))
    pair = (str(PAIR / "diverged/a"), str(PAIR / "diverged/b"))
    done = run_mqtool("replicas", "diff", *pair, "--broker-config", conf, "--broker-config", conf)
    assert done.returncode == 1, done.stderr
    assert "HA (controller mode: AutoSwitchHAService's epoch rule) if the pair is started now:" in done.stdout
    assert "classic DefaultHAService" not in done.stdout


def _served_end(name: str) -> int:
    """Where what the real store serves after a controller-mode load and start ends: the end of the last
    record of any queue below the queue's real max offset (`reads`)."""
    queues = READS[name]["queuesAfterStart[min,max]"]
    point = _truncation()
    side = "a" if name == "diverged/a" else "b"
    log = [e for e in EVENTS if e["physicalOffset"] < point and e["store"] == "a"]
    log += [e for e in EVENTS if e["physicalOffset"] >= point and e["store"] == side]
    served = [e for e in log if e["queueOffset"] < queues[f"{e['topic']}/{e['queueId']}"][1]]
    return max(e["physicalOffset"] + e["size"] for e in served)


@pytest.mark.parametrize("name", SNAPSHOTS)
def test_confirm_offset_and_served_queues_are_the_real_loads(name: str, tmp_path: Path) -> None:
    real = READS[name]
    with _open(name, _conf(tmp_path)) as store:
        state = store.confirm
        assert state.recovery == real["recovery"]
        assert state.confirm_offset == real["confirmOffsetAfterLoad"]
        assert (state.min_offset, state.max_offset) == (real["minPhyOffset"], real["maxPhyOffset"])
        assert store.served_end == _served_end(name)
        for key, (lo, hi) in real["queuesAfterStart[min,max]"].items():
            topic, queue_id = key.split("/")
            cq = store.consume_queue(topic, int(queue_id))
            assert (cq.min_offset, cq.max_offset) == (lo, hi), key


@pytest.mark.parametrize("name", SNAPSHOTS)
def test_verify_with_the_brokers_config(name: str, tmp_path: Path) -> None:
    """Clean as the brokers ran them; the crashed A's tail is named unconfirmed (not dispatched errors), and
    what B dispatched past its checkpoint's confirm offset is named served."""
    real = READS[name]
    with _open(name, _conf(tmp_path)) as store:
        report = verify_store(store)
    rows = {r["kind"]: r for r in report.problem_rows()}
    assert report.clean, report.problem_rows()
    assert report.summary["controller"]["confirmOffset"] == real["confirmOffsetAfterLoad"]
    past = real["maxPhyOffset"] - real["confirmOffsetAfterLoad"]
    if name == "diverged/a":
        tail = [e for e in EVENTS if e["store"] == "a" and e["physicalOffset"] >= _truncation()]
        assert rows["unconfirmed"]["offset"] == real["confirmOffsetAfterLoad"]
        assert f"{len(tail)} record(s)" in rows["unconfirmed"]["detail"]
    elif past:
        assert rows["past_confirm"]["severity"] == "info" and "unconfirmed" not in rows
    else:
        assert "past_confirm" not in rows and "unconfirmed" not in rows


RESTARTS = json.loads((PAIR / "restarts.json").read_text())


def _slave_truncation(real: dict) -> dict:
    """The client's first truncateFiles (a reconnect's handshake runs it again, cutting nothing)."""
    first, *again = [t for t in real["truncationsSlave"] if t["via"] == "truncateFiles"]
    assert all(t["offset"] == first["offset"] for t in again)
    return first


def test_a_restart_at_a_new_epoch_truncates_as_predicted(tmp_path: Path) -> None:
    """The diverged pair restarted by the real code, B elected at epoch 4: A truncated where diff said."""
    real = RESTARTS["newEpoch"]
    call = _slave_truncation(real)
    assert real["slaveReachedMasterEnd"] and real["slaveFirstDifferingByte"] is None
    verdict = next(v for v in _diff("diverged/a", "diverged/b", _conf(tmp_path)).ha if v.master == "B")
    assert f"truncates its commitlog to {call['offset']}," in verdict.text
    assert call["offset"] == real["slaveRequestOffset"] == _truncation()


def test_a_restart_at_the_same_epoch_keeps_the_diverged_tail_and_diff_says_so(tmp_path: Path) -> None:
    """B restarted at its same epoch 2 (the controller had not noticed it down): the real changeToMaster
    re-anchors epoch 2 at B's end, the real client truncates A nowhere below its end, and A's log differs
    from B's from the divergence on. The old verdict only said A truncates to 14034."""
    real = RESTARTS["sameEpoch"]
    div = EXPECT["diverged"]
    call = _slave_truncation(real)
    assert call["offset"] == call["maxPhyOffsetBefore"] == div["aEnd"]  # nothing cut
    assert [e[:2] for e in real["master"]["epochEntries[epoch,start,end]"]] == [
        [1, 0],
        [2, div["b"]["maxPhyOffset"]],
    ]
    with _open("diverged/b") as b:
        again = reanchored(load_epochs(b.root, b.commitlog.max_offset), b.commitlog.max_offset)
    real_entries = real["master"]["epochEntries[epoch,start,end]"]
    assert [[e.epoch, e.start_offset] for e in again.entries] == [e[:2] for e in real_entries]
    assert list(again.ends[:-1]) == [e[2] for e in real_entries[:-1]]
    result = _diff("diverged/a", "diverged/b", _conf(tmp_path))
    verdict = next(v for v in result.ha if v.master == "B")
    assert real["slaveFirstDifferingByte"] == result.log.first_difference
    assert "restarts at its same epoch 2" in verdict.text
    assert f"the consistent point becomes {call['offset']}" in verdict.text
    assert f"the slave A keeps its diverged bytes [{_truncation()}, {div['aEnd']})" in verdict.text
    assert f"receives the master's bytes from {div['aEnd']} on" in verdict.text


def test_salvage_into_the_new_master_is_accepted_by_the_real_ha(tmp_path: Path) -> None:
    """restarts.json `salvagedNewEpoch`: mqtool's salvage of A's tail into B (it refuses controller-mode
    stores, so the generator passed a broker.conf without enableControllerMode), then the real pair
    restarted, B at epoch 4: A truncated to the divergence and ended byte-equal to B, every queue grown by
    what was salvaged. The plan mqtool makes now is the one that run executed."""
    from mqtool.replicas.salvage import plan_salvage

    real = RESTARTS["salvagedNewEpoch"]
    point = _truncation()
    assert _slave_truncation(real)["offset"] == real["slaveRequestOffset"] == point
    assert real["slaveReachedMasterEnd"] and real["slaveFirstDifferingByte"] is None
    assert real["slave"]["queues[min,max]"] == real["master"]["queues[min,max]"]
    into = tmp_path / "b"
    shutil.copytree(PAIR / "diverged/b", into)
    (into / "config").mkdir()
    shutil.copy(Path(__file__).parent / "data" / "store-a" / "config" / "topics.json", into / "config")
    with Store.open(into) as b, _open("diverged/a") as a:
        plan = plan_salvage(b, a)
    copied = [r.message for r in plan.to_copy]
    assert [m.uniq_key for m in copied] == real["salvagedUniqKeys"]
    tail = [e for e in EVENTS if e["store"] == "a" and e["physicalOffset"] >= point]
    assert [m.uniq_key for m in copied] == [e["uniqKey"] for e in tail]
    before = READS["diverged/b"]["queuesAfterStart[min,max]"]
    for key, (lo, hi) in real["master"]["queues[min,max]"].items():
        grown = sum(1 for e in tail if f"{e['topic']}/{e['queueId']}" == key)
        assert (lo, hi) == (before[key][0], before[key][1] + grown), key
    epochs = real["master"]["epochEntries[epoch,start,end]"]
    assert [e[:2] for e in epochs] == [[1, 0], [2, point], [4, real["master"]["maxPhyOffset"]]]


@pytest.mark.parametrize("name", ["diverged/a", "diverged/b"])
def test_info_says_which_part_of_the_tail_past_the_confirm_offset_is_served(
    name: str, tmp_path: Path
) -> None:
    """B's records past its checkpoint's confirm offset were dispatched while it was master and the real
    load serves them (`reads`); A's crashed tail is served by neither recovery. The old text said of both
    that the reput does not dispatch them."""
    from golden import run_mqtool

    real = READS[name]
    done = run_mqtool("--broker-config", str(_conf(tmp_path)), "info", "-s", str(PAIR / name), "-f", "plain")
    assert done.returncode == 0, done.stderr
    (line,) = [x for x in done.stdout.splitlines() if x.startswith("unconfirmed tail")]
    served = _served_end(name)
    if served > real["confirmOffsetAfterLoad"]:
        assert f"already dispatched up to {served} (served)" in line
    else:
        assert "the reput does not dispatch them until they are confirmed" in line
        assert "already dispatched" not in line


@pytest.mark.parametrize("name", SNAPSHOTS)
def test_query_key_finds_what_the_real_index_serves(name: str, tmp_path: Path) -> None:
    """IndexService.queryOffset of every key after the real controller-mode load and start (`reads` index):
    the crashed A's tail keys are found nowhere (its abnormal recovery drops the index files and dispatches
    only up to the confirm offset), B's epoch-2 keys are found."""
    from mqtool.query.key import query_by_key

    real = READS[name]["index"]
    assert any(q["phyOffsets"] for q in real) and any(not q["phyOffsets"] for q in real)
    with _open(name, _conf(tmp_path)) as store:
        for q in real:
            found = query_by_key(store, q["topic"], q["key"], max_num=q["maxNum"]).messages
            assert sorted(m.physical_offset for m in found) == sorted(q["phyOffsets"]), q


@pytest.mark.parametrize("pair", ["diverged", "rejoined"])
def test_queue_rows_are_what_each_real_load_serves(pair: str, tmp_path: Path) -> None:
    """replicas diff's consume-queue rows: exactly the queues whose served range differs between the two
    real loads (`reads` queuesAfterStart), with each side's [min, max)."""
    ra = READS[f"{pair}/a"]["queuesAfterStart[min,max]"]
    rb = READS[f"{pair}/b"]["queuesAfterStart[min,max]"]
    result = _diff(f"{pair}/a", f"{pair}/b", _conf(tmp_path))
    rows = {f"{r.topic}/{r.queue_id}": r for r in result.queues.rows}
    assert set(rows) == {k for k in ra if ra[k] != rb[k]}
    for key, row in rows.items():
        assert row.state == "differs"
        assert [row.a["minOffset"], row.a["maxOffset"]] == ra[key]
        assert [row.b["minOffset"], row.b["maxOffset"]] == rb[key]
    assert [d["servedEnd"] for d in result.queues.dispatch] == [
        _served_end(f"{pair}/a"),
        _served_end(f"{pair}/b"),
    ]


def test_a_restart_with_a_as_the_new_master_truncates_b_as_predicted(tmp_path: Path) -> None:
    """restarts.json `masterANewEpoch`: the diverged pair restarted with A elected at epoch 4 (B its slave):
    the real client truncates B to the divergence, dropping B's epoch-2 records, as diff's verdict for
    master A says; B then holds A's log, tail included."""
    real = RESTARTS["masterANewEpoch"]
    div = EXPECT["diverged"]
    call = _slave_truncation(real)
    assert real["masterBroker"] == "a" and real["slaveReachedMasterEnd"]
    assert real["slaveFirstDifferingByte"] is None and real["slave"]["maxPhyOffset"] == div["aEnd"]
    verdict = next(v for v in _diff("diverged/a", "diverged/b", _conf(tmp_path)).ha if v.master == "A")
    assert (verdict.outcome, verdict.truncates) == ("truncate", True)
    dropped = f"[{call['offset']}, {call['maxPhyOffsetBefore']})"
    assert f"the slave B truncates its commitlog to {call['offset']}, dropping {dropped}" in verdict.text
    assert (
        "same epoch" not in verdict.text
    )  # B's epoch 2 is past A's: the controller can only give A a new one
