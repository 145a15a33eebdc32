"""Whether each group consumed a found message, and why (`consumedReason` of `mqtool query`): the committed
offset against the message's queue offset; the group's subscription where the store records one
(tests/data/subscriptions: config files the real 5.3.3 managers wrote over store-a's, and the real FilterAPI
and broker filters' verdicts); retry and dead-letter copies named as copies of their original."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from formats.config.codec import decode_config, encode_config
from formats.config.metadata import SubscriptionGroupTable
from mqtool.offsets.progress import committed_offsets
from store.broker.subscription import Subscription, store_subscriptions
from store.storedir import Store
from tests.golden import GOLDEN, child_env, copy_store, expect, store_path

SUBS = GOLDEN / "subscriptions"
SQL = "a > 5 AND b = 'x'"


def _expect_subs() -> dict:
    return json.loads((SUBS / "expect.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def subscribed(tmp_path_factory):
    """store-a with the config files the real managers wrote (groupA by tag, groupB by SQL92)."""
    root = copy_store("store-a", tmp_path_factory.mktemp("subs") / "store")
    for f in (SUBS / "config").iterdir():
        shutil.copy2(f, root / "config" / f.name)
    return root


def _query_offset(root, topic: str, queue: int, offset: int) -> dict:
    args = ["-s", str(root), "-f", "json", "query", "offset", topic, str(queue), str(offset)]
    done = subprocess.run(
        [sys.executable, "-m", "mqtool.cli", *args],
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    (doc,) = json.loads(done.stdout)
    return doc


def _committed(group: str, topic: str, queue: int) -> int:
    with Store.open(store_path("store-a")) as st:
        return committed_offsets(st).by_group[group][topic][queue]


def _message(pred) -> dict:
    return next(m for m in expect("store-a")["messages"] if m.get("kind") == "MESSAGE" and pred(m))


def _topic_test(tags, consumed_by_a: bool) -> dict:
    def pred(m):
        if m["topic"] != "TopicTest" or m["tags"] != tags:
            return False
        return (m["queueOffset"] < _committed("groupA", "TopicTest", m["queueId"])) == consumed_by_a

    return _message(pred)


def test_subscriptions_read_as_the_real_managers_load_them(subscribed):
    want = _expect_subs()
    with Store.open(subscribed) as st:
        subs = store_subscriptions(st)
    assert not subs.notes
    assert subs.groups == set(want["groups"])
    by_file = {
        "subscriptionGroup.json": {
            (group, item["topic"]): (item["expressionType"], item["expression"])
            for group, items in want["groups"].items()
            for item in items
        },
        "consumerFilter.json": {
            (group, topic): (data["expressionType"], data["expression"])
            for topic, groups in want["filters"].items()
            for group, data in groups.items()
        },
    }
    for source, pairs in by_file.items():
        got = {
            k: (s.expression_type, s.expression) for k, s in subs.by_group_topic.items() if s.source == source
        }
        assert got == pairs, source
    # and mqtool writes such a file back byte for byte (it rewrites subscriptionGroup.json for new groups)
    text = (SUBS / "config" / "subscriptionGroup.json").read_text(encoding="utf-8")
    assert encode_config(decode_config(SubscriptionGroupTable, text)) == text


def test_tag_verdicts_are_those_of_the_real_filter_api_broker_and_client():
    probes = _expect_subs()["probes"]
    assert {p["expression"] for p in probes} >= {"tag0 || tag1", "*", "", "||", " ||"}
    for probe in probes:
        sub = Subscription("G", "TopicTest", "TAG", probe["expression"], "test")
        if "error" in probe:  # FilterAPI refuses it: no consumer can subscribe with it
            assert not sub.valid and sub.passes("tag0") is None, probe
            continue
        assert sub.valid, probe
        assert set(sub.tags or ()) == set(probe["tagsSet"]), probe
        assert sub.passes(probe["tags"]) is probe["delivered"], probe
    sql = Subscription("G", "TopicTest", "SQL92", SQL, "consumerFilter.json")
    assert sql.passes("tag0") is None


def test_a_consumed_message_whose_tag_the_subscription_lacks_is_filtered(subscribed):
    m = _topic_test("tag3", consumed_by_a=True)
    q, a, b = (
        m["queueOffset"],
        _committed("groupA", "TopicTest", m["queueId"]),
        _committed("groupB", "TopicTest", m["queueId"]),
    )
    doc = _query_offset(subscribed, "TopicTest", m["queueId"], q)
    assert doc["consumedBy"] == {"groupA": True, "groupB": True}  # the field scripts rely on, unchanged
    assert doc["consumedReason"] == {
        "groupA": f'filtered: tag tag3 not in subscription "tag0 || tag1" (offset {a} > {q})',
        "groupB": f'consumed: offset {b} > {q}; subscription is SQL92 "{SQL}" (consumerFilter.json), '
        "not evaluated",
    }


def test_reasons_for_a_subscribed_tag_no_tag_and_a_message_not_consumed_yet(subscribed):
    m = _topic_test("tag0", consumed_by_a=True)
    q, a = m["queueOffset"], _committed("groupA", "TopicTest", m["queueId"])
    doc = _query_offset(subscribed, "TopicTest", m["queueId"], q)
    assert doc["consumedReason"]["groupA"] == f"consumed: offset {a} > {q}"
    m = _topic_test(None, consumed_by_a=True)
    q, a = m["queueOffset"], _committed("groupA", "TopicTest", m["queueId"])
    doc = _query_offset(subscribed, "TopicTest", m["queueId"], q)
    assert (
        doc["consumedReason"]["groupA"] == f'filtered: no tag, subscription "tag0 || tag1" (offset {a} > {q})'
    )
    m = _topic_test("tag2", consumed_by_a=False)
    q, a = m["queueOffset"], _committed("groupA", "TopicTest", m["queueId"])
    doc = _query_offset(subscribed, "TopicTest", m["queueId"], q)
    assert doc["consumedBy"]["groupA"] is False
    assert doc["consumedReason"]["groupA"] == (
        f'not consumed: offset {a} < {q}; will be filtered: tag tag2 not in subscription "tag0 || tag1"'
    )


def test_without_a_recorded_subscription_the_reason_gives_the_offsets_and_claims_no_delivery():
    store = store_path("store-a")
    m = _topic_test("tag3", consumed_by_a=True)
    q, a = m["queueOffset"], _committed("groupA", "TopicTest", m["queueId"])
    doc = _query_offset(store, "TopicTest", m["queueId"], q)
    assert doc["consumedReason"]["groupA"] == f"consumed: offset {a} > {q}; subscription unknown"
    a = _committed("groupA", "TopicTest", 0)
    doc = _query_offset(store, "TopicTest", 0, a)  # the next message groupA reads
    assert doc["consumedReason"]["groupA"] == f"not consumed: offset {a} = {a}"
    doc = _query_offset(store, "TopicTest", 0, a + 1)
    assert doc["consumedReason"]["groupA"] == f"not consumed: offset {a} < {a + 1}"


def test_dead_letter_and_retry_copies_name_their_group_and_original():
    store = store_path("store-a")
    dlq = _message(lambda m: m["topic"] == "%DLQ%groupA")
    doc = _query_offset(store, dlq["topic"], dlq["queueId"], dlq["queueOffset"])
    props = dlq["properties"]
    assert doc["consumedBy"] == {}
    assert doc["consumedReason"] == {
        "groupA": f"dead letter copy of {props['ORIGIN_MESSAGE_ID']} from {props['RETRY_TOPIC']} for groupA "
        f"(after {dlq['reconsumeTimes']} reconsumes); no committed offset on %DLQ%groupA: "
        "no consumer reads it"
    }
    retry = _message(lambda m: m["topic"] == "%RETRY%groupA")
    offset = _committed("groupA", "%RETRY%groupA", retry["queueId"])
    doc = _query_offset(store, retry["topic"], retry["queueId"], retry["queueOffset"])
    props = retry["properties"]
    assert doc["consumedBy"] == {"groupA": offset > retry["queueOffset"]}
    assert doc["consumedReason"] == {
        "groupA": f"retry copy of {props['ORIGIN_MESSAGE_ID']} from {props['RETRY_TOPIC']} for groupA "
        f"({retry['reconsumeTimes']} reconsumes); consumed: offset {offset} > {retry['queueOffset']}"
    }


def test_a_tag_expression_no_consumer_can_hold_is_named_not_evaluated():
    from mqtool.query.consumed import ConsumerState
    from store.broker.subscription import Subscriptions

    bad = Subscription("groupA", "TopicTest", "TAG", "||", "subscriptionGroup.json")  # FilterAPI refuses it
    m = _topic_test("tag0", consumed_by_a=True)
    with Store.open(store_path("store-a")) as st:
        state = ConsumerState(
            committed_offsets(st), Subscriptions({("groupA", "TopicTest"): bad}, {"groupA"})
        )
        msg = st.commitlog.read_message_at(m["physicalOffset"])
        reason = state.verdicts(msg)["groupA"].reason
    a = _committed("groupA", "TopicTest", m["queueId"])
    where = 'subscription "||" (subscriptionGroup.json) is no tag expression'
    assert reason == f"consumed: offset {a} > {m['queueOffset']}; {where}"
