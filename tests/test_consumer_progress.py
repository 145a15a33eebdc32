"""mqtool.offsets.progress (offsets show) against the golden stores' consumerOffset.json and queues."""

from __future__ import annotations

import json
import re

import pytest

from mqtool.offsets import progress
from store.storedir import Store
from tests.golden import STORES, expect, store_path


def committed(name: str) -> dict[tuple[str, str, int], int]:
    """consumerOffset.json's offsetTable read with plain json (unquoted int keys quoted first)."""
    text = (store_path(name) / "config" / "consumerOffset.json").read_text()
    table = json.loads(re.sub(r"([{,]\s*)(-?\d+):", r'\1"\2":', text))["offsetTable"]
    out = {}
    for key, queues in table.items():
        topic, group = key.split("@", 1)
        for q, offset in queues.items():
            out[(group, topic, int(q))] = offset
    return out


def queue_bounds(name: str) -> dict[str, dict]:
    """min/max per queue as the store's files show them (store-c: the live store at the kill, whose
    queues the files hold; its consumeQueues are after recovery)."""
    if name == "store-c":
        return expect(name)["crash"]["liveStoreAtKill"]["queues"]
    return {
        k: {"minOffset": v["minOffset"], "maxOffset": v["maxOffset"]}
        for k, v in expect(name)["consumeQueues"].items()
    }


def message_at(name: str, topic: str, queue_id: int, queue_offset: int) -> dict | None:
    for m in expect(name)["messages"]:
        if m["kind"] == "MESSAGE" and (m["topic"], m["queueId"], m["queueOffset"]) == (
            topic,
            queue_id,
            queue_offset,
        ):
            return m
    return None


@pytest.fixture(scope="module", params=STORES)
def golden(request):
    with Store.open(store_path(request.param)) as st:
        yield request.param, st, progress.consumer_progress(st)


def test_every_committed_offset_is_a_row(golden):
    name, _, result = golden
    rows = {(r.group, r.topic, r.queue_id): r for r in result.rows if r.consumer_offset is not None}
    assert {k: r.consumer_offset for k, r in rows.items()} == committed(name)


def test_lag_is_max_minus_consumer_offset(golden):
    name, _, result = golden
    bounds = queue_bounds(name)
    checked = 0
    for row in result.rows:
        if row.consumer_offset is None:
            assert row.lag is None
            continue
        want = bounds[f"{row.topic}/{row.queue_id}"]
        assert (row.min_offset, row.max_offset) == (want["minOffset"], want["maxOffset"])
        assert row.lag == want["maxOffset"] - row.consumer_offset
        checked += 1
    assert checked == len(committed(name))


def test_states(golden):
    name, _, result = golden
    for row in result.rows:
        assert row.state in progress.STATES
        if row.state == "ok":
            assert row.min_offset <= row.consumer_offset <= row.max_offset
        if row.state == "behind-min":
            assert row.consumer_offset < row.min_offset
            assert row.deleted == row.min_offset - row.consumer_offset


def test_store_c_group_b_below_min_is_flagged():
    with Store.open(store_path("store-c")) as st:
        result = progress.consumer_progress(st, group="groupB")
    row = next(r for r in result.rows if r.queue_id == 0)
    assert (row.topic, row.consumer_offset, row.min_offset) == ("RetentionTopic", 1, 292)
    assert row.state == "behind-min"
    assert row.deleted == 291
    assert row.lag == 815 - 1
    assert row.last_consumed_timestamp is None  # queue offset 0 was deleted by retention
    others = [r for r in result.rows if r.queue_id != 0]
    assert [r.state for r in others] == ["no-offset"] * 3
    assert all(r.lag is None and r.consumer_offset is None for r in others)


def test_last_consumed_and_newest_timestamps(golden):
    name, _, result = golden
    for row in result.rows:
        if row.consumer_offset is None:
            continue
        before = message_at(name, row.topic, row.queue_id, row.consumer_offset - 1)
        if row.consumer_offset >= 1 and row.min_offset <= row.consumer_offset - 1 < row.max_offset:
            assert row.last_consumed_timestamp == before["storeTimestamp"]
        else:
            assert row.last_consumed_timestamp is None
        if row.max_offset > row.min_offset:
            newest = message_at(name, row.topic, row.queue_id, row.max_offset - 1)
            assert row.newest_timestamp == newest["storeTimestamp"]


def test_retry_topics_listed_under_their_group(golden):
    name, _, result = golden
    groups = [r.group for r in result.rows]
    for group in set(groups):
        rows = [r for r in result.rows if r.group == group]
        assert groups.index(group) + len(rows) - 1 == len(groups) - 1 - groups[::-1].index(group)
        retry = [r.retry for r in rows]
        assert retry == sorted(retry)  # ordinary topics first, then the retry topics
    assert any(r.retry for r in result.rows)


def test_groups_without_offsets():
    with Store.open(store_path("store-a")) as st:
        result = progress.consumer_progress(st)
        everything = progress.consumer_progress(st, include_system=True)
    no_offset = [r.group for r in result.rows if r.state == "no-committed-offset"]
    assert no_offset == [g for g in no_offset if not progress.is_system_group(g)]
    assert any(g.startswith("group_abcdefghij") for g in no_offset)
    assert "TOOLS_CONSUMER" in [r.group for r in everything.rows]
    for r in result.rows:
        if r.state == "no-committed-offset":
            assert (r.topic, r.queue_id, r.lag, r.consumer_offset) == (None, None, None, None)


def test_totals(golden):
    """Each group's totals from the broker's own files: consumerOffset.json read with plain json and the
    queues' min/max as the real code reads them (lag = max - committed, mqadmin's Diff Total; a committed
    offset outside [min, max] or on a queue without a ConsumeQueue is flagged)."""
    name, _, result = golden
    bounds = queue_bounds(name)
    offsets = committed(name)
    text = (store_path(name) / "config" / "consumerOffset.json").read_text()
    subscribed = json.loads(re.sub(r"([{,]\s*)(-?\d+):", r'\1"\2":', text)).get("groupTopicMap", {})
    topics = {g: set(ts) for g, ts in subscribed.items()}
    for group, topic, _ in offsets:
        topics.setdefault(group, set()).add(topic)
    want: dict[str, dict[str, int]] = {}
    for group in {g for g, _, _ in offsets}:
        total = want[group] = {"lag": 0, "queues": 0, "flagged": 0}
        for topic in topics[group]:
            queue_ids = {int(k.rsplit("/", 1)[1]) for k in bounds if k.rsplit("/", 1)[0] == topic}
            queue_ids |= {q for g, t, q in offsets if (g, t) == (group, topic)}
            for queue_id in queue_ids:
                total["queues"] += 1
                queue, offset = bounds.get(f"{topic}/{queue_id}"), offsets.get((group, topic, queue_id))
                if queue is None or offset is None:  # no ConsumeQueue, or no committed offset
                    total["flagged"] += 1
                    continue
                total["lag"] += queue["maxOffset"] - offset
                total["flagged"] += not queue["minOffset"] <= offset <= queue["maxOffset"]
    got = {t.group: {"lag": t.lag, "queues": t.queues, "flagged": t.flagged} for t in result.totals}
    assert {g: got[g] for g in want} == want


def test_filters():
    with Store.open(store_path("store-a")) as st:
        only = progress.consumer_progress(st, topic="TopicTest")
        assert {(r.group, r.topic) for r in only.rows} == {
            ("groupA", "TopicTest"),
            ("groupB", "TopicTest"),
            ("groupA", "%RETRY%groupA"),
        }
        group = progress.consumer_progress(st, group="groupB")
        assert {r.group for r in group.rows} == {"groupB"}
        with pytest.raises(progress.MqtoolError, match="unknown consumer group"):
            progress.consumer_progress(st, group="nope")
        with pytest.raises(progress.MqtoolError, match="unknown topic"):
            progress.consumer_progress(st, topic="NoSuchTopic")


def test_store_time_of(golden):
    name, st, _ = golden
    store_time = progress.store_time_of(st)
    for m in expect(name)["messages"]:
        if m["kind"] == "MESSAGE":
            assert store_time(m["physicalOffset"], m["totalSize"]) == m["storeTimestamp"]
    first = next(m for m in expect(name)["messages"] if m["kind"] == "MESSAGE")
    assert store_time(first["physicalOffset"], first["totalSize"] + 1) == -1
    assert store_time(first["physicalOffset"] + 1, first["totalSize"]) == -1
    assert store_time(10**15, 100) == -1


def test_json_field_names(golden):
    """The fields scripts rely on, with the values the broker's files give."""
    name, _, result = golden
    bounds = queue_bounds(name)
    offsets = committed(name)
    for row in result.rows:
        doc = row.to_json()
        for field_name in (
            "group",
            "topic",
            "queueId",
            "consumerOffset",
            "minOffset",
            "maxOffset",
            "lag",
            "lastConsumedTimestamp",
        ):
            assert field_name in doc
        key = (doc["group"], doc["topic"], doc["queueId"])
        if key not in offsets:
            continue
        assert doc["consumerOffset"] == offsets[key]
        queue = bounds.get(f"{doc['topic']}/{doc['queueId']}")
        if queue is not None:
            assert (doc["minOffset"], doc["maxOffset"]) == (queue["minOffset"], queue["maxOffset"])
            assert doc["lag"] == queue["maxOffset"] - offsets[key]
