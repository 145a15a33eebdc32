"""Controller mode and the confirm offset (`store.log.confirm`) against the real 5.3.3 code: the store of a
controller-mode master whose checkpoint's confirmPhyOffset lies below the commitlog's end
(tests/data/store-controller, written by the real DefaultMessageStore and AutoSwitchHAService), loaded by the
real store with and without controller mode, normally and after a crash (expect.json `reads`), and with other
confirm offsets written into its checkpoint (cases.json, tests/oracle/controller_cases.py)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from store.config.brokerconf import load_broker_config
from store.log.confirm import AMBIGUOUS, OFF, ON, unconfirmed_topics
from store.storedir import Store
from tests.golden import copy_store, expect, store_path

NAME = "store-controller"
CASES = json.loads((store_path(NAME) / "cases.json").read_text(encoding="utf-8"))


def _conf(tmp_path: Path, text: str) -> Path:
    conf = tmp_path / "broker.conf"
    conf.write_text(text, encoding="utf-8")
    return conf


def _open(root: Path, conf: Path | None) -> Store:
    return Store.open(root, load_broker_config(conf) if conf else None)


def _copy(tmp_path: Path, *, confirm: int | None = None, abort: bool = False) -> Path:
    root = copy_store(NAME, tmp_path / "s")
    (root / "expect.json").unlink()
    (root / "cases.json").unlink()
    if confirm is not None:
        with open(root / "checkpoint", "r+b") as fh:
            fh.seek(32)
            fh.write(confirm.to_bytes(8, "big", signed=True))
    if abort:
        (root / "abort").write_bytes(b"")
    return root


def test_the_fixture_has_an_unconfirmed_tail() -> None:
    """The real writer left what the other tests need: confirm offset below the end, the tail undispatched."""
    want = expect(NAME)
    run = want["run"]
    assert run["confirmOffsetSet"] == want["checkpoint"]["confirmPhyOffset"] < run["maxPhyOffsetAtShutdown"]
    assert run["reputFromOffsetAtShutdown"] == run["confirmOffsetSet"]
    assert not want["abortAfterShutdown"]


@pytest.mark.parametrize("abort", [False, True], ids=["normal", "abnormal"])
@pytest.mark.parametrize("case", ["as-written", *sorted(CASES)])
def test_confirm_offset_is_the_real_recoverys(case: str, abort: bool, tmp_path: Path) -> None:
    if case == "as-written":
        reads, confirm = expect(NAME)["reads"], None
    else:
        reads, confirm = CASES[case]["reads"], CASES[case]["confirmPhyOffset"]
    real = reads["controllerAbnormal" if abort else "controllerNormal"]
    root = _copy(tmp_path, confirm=confirm, abort=abort)
    with _open(root, _conf(tmp_path, "enableControllerMode=true\n")) as store:
        state = store.confirm
        assert state is not None and state.mode.mode == ON
        assert state.recovery == ("abnormal" if abort else "normal")
        assert state.max_offset == real["maxPhyOffset"]
        assert state.min_offset == real["minPhyOffset"]
        assert state.confirm_offset == real["confirmOffsetAfterLoad"]
        assert (state.load_fails is None) == real["loaded"], state.load_fails
        # units already on disk are served past it (the real abnormal load keeps them: cases.json)
        assert store.served_end == min(real["maxPhyOffset"], max(state.confirm_offset, _real_cq_end()))
        assert store.consume_queue_end == _real_cq_end()


def _real_cq_end() -> int:
    """The end of the last unit the real store read after a load dispatching nothing (controllerAbnormal)."""
    queues = expect(NAME)["reads"]["controllerAbnormal"]["consumeQueuesAfterLoad"]
    units = [u for q in queues.values() for u in q["units[queueOffset,phyOffset,size,tagsCode]"]]
    return max(u[1] + u[2] for u in units)


@pytest.mark.parametrize("conf", ["", "enableControllerMode=false\n"], ids=["unset", "false"])
def test_without_controller_mode_every_valid_record_is_served(conf: str, tmp_path: Path) -> None:
    """broker.conf given without it: the DefaultHAService broker serves to the valid end (its confirm offset
    after load is the max offset, expect.json `classicNormal`)."""
    real = expect(NAME)["reads"]["classicNormal"]
    with _open(store_path(NAME), _conf(tmp_path, conf)) as store:
        assert store.layout.controller_mode.mode == OFF
        assert store.confirm is None
        assert store.served_end == real["confirmOffsetAfterLoad"] == real["maxPhyOffset"]
        assert not [p for p in store.layout.kind.parts if p.name == "controller-mode replica"]


def test_files_without_broker_conf_are_ambiguous() -> None:
    """epochFileCheckpoint alone: read as controller mode, said so, and no write is trusted."""
    with Store.open(store_path(NAME)) as store:
        mode = store.layout.controller_mode
        assert mode.mode == AMBIGUOUS and mode.files == ("epochFileCheckpoint",)
        assert "--broker-config" in mode.reading
        assert store.confirm is not None and store.confirm.confirm_offset == 9526
        part = next(p for p in store.layout.kind.parts if p.name == "controller-mode replica")
        assert not part.reads and part.writes == ()


def test_the_unconfirmed_tail_per_topic(tmp_path: Path) -> None:
    events = expect(NAME)["events"]
    want = Counter(e["topic"] for e in events if not e["confirmed"])
    with _open(store_path(NAME), _conf(tmp_path, "enableControllerMode=true\n")) as store:
        state = store.confirm
        assert unconfirmed_topics(store, state) == dict(want)
        tail = [e for e in events if not e["confirmed"]]
        assert state.unconfirmed_bytes == sum(e["wroteBytes"] for e in tail)
        assert state.confirm_offset == tail[0]["wroteOffset"]


def _tail(events: list[dict]) -> list[dict]:
    return [e for e in events if not e["confirmed"]]


def test_info_shows_the_confirm_offset_and_the_unconfirmed_tail(tmp_path: Path) -> None:
    from mqtool.info import store_info

    want = expect(NAME)
    tail = _tail(want["events"])
    with _open(store_path(NAME), _conf(tmp_path, "enableControllerMode=true\n")) as store:
        doc = store_info(store)
    ctl = doc["controller"]
    assert ctl["mode"] == "on" and ctl["recovery"] == "normal"
    assert ctl["checkpointConfirmPhyOffset"] == want["checkpoint"]["confirmPhyOffset"]
    assert ctl["confirmOffset"] == want["reads"]["controllerNormal"]["confirmOffsetAfterLoad"]
    assert ctl["maxPhyOffset"] == want["reads"]["controllerNormal"]["maxPhyOffset"]
    assert ctl["unconfirmedMessages"] == len(tail)
    assert ctl["unconfirmedByTopic"] == dict(Counter(e["topic"] for e in tail))
    dispatch = doc["dispatch"]
    assert dispatch["undispatchedBytes"] == 0  # what is past the confirm offset is not "undispatched"
    assert dispatch["undispatchedUnconfirmedBytes"] == sum(e["wroteBytes"] for e in tail)
    # the layout part is read exactly with broker.conf, and writes but appends stay possible
    part = next(p for p in doc["layout"]["parts"] if p["name"] == "controller-mode replica")
    assert part["reads"] and "log" not in part["writes"]


def test_info_without_controller_mode_has_no_controller_section(tmp_path: Path) -> None:
    from mqtool.info import store_info

    with _open(store_path(NAME), _conf(tmp_path, "brokerName=broker-a\n")) as store:
        doc = store_info(store)
    assert doc["controller"] is None
    assert doc["dispatch"]["undispatchedBytes"] == sum(e["wroteBytes"] for e in _tail(expect(NAME)["events"]))


def test_verify_names_the_unconfirmed_tail_instead_of_undispatched_records(tmp_path: Path) -> None:
    """The old code called the tail `undispatched` errors (no abort file): the broker leaves it so."""
    from mqtool.verify import verify_store

    tail = _tail(expect(NAME)["events"])
    with _open(store_path(NAME), _conf(tmp_path, "enableControllerMode=true\n")) as store:
        report = verify_store(store)
    kinds = Counter(r["kind"] for r in report.problem_rows())
    assert report.clean, report.problem_rows()
    assert kinds["undispatched"] == 0 and kinds["cq_missing_unit"] == 0
    (row,) = [r for r in report.problem_rows() if r["kind"] == "unconfirmed"]
    assert row["severity"] == "warning" and row["offset"] == tail[0]["wroteOffset"]
    assert f"{len(tail)} record(s)" in row["detail"]
    assert report.summary["controller"]["confirmOffset"] == tail[0]["wroteOffset"]


def test_verify_counts_units_past_the_confirm_offset_as_served(tmp_path: Path) -> None:
    """confirmPhyOffset 9042 (cases.json "earlier-boundary"): the real store keeps and serves the units up to
    9526 after either recovery (TopicA queues end at 15 in controllerAbnormal)."""
    case = CASES["earlier-boundary"]
    assert case["reads"]["controllerAbnormal"]["queues"]["TopicA/0"] == [0, 15]
    from mqtool.verify import verify_store

    root = _copy(tmp_path, confirm=case["confirmPhyOffset"])
    with _open(root, _conf(tmp_path, "enableControllerMode=true\n")) as store:
        report = verify_store(store)
    rows = {r["kind"]: r for r in report.problem_rows()}
    served = [e for e in expect(NAME)["events"] if e["confirmed"] and e["wroteOffset"] >= 9042]
    assert rows["past_confirm"]["severity"] == "info"
    assert rows["past_confirm"]["detail"].startswith(f"{len(served)} record(s) from phy 9042")
    assert "undispatched" not in rows


def test_verify_names_a_confirm_offset_the_load_fails_on(tmp_path: Path) -> None:
    """confirmPhyOffset 9600, inside a record: the real controller-mode normal load fails (cases.json)."""
    from mqtool.verify import verify_store

    assert CASES["mid-record"]["reads"]["controllerNormal"]["loaded"] is False
    root = _copy(tmp_path, confirm=CASES["mid-record"]["confirmPhyOffset"])
    with _open(root, _conf(tmp_path, "enableControllerMode=true\n")) as store:
        report = verify_store(store)
    assert not report.clean
    assert [r["kind"] for r in report.problem_rows() if r["severity"] == "error"] == ["controller_load"]


def test_rebuild_dispatches_up_to_the_confirm_offset_as_the_reput_did(tmp_path: Path) -> None:
    """ConsumeQueues and index removed, `rebuild all --execute` with broker.conf: the queues come back byte
    for byte as the real reput wrote them (it stopped at the confirm offset); no TopicLate queue, no key of
    the tail indexed. The old code dispatched the tail (TopicLate/0 and 4 more units per TopicA queue)."""
    import shutil

    from mqtool.rebuild import rebuild

    root = _copy(tmp_path)
    original = {
        p.relative_to(root): p.read_bytes() for p in (root / "consumequeue").rglob("*") if p.is_file()
    }
    shutil.rmtree(root / "consumequeue")
    shutil.rmtree(root / "index")
    geometry = "mappedFileSizeConsumeQueue=6000\nmaxHashSlotNum=64\nmaxIndexNum=4000\n"  # expect.json's
    conf = _conf(tmp_path, "enableControllerMode=true\n" + geometry)
    with _open(root, conf) as store:
        report = rebuild(store, "all", execute=True, note=lambda _m: None)
    assert report.executed
    doc = report.to_json()
    tail = _tail(expect(NAME)["events"])
    assert doc["commitlog"]["dispatchEnd"] == tail[0]["wroteOffset"]
    assert doc["commitlog"]["unconfirmedMessages"] == len(tail)
    rebuilt = {p.relative_to(root): p.read_bytes() for p in (root / "consumequeue").rglob("*") if p.is_file()}
    assert rebuilt == original
    with _open(root, conf) as store:
        for e in tail:
            assert e["wroteOffset"] not in store.index_service.query_offset(e["topic"], e["key"]).phy_offsets


def test_rebuild_dry_run_matches_the_broker_s_files(tmp_path: Path) -> None:
    from mqtool.rebuild import rebuild

    with _open(store_path(NAME), _conf(tmp_path, "enableControllerMode=true\n")) as store:
        report = rebuild(store, "cq", note=lambda _m: None)
    assert not report.changes
    assert any("dispatched up to 9526" in w for w in report.warnings)


@pytest.mark.parametrize(
    "args",
    [["rebuild", "cq"], ["delay", "replay"], ["txn", "resolve", "--policy", "commit"]],
    ids=["rebuild", "delay-replay", "txn-resolve"],
)
def test_writes_refuse_without_broker_conf_and_appends_refuse_with_it(args, tmp_path: Path, capsys) -> None:
    from tests.golden import run_main, snapshot

    root = _copy(tmp_path)
    before = snapshot(root)
    code, _out, err = run_main(["--store", str(root), *args], capsys)
    assert code == 1 and "controller-mode replica" in err and "--broker-config" in err, err
    conf = _conf(tmp_path, "enableControllerMode=true\n")
    code, _out, err = run_main(["--store", str(root), "--broker-config", str(conf), *args], capsys)
    if args[0] == "rebuild":
        assert code == 0, err
    else:
        assert code == 1 and "replicated log" in err, err
    assert snapshot(root) == before


def _tail_message(store: Store, event: dict):
    return store.commitlog.read_message_at(event["wroteOffset"])


def test_query_key_does_not_serve_the_unconfirmed_tail(tmp_path: Path) -> None:
    """The real index (controllerNormal before any restart: the files as they are) has no entry for a tail
    key, and --scan stops at the confirm offset instead of reporting the index as behind. The old code
    called the tail unindexed and --scan found it."""
    from mqtool.query.key import query_by_key

    tail = _tail(expect(NAME)["events"])
    e = next(x for x in tail if x["topic"] == "TopicA")
    with _open(store_path(NAME), _conf(tmp_path, "enableControllerMode=true\n")) as store:
        result = query_by_key(store, "TopicA", e["key"], scan=True)
    assert result.messages == []
    assert not result.coverage.behind
    assert result.coverage.served_end == tail[0]["wroteOffset"]
    assert any("unconfirmed tail" in n for n in result.notes())


def test_query_key_without_controller_mode_scans_the_tail(tmp_path: Path) -> None:
    """Contrast: the same store read as a classic broker reads it (its recovery serves every valid record)."""
    from mqtool.query.key import query_by_key

    e = next(x for x in _tail(expect(NAME)["events"]) if x["topic"] == "TopicA")
    with _open(store_path(NAME), _conf(tmp_path, "brokerName=broker-a\n")) as store:
        result = query_by_key(store, "TopicA", e["key"], scan=True)
    assert [m.physical_offset for m in result.messages] == [e["wroteOffset"]]


def test_query_id_by_offset_shows_a_tail_message_labelled(tmp_path: Path) -> None:
    """An offsetMsgId is read from the log at its offset, as the broker's viewMessageById does
    (lookMessageByOffset has no confirm check): shown, and named unconfirmed."""
    from mqtool.query.msgid import query_by_id

    e = _tail(expect(NAME)["events"])[1]
    with _open(store_path(NAME), _conf(tmp_path, "enableControllerMode=true\n")) as store:
        ident = _tail_message(store, e).offset_msg_id
        result = query_by_id(store, ident)
        assert [m.physical_offset for m in result.messages] == [e["wroteOffset"]]
        assert any(n.startswith("unconfirmed: 1 message(s)") for n in result.notes())
        confirmed = next(x for x in expect(NAME)["events"] if x["confirmed"])
        plain = query_by_id(store, _tail_message(store, confirmed).offset_msg_id)
        assert not any(n.startswith("unconfirmed") for n in plain.notes())


@pytest.mark.parametrize("case", sorted(CASES))
def test_startup_refuses_where_the_real_controller_mode_load_fails(case: str, tmp_path: Path) -> None:
    from store.startup import startup_verdict

    real = CASES[case]["reads"]["controllerNormal"]
    root = _copy(tmp_path, confirm=CASES[case]["confirmPhyOffset"])
    with _open(root, _conf(tmp_path, "enableControllerMode=true\n")) as store:
        verdict = startup_verdict(store)
    codes = [r.code for r in verdict.reasons]
    assert ("controller_load_fails" in codes) == (not real["loaded"]), verdict.as_dict()
    assert (verdict.verdict == "refuse") == (not real["loaded"])


def test_a_4x_store_has_no_confirm_offset(tmp_path: Path) -> None:
    """4.9.8 has no controller mode (no store/ha/autoswitch): its broker serves every valid record."""
    root = copy_store("store-49a", tmp_path / "s")
    (root / "epochFileCheckpoint").write_text("1\n0-0\n")
    with _open(root, _conf(tmp_path, "enableControllerMode=true\n")) as store:
        assert store.confirm is None
        assert store.served_end == store.commitlog.max_offset


def test_dump_commitlog_labels_the_tail(tmp_path: Path) -> None:
    from mqtool.dump import commitlog_records

    events = {e["wroteOffset"]: e for e in expect(NAME)["events"]}
    with _open(store_path(NAME), _conf(tmp_path, "enableControllerMode=true\n")) as store:
        rows = [r for r in commitlog_records(store) if r["kind"] == "message"]
    assert {r["physicalOffset"]: r["unconfirmed"] for r in rows} == {
        off: not e["confirmed"] for off, e in events.items()
    }


LONE = "store-controller-lone"


@pytest.mark.parametrize("abort", [False, True], ids=["normal", "abnormal"])
def test_a_lone_master_s_stale_confirm_offset(abort: bool, tmp_path: Path) -> None:
    """A controller-mode master without slaves never stores its confirm offset (store-controller-lone: 0 in
    the checkpoint, every message dispatched): the real load keeps 0 and serves every unit; so does mqtool."""
    want = expect(LONE)
    real = want["reads"]["controllerAbnormal" if abort else "controllerNormal"]
    root = copy_store(LONE, tmp_path / "s")
    if abort:
        (root / "abort").write_bytes(b"")
    with _open(root, _conf(tmp_path, "enableControllerMode=true\n")) as store:
        assert store.confirm.confirm_offset == real["confirmOffsetAfterLoad"] == 0
        served = {q: v["maxOffset"] - v["minOffset"] for q, v in real["queues"].items()}
        assert sum(served.values()) == len(want["events"])  # the real store serves every message
        assert store.served_end == real["maxPhyOffset"]


def test_verify_a_lone_master_names_served_records_past_the_confirm_offset(tmp_path: Path) -> None:
    from mqtool.verify import verify_store

    with _open(store_path(LONE), _conf(tmp_path, "enableControllerMode=true\n")) as store:
        report = verify_store(store)
    rows = {r["kind"]: r for r in report.problem_rows()}
    assert report.clean and "unconfirmed" not in rows and "undispatched" not in rows
    assert rows["past_confirm"]["detail"].startswith(f"{len(expect(LONE)['events'])} record(s) from phy 0")


def test_rebuild_keeps_what_a_lone_master_serves(tmp_path: Path) -> None:
    """A rebuild to the bare confirm offset (0) would drop every unit the broker serves: it goes to the
    consume queues' end instead, and matches the real reput's files."""
    from mqtool.rebuild import rebuild

    with _open(store_path(LONE), _conf(tmp_path, "enableControllerMode=true\n")) as store:
        report = rebuild(store, "cq", note=lambda _m: None)
    assert not report.changes
    assert report.build.dispatch_end == expect(LONE)["reads"]["controllerNormal"]["maxPhyOffset"]
    assert report.build.unconfirmed == 0
