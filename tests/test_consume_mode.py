"""`mqtool consume-mode`: messageRequestMode.json shown with its retry topics, and set like
mqadmin setConsumeMode under the write safety rules."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from golden import LOCK_HOLDER as HOLDER
from golden import copy_store as _copy_store
from golden import run_mqtool as mqtool
from golden import snapshot_config as snapshot
from golden import store_path

from formats.config.codec import decode_config
from formats.config.metadata import MessageRequestModeTable
from formats.names import pop_retry_topic, pull_retry_topic
from mqtool.consume_mode import ConsumeModeError, consume_modes, plan_consume_mode, set_consume_mode
from store.liveness import BrokerRunningError
from store.storedir import Store

COPIED = ("commitlog", "consumequeue", "config", "checkpoint", "lock", "abort", "abort.bak")


def copy_store(name: str, dest: Path) -> Path:
    return _copy_store(name, dest, parts=COPIED)


def modes_file(root: Path) -> MessageRequestModeTable:
    text = (root / "config" / "messageRequestMode.json").read_text(encoding="utf-8")
    return decode_config(MessageRequestModeTable, text)


def quiet(_message: str) -> None:
    pass


def rows_by_pair(modes) -> dict[tuple[str, str], dict]:
    return {(r.topic, r.group): r.to_dict() for r in modes.rows}


def test_retry_topic_names() -> None:
    assert pull_retry_topic("g") == "%RETRY%g"
    assert pop_retry_topic("T", "g") == "%RETRY%g_T"
    assert pop_retry_topic("T", "g", v2=True) == "%RETRY%g+T"


def test_show_store_a() -> None:
    with Store.open(store_path("store-a")) as st:
        modes = consume_modes(st)
        rows = rows_by_pair(modes)
        assert set(rows) == {("TopicTest", "groupB"), ("OrderTopic", "groupA"), ("TopicTest", "groupA")}
        pop = rows[("TopicTest", "groupB")]
        assert (pop["mode"], pop["popShareQueueNum"], pop["source"]) == ("POP", 8, "file")
        assert pop["retryTopics"] == [
            {
                "topic": "%RETRY%groupB_TopicTest",
                "kind": "pop",
                "exists": False,
                "messagesWaiting": 0,
                "readInMode": True,
            }
        ]
        default = rows[("TopicTest", "groupA")]
        assert (default["mode"], default["popShareQueueNum"], default["source"]) == ("PULL", 0, "default")
        retry = st.consume_queue("%RETRY%groupA", 0)
        committed = st.config("consumerOffset.json").load().model.get("%RETRY%groupA", "groupA")[0]
        assert default["retryTopics"] == [
            {
                "topic": "%RETRY%groupA",
                "kind": "pull",
                "exists": True,
                "messagesWaiting": retry.max_offset - committed,
                "readInMode": True,
            }
        ]
        assert default["retryMessagesWaiting"] == retry.max_offset - committed
        # filters, and a named pair nobody set: the broker's default
        assert [r.topic for r in consume_modes(st, group="groupB").rows] == ["TopicTest"]
        named = consume_modes(st, group="groupB", topic="OrderTopic").rows
        assert [(r.mode, r.source) for r in named] == [("PULL", "default")]


def test_show_store_c_pop_retry_topic_has_waiting_messages() -> None:
    with Store.open(store_path("store-c")) as st:
        rows = rows_by_pair(consume_modes(st, group="popGroupC"))
        pop = rows[("RetentionTopic", "popGroupC")]
        assert (pop["mode"], pop["popShareQueueNum"]) == ("POP", 4)
        cq = st.consume_queue("%RETRY%popGroupC_RetentionTopic", 0)
        assert pop["retryTopics"][0]["topic"] == "%RETRY%popGroupC_RetentionTopic"
        assert pop["retryMessagesWaiting"] == cq.max_offset - 0 == 2  # offset 0, two revived messages
        retry_row = rows[("%RETRY%popGroupC_RetentionTopic", "popGroupC")]
        assert retry_row["retryTopics"] == [] and "retry topic" in retry_row["note"]
        # groupA has no offset on %RETRY%groupA here: waiting counts from the queue's min offset
        a = rows_by_pair(consume_modes(st, group="groupA"))[("OrderTopic", "groupA")]
        retry = st.consume_queue("%RETRY%groupA", 0)
        assert a["retryMessagesWaiting"] == retry.max_offset - retry.min_offset


def test_show_store_49a_is_all_pull() -> None:
    with Store.open(store_path("store-49a")) as st:
        modes = consume_modes(st)
    assert modes.broker_version.major == 4
    assert modes.rows and all(r.mode == "PULL" and r.source == "default" for r in modes.rows)
    assert any("no consume-mode switch" in n for n in modes.notes)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("%RETRY%groupA", "groupA", "POP"), "retry topic is not allowed to set mode"),
        (("NoSuchTopic", "groupA", "POP"), r"topic\[NoSuchTopic\] not exist"),
        (("TopicTest", "ghost", "POP"), "subscription group does not exist"),
        (("TopicTest", "groupA", "PUSH"), "PULL or POP"),
    ],
)
def test_set_is_validated_as_the_broker_does(args: tuple, message: str) -> None:
    with Store.open(store_path("store-a")) as st, pytest.raises(ConsumeModeError, match=message):
        plan_consume_mode(st, *args)


def test_set_refuses_a_49a_store() -> None:
    with Store.open(store_path("store-49a")) as st, pytest.raises(ConsumeModeError, match="4.9 has no"):
        plan_consume_mode(st, "TopicTest", "groupA", "POP")


def test_dry_run_changes_nothing(tmp_path: Path) -> None:
    root = copy_store("store-a", tmp_path / "a")
    before = snapshot(root)
    with Store.open(root) as st:
        change = set_consume_mode(st, "TopicTest", "groupA", "POP", 2, False, note=quiet)
    assert change.changed and not change.executed and change.after is None
    assert (change.mode_before, change.source_before, change.mode) == ("PULL", "default", "POP")
    assert snapshot(root) == before


def test_execute_writes_reads_back_and_keeps_bak(tmp_path: Path) -> None:
    root = copy_store("store-a", tmp_path / "a")
    path = root / "config" / "messageRequestMode.json"
    before = path.read_text(encoding="utf-8")
    with Store.open(root) as st:
        change = set_consume_mode(st, "TopicTest", "groupA", "pop", 2, True, note=quiet)
    assert change.executed
    assert change.after is not None
    assert [(r.topic, r.group, r.mode, r.pop_share_queue_num, r.source) for r in change.after.rows] == [
        ("TopicTest", "groupA", "POP", 2, "file")
    ]
    assert [r.topic for r in change.after.rows[0].retry_topics] == ["%RETRY%groupA_TopicTest"]
    assert (root / "config" / "messageRequestMode.json.bak").read_text(encoding="utf-8") == before
    after = path.read_text(encoding="utf-8")
    entry = (
        ',\n\t\t\t"groupA":{\n\t\t\t\t"consumerGroup":"groupA",\n\t\t\t\t"mode":"POP",\n'
        '\t\t\t\t"popShareQueueNum":2,\n\t\t\t\t"topic":"TopicTest"\n\t\t\t}'
    )
    marker = '"topic":"TopicTest"\n\t\t\t}'
    assert after == before.replace(marker, marker + entry, 1)
    table = modes_file(root)
    assert table.get("TopicTest", "groupB").mode == "POP"  # the other entries stay
    # the same again: nothing to write
    with Store.open(root) as st:
        again = set_consume_mode(st, "TopicTest", "groupA", "POP", 2, True, note=quiet)
    assert not again.changed and not again.executed


def test_execute_creates_the_file_when_absent(tmp_path: Path) -> None:
    root = copy_store("store-49a", tmp_path / "b")
    with Store.open(root) as st:
        change = set_consume_mode(st, "TopicTest", "groupB", "POP", 0, True, broker_version=5, note=quiet)
    assert change.executed
    text = (root / "config" / "messageRequestMode.json").read_text(encoding="utf-8")
    assert text == (
        '{\n\t"messageRequestModeMap":{\n\t\t"TopicTest":{\n\t\t\t"groupB":{\n'
        '\t\t\t\t"consumerGroup":"groupB",\n\t\t\t\t"mode":"POP",\n\t\t\t\t"popShareQueueNum":0,\n'
        '\t\t\t\t"topic":"TopicTest"\n\t\t\t}\n\t\t}\n\t}\n}'
    )
    assert not (root / "config" / "messageRequestMode.json.bak").exists()


def test_switch_warns_about_waiting_retry_messages(tmp_path: Path) -> None:
    with Store.open(store_path("store-c")) as st:
        change = plan_consume_mode(st, "RetentionTopic", "popGroupC", "PULL")
    assert any("2 messages wait in %RETRY%popGroupC_RetentionTopic" in w for w in change.warnings)


def test_held_lock_refuses(tmp_path: Path) -> None:
    root = copy_store("store-a", tmp_path / "a")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(root / "lock")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        before = snapshot(root)
        with Store.open(root) as st, pytest.raises(BrokerRunningError):
            set_consume_mode(st, "TopicTest", "groupA", "POP", 0, True, note=quiet)
        assert snapshot(root) == before
    finally:
        holder.kill()
        holder.wait()


def test_cli(tmp_path: Path) -> None:
    root = copy_store("store-a", tmp_path / "a")
    shown = mqtool("consume-mode", "show", "-s", str(root), "-f", "json")
    assert shown.returncode == 0, shown.stderr
    assert {(r["topic"], r["group"], r["mode"]) for r in json.loads(shown.stdout)} == {
        ("TopicTest", "groupB", "POP"),
        ("OrderTopic", "groupA", "PULL"),
        ("TopicTest", "groupA", "PULL"),
    }
    dry = mqtool("consume-mode", "set", "-s", str(root), "-t", "OrderTopic", "-g", "groupA", "--mode", "POP")
    assert dry.returncode == 0 and "PULL -> POP" in dry.stdout and "Dry run" in dry.stdout
    done = mqtool(
        "consume-mode", "set", "-s", str(root), "-t", "OrderTopic", "-g", "groupA", "--mode", "POP",
        "--pop-share-queue-num", "3", "--execute", "-f", "json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["executed"] and doc["after"][0]["mode"] == "POP" and doc["after"][0]["popShareQueueNum"] == 3
    bad = mqtool(
        "consume-mode", "set", "-s", str(root), "-t", "%RETRY%groupA", "-g", "groupA", "--mode", "POP"
    )
    assert bad.returncode == 1 and bad.stderr.startswith("mqtool: error: retry topic is not allowed")


def test_show_store_pop_lists_messages_left_in_the_other_modes_retry_topic() -> None:
    """store-pop (RocketMQ 5.3.3's own POP processors): GID_PULL was switched from PULL to POP with messages
    still in %RETRY%GID_PULL; GID_REVIVE_V1/V2 popped with no messageRequestMode entry (default PULL) and
    PopReviveService revived their unacked messages into the POP retry topics V1 and V2."""
    expect = json.loads((store_path("store-pop") / "expect.json").read_text(encoding="utf-8"))
    offsets = expect["configFiles"]["consumerOffset"]["offsetTable"]

    def waiting(topic: str, group: str) -> int:
        cq = expect["consumeQueues"][f"{topic}/0"]
        return cq["maxOffset"] - offsets.get(f"{topic}@{group}", {}).get("0", cq["minOffset"])

    with Store.open(store_path("store-pop")) as st:
        rows = rows_by_pair(consume_modes(st))
    switched = rows[("PullTopic", "GID_PULL")]
    assert (switched["mode"], switched["source"]) == ("POP", "file")
    left = [r for r in switched["retryTopics"] if not r["readInMode"]]
    assert left == [
        {
            "topic": "%RETRY%GID_PULL",
            "kind": "pull",
            "exists": True,
            "messagesWaiting": waiting("%RETRY%GID_PULL", "GID_PULL"),
            "readInMode": False,
        }
    ]
    assert left[0]["messagesWaiting"] == 2  # 3 sent back, offset 1 committed before the switch
    assert "only PULL consumers read: %RETRY%GID_PULL (2)" in switched["note"]
    for group, topic, kind in (
        ("GID_REVIVE_V1", "%RETRY%GID_REVIVE_V1_PopTopicB", "pop"),
        ("GID_REVIVE_V2", "%RETRY%GID_REVIVE_V2+PopTopicB", "pop-v2"),
    ):
        row = rows[("PopTopicB", group)]
        assert row["mode"] == "PULL" and row["source"] == "default"
        (pop,) = [r for r in row["retryTopics"] if not r["readInMode"]]
        assert (pop["topic"], pop["kind"], pop["messagesWaiting"]) == (topic, kind, waiting(topic, group))
        assert row["retryMessagesWaiting"] == waiting(topic, group) > 0
        assert "SimpleConsumers and proxy clients pop" in row["note"]
    # nothing left anywhere: no note
    assert rows[("PopTopicA", "GID_ACKED")]["note"] is None
