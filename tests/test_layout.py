"""Store.layout: each store setting resolved once, in the broker's order, against the golden stores;
the checkpoint's one reader and writer; the ConsumeQueue's time search chosen by broker version."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from golden import STORES, expect, store_path

from formats.checkpoint import CHECKPOINT_FILE_SIZE
from formats.consumequeue import DEFAULT_CQ_FILE_SIZE
from formats.errors import FormatError
from formats.indexfile import DEFAULT_HASH_SLOT_NUM, DEFAULT_INDEX_NUM
from formats.message.commitlog import DEFAULT_DELAY_LEVELS_MS
from store.checkpoint import read_checkpoint, write_checkpoint
from store.config.brokerconf import load_broker_config
from store.layout import Setting
from store.log.mappedfile import StoreFileError
from store.storedir import Store


def _major(store: str) -> int:
    return int(expect(store)["rocketmqVersion"][0])


@pytest.mark.parametrize("store", STORES)
def test_settings_from_the_files_are_what_the_broker_was_given(store: str) -> None:
    config = expect(store)["config"]
    layout = Store.open(store_path(store)).layout
    assert layout.commitlog_file_size_on_disk == config["mappedFileSizeCommitLog"]
    assert layout.cq_file_size() == Setting(config["mappedFileSizeConsumeQueue"], "current files")
    slots, num, notes = layout.index_settings()
    assert (slots, num, notes) == (
        Setting(config["maxHashSlotNum"], "current files"),
        Setting(config["maxIndexNum"], "current files"),
        [],
    )
    assert layout.broker_version().major == _major(store)
    assert layout.broker_version().detected
    assert not layout.consume_queues_in_rocksdb
    levels = layout.delay_levels
    assert levels.source == "default" and levels.text == config["messageDelayLevel"]
    assert levels.ms == DEFAULT_DELAY_LEVELS_MS and len(levels.table) == 18


def test_flag_beats_broker_conf_beats_files(tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text("mappedFileSizeConsumeQueue=12000\nmaxIndexNum=9000\nmessageDelayLevel=1s 2s\n")
    layout = Store.open(store_path("store-a"), load_broker_config(conf)).layout
    assert layout.cq_file_size() == Setting(12000, "broker.conf")
    assert layout.cq_file_size(400, "--flag") == Setting(400, "--flag")
    slots, num, _ = layout.index_settings(index_num=7, index_num_name="--max-index-num")
    assert slots == Setting(64, "current files")  # broker.conf does not set it
    assert num == Setting(7, "--max-index-num")
    assert layout.index_settings()[1] == Setting(9000, "broker.conf")
    assert layout.configured("maxHashSlotNum") is None
    assert layout.configured_index_geometry is not None
    assert layout.configured_index_geometry.index_num == 9000
    assert layout.delay_levels.source == "broker-config"
    assert layout.delay_levels.ms == (1000, 2000)


def test_an_empty_store_takes_the_broker_defaults(tmp_path: Path) -> None:
    (tmp_path / "commitlog").mkdir()
    layout = Store.open(tmp_path).layout
    assert layout.commitlog_file_size_on_disk is None
    assert layout.cq_file_size() == Setting(DEFAULT_CQ_FILE_SIZE, "broker default")
    slots, num, _ = layout.index_settings()
    assert (slots, num) == (
        Setting(DEFAULT_HASH_SLOT_NUM, "broker default"),
        Setting(DEFAULT_INDEX_NUM, "broker default"),
    )
    assert layout.detected_version is None
    assert layout.broker_version().major == 5 and "assuming" in layout.broker_version().reason
    assert layout.broker_version(4).major == 4 and not layout.broker_version(4).detected


def test_unreadable_index_files_become_a_note(tmp_path: Path) -> None:
    root = tmp_path / "store"
    shutil.copytree(store_path("store-a"), root)
    for f in (root / "index").iterdir():
        f.write_bytes(b"short")
    layout = Store.open(root).layout
    slots, num, notes = layout.index_settings()
    assert slots.source == num.source == "broker default"
    assert len(notes) == 1 and "index geometry not readable" in notes[0]
    with pytest.raises(FormatError):
        _ = layout.index_geometry_on_disk


# --- checkpoint -----------------------------------------------------------------------------------


@pytest.mark.parametrize("store", STORES)
def test_one_checkpoint_reader(store: str) -> None:
    want = expect(store)["checkpoint"]
    with Store.open(store_path(store)) as st:
        cp = st.checkpoint()
    assert cp == read_checkpoint(store_path(store))
    assert (cp.physic_msg_timestamp, cp.logics_msg_timestamp, cp.index_msg_timestamp) == (
        want["physicMsgTimestamp"],
        want["logicsMsgTimestamp"],
        want["indexMsgTimestamp"],
    )


def test_checkpoint_guards(tmp_path: Path) -> None:
    assert read_checkpoint(tmp_path) is None
    os.mkfifo(tmp_path / "checkpoint")
    with pytest.raises(StoreFileError, match="not a regular file") as err:
        read_checkpoint(tmp_path)
    assert err.value.file == str(tmp_path / "checkpoint")
    (tmp_path / "checkpoint").unlink()
    (tmp_path / "checkpoint").write_bytes(bytes(100))
    with pytest.raises(FormatError, match="4096 bytes, found 100"):
        read_checkpoint(tmp_path)


def test_checkpoint_times_only_rise(tmp_path: Path) -> None:
    created = write_checkpoint(tmp_path, physic_msg_timestamp=50, logics_msg_timestamp=40)
    assert (tmp_path / "checkpoint").stat().st_size == CHECKPOINT_FILE_SIZE
    assert read_checkpoint(tmp_path) == created
    raised = Store(tmp_path).write_checkpoint(physic_msg_timestamp=10, index_msg_timestamp=30)
    assert (raised.physic_msg_timestamp, raised.logics_msg_timestamp, raised.index_msg_timestamp) == (
        50,
        40,
        30,
    )
    assert read_checkpoint(tmp_path) == raised


# --- ConsumeQueue time search by version ------------------------------------------------------------


def test_time_search_follows_the_broker_version() -> None:
    """5.x searches by store time with a boundary; 4.x picks the file by its (recorded) mtime."""
    for store in ("store-a", "store-49a"):
        e = expect(store)
        with Store.open(store_path(store)) as st:
            times = st.commitlog.pickup_store_timestamp
            major = st.layout.broker_version().major
            for p in e["offsetByTime"]:
                cq = st.consume_queue(p["topic"], p["queueId"])
                got = cq.offset_by_time(major, p["timestamp"], times, None, e.get("cqFileLastModified"))
                assert got == p["offset"], (store, p)
                if major == 5:
                    assert cq.offset_by_time(5, p["timestamp"], times, "upper") == p["offsetUpper"], p
                assert (
                    cq.min_offset_of(major) == e["consumeQueues"][f"{p['topic']}/{p['queueId']}"]["minOffset"]
                )


def test_an_empty_delay_level_table(tmp_path: Path) -> None:
    """verify/audit check against the table as given; dispatch falls back to the broker's default table."""
    conf = tmp_path / "broker.conf"
    conf.write_text("messageDelayLevel=\n")
    levels = Store.open(store_path("store-a"), load_broker_config(conf)).layout.delay_levels
    assert levels.in_level_order == () and levels.max_level == 0 and levels.delay_ms(1) is None
    assert levels.ms == DEFAULT_DELAY_LEVELS_MS


# --- writers on the same Store --------------------------------------------------------------------


def test_the_appender_writes_with_the_stores_layout(tmp_path: Path) -> None:
    from formats.indexfile import IndexGeometry
    from store.appender import NewMessage
    from store.liveness import hold_store_lock
    from store.queue.consumequeue import ConsumeQueue

    root = tmp_path / "store-49a"
    shutil.copytree(store_path("store-49a"), root)
    config = expect("store-49a")["config"]
    store = Store.open(root)
    before = ConsumeQueue(root, "TopicTest", 1).max_offset
    clock = iter(range(1_900_000_000_000, 1_900_000_001_000))
    with hold_store_lock(root), store.appender(now=lambda: next(clock)) as appender:
        assert appender.store is store and appender.version.major == 4
        assert appender.file_size == config["mappedFileSizeCommitLog"]
        assert appender.dispatcher.cq_file_size == config["mappedFileSizeConsumeQueue"]
        assert appender.dispatcher.index is not None
        assert appender.dispatcher.index.geometry == IndexGeometry(
            config["maxHashSlotNum"], config["maxIndexNum"]
        )
        result = appender.append(NewMessage("TopicTest", b"via Store.appender", queue_id=1))
    assert result.queue_offset == before
    assert ConsumeQueue(root, "TopicTest", 1).max_offset == before + 1
    assert read_checkpoint(root).physic_msg_timestamp == result.store_timestamp
