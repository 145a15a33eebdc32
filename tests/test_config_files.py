"""Config models against the golden stores, and ConfigFile's broker-like load and atomic writes."""

from __future__ import annotations

import errno
import json
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from formats.config.base import DataVersion, java_hash_order
from formats.config.codec import RawConfig, decode_config, encode_config
from formats.config.fastjson import dumps_pretty, is_pretty, parse
from formats.config.metadata import (
    MessageRequestModeTable,
    SubscriptionGroupConfig,
    SubscriptionGroupTable,
    TopicConfig,
    TopicConfigTable,
)
from formats.config.offsets import ConsumerOffsetTable, DelayOffsetTable, split_offset_key
from formats.config.order import ConsumerOrderInfoTable
from formats.errors import FormatError
from store.config.configfile import (
    CONFIG_NAMES,
    MODELS,
    TEMP_SUFFIX,
    ConfigFile,
    ConfigLoadError,
    ConfigWriteError,
    atomic_write,
)

DATA = Path(__file__).parent / "data"
STORES = ("store-a", "store-c", "store-49a")
# config/timercheck is the 5.x timer store's binary checkpoint (TimerCheckpoint), not a JSON file
CONFIG_FILES = sorted(p for p in DATA.glob("*/config/*") if p.is_file() and p.name != "timercheck")


def read(path: Path) -> str:
    return path.read_bytes().decode("utf-8")


def model_of(path: Path) -> type:
    return MODELS.get(path.name.removesuffix(".bak"), RawConfig)


def expect(store: str) -> dict:
    return json.loads((DATA / store / "expect.json").read_text())


def load(store: str, name: str):  # noqa: ANN201
    return decode_config(MODELS[name], read(DATA / store / "config" / name))


# ---------------------------------------------------------------------------------------------------
# Models on the golden files


@pytest.mark.parametrize("path", CONFIG_FILES, ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_unchanged_model_writes_the_original_text(path: Path) -> None:
    text = read(path)
    model = decode_config(model_of(path), text, str(path))
    assert encode_config(model, pretty=is_pretty(text)) == text


@pytest.mark.parametrize("store", STORES)
def test_delay_offsets_match_the_schedule_service(store: str) -> None:
    table = load(store, "delayOffset.json")
    assert table.offset_table == {int(k): v for k, v in expect(store)["scheduleOffsetTable"].items()}
    assert (table.data_version is None) == (store == "store-49a")


@pytest.mark.parametrize("store", ["store-a", "store-49a"])
def test_consumer_offsets_match_the_consume_queues(store: str) -> None:
    # README: groupA at half of the max offset of every queue of both topics, groupB at max on TopicTest.
    queues = expect(store)["consumeQueues"]
    table = load(store, "consumerOffset.json")
    seen = 0
    for topic, group, queue_id, offset in table.entries():
        max_offset = queues[f"{topic}/{queue_id}"]["maxOffset"]
        if group == "groupA" and not topic.startswith("%RETRY%"):
            assert offset == max_offset // 2
            seen += 1
        elif group == "groupB":
            assert offset == max_offset
            seen += 1
    assert seen == 10
    assert table.get("%RETRY%groupA", "groupA") == {0: 1}


def test_consumer_offset_shapes_of_both_versions() -> None:
    v5 = load("store-a", "consumerOffset.json")
    v4 = load("store-49a", "consumerOffset.json")
    assert v5.data_version is not None and v5.with_group_topic_map
    assert v4.data_version is None and not v4.with_group_topic_map
    assert "groupTopicMap" not in v4.to_json() and "dataVersion" not in v4.to_json()
    # groupTopicMap is regenerated from offsetTable, in Java HashMap order, as the file has it
    text = read(DATA / "store-c/config/consumerOffset.json")
    table = decode_config(ConsumerOffsetTable, text)
    assert table.group_topic_map() == parse(text)["groupTopicMap"]


@pytest.mark.parametrize("store", ["store-a", "store-c"])
def test_topics_cover_every_consume_queue(store: str) -> None:
    topics = load(store, "topics.json").topic_config_table
    for key in expect(store)["consumeQueues"]:
        topic, queue_id = key.rsplit("/", 1)
        assert int(queue_id) < topics[topic].read_queue_nums


def test_topic_and_group_shapes_of_both_versions() -> None:
    for store, v5 in (("store-a", True), ("store-49a", False)):
        topics = load(store, "topics.json")
        groups = load(store, "subscriptionGroup.json")
        assert topics.is_v5 is v5 and groups.is_v5 is v5
        # a new entry has the broker's property set and order: equal to the ones the broker wrote
        assert TopicConfig.new("TopicTest", 4, v5=v5) == topics.topic_config_table["TopicTest"]
        assert TopicConfig.new("OrderTopic", 2, order=True, v5=v5) == topics.topic_config_table["OrderTopic"]
        assert SubscriptionGroupConfig.new("groupA", v5=v5) == groups.subscription_group_table["groupA"]
    group_b = load("store-49a", "subscriptionGroup.json").subscription_group_table["groupB"]
    assert group_b.retry_max_times == 5 and not group_b.consume_broadcast_enable
    assert load("store-a", "subscriptionGroup.json").forbidden_table == {}


def test_message_request_modes() -> None:
    modes = load("store-a", "messageRequestMode.json")
    assert modes.get("TopicTest", "groupB").mode == "POP"
    assert modes.get("TopicTest", "groupB").pop_share_queue_num == 8
    assert modes.get("OrderTopic", "groupA").mode == "PULL"
    assert modes.get("OrderTopic", "groupB") is None


def test_new_entries_are_appended_with_bean_order() -> None:
    path = DATA / "store-a/config/messageRequestMode.json"
    modes = decode_config(MessageRequestModeTable, read(path))
    modes.set_mode("OrderTopic", "groupC", "POP", 3)
    closing = "\n\t\t}\n\t}\n}"
    original = read(path)
    assert original.endswith(closing)
    new_entry = (
        ',\n\t\t\t"groupC":{\n\t\t\t\t"consumerGroup":"groupC",\n\t\t\t\t"mode":"POP",\n'
        '\t\t\t\t"popShareQueueNum":3,\n\t\t\t\t"topic":"OrderTopic"\n\t\t\t}'
    )
    assert encode_config(modes) == original[: -len(closing)] + new_entry + closing


def test_offset_edit_bumps_version_and_regenerates_group_topic_map() -> None:
    table = load("store-a", "consumerOffset.json")
    before = table.data_version
    table.set_offset("TopicTest", "groupA", 0, 7)
    table.set_offset("OrderTopic", "newGroup", 1, 3)
    table.bump_version(1_800_000_000_000)
    assert table.data_version == DataVersion(before.counter + 1, 1_800_000_000_000, 0)
    back = decode_config(ConsumerOffsetTable, encode_config(table))
    assert back.offset_table == table.offset_table
    assert list(back.offset_table)[-1] == "OrderTopic@newGroup"
    assert parse(encode_config(table))["groupTopicMap"]["newGroup"] == ("OrderTopic",)


def test_data_version_next_version() -> None:
    v4 = DataVersion(counter=3, timestamp=5)
    assert v4.next_version(9) == DataVersion(4, 9, None)
    assert dumps_pretty(v4.next_version(9).to_json()) == '{\n\t"counter":4,\n\t"timestamp":9\n}'
    assert DataVersion(1, 2, 7).next_version(3) == DataVersion(2, 3, 0)


def test_broadcast_keys() -> None:
    table = ConsumerOffsetTable(
        {"t@g@broadcast": {0: 1}, "t@g": {0: 2}, "weird": {0: 3}}, with_group_topic_map=True
    )
    assert split_offset_key("t@g@broadcast") == ("t", "g@broadcast")
    assert split_offset_key("weird") is None
    assert table.group_topic_map() == {"g": ("t",)}  # Java's split("@") must give exactly 2 parts
    assert sorted(table.entries()) == [("t", "g", 0, 2), ("t", "g@broadcast", 0, 1)]


def test_unknown_properties_are_kept_in_bean_order() -> None:
    text = read(DATA / "store-49a/config/topics.json")
    text = text.replace('"order":true,', '"newProp":[1,2],\n\t\t\t"order":true,', 1)
    text = text.replace('\t"dataVersion"', '\t"aNew":{},\n\t"dataVersion"', 1)
    model = decode_config(TopicConfigTable, text)
    assert model.extra == {"aNew": {}}
    assert model.topic_config_table["OrderTopic"].extra == {"newProp": (1, 2)}
    assert encode_config(model) == text
    # a property out of alphabetical order is put in place, as fastjson would write the bean
    shuffled = text.replace('"newProp":[1,2],\n\t\t\t"order":true,', '"order":true,\n\t\t\t"newProp":[1,2],')
    assert encode_config(decode_config(TopicConfigTable, shuffled)) == text


def test_quoted_integer_keys_are_read_like_fastjson() -> None:
    model = decode_config(ConsumerOffsetTable, '{"offsetTable":{"t@g":{"0":5,1:6}}}')
    assert model.offset_table == {"t@g": {0: 5, 1: 6}}
    # a Map<Long, ...> key takes the whole long range, quoted or not
    text = '{"table":{"T@G":{0:{"ot":{"9223372036854775807":1,-9223372036854775808:2}}}}}'
    info = decode_config(ConsumerOrderInfoTable, text).table["T@G"][0]
    assert info.offset_next_visible_time == {2**63 - 1: 1, -(2**63): 2}
    assert encode_config(model) == '{\n\t"offsetTable":{\n\t\t"t@g":{0:5,1:6\n\t\t}\n\t}\n}'


@pytest.mark.parametrize(
    ("model", "text", "bad", "words"),
    [
        (ConsumerOffsetTable, '{"offsetTable":{"t@g":{0:"x"}}}', '"x"', "expected an integer"),
        (ConsumerOffsetTable, '{"offsetTable":{"t@g":{2147483648:1}}}', "{2147483648", "overflows Java int"),
        (ConsumerOffsetTable, '{"offsetTable":{"t@g":{"a":1}}}', '{"a"', "is not an integer"),
        (ConsumerOffsetTable, '{"offsetTable":{"t@g":{"2147483648":1}}}', '{"2147', "overflows Java int"),
        (
            ConsumerOrderInfoTable,  # Map<Long, Long>: a quoted key past the long range
            '{"table":{"T@G":{0:{"ot":{"9223372036854775808":1}}}}}',
            '{"9223',
            "overflows Java long (int64)",
        ),
        (ConsumerOrderInfoTable, '{"table":{"T@G":{0:{"oc":{"x":1}}}}}', '{"x"', "is not an integer"),
        (ConsumerOffsetTable, '{"offsetTable":[]}', "[]", "expected an object"),
        (DelayOffsetTable, '{"offsetTable":null}', "null", "decode would fail"),
        (TopicConfigTable, '{"dataVersion":null}', "null", "decode would fail"),
        (TopicConfigTable, '{"topicConfigTable":{"T":{"perm":"6"}}}', '"6"', "expected an integer"),
        (
            SubscriptionGroupTable,
            '{"subscriptionGroupTable":{"g":{"consumeEnable":1}}}',
            "1}",
            "true or false",
        ),
        (DelayOffsetTable, "[1]", "[1]", "expected an object"),
    ],
)
def test_model_errors_point_at_the_bad_value(model: type, text: str, bad: str, words: str) -> None:
    with pytest.raises(FormatError) as info:
        decode_config(model, text, "f.json")
    assert info.value.offset == text.index(bad)
    assert info.value.file == "f.json"
    assert words in info.value.message and "line 1, column" in info.value.message


def test_java_hash_order_resizes_like_a_hash_set() -> None:
    # HashSet(8) holds 6 keys before it doubles; order is by bucket, then insertion
    keys = [f"T{i}" for i in range(20)]
    order = java_hash_order(keys, 8)
    assert sorted(order) == sorted(keys)
    assert java_hash_order(["b", "a", "b"], 8) == java_hash_order(["b", "a"], 8)


_names = st.text(alphabet="abcXYZ%_-|0123", min_size=1, max_size=6)


@settings(max_examples=100, deadline=None)
@given(
    st.dictionaries(
        st.tuples(_names, _names).map("@".join),
        st.dictionaries(st.integers(0, 2**31 - 1), st.integers(0, 2**63 - 1), max_size=4),
        max_size=6,
    ),
    st.booleans(),
)
def test_random_offset_tables_round_trip(table: dict, v5: bool) -> None:
    model = ConsumerOffsetTable(table, DataVersion(1, 2, 0) if v5 else None, with_group_topic_map=v5)
    text = encode_config(model)
    back = decode_config(ConsumerOffsetTable, text)
    assert back == model
    assert encode_config(back) == text


# ---------------------------------------------------------------------------------------------------
# ConfigFile: ConfigManager.load with .bak fallback


def store_copy(tmp_path: Path, store: str = "store-a") -> Path:
    shutil.copytree(DATA / store / "config", tmp_path / "config")
    return tmp_path


@pytest.mark.parametrize("store", STORES)
def test_golden_files_load_from_the_file(tmp_path: Path, store: str) -> None:
    root = store_copy(tmp_path, store)
    for name in CONFIG_NAMES:
        loaded = ConfigFile(root, name).load()
        if (root / "config" / name).exists():
            assert loaded.source == "file" and loaded.path == root / "config" / name
            assert isinstance(loaded.model, MODELS.get(name, RawConfig))
        else:
            assert loaded.source == "none" and loaded.model == MODELS.get(name, RawConfig)()


def test_missing_file_falls_back_to_bak(tmp_path: Path) -> None:
    root = store_copy(tmp_path)
    (root / "config/consumerOffset.json").unlink()
    loaded = ConfigFile(root, "consumerOffset.json").load()
    assert loaded.source == "bak" and "is missing" in loaded.reason
    assert loaded.model == load("store-a", "consumerOffset.json")


def test_empty_file_falls_back_to_bak(tmp_path: Path) -> None:
    root = store_copy(tmp_path)
    (root / "config/topics.json").write_bytes(b"")
    loaded = ConfigFile(root, "topics.json").load()
    assert loaded.source == "bak" and "empty (0 bytes)" in loaded.reason
    assert "TopicTest" in loaded.model.topic_config_table


def test_garbage_file_falls_back_to_bak(tmp_path: Path) -> None:
    root = store_copy(tmp_path)
    path = root / "config/delayOffset.json"
    good = read(path)
    path.write_text(good[:60], encoding="utf-8")  # torn in place, as a 5.x in-place write can leave it
    loaded = ConfigFile(root, "delayOffset.json").load()
    assert loaded.source == "bak" and "cannot be decoded" in loaded.reason
    assert isinstance(loaded.file_error, FormatError) and loaded.file_error.offset == 60  # the tear
    assert loaded.model == decode_config(DelayOffsetTable, good)


def test_wrong_shape_file_falls_back_to_bak(tmp_path: Path) -> None:
    root = store_copy(tmp_path)
    text = '{"offsetTable":{"t@g":{0:"x"}}}'
    (root / "config/consumerOffset.json").write_text(text)
    loaded = ConfigFile(root, "consumerOffset.json").load()
    assert loaded.source == "bak" and loaded.file_error is not None
    assert loaded.file_error.offset == text.index('"x"')


def test_undecodable_bak_means_broker_start_fails(tmp_path: Path) -> None:
    root = store_copy(tmp_path)
    (root / "config/topics.json").write_text("{oops")
    (root / "config/topics.json.bak").write_text('{"topicConfigTable":{')
    with pytest.raises(ConfigLoadError, match="broker start would fail") as info:
        ConfigFile(root, "topics.json").load()
    assert info.value.file == str(root / "config/topics.json.bak")
    assert info.value.offset == 21


def test_no_file_and_no_usable_bak_gives_empty_tables(tmp_path: Path) -> None:
    loaded = ConfigFile(tmp_path, "consumerOffset.json").load()
    assert loaded.source == "none" and loaded.model == ConsumerOffsetTable()
    root = store_copy(tmp_path)
    (root / "config/delayOffset.json").write_text("garbage")
    (root / "config/delayOffset.json.bak").write_bytes(b"")
    loaded = ConfigFile(root, "delayOffset.json").load()
    assert loaded.source == "none" and "empty tables" in loaded.reason
    assert loaded.model == DelayOffsetTable() and loaded.file_error is not None


@pytest.mark.parametrize("content", ["  \n\t", "null", " [] "])
def test_text_fastjson_reads_as_null_loads_empty_without_bak(tmp_path: Path, content: str) -> None:
    root = store_copy(tmp_path)
    (root / "config/consumerOffset.json").write_text(content)
    loaded = ConfigFile(root, "consumerOffset.json").load()
    assert loaded.source == "file" and loaded.model == ConsumerOffsetTable()
    assert "decodes to null" in loaded.reason


def test_unreadable_file_falls_back(tmp_path: Path) -> None:
    root = store_copy(tmp_path)
    (root / "config/topics.json").unlink()
    (root / "config/topics.json").mkdir()  # reading a directory fails like an IOException
    loaded = ConfigFile(root, "topics.json").load()
    assert loaded.source == "bak" and "cannot be read" in loaded.reason


def test_invalid_utf8_is_replaced_like_java(tmp_path: Path) -> None:
    root = store_copy(tmp_path)
    (root / "config/messageRequestMode.json").write_bytes(
        b'{"messageRequestModeMap":{"T\xff":{"g":{"consumerGroup":"g","mode":"POP","topic":"T"}}}}'
    )
    loaded = ConfigFile(root, "messageRequestMode.json").load()
    assert loaded.source == "file" and loaded.warnings
    assert "T\ufffd" in loaded.model.message_request_mode_map


# ---------------------------------------------------------------------------------------------------
# Writing


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(TEMP_SUFFIX))


def test_atomic_write_keeps_old_content_in_bak(tmp_path: Path) -> None:
    path = tmp_path / "consumerOffset.json"
    path.write_text("old")
    os.chmod(path, 0o600)
    atomic_write(path, "new ü")
    assert path.read_bytes() == "new ü".encode()
    assert (tmp_path / "consumerOffset.json.bak").read_text() == "old"
    assert path.stat().st_mode & 0o777 == 0o600
    assert leftovers(tmp_path) == []


def test_atomic_write_new_file_and_empty_previous(tmp_path: Path) -> None:
    path = tmp_path / "delayOffset.json"
    atomic_write(path, "first")
    assert path.read_text() == "first" and not (tmp_path / "delayOffset.json.bak").exists()
    bak = tmp_path / "delayOffset.json.bak"
    bak.write_text("good backup")
    path.write_bytes(b"")
    atomic_write(path, "second")
    assert bak.read_text() == "good backup"  # an empty file is not copied over a good .bak
    with pytest.raises(ConfigWriteError, match="empty"):
        atomic_write(path, "")
    assert path.read_text() == "second"


def test_failed_replace_leaves_file_intact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "topics.json"
    path.write_text("old")
    (tmp_path / "topics.json.bak").write_text("older")

    def no_space(src: object, dst: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    with monkeypatch.context() as m:
        m.setattr(os, "replace", no_space)
        with pytest.raises(ConfigWriteError, match="no space left on device") as info:
            atomic_write(path, "new")
    assert info.value.file == str(path)
    assert path.read_text() == "old" and (tmp_path / "topics.json.bak").read_text() == "older"
    assert leftovers(tmp_path) == []


def test_failed_write_leaves_file_intact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "topics.json"
    path.write_text("old")
    real_write = os.write

    def half_then_fail(fd: int, data: bytes) -> int:
        if len(data) > 2:
            return real_write(fd, bytes(data[:2]))
        raise OSError(errno.EROFS, "Read-only file system")

    with monkeypatch.context() as m:
        m.setattr(os, "write", half_then_fail)
        with pytest.raises(ConfigWriteError, match="read-only file system"):
            atomic_write(path, "new content")
    assert path.read_text() == "old" and not (tmp_path / "topics.json.bak").exists()
    assert leftovers(tmp_path) == []


def test_unencodable_text_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigWriteError):
        atomic_write(tmp_path / "x.json", "\ud800")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("store", STORES)
def test_save_of_loaded_model_rewrites_identically(tmp_path: Path, store: str) -> None:
    root = store_copy(tmp_path, store)
    for name in CONFIG_NAMES:
        path = root / "config" / name
        if not path.exists():
            continue
        before = read(path)
        config = ConfigFile(root, name)
        config.save(config.load().model)
        assert read(path) == before  # compact transactionMetrics stays compact
        assert read(root / "config" / (name + ".bak")) == before
    assert leftovers(root / "config") == []


def test_save_edit_then_load_again(tmp_path: Path) -> None:
    root = store_copy(tmp_path, "store-49a")
    config = ConfigFile(root, "delayOffset.json")
    table = config.load().model
    table.offset_table[18] = 0
    config.save(table)
    assert config.load().model.offset_table == {1: 4, 2: 2, 3: 2, 18: 0}
    assert read(root / "config/delayOffset.json") == '{\n\t"offsetTable":{1:4,2:2,3:2,18:0\n\t}\n}'
    new = ConfigFile(tmp_path / "fresh", "transactionMetrics")
    new.save(RawConfig({"transactionCount": {}}))
    assert read(new.path) == '{"transactionCount":{}}'
