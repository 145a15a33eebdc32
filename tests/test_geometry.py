"""File sizes come from broker.conf or what most files show, never from one outlier (issue 26, item 3).

The broker requires every file of a mapped-file queue at the configured size (MappedFileQueue.doLoad:
"length not matched message store config value" -> the load fails and the broker does not start), and a
mapped file's size is a Java int. Mutated copies of stores the real RocketMQ classes wrote: one
ConsumeQueue, timerlog, commitlog or index file truncated up to 100 GiB (sparse).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from golden import child_env, copy_store, rebuild_matches

from store.layout import existing_cq_file_size
from store.log.mappedfile import MAX_MAPPED_FILE_SIZE, majority_size

HUGE = 100 << 30
DLQ_FILE = "consumequeue/%DLQ%groupA/0/00000000000000000000"


def mqtool(*args: str) -> subprocess.CompletedProcess[str]:
    """The CLI with a 2 GiB address-space limit: mapping or reading a 100 GiB file whole fails under it."""

    def limit() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    return subprocess.run(
        [sys.executable, "-m", "mqtool.cli", *args],
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=300,
        preexec_fn=limit,
    )


def problems(root: Path, kind: str) -> list[dict]:
    proc = mqtool("-s", str(root), "-f", "json", "verify")
    assert proc.returncode in (0, 1), proc.stderr
    return [p for p in json.loads(proc.stdout)["problems"] if p["kind"] == kind]


def test_majority_size_ignores_impossible_sizes_and_ties():
    assert majority_size([6000, HUGE]) == 6000  # 100 GiB is no mapped file's size
    assert majority_size([HUGE]) is None
    assert majority_size([6000, 6000, 12000]) == 6000
    assert majority_size([6000, 12000]) is None  # a tie decides nothing
    assert majority_size([6010, 6000], unit=20) == 6000
    assert majority_size([MAX_MAPPED_FILE_SIZE + 1, 0]) is None


def test_one_huge_consume_queue_file_does_not_set_the_size(tmp_path):
    root = copy_store("store-a", tmp_path / "s")
    os.truncate(root / DLQ_FILE, HUGE)
    assert existing_cq_file_size(root) == 6000


def test_verify_reports_the_consume_queue_file_the_broker_refuses(tmp_path):
    root = copy_store("store-a", tmp_path / "s")
    os.truncate(root / DLQ_FILE, HUGE)
    rows = problems(root, "cq_file")
    assert [(r["file"], r["severity"]) for r in rows] == [(DLQ_FILE, "error")]
    assert "file size 107374182400 is not the queue's file size 6000" in rows[0]["detail"]
    assert "length not matched message store config value" in rows[0]["detail"]


def test_rebuild_keeps_the_configured_size_and_mends_the_outlier(tmp_path):
    root = copy_store("store-a", tmp_path / "s")
    os.truncate(root / DLQ_FILE, HUGE)
    proc = mqtool("-s", str(root), "-f", "json", "rebuild", "cq")
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout)
    assert plan["settings"]["mappedFileSizeConsumeQueue"] == {"value": 6000, "source": "current files"}
    changed = [(q["topic"], q["queueId"]) for q in plan["consumeQueues"]["queues"] if q["status"] != "same"]
    assert changed == [("%DLQ%groupA", 0)]  # the 21 other queues are left as they are
    proc = mqtool("-s", str(root), "rebuild", "cq", "--execute")
    assert proc.returncode == 0, proc.stderr
    sizes = {p.stat().st_size for p in (root / "consumequeue").rglob("0000*")}
    assert sizes == {6000}
    rebuild_matches(root)


def test_rebuild_refuses_a_file_size_past_a_java_int(tmp_path):
    root = copy_store("store-a", tmp_path / "s")
    proc = mqtool("-s", str(root), "rebuild", "cq", "--mapped-file-size-consume-queue", str(HUGE))
    assert proc.returncode == 1
    assert "is past a Java int (2147483647)" in proc.stderr and "refusing to write" in proc.stderr


def test_a_huge_timerlog_file_is_the_error_the_broker_stops_on(tmp_path):
    root = copy_store("store-timer-states", tmp_path / "s")
    log = root / "timerlog" / "00000000000000000000"
    os.truncate(log, HUGE)
    rows = problems(root, "timer_file")
    assert [r["file"] for r in rows] == ["timerlog/00000000000000000000"]
    assert "file size 107374182400 is not the timerlog file size" in rows[0]["detail"]
    proc = mqtool("-s", str(root), "dump", "timerlog")
    errors = [line for line in proc.stderr.splitlines() if line.startswith("mqtool: error: ")]
    assert proc.returncode == 1 and len(errors) == 1 and str(log) in errors[0], proc.stderr


def test_a_timerlog_of_another_configured_size_is_refused(tmp_path):
    """mappedFileSizeTimerLog from broker.conf is what the broker's TimerLog requires of the files."""
    root = copy_store("store-timer-states", tmp_path / "s")
    conf = tmp_path / "broker.conf"
    conf.write_text("mappedFileSizeTimerLog=2097152\n")
    proc = mqtool("-s", str(root), "-f", "json", "verify", "--broker-config", str(conf))
    rows = [p for p in json.loads(proc.stdout)["problems"] if p["kind"] == "timer_file"]
    assert "file size 1048576 is not the timerlog file size 2097152 (broker.conf)" in rows[0]["detail"]


@pytest.mark.parametrize("argv", [["verify"], ["rebuild", "all"], ["info"]], ids=" ".join)
def test_a_huge_commitlog_file_is_named_never_mapped(tmp_path, argv):
    root = copy_store("store-a", tmp_path / "s")
    path = root / "commitlog" / "00000000000002097152"
    os.truncate(path, HUGE)
    proc = mqtool("-s", str(root), "-f", "json", *argv)
    text = proc.stdout + proc.stderr
    assert "Cannot allocate memory" not in text and "out of memory" not in text
    if argv == ["info"]:
        assert proc.returncode == 0, proc.stderr
        return
    assert proc.returncode == 1
    assert "file of 107374182400 bytes, larger than a mapped file can be (2147483647" in text
    assert "commitlog/00000000000002097152" in text


def test_a_huge_index_file_is_named(tmp_path):
    root = copy_store("store-a", tmp_path / "s")
    name = sorted(os.listdir(root / "index"))[0]
    os.truncate(root / "index" / name, HUGE)
    rows = problems(root, "index_file")
    assert [r["file"] for r in rows] == [f"index/{name}"]
    assert "not the other index files' 80296 size" in rows[0]["detail"]
    proc = mqtool("-s", str(root), "rebuild", "index", "--execute")
    assert proc.returncode == 1 and "refusing to rebuild the index with the broker defaults" in proc.stderr


def test_a_huge_batch_consume_queue_file_is_reported_and_mended(tmp_path):
    root = copy_store("store-batchcq", tmp_path / "s")
    rel = "batchconsumequeue/BatchTopicB/0/00000000000000000368"
    os.truncate(root / rel, HUGE)
    rows = problems(root, "bcq_file")
    assert [r["file"] for r in rows] == [rel], rows
    assert "length not matched message store config value" in rows[0]["detail"]
    plan = json.loads(mqtool("-s", str(root), "-f", "json", "rebuild", "cq").stdout)
    batch = {(q["topic"], q["queueId"]): q["status"] for q in plan["consumeQueues"]["queues"]
             if q["topic"].startswith("Batch")}  # fmt: skip
    assert batch[("BatchTopicB", 0)] == "differs"
    assert {s for k, s in batch.items() if k != ("BatchTopicB", 0)} == {"same"}
    assert mqtool("-s", str(root), "rebuild", "cq", "--execute").returncode == 0
    assert {p.stat().st_size for p in (root / "batchconsumequeue").rglob("0000*")} == {368}
    assert problems(root, "bcq_file") == []
