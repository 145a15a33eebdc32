"""Retention (`store.clean`, `mqtool retention`) against what the broker's real clean services deleted.

tests/data/retention/expect.json holds cases recorded with the oracle (tests/oracle/retention_cases.py:
the real CleanCommitLogService / CleanConsumeQueueService / index cleaning of 5.3.3 and 4.9.8 on copies of
store-a and store-49a whose commitlog files were given crafted ages). Each case is replayed here: the same
copy, the same file times, "now", zone and disk usage the real code saw, and mqtool's forecast must delete
exactly the files the real code deleted, run by run, and leave every queue at the min offset it left.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from golden import GOLDEN, copy_store

from store.clean.commitlog import TimedFile, delete_expired_by_time, is_time_to_delete, java_split
from store.clean.disk import given_usage, used_ratio
from store.clean.plan import plan_clean
from store.clean.settings import clean_settings
from store.storedir import Store

CASES = json.loads((GOLDEN / "retention" / "expect.json").read_text(encoding="utf-8"))["cases"]


def _replay_copy(case: dict, tmp_path: Path) -> Path:
    root = copy_store(case["store"], tmp_path / case["name"])
    for rel, (_size, mtime_ms) in case["oracle"]["filesBefore"].items():
        if rel.startswith("commitlog/"):
            os.utime(root / rel, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))
    return root


def _settings(case: dict):
    recorded = case["oracle"]["settings"]
    props = {k: v for k, v in recorded.items() if not k.startswith("rocketmq.")}
    system = {k: v for k, v in recorded.items() if k.startswith("rocketmq.")}
    return clean_settings(int(case["version"][0]), props, system)


@pytest.mark.parametrize("case", CASES, ids=[f"{c['version']}-{c['name']}" for c in CASES])
def test_forecast_deletes_what_the_broker_deleted(case, tmp_path):
    oracle = case["oracle"]
    assert oracle["loaded"]
    root = _replay_copy(case, tmp_path)
    with Store.open(root) as store:
        plan = plan_clean(
            store,
            _settings(case),
            now_ms=oracle["nowMs"],
            zone=ZoneInfo(oracle["zone"]),
            physic=given_usage(str(root / "commitlog"), oracle["diskUsedCommitLog"]),
            logics=given_usage(str(root / "consumequeue"), oracle["diskUsedConsumeQueue"]),
            rounds=case["rounds"],
        )
    assert len(plan.rounds) == len(oracle["rounds"])
    for mine, real in zip(plan.rounds, oracle["rounds"], strict=True):
        deleted = [f"commitlog/{f.name}" for f in mine.commitlog_deleted]
        deleted += [
            f"consumequeue/{t}/{q}/{name}" for (t, q), names in mine.cq_deleted.items() for name in names
        ]
        deleted += [f"index/{name}" for name in mine.index_deleted]
        assert sorted(deleted) == sorted(real["deleted"]), f"run {mine.number}"
        assert mine.commitlog_min_after == real["minPhyOffset"]
        assert mine.decision.clean_immediately == real["cleanImmediately"]
    real_mins = oracle["rounds"][-1]["queueMin"]
    assert {f"{t}/{q}": v for (t, q), v in plan.queue_min_after.items()} == real_mins
    assert {f"{t}/{q}": v for (t, q), v in plan.queue_min_before.items()} == oracle["queueMinBefore"]


def test_the_cases_cover_each_rule():
    """The recorded cases exercise every branch the forecast claims to follow (not a vacuous replay)."""
    by_name = {(c["version"], c["name"]): c["oracle"]["rounds"] for c in CASES}
    assert by_name[("5.3.3", "time-up-expired")][0]["deleted"]
    assert not by_name[("5.3.3", "not-time")][0]["deleted"]
    assert not by_name[("5.3.3", "first-not-expired-stops")][0]["deleted"]
    assert by_name[("5.3.3", "forced-clean")][0]["cleanImmediately"]
    assert not by_name[("5.3.3", "deleteWhen-unparsable")][0]["deleted"]
    assert [
        len([f for f in r["deleted"] if f.startswith("commitlog")])
        for r in by_name[("5.3.3", "batch-max-one")]
    ] == [1, 1, 0]
    assert not by_name[("4.9.8", "forcibly-property-but-max-ratio-95")][0]["deleted"]
    assert by_name[("4.9.8", "forcibly-property-at-delete-hour")][0]["deleted"]


def test_java_rules_of_delete_when():
    assert java_split("04;", ";") == ["04"]
    assert java_split("", ";") == [""]
    assert java_split(";;", ";") == []
    assert is_time_to_delete("04;05", 5)
    assert not is_time_to_delete(";;", 4)
    assert is_time_to_delete("04;x", 4)  # a match returns before the bad hour is parsed
    with pytest.raises(ValueError):
        is_time_to_delete("04;x", 5)
    with pytest.raises(ValueError):
        is_time_to_delete(" 4", 4)  # properties2Object trims, but an inner blank stays


def test_used_ratio_rounds_up_as_java():
    assert used_ratio(37, 100) == 0.37
    assert used_ratio(3701, 10000) == 0.38
    assert used_ratio(0, 0) == -1.0


def test_batch_never_takes_the_last_file():
    files = [TimedFile(str(i), i * 10, 10, 0) for i in range(4)]
    assert [f.name for f in delete_expired_by_time(files, 0, 1, False, 10)] == ["0", "1", "2"]
    assert [f.name for f in delete_expired_by_time(files, 0, 1, False, 2)] == ["0", "1"]
    assert delete_expired_by_time(files, 100, 1, False, 10) == []
    assert len(delete_expired_by_time(files, 100, 1, True, 10)) == 3


def _case(version: str, name: str) -> dict:
    return next(c for c in CASES if c["version"] == version and c["name"] == name)


def test_cli_names_the_topics_and_groups_that_lose_messages(tmp_path, capsys):
    """`mqtool retention` on the replayed "time-up-expired" case: the queues' new min offsets are the ones
    the real CorrectMinOffset left, and each group's unconsumed loss is new min - max(committed, old min)."""
    from golden import run_main

    from mqtool.offsets.progress import committed_offsets

    case = _case("5.3.3", "time-up-expired")
    oracle = case["oracle"]
    root = _replay_copy(case, tmp_path)
    conf = tmp_path / "broker.conf"
    conf.write_text(f"deleteWhen={oracle['settings']['deleteWhen']}\n", encoding="utf-8")
    code, out, err = run_main(
        ["retention", "-s", str(root), "--broker-config", str(conf), "--now", str(oracle["nowMs"]),
         "--tz", oracle["zone"], "--disk-used", str(oracle["diskUsedCommitLog"]), "--format", "json"],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    doc = json.loads(out)
    assert doc["runs"][0]["timeUp"] and doc["runs"][0]["commitlogDeleted"]
    real_after = oracle["rounds"][-1]["queueMin"]
    for q in doc["queues"]:
        assert q["minOffsetAfter"] == real_after[f"{q['topic']}/{q['queueId']}"]
        assert (
            q["messagesDeleted"]
            == q["minOffsetAfter"] - oracle["queueMinBefore"][f"{q['topic']}/{q['queueId']}"]
        )
    assert {f"{q['topic']}/{q['queueId']}" for q in doc["queues"]} == {
        k for k, v in real_after.items() if v > oracle["queueMinBefore"][k]
    }
    with Store.open(root) as store:
        offsets = committed_offsets(store)
    expected = []
    for (topic, queue_id), groups in offsets.by_queue.items():
        key = f"{topic}/{queue_id}"
        for group, committed in groups.items():
            lost = real_after.get(key, 0) - max(committed, oracle["queueMinBefore"].get(key, 0))
            if lost > 0:
                expected.append((group, topic, queue_id, lost))
    got = [(g["group"], g["topic"], g["queueId"], g["unconsumedDeleted"]) for g in doc["groups"]]
    assert sorted(got) == sorted(expected) and expected  # groupA, behind on TopicTest, loses messages


def test_cli_refuses_what_it_cannot_follow(tmp_path, capsys):
    from golden import run_main

    root = copy_store("store-a", tmp_path / "s")
    code, _, err = run_main(["retention", "-s", str(root), "--disk-used", "1.5"], capsys)
    assert code == 2 and "--disk-used" in err
    code, _, err = run_main(["retention", "-s", str(root), "-D", "novalue"], capsys)
    assert code == 2 and "KEY=VALUE" in err


def test_forecast_of_a_filling_disk():
    """threshold_eta: linear growth, less what scheduled deletions free before the threshold."""
    from store.clean.disk import DiskUsage
    from store.clean.forecast import threshold_eta, write_rate

    disk = DiskUsage("/x", 0.50, used=50, entire=100)
    assert threshold_eta(disk, 1.0, 0.85, [], 0) == 35
    assert threshold_eta(disk, 1.0, 0.85, [(10, 20)], 0) == 55  # 20 bytes freed at t=10
    assert threshold_eta(disk, 1.0, 0.40, [], 7) == 7  # already past
    assert threshold_eta(disk, 0.0, 0.85, [], 0) is None
    rate = write_rate([(0, 1000), (100, 2000), (300, 3000)], window_ms=1500)
    assert (rate.from_ms, rate.to_ms, rate.bytes) == (1500, 3000, 250)


def _expected_rate_end(name: str) -> tuple[int, int]:
    """(end, store time) of the newest record a ConsumeQueue unit points at, from the store's expect.json
    (what the real ConsumeQueue held; LMQ queues left out)."""
    doc = json.loads((GOLDEN / name / "expect.json").read_text(encoding="utf-8"))
    # a crash store: the queue files as written, before its recovery re-dispatched the tail
    queues = doc["asWritten"]["consumeQueueFiles"] if "asWritten" in doc else doc["consumeQueues"]
    units = [
        unit
        for key, queue in queues.items()
        if not key.startswith("%LMQ%")
        for field, values in queue.items()
        if field.startswith("units[")
        for unit in values
    ]
    _, phy, size, _ = max(units, key=lambda u: u[1])
    message = next(m for m in doc["messages"] if m["physicalOffset"] == phy)
    return phy + size, message["storeTimestamp"]


@pytest.mark.parametrize("name", ["store-a", "store-c", "store-49a"])
def test_write_rate_points(name):
    """The forecast's rate points: each commitlog file's first record, and the end of the newest record a
    queue points at - on store-c (a crash) short of the undispatched tail the commitlog still holds."""
    from mqtool.oncall.retention import _rate_points

    doc = json.loads((GOLDEN / name / "expect.json").read_text(encoding="utf-8"))
    with Store.open(GOLDEN / name) as store:
        points = _rate_points(store)
        last = store.commitlog.last_record()
    firsts = {}
    for m in doc["messages"]:
        if m["kind"] == "MESSAGE":
            firsts.setdefault(int(m["file"]), (int(m["file"]), m["storeTimestamp"]))
    end = _expected_rate_end(name)
    assert points == sorted([*firsts.values(), end])
    if name == "store-c":
        assert end[0] < last.physical_offset + last.total_size
    else:
        assert end == (last.physical_offset + last.total_size, last.store_timestamp)


def test_write_rate_without_queues_ends_at_the_last_record(tmp_path):
    """No ConsumeQueue to ask: the end point is the commitlog's last record."""
    from mqtool.oncall.retention import _rate_points

    root = copy_store("store-a", tmp_path / "s", drop=("consumequeue",))
    with Store.open(root) as store:
        last = store.commitlog.last_record()
        assert _rate_points(store)[-1] == (last.physical_offset + last.total_size, last.store_timestamp)
