"""`mqtool topic|group update|delete` (mqtool.configedit): the files written are the real managers'.

tests/data/config-edits/expect.json holds, per case of tests/config_edit_cases.py, the topics.json,
subscriptionGroup.json and consumerOffset.json the real 5.3.3 / 4.9.8 TopicConfigManager,
SubscriptionGroupManager and ConsumerOffsetManager persisted for the same edits (recorded by
tests/oracle/config_edit_cases.py). mqtool's must be the same bytes but for dataVersion's timestamp.
"""

from __future__ import annotations

import json
import re

import pytest
from config_edit_cases import CASES
from golden import GOLDEN, copy_store, run_main, snapshot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from formats.errors import MqtoolError
from mqtool.configedit.edit import ConfigEditError, apply_edit
from mqtool.configedit.group import plan_group_delete, plan_group_update
from mqtool.configedit.topic import plan_topic_delete, plan_topic_update
from store.storedir import Store

EXPECT = json.loads((GOLDEN / "config-edits" / "expect.json").read_text(encoding="utf-8"))["cases"]
PLANS = {
    "topic-update": plan_topic_update,
    "topic-delete": plan_topic_delete,
    "group-update": plan_group_update,
    "group-delete": plan_group_delete,
}
TIMESTAMP = re.compile(r'("timestamp":)\d+')


def _run(root, op, execute: bool = True):
    with Store.open(root) as store:
        edit = PLANS[op.kind](store, op.name, **op.args)
        return apply_edit(store, edit, execute)


def _no_time(text: str) -> str:
    return TIMESTAMP.sub(r"\g<1>0", text)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_files_are_the_real_managers(case, tmp_path):
    root = copy_store(case.store, tmp_path / "s")
    for op in case.ops:
        _run(root, op)
    expected = EXPECT[case.name]["files"]
    for name, text in expected.items():
        ours = (root / "config" / name).read_text(encoding="utf-8")
        assert _no_time(ours) == _no_time(text), f"{case.name}: {name} differs from the real manager's"


def test_expect_covers_every_case():
    assert set(EXPECT) == {c.name for c in CASES}


def test_timestamp_is_now(tmp_path):
    root = copy_store("store-a", tmp_path / "s")
    with Store.open(root) as store:
        edit = plan_topic_update(store, "NewTopic", now=1234)
        apply_edit(store, edit, True)
    text = (root / "config" / "topics.json").read_text()
    assert '"counter":6' in text and '"timestamp":1234' in text


def test_dry_run_writes_nothing(tmp_path):
    root = copy_store("store-a", tmp_path / "s")
    before = snapshot(root)
    for op in CASES[0].ops + CASES[6].ops:
        edit = _run(root, op, execute=False)
        assert edit.rows and not edit.executed
    assert snapshot(root) == before


def test_delete_topic_removes_its_queues_and_offsets(tmp_path):
    root = copy_store("store-a", tmp_path / "s")
    assert (root / "consumequeue" / "TopicTest").is_dir()
    _run(root, CASES[6].ops[0])
    assert not (root / "consumequeue" / "TopicTest").exists()
    assert (root / "consumequeue" / "OrderTopic").is_dir()
    assert not [p for p in root.iterdir() if p.name.startswith(".mqtool-tmp-")]
    assert "TopicTest@" not in (root / "config" / "consumerOffset.json").read_text()


@pytest.mark.parametrize(
    ("store", "plan", "name", "args", "message"),
    [
        ("store-a", plan_topic_update, "SCHEDULE_TOPIC_XXXX", {}, "conflict with system topic"),
        ("store-a", plan_topic_update, "rmq_sys_anything", {}, "conflict with system topic"),
        ("store-a", plan_topic_update, "DefaultCluster", {}, "conflict with system topic"),
        ("store-a", plan_topic_update, "bad topic", {}, "illegal characters"),
        ("store-a", plan_topic_update, "x" * 128, {}, "longer than topic max length"),
        (
            "store-a",
            plan_topic_update,
            "TopicTest",
            {"read_queues": 2},
            "queue 2 holds messages (offsets 0..",
        ),
        ("store-a", plan_topic_update, "TopicTest", {"attributes": ["+queue.type=BatchCQ"]}, "unchangeable"),
        ("store-a", plan_topic_update, "TopicTest", {"attributes": ["+foo=1"]}, "unsupported key: foo"),
        ("store-a", plan_topic_update, "TopicTest", {"attributes": ["-message.type"]}, "nonexistent key"),
        ("store-a", plan_topic_update, "N", {"attributes": ["-queue.type"]}, "only add attribute"),
        ("store-a", plan_topic_update, "N", {"attributes": ["+queue.type=X"]}, "value is not in set"),
        ("store-a", plan_topic_update, "N", {"attributes": ["+message.type=MIXED"]}, "MIXED"),
        ("store-a", plan_topic_update, "N", {"attributes": ["+reserve.time=x"]}, "not a Java long"),
        ("store-a", plan_topic_update, "N", {"perm": 5}, "--perm 5"),
        ("store-a", plan_topic_update, "N", {"read_queues": -1}, "--read-queues -1"),
        ("store-a", plan_topic_delete, "TBW102", {}, "conflict with system topic"),
        ("store-a", plan_topic_delete, "NoSuchTopic", {}, "nothing to delete"),
        ("store-a", plan_group_update, "TOOLS_CONSUMER", {}, "the broker defines or creates"),
        ("store-a", plan_group_update, "CID_RMQ_SYS_X", {}, "the broker defines or creates"),
        ("store-a", plan_group_update, "g", {"attributes": ["+a=b"]}, "unsupported key: a"),
        ("store-a", plan_group_update, "g", {"retry_max_times": 2**31}, "overflows Java int"),
        ("store-a", plan_group_delete, "NoSuchGroup", {}, "nothing to delete"),
        ("store-49a", plan_topic_update, "N", {"order": True}, "4.9.8's updateTopic does not carry"),
        ("store-49a", plan_topic_update, "N", {"attributes": ["+queue.type=BatchCQ"]}, "no attributes"),
        ("store-49a", plan_group_update, "g", {"consume_timeout_minute": 3}, "no such property"),
    ],
)
def test_refusals(store, plan, name, args, message, tmp_path):
    root = copy_store(store, tmp_path / "s")
    with Store.open(root) as st, pytest.raises(ConfigEditError) as err:
        plan(st, name, **args)
    assert message in str(err.value)


def test_rocksdb_configs_refused(tmp_path):
    root = copy_store("store-rocksdb-v2", tmp_path / "s")
    with Store.open(root) as st, pytest.raises(ConfigEditError, match="RocksDB|rdb|not"):
        plan_topic_update(st, "NewTopic")


def test_unchanged_topic_writes_nothing(tmp_path):
    root = copy_store("store-a", tmp_path / "s")
    with Store.open(root) as st:
        edit = plan_topic_update(st, "TopicTest", read_queues=4)
    assert not edit.changed and "nothing to change" in edit.notes[0]


def test_cli_json_and_csv(tmp_path, capsys):
    root = copy_store("store-a", tmp_path / "s")
    code, out, _ = run_main(
        ["-s", str(root), "-f", "json", "topic", "update", "NewTopic", "--read-queues", "2"], capsys
    )
    assert code == 0
    rows = json.loads(out)
    assert {r["field"]: r["after"] for r in rows}["readQueueNums"] == 2
    assert "NewTopic" not in (root / "config" / "topics.json").read_text()
    code, out, _ = run_main(
        ["-s", str(root), "-f", "csv", "group", "delete", "groupB", "--clean-offset"], capsys
    )
    assert code == 0 and out.splitlines()[0] == "action,file,name,field,before,after"
    code, out, _ = run_main(["-s", str(root), "topic", "update", "NewTopic", "--execute"], capsys)
    assert code == 0 and "NewTopic" in (root / "config" / "topics.json").read_text()
    code, _, err = run_main(["-s", str(root), "topic", "delete", "SCHEDULE_TOPIC_XXXX", "--execute"], capsys)
    assert code != 0 and "conflict with system topic" in err and "Traceback" not in err


def test_a_parked_directory_of_an_interrupted_delete_goes_with_the_next_edit(tmp_path):
    root = copy_store("store-a", tmp_path / "s")
    parked = root / ".mqtool-tmp-deleted-1-2"
    (parked / "0").mkdir(parents=True)
    (parked / "0" / "00000000000000000000").write_bytes(b"x" * 20)
    with Store.open(root) as store:
        apply_edit(store, plan_group_update(store, "GID_X", retry_max_times=1), True)
    assert not parked.exists()


def test_delete_on_49_removes_the_topics_queues_and_lists_what_cleanunusedtopic_also_would(tmp_path):
    root = copy_store("store-49a", tmp_path / "s")
    with Store.open(root) as store:
        edit = plan_topic_delete(store, "OrderTopic")
        also = {r.name for r in edit.rows if r.action == "broker-also" and r.file == "consumequeue/"}
        assert "RMQ_SYS_TRANS_HALF_TOPIC" in also  # no topic config on 4.9: 4.9.8's clean would destroy it
        assert not [r for r in edit.rows if r.action == "remove-offsets"]  # 4.9.8 keeps the offsets
        apply_edit(store, edit, True)
    assert (root / "consumequeue" / "OrderTopic").is_dir()  # 4.9.8 keeps the topic directory
    assert not list((root / "consumequeue" / "OrderTopic").iterdir())
    assert (root / "consumequeue" / "RMQ_SYS_TRANS_HALF_TOPIC").is_dir()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    name=st.text(min_size=0, max_size=140),
    attrs=st.lists(st.text(alphabet="+-=,.abcdeqmpstuyBCQSMIXDFLNORT0123456789 ", max_size=24), max_size=4),
    queues=st.one_of(st.none(), st.integers(-(2**40), 2**40)),
    perm=st.one_of(st.none(), st.integers(-10, 10)),
)
def test_any_input_is_planned_or_refused_in_one_line(tmp_path_factory, name, attrs, queues, perm):
    """Names, attribute strings and numbers as a user may type them: a plan, or a MqtoolError (the CLI's
    one-line refusal) - never another exception."""
    root = GOLDEN / "store-a"  # planning only reads
    with Store.open(root) as store:
        for plan, kwargs in (
            (plan_topic_update, {"attributes": attrs, "read_queues": queues, "perm": perm}),
            (plan_topic_delete, {}),
            (plan_group_update, {"attributes": attrs, "retry_max_times": queues}),
            (plan_group_delete, {"clean_offset": True}),
        ):
            try:
                plan(store, name, **kwargs)
            except MqtoolError as exc:
                assert "\n" not in str(exc)


@pytest.mark.parametrize("name", ["..", ".", "../config", "a/../../x", "TopicTest/0"])
def test_delete_never_reaches_outside_the_queue_directories(tmp_path, name):
    root = copy_store("store-a", tmp_path / "s")
    with Store.open(root) as store:
        try:
            edit = plan_topic_delete(store, name)
        except ConfigEditError:
            return
    assert not edit.queue_dirs


def test_an_update_that_changes_nothing_but_the_version_says_so(tmp_path):
    """AdminBrokerProcessor's idempotence check compares the request's attribute changes with the stored
    attributes: a topic with attributes is updated (dataVersion moved) even when nothing else changes."""
    root = copy_store("store-batchcq", tmp_path / "s")
    with Store.open(root) as st:
        edit = plan_topic_update(st, "BatchTopicA")
    assert edit.changed and not edit.rows and "nothing changes but dataVersion" in edit.notes[-1]
