"""`mqtool rebuild`: ConsumeQueues and index rebuilt from the commitlog, against the broker's own files.

Proof: on copies of the golden stores with consumequeue/ and index/ deleted, the rebuilt ConsumeQueue
files have the broker's names and bytes, and the rebuilt index files its contents (names are creation
times). store-c (retention + crash) checks what a rebuild of a crashed store means (store/rebuild/build.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from golden import copy_store, expect, store_path

from formats.checkpoint import decode_checkpoint
from formats.consumequeue import FILLER_UNIT, decode_unit
from mqtool.cli import app
from mqtool.rebuild import RebuildRefused, rebuild
from store.config.brokerconf import load_broker_config
from store.index.indexservice import IndexService
from store.index.indexwriter import list_index_files
from store.liveness import BrokerRunningError
from store.queue.consumequeue import ConsumeQueue, ConsumeQueueStore
from store.rebuild.build import STAGING_NAME, recover_interrupted_swap
from store.storedir import Store

SETTINGS = {
    "store-a": {"cq_file_size": 6000, "hash_slot_num": 64, "index_num": 4000},
    "store-49a": {"cq_file_size": 6000, "hash_slot_num": 64, "index_num": 2500},
    "store-c": {"cq_file_size": 1280, "hash_slot_num": 64, "index_num": 1000},
}


def tree(root: Path) -> dict[str, bytes]:
    """Relative path -> bytes of every file below `root`."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def index_contents(root: Path) -> list[bytes]:
    directory = root / "index"
    return [(directory / name).read_bytes() for name in list_index_files(directory)]


def quiet(_: str) -> None:
    pass


# --- the proof: byte-identical to the broker ---------------------------------------------------------


@pytest.mark.parametrize("store", ["store-a", "store-49a"])
def test_rebuild_after_losing_consume_queues_and_index(store, tmp_path):
    root = copy_store(store, tmp_path / store, drop=("consumequeue", "index"))
    with Store.open(root) as st:
        plan = rebuild(st, "all", **SETTINGS[store], note=quiet)
    assert not plan.executed and plan.changes
    assert {q.status for q in plan.queues} == {"new"}
    assert not (root / "consumequeue").exists()  # the dry run wrote nothing
    assert not (root / STAGING_NAME).exists()
    with Store.open(root) as st:
        report = rebuild(st, "all", execute=True, **SETTINGS[store], note=quiet)
    assert report.executed
    assert report.build.messages == sum(1 for m in expect(store)["messages"] if m["kind"] == "MESSAGE")
    assert tree(root / "consumequeue") == tree(store_path(store) / "consumequeue")
    assert index_contents(root) == index_contents(store_path(store))
    assert list_index_files(root / "index") != list_index_files(store_path(store) / "index")
    assert not [p for p in root.iterdir() if p.name.startswith(".mqtool")]
    # a second rebuild finds nothing to do and writes nothing
    before = {p: p.stat().st_mtime_ns for p in (root / "index").iterdir()}
    with Store.open(root) as st:
        again = rebuild(st, "all", execute=True, note=quiet)
    assert not again.changes and not again.executed
    assert {p: p.stat().st_mtime_ns for p in (root / "index").iterdir()} == before


@pytest.mark.parametrize("store", ["store-a", "store-49a"])
def test_dry_run_on_the_golden_store_is_a_clean_check(store):
    before = tree(store_path(store))
    with Store.open(store_path(store)) as st:
        report = rebuild(st, "all", note=quiet)
    assert not report.changes
    assert {q.status for q in report.queues} == {"same"}
    assert report.index is not None and report.index.status == "same"
    assert (report.hash_slot_num.source, report.cq_file_size.source) == ("current files", "current files")
    assert tree(store_path(store)) == before


def test_rebuild_only_the_index(tmp_path):
    root = copy_store("store-a", tmp_path / "store-a", drop=("index",))
    cq_before = tree(root / "consumequeue")
    with Store.open(root) as st:
        report = rebuild(st, "index", execute=True, hash_slot_num=64, index_num=4000, note=quiet)
    assert report.executed and report.queues == []
    assert index_contents(root) == index_contents(store_path("store-a"))
    assert tree(root / "consumequeue") == cq_before
    # indexMsgTimestamp covers the rebuilt (fsynced) files, so a crash start would keep them
    cp = decode_checkpoint((root / "checkpoint").read_bytes())
    assert cp.index_msg_timestamp == expect("store-a")["indexFiles"][-1]["endTimestamp"]


def test_repair_of_a_corrupt_consume_queue(tmp_path):
    root = copy_store("store-a", tmp_path / "store-a")
    path = root / "consumequeue" / "TopicTest" / "2" / "00000000000000006000"
    data = bytearray(path.read_bytes())
    data[20 * 7 + 8 : 20 * 7 + 12] = (999).to_bytes(4, "big")  # unit 307: wrong size
    path.write_bytes(bytes(data))
    with Store.open(root) as st:
        plan = rebuild(st, "cq", note=quiet)
    changed = [q for q in plan.queues if q.status != "same"]
    assert [(q.topic, q.queue_id, q.status, q.first_difference) for q in changed] == [
        ("TopicTest", 2, "differs", 307)
    ]
    with Store.open(root) as st:
        assert rebuild(st, "cq", execute=True, note=quiet).executed
    assert tree(root / "consumequeue") == tree(store_path("store-a") / "consumequeue")


# --- a crashed, retention-trimmed store ----------------------------------------------------------------


def test_rebuild_of_a_crashed_store_with_deleted_prefix(tmp_path):
    root = copy_store("store-c", tmp_path / "store-c", drop=("consumequeue", "index"))
    notes: list[str] = []
    with Store.open(root) as st:
        report = rebuild(st, "all", execute=True, **SETTINGS["store-c"], note=notes.append)
    assert any("abort" in n for n in notes)  # write_guard warned about the unclean shutdown
    b = report.build
    assert (b.commitlog_min_offset, b.valid_end, b.stop_kind) == (1572864, 4412507, "torn")
    assert any("torn" in w for w in report.warnings)
    exp = expect("store-c")["consumeQueues"]
    store = ConsumeQueueStore(root)
    rebuilt = set(store.queues())
    # every queue with a live record is there; SCHEDULE_TOPIC_XXXX/17 lost all its records to
    # retention, and with its files gone there is nothing to carry over: it starts again at 0
    assert rebuilt == {(v["topic"], v["queueId"]) for v in exp.values()} - {("SCHEDULE_TOPIC_XXXX", 17)}
    golden_cq = store_path("store-c") / "consumequeue"
    for topic, queue_id in rebuilt:
        e = exp[f"{topic}/{queue_id}"]
        queue = store.open(topic, queue_id)
        # min/max as the broker computes them after its own crash recovery (which re-dispatched the two
        # final appends the crash left undispatched)
        assert (queue.min_offset, queue.max_offset) == (e["minOffset"], e["maxOffset"]), (topic, queue_id)
        units = [[q, u.phy_offset, u.size, u.tags_code] for q, u in queue.iter_units()]
        assert units == e["units[queueOffset,phyOffset,size,tagsCode]"]
        # the deleted prefix: the broker's first file name, filled with fillPreBlank's filler units
        names = [f.name for f in queue.files]
        assert names == sorted(os.listdir(golden_cq / topic / str(queue_id)))
        first = queue.files[0]
        for position in range(0, e["minOffset"] * 20 - first.start_offset, 20):
            assert decode_unit(first.buffer(), position) == FILLER_UNIT
        queue.close()
    # the index covers the live records: every key query returns the live part of the broker's answer
    index = IndexService(root)
    for q in expect("store-c")["indexQueries"]:
        if q["maxNum"] < 64 or q["begin"] != 0 or len(q["phyOffsets"]) >= 64:
            continue  # capped or windowed answers: not comparable across different file boundaries
        live = {p for p in q["phyOffsets"] if 1572864 <= p < 4412507}
        got = set(index.query_offset(q["topic"], q["key"], None, q["begin"], q["end"]).phy_offsets)
        assert got == live, q
    index.close()


def test_queue_without_live_records_keeps_its_files(tmp_path):
    root = copy_store("store-c", tmp_path / "store-c")
    with Store.open(root) as st:
        report = rebuild(st, "cq", execute=True, note=quiet)
    kept = [q for q in report.queues if q.status == "kept"]
    assert [(q.topic, q.queue_id, q.new_min, q.new_max) for q in kept] == [("SCHEDULE_TOPIC_XXXX", 17, 1, 1)]
    name = "consumequeue/SCHEDULE_TOPIC_XXXX/17/00000000000000000000"
    assert (root / name).read_bytes() == (store_path("store-c") / name).read_bytes()
    queue = ConsumeQueue(root, "SCHEDULE_TOPIC_XXXX", 17)
    assert (queue.min_offset, queue.max_offset) == (1, 1)  # the next delay message still gets offset 1


# --- safety -------------------------------------------------------------------------------------------


def test_refused_while_a_broker_holds_the_lock(tmp_path):
    root = copy_store("store-a", tmp_path / "store-a", drop=("index",))
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys, time\n"
            f"fd = os.open({str(root / 'lock')!r}, os.O_RDWR)\n"
            "fcntl.lockf(fd, fcntl.LOCK_EX, 1, 0)\n"
            "print('locked', flush=True)\n"
            "time.sleep(60)\n",
        ],
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout.readline().strip() == b"locked"
        with Store.open(root) as st, pytest.raises(BrokerRunningError):
            rebuild(st, "all", execute=True, hash_slot_num=64, index_num=4000, note=quiet)
        assert not (root / "index").exists()
        with Store.open(root) as st:  # the dry run still works, with a warning
            notes: list[str] = []
            assert rebuild(st, "all", hash_slot_num=64, index_num=4000, note=notes.append).changes
            assert any("lock" in n for n in notes)
    finally:
        holder.kill()
        holder.wait()


def test_unsupported_layouts_are_refused(tmp_path):
    root = copy_store("store-a", tmp_path / "store-a")
    (root / "consumequeue_ext").mkdir()
    with Store.open(root) as st, pytest.raises(RebuildRefused, match="consumequeue_ext"):
        rebuild(st, "cq", note=quiet)
    with Store.open(root) as st:  # the index alone is fine
        assert not rebuild(st, "index", note=quiet).changes
    empty = tmp_path / "empty"
    (empty / "commitlog").mkdir(parents=True)
    with Store.open(empty) as st, pytest.raises(RebuildRefused, match="nothing to rebuild"):
        rebuild(st, "all", note=quiet)
    with Store.open(root) as st, pytest.raises(RebuildRefused, match="unknown rebuild target"):
        rebuild(st, "everything", note=quiet)


def test_interrupted_two_rename_swap_is_undone(tmp_path):
    root = copy_store("store-a", tmp_path / "store-a")
    staging = root / STAGING_NAME
    staging.mkdir()
    (staging / "SWAPPING-index").touch()
    os.rename(root / "index", staging / "index.old")  # killed between the two renames
    assert recover_interrupted_swap(root) == ["index"]
    assert index_contents(root) == index_contents(store_path("store-a"))


def test_settings_from_broker_conf(tmp_path):
    root = copy_store("store-49a", tmp_path / "store-49a", drop=("consumequeue", "index"))
    conf = tmp_path / "broker.conf"
    conf.write_text(
        "brokerName=broker-a\nmappedFileSizeConsumeQueue=6000\nmaxHashSlotNum = 64\nmaxIndexNum=2500\n"
    )
    with Store.open(root, load_broker_config(conf)) as st:
        report = rebuild(st, "all", execute=True, note=quiet)
    assert report.cq_file_size.source == "broker.conf"
    assert tree(root / "consumequeue") == tree(store_path("store-49a") / "consumequeue")
    assert index_contents(root) == index_contents(store_path("store-49a"))


def test_a_slot_table_too_big_for_memory_is_a_named_error(tmp_path):
    """maxHashSlotNum is trusted (the broker maps that much), but when this process cannot get the
    memory the error names the index file being built and the setting, not just "out of memory"."""
    import resource

    root = copy_store("store-a", tmp_path / "store-a", drop=("index",))
    conf = tmp_path / "broker.conf"
    conf.write_text("maxHashSlotNum=400000000\nmaxIndexNum=4\n")
    limit = 1 << 30

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    argv = ["rebuild", "index", "--store", str(root), "--broker-config", str(conf)]
    proc = subprocess.run(
        [sys.executable, "-m", "mqtool.cli", *argv],
        capture_output=True, text=True, timeout=120, preexec_fn=cap, cwd=Path(__file__).parents[1],
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr
    assert "out of memory for the slot table of 400000000 hash slots" in lines[0]
    assert "/index/" in lines[0] and "maxHashSlotNum" in lines[0]
    assert not (root / "index").exists()


# --- the command line ---------------------------------------------------------------------------------


def test_cli_dry_run_and_execute(tmp_path):
    from typer.testing import CliRunner

    root = copy_store("store-a", tmp_path / "store-a", drop=("consumequeue", "index"))
    runner = CliRunner()
    args = ["rebuild", "all", "--store", str(root), "--max-hash-slot-num", "64", "--max-index-num", "4000",
            "--mapped-file-size-consume-queue", "6000", "--format", "json"]  # fmt: skip
    dry = runner.invoke(app, args)
    assert dry.exit_code == 0, dry.output
    doc = json.loads(dry.stdout)
    assert doc["changes"] and not doc["executed"]
    assert doc["settings"]["maxIndexNum"] == {"value": 4000, "source": "--max-index-num"}
    assert len(doc["consumeQueues"]["queues"]) == 17 and doc["index"]["status"] == "new"
    assert not (root / "index").exists()
    done = runner.invoke(app, [*args, "--execute"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["executed"]
    assert tree(root / "consumequeue") == tree(store_path("store-a") / "consumequeue")
    text = runner.invoke(app, ["rebuild", "--store", str(root), "--format", "plain"])
    assert text.exit_code == 0 and "the current files match the rebuild" in text.stdout
