"""LMQ multi-dispatch on store-lmq (written by RocketMQ 5.3.3 with enableLmq and enableMultiDispatch, see
tests/data/store-lmq/README.md): mqtool's readers against what the real classes read back, its
dispatcher and rebuild against the files the real ReputMessageService wrote."""

from __future__ import annotations

import shutil
from functools import cache
from pathlib import Path

import pytest
from golden import GOLDEN, copy_store, run_mqtool, snapshot

from store.config.brokerconf import load_broker_config
from store.queue.consumequeue import ConsumeQueue
from store.queue.lmq import LmqSettings, multi_dispatch_units, resolve_lmq_settings
from store.rebuild import build as rebuild
from store.storedir import Store

ROOT = GOLDEN / "store-lmq"
UNITS_KEY = "units[queueOffset,phyOffset,size,tagsCode]"


@cache
def expect() -> dict:
    import json

    with open(ROOT / "expect.json", encoding="utf-8") as fh:
        return json.load(fh)


def lmq_queues() -> dict[str, dict]:
    return {k: v for k, v in expect()["consumeQueues"].items() if k.startswith("%LMQ%")}


def test_fixture_has_dozens_of_lmq_queues_over_several_files() -> None:
    queues = lmq_queues()
    assert len(queues) >= 40
    assert all(k.endswith("/0") for k in queues)  # LMQ_QUEUE_ID
    assert max(len(list((ROOT / "consumequeue" / k).iterdir())) for k in queues) >= 3
    # the retry topic's records name LMQ queues but are never multi-dispatched
    retry = [e for e in expect()["events"] if e["topic"].startswith("%RETRY%")]
    assert retry and all(e["innerMultiQueueOffset"] is None for e in retry)


def test_every_lmq_unit_read_as_the_broker_reads_it() -> None:
    for key, q in lmq_queues().items():
        topic, qid = key.rsplit("/", 1)
        queue = ConsumeQueue(ROOT, topic, int(qid))
        try:
            assert (queue.min_offset, queue.max_offset) == (q["minOffset"], q["maxOffset"]), key
            got = [[o, u.phy_offset, u.size, u.tags_code] for o, u in queue.iter_units()]
        finally:
            queue.close()
        assert got == q[UNITS_KEY], key


def test_lmq_settings_from_the_files_and_from_broker_conf(tmp_path: Path) -> None:
    assert resolve_lmq_settings(ROOT) == LmqSettings(True, True, "current files")
    assert resolve_lmq_settings(GOLDEN / "store-a") == LmqSettings()
    copy = copy_store("store-lmq", tmp_path / "s", parts=("commitlog", "config"))
    (copy / "broker.conf").write_text("enableLmq=true\nenableMultiDispatch=false\n")
    with Store.open(copy, load_broker_config(copy / "broker.conf")) as store:
        assert store.layout.lmq == LmqSettings(True, False, "broker.conf")


def test_multi_dispatch_units_follow_the_broker_rules() -> None:
    on = LmqSettings(True, True)
    units = multi_dispatch_units("T", 3, "%LMQ%a,b,%LMQ%x/y,%LMQ%c", "4,5,6,7", on)
    # a non-LMQ name keeps the record's queue id; a name with a path separator is skipped
    assert [(u.queue, u.queue_id, u.queue_offset) for u in units] == [
        ("%LMQ%a", 0, 4),
        ("b", 3, 5),
        ("%LMQ%c", 0, 7),
    ]
    assert multi_dispatch_units("%RETRY%g", 0, "%LMQ%a", "1", on) == []
    assert multi_dispatch_units("rmq_sys_X", 0, "%LMQ%a", "1", on) == []
    assert multi_dispatch_units("SCHEDULE_TOPIC_XXXX", 0, "%LMQ%a", "1", on) == []
    assert multi_dispatch_units("T", 0, "%LMQ%a", "1", LmqSettings(True, False)) == []
    assert multi_dispatch_units("T", 0, "%LMQ%a", " ", on) == []
    problems: list[str] = []
    assert multi_dispatch_units("T", 0, "%LMQ%a,%LMQ%b", "1", on, problems) == []
    assert problems and "2 queues but" in problems[0]
    problems.clear()
    units = multi_dispatch_units("T", 0, "%LMQ%a,%LMQ%b", "1,null", on, problems)
    assert [u.queue for u in units] == ["%LMQ%a"] and "'null'" in problems[0]


def staged(root: Path, lmq: LmqSettings | None = None) -> rebuild.BuildResult:
    """ConsumeQueues rebuilt from the commitlog alone (the fixture's file size given as broker.conf would)."""
    return rebuild.build_staging(
        root,
        rebuild.prepare_staging(root),
        cq=True,
        index=False,
        cq_file_size=expect()["config"]["mappedFileSizeConsumeQueue"],
        index_geometry=None,
        delay_levels=(),
        now_ms=lambda: 0,
        lmq=lmq,
    )


def test_rebuild_writes_the_lmq_queues_byte_identical(tmp_path: Path) -> None:
    """From the commitlog and lmqConsumerOffset.json alone (the file that tells an LMQ broker's store)."""
    root = copy_store("store-lmq", tmp_path / "s", drop=("consumequeue", "index"))
    result = staged(root)
    try:
        assert sum(1 for t, _ in result.queues if t.startswith("%LMQ%")) == len(lmq_queues())
        want = snapshot(ROOT / "consumequeue")
        assert snapshot(result.staging / "consumequeue") == want
    finally:
        shutil.rmtree(result.staging, ignore_errors=True)


def test_rebuild_execute_keeps_every_lmq_queue(tmp_path: Path) -> None:
    root = copy_store("store-lmq", tmp_path / "s")
    plan = run_mqtool("--store", str(root), "rebuild", "--format", "json")
    assert plan.returncode == 0, plan.stderr
    assert '"removed"' not in plan.stdout and '"differs"' not in plan.stdout
    done = run_mqtool("--store", str(root), "rebuild", "--execute")
    assert done.returncode == 0, done.stderr
    assert snapshot(root / "consumequeue") == snapshot(ROOT / "consumequeue")


def test_rebuild_without_multi_dispatch_drops_the_lmq_queues(tmp_path: Path) -> None:
    """broker.conf saying enableMultiDispatch=false is what such a broker would dispatch: no LMQ units."""
    root = copy_store("store-lmq", tmp_path / "s", drop=("consumequeue", "index"))
    result = staged(root, LmqSettings(True, False, "broker.conf"))
    try:
        assert not any(t.startswith("%LMQ%") for t, _ in result.queues)
    finally:
        shutil.rmtree(result.staging, ignore_errors=True)


@pytest.mark.parametrize("store", ["store-a", "store-pop"])
def test_stores_without_lmq_stay_without(store: str) -> None:
    assert resolve_lmq_settings(GOLDEN / store).enable_multi_dispatch is False


# --- verify ---------------------------------------------------------------------------------------


def verify(root: Path):
    from mqtool.verify import verify_store

    with Store.open(root) as st:
        return verify_store(st, deep=True)


def kinds(report) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for r in report.problems.to_pylist():
        out.setdefault(r["kind"], []).append(r)
    return out


def test_verify_judges_every_lmq_unit_clean() -> None:
    report = verify(ROOT)
    assert report.clean, kinds(report)
    lmq = report.summary["consumeQueues"]["lmq"]
    want = lmq_queues()
    assert lmq["queues"] == len(want)
    assert lmq["units"] == sum(q["maxOffset"] - q["minOffset"] for q in want.values())
    assert lmq["missingUnits"] == 0


def test_verify_finds_an_lmq_queue_a_rebuild_without_lmq_lost(tmp_path: Path) -> None:
    root = copy_store("store-lmq", tmp_path / "s")
    shutil.rmtree(root / "consumequeue" / "%LMQ%room07")
    found = kinds(verify(root))
    assert set(found) - {"recovery"} == {"lmq_missing_unit"}
    (row,) = found["lmq_missing_unit"]
    want = lmq_queues()["%LMQ%room07/0"]["maxOffset"]
    assert row["file"] == "consumequeue/%LMQ%room07/0"
    assert f"{want} records name this LMQ queue" in row["detail"] and "does not exist" in row["detail"]


def write_unit(root: Path, queue: str, offset: int, unit: list[int]) -> None:
    from formats.consumequeue import CQ_UNIT_STRUCT

    size = expect()["config"]["mappedFileSizeConsumeQueue"]
    path = root / "consumequeue" / queue / "0" / f"{offset * 20 // size * size:020d}"
    with open(path, "r+b") as fh:
        fh.seek(offset * 20 % size)
        fh.write(CQ_UNIT_STRUCT.pack(*unit))


def test_verify_finds_lmq_units_the_records_do_not_name(tmp_path: Path) -> None:
    root = copy_store("store-lmq", tmp_path / "s")
    units = lmq_queues()["%LMQ%room03/0"][UNITS_KEY]
    # unit 2 -> a record that names other queues only; units 4 and 5 swapped (each record names the other)
    named = {e["wroteOffset"] for e in expect()["events"] if "%LMQ%room03" in (e["innerMultiDispatch"] or "")}
    other = next(
        m for m in expect()["messages"] if m["kind"] == "MESSAGE" and m["physicalOffset"] not in named
    )
    write_unit(
        root, "%LMQ%room03", 2, [other["physicalOffset"], other["totalSize"], other["dispatch"]["tagsCode"]]
    )
    write_unit(root, "%LMQ%room03", 4, units[5][1:])
    write_unit(root, "%LMQ%room03", 5, units[4][1:])
    found = kinds(verify(root))
    (not_named,) = found["lmq_unit_not_named"]
    assert f"queue offset 2 points to phy {other['physicalOffset']}" in not_named["detail"]
    mismatch = found["lmq_queue_offset_mismatch"]
    assert sorted(r["detail"].split("queue offset ")[1].split(" ")[0] for r in mismatch) == ["4", "5"]
    assert mismatch[0]["detail"].endswith("the offset 5")
    # the record unit 2 pointed at before now lacks its unit; the others are errors of their own
    assert "lmq_missing_unit" not in found  # offset 2 < max offset: the unit is there, wrong (reported above)


# --- consumer offsets: lmqConsumerOffset.json -----------------------------------------------------


def test_lmq_offset_file_read_as_the_real_manager_reads_it() -> None:
    from formats.config.codec import encode_config

    want = expect()["offsets"]["lmqConsumerOffset"]
    with Store.open(ROOT) as st:
        loaded = st.config("lmqConsumerOffset.json").load()
    model = loaded.model
    assert model.lmq_offset_table == want["lmqOffsetTable"]
    assert {k: {str(q): o for q, o in v.items()} for k, v in model.offset_table.items()} == want[
        "offsetTable"
    ]
    for key, offset in want["queryOffset"].items():  # queryOffset(group, topic, 0)
        topic, group = key.split("@")
        assert model.get(topic, group) == {0: offset}
    # written back unchanged, byte for byte
    assert encode_config(model, True) == (ROOT / "config" / "lmqConsumerOffset.json").read_text()


def test_offsets_show_reads_the_file_an_lmq_broker_reads() -> None:
    from mqtool.offsets.progress import consumer_progress

    want = expect()["offsets"]["lmqConsumerOffset"]
    with Store.open(ROOT) as st:
        progress = consumer_progress(st)
    got = {(r.group, r.topic, r.queue_id): r for r in progress.rows}
    for key, offset in want["lmqOffsetTable"].items():
        topic, group = key.split("@")
        row = got[(group, topic, 0)]
        q = expect()["consumeQueues"][f"{topic}/0"]
        assert (row.consumer_offset, row.max_offset, row.lag) == (
            offset,
            q["maxOffset"],
            q["maxOffset"] - offset,
        )
    plain = want["offsetTable"]["TopicA@GID_plain"]
    assert {q: got[("GID_plain", "TopicA", q)].consumer_offset for q in range(4)} == {
        int(q): o for q, o in plain.items()
    }
    assert any(
        "lmqConsumerOffset.json" in n and "never reads consumerOffset.json" in n for n in progress.notes
    )


def test_offsets_reset_writes_lmq_consumer_offset_json(tmp_path: Path) -> None:
    root = copy_store("store-lmq", tmp_path / "s")
    plain_before = (root / "config" / "consumerOffset.json").read_bytes()
    args = ("--store", str(root), "offsets", "reset", "--execute")
    done = run_mqtool(*args, "--group", "%LMQ%GID_room0", "--topic", "%LMQ%hot", "--to-offset", "100")
    assert done.returncode == 0, done.stderr
    assert "not in topics.json" not in done.stderr  # LmqTopicConfigManager answers for every LMQ topic
    done = run_mqtool(*args, "--group", "GID_plain", "--topic", "TopicB", "--to-earliest")
    assert done.returncode == 0, done.stderr
    with Store.open(root) as st:
        model = st.config("lmqConsumerOffset.json").load().model
    want = dict(
        expect()["offsets"]["lmqConsumerOffset"]["lmqOffsetTable"], **{"%LMQ%hot@%LMQ%GID_room0": 100}
    )
    assert model.lmq_offset_table == want
    assert model.offset_table["TopicB@GID_plain"] == {0: 0, 1: 0}
    assert (root / "config" / "consumerOffset.json").read_bytes() == plain_before


def test_appender_refuses_a_message_naming_lmq_queues(tmp_path: Path) -> None:
    from store.appender import AppendError, CommitLogAppender, NewMessage

    root = copy_store("store-lmq", tmp_path / "s")
    props = {"INNER_MULTI_DISPATCH": "%LMQ%hot", "TAGS": "t"}
    with pytest.raises(AppendError, match="INNER_MULTI_QUEUE_OFFSET"), CommitLogAppender(root) as app:
        app.append(NewMessage("TopicA", b"x", props))
    # the broker never multi-dispatches a retry topic's record: nothing to fill, the append goes through
    with CommitLogAppender(root) as app:
        app.append(NewMessage("%RETRY%GID_lmq", b"x", props))
    assert verify(root).clean


def test_info_counts_the_lmq_queues_in_one_line() -> None:
    from mqtool.info import store_info

    with Store.open(ROOT) as st:
        doc = store_info(st)
    want = lmq_queues()
    assert doc["lmq"]["queues"] == len(want)
    assert doc["lmq"]["enableLmq"] and doc["lmq"]["settingsFrom"] == "current files"
    assert not any(r["topic"].startswith("%LMQ%") for r in doc["queues"])
    assert doc["dispatch"]["consumeQueueEnd"] == expect()["maxPhyOffset"]
    assert "lmqConsumerOffset.json" in {r["file"] for r in doc["configFiles"]}
    with Store.open(GOLDEN / "store-a") as st:
        assert store_info(st)["lmq"] is None


# --- reads of an LMQ queue --------------------------------------------------------------------------


def cli_json(*args: str):
    import json

    done = run_mqtool("--store", str(ROOT), *args, "--format", "json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_dump_cq_and_query_offset_and_time_on_an_lmq_queue() -> None:
    q = lmq_queues()["%LMQ%room03/0"]
    units = q[UNITS_KEY]
    dumped = cli_json("dump", "cq", "%LMQ%room03", "0")
    assert [[u["queueOffset"], u["phyOffset"], u["size"], u["tagsCode"]] for u in dumped] == units
    last = cli_json("query", "offset", "%LMQ%room03", "0", str(units[-1][0]))
    assert [m["physicalOffset"] for m in last] == [units[-1][1]]
    assert "%LMQ%room03" in last[0]["properties"]["INNER_MULTI_DISPATCH"]
    found = cli_json("query", "time", "%LMQ%room03", "--begin", "2000-01-01", "--end", "2100-01-01")
    assert [m["physicalOffset"] for m in found] == [u[1] for u in units]
