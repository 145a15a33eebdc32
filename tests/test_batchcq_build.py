"""store.batchcq_build: BatchConsumeQueue units derived from the commitlog are byte-identical to the files
the real 5.3.3 broker wrote (store-batchcq), and the dispatch's rules for odd batch properties."""

from __future__ import annotations

import dataclasses

import pytest
from golden import expect, store_path

from formats.batchconsumequeue import BcqUnit
from formats.message.commitlog import DEFAULT_DELAY_LEVELS_MS
from store.config.brokerconf import load_broker_config
from store.rebuild.batchcq import INVALID, batch_fields, batch_unit, batch_units, queue_files
from store.storedir import Store

STORE = "store-batchcq"


def test_units_and_files_are_the_brokers():
    e = expect(STORE)
    file_size = e["config"]["mapperFileSizeBatchConsumeQueue"]
    with Store.open(store_path(STORE)) as st:
        built = batch_units(st.commitlog.iter_records(), st.batch_cq_topics, DEFAULT_DELAY_LEVELS_MS)
        assert {f"{t}/{q}" for t, q in built} == set(e["batchConsumeQueues"])
        compared = 0
        for (topic, queue_id), units in built.items():
            directory = store_path(STORE) / "batchconsumequeue" / topic / str(queue_id)
            on_disk = sorted(p.name for p in directory.iterdir())
            files = dict(queue_files(units, file_size))
            assert sorted(files) == on_disk
            for name, data in files.items():
                assert data == (directory / name).read_bytes(), f"{topic}/{queue_id}/{name}"
                compared += 1
        assert compared >= 9


def test_plain_record_on_a_batch_topic_is_a_unit_of_one():
    assert batch_fields({}, 17) == (17, 1)
    assert batch_fields({"INNER_NUM": "3"}, 17) == (17, 1)  # both properties or neither
    assert batch_fields({"INNER_NUM": "3", "INNER_BASE": "40"}, 17) == (40, 3)


@pytest.mark.parametrize("num", ["x", "40000", "", " 3"])
def test_unparsable_batch_size_fails_the_brokers_check(num):
    assert batch_fields({"INNER_NUM": num, "INNER_BASE": "0"}, 0) == INVALID


def test_negative_base_is_skipped_by_the_dispatch():
    with Store.open(store_path(STORE)) as st:
        msg = next(
            r
            for r in st.commitlog.iter_records()
            if getattr(r, "properties", {}).get("INNER_BASE") is not None
        )
    unit = batch_unit(msg)
    assert isinstance(unit, BcqUnit) and unit.batch_size == int(msg.properties["INNER_NUM"])
    from formats.message.properties import encode_properties

    props = dict(msg.properties, INNER_BASE="-1")
    assert batch_unit(dataclasses.replace(msg, properties_raw=encode_properties(props))) is None


def _quiet(_text: str) -> None:
    pass


def test_rebuild_dry_run_finds_every_queue_the_same():
    from mqtool.rebuild import rebuild

    with Store.open(store_path(STORE)) as st:
        report = rebuild(st, "cq", note=_quiet)
    assert not report.changes and not report.warnings
    assert {f"{q.topic}/{q.queue_id}" for q in report.queues} >= set(expect(STORE)["batchConsumeQueues"])


def test_rebuild_execute_writes_the_brokers_bytes(tmp_path):
    import shutil

    from golden import copy_store

    from mqtool.rebuild import rebuild

    root = copy_store(STORE, tmp_path / "s")
    shutil.rmtree(root / "batchconsumequeue")
    shutil.copytree(root / "consumequeue/PlainTopic", root / "consumequeue/BatchTopicA")  # a stray CQ
    conf = tmp_path / "broker.conf"
    conf.write_text(
        f"mapperFileSizeBatchConsumeQueue={expect(STORE)['config']['mapperFileSizeBatchConsumeQueue']}\n"
    )
    with Store.open(root, load_broker_config(conf)) as st:
        report = rebuild(st, "cq", execute=True, note=_quiet)
    assert report.executed
    status = {(q.topic, q.queue_id): q.status for q in report.queues}
    assert status[("BatchTopicA", 0)] == "new" and status[("PlainTopic", 0)] == "same"
    assert not (root / "consumequeue/BatchTopicA").exists()
    golden = store_path(STORE) / "batchconsumequeue"
    files = sorted(p.relative_to(golden) for p in golden.rglob("*") if p.is_file())
    rebuilt = root / "batchconsumequeue"
    assert files == sorted(p.relative_to(rebuilt) for p in rebuilt.rglob("*") if p.is_file())
    for rel in files:
        assert (root / "batchconsumequeue" / rel).read_bytes() == (golden / rel).read_bytes()
