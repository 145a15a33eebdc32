"""`mqtool dlq list|stats` on the dead letter the real retry path wrote into store-trace-b (expect.json:
the `retried-to-dlq` message's `sent` and `dlq` events, recorded as the real put stored them), and on
store-a's `%DLQ%groupA` record."""

from __future__ import annotations

import json

import pytest
from golden import expect, run_mqtool, store_path

from formats.errors import MqtoolError
from mqtool.dlq.listing import age_bucket, dlq_groups, dlq_stats, list_dlq
from store.storedir import Store


def dead_letter_events() -> tuple[dict, dict, dict]:
    """(history entry, its `sent` event, its `dlq` event) of the message the real retry path killed."""
    [entry] = [h for h in expect("store-trace-b")["history"] if any(e["event"] == "dlq" for e in h["events"])]
    [sent] = [e for e in entry["events"] if e["event"] == "sent"]
    [dlq] = [e for e in entry["events"] if e["event"] == "dlq"]
    return entry, sent, dlq


def test_list_reads_the_real_dead_letter_and_its_origin() -> None:
    entry, sent, dlq = dead_letter_events()
    with Store.open(store_path("store-trace-b")) as st:
        assert dlq_groups(st) == [dlq["group"]]
        listing = list_dlq(st)
    [row] = listing.rows
    assert (row.topic, row.queue_id, row.queue_offset, row.physical_offset) == (
        dlq["topic"],
        dlq["queueId"],
        dlq["queueOffset"],
        dlq["physicalOffset"],
    )
    assert row.group == dlq["group"] and row.reconsume_times == dlq["reconsumeTimes"]
    assert row.origin_message_id == dlq["originMessageId"] == sent["offsetMsgId"]
    assert row.uniq_key == entry["uniqKey"]
    assert row.origin_topic == sent["topic"]  # RETRY_TOPIC: where it was first sent
    assert (row.origin_queue_id, row.origin_queue_offset) == (sent["queueId"], sent["queueOffset"])
    assert row.real_topic == "%RETRY%" + dlq["group"]  # it died consumed from the retry topic
    record = next(
        m for m in expect("store-trace-b")["messages"] if m["physicalOffset"] == dlq["physicalOffset"]
    )
    assert row.store_timestamp == record["storeTimestamp"]
    assert listing.warnings == []


def test_list_filters_by_group_and_death_time() -> None:
    _, _, dlq = dead_letter_events()
    with Store.open(store_path("store-trace-b")) as st:
        died = list_dlq(st).rows[0].store_timestamp
        assert len(list_dlq(st, group=dlq["group"], begin=died, end=died).rows) == 1
        assert list_dlq(st, begin=died + 1).rows == []
        assert list_dlq(st, end=died - 1).rows == []
        with pytest.raises(MqtoolError, match="no dead-letter queue"):
            list_dlq(st, group="GID_ok")


@pytest.mark.parametrize("name", ["store-a", "store-49a", "store-c", "store-trace-b", "store-dlq"])
def test_every_dead_letter_record_is_listed_with_its_fields(name: str) -> None:
    """Each %DLQ% record of expect.json (what the real MessageDecoder read back) is a row, with its
    position, reconsume times, death time and the origin properties as stored."""
    want = {
        (
            m["physicalOffset"],
            m["topic"],
            m["queueId"],
            m["queueOffset"],
            m["reconsumeTimes"],
            m["storeTimestamp"],
            m["properties"].get("RETRY_TOPIC"),
            m["properties"].get("ORIGIN_MESSAGE_ID"),
        )
        for m in expect(name)["messages"]
        if str(m.get("topic", "")).startswith("%DLQ%")
    }
    assert want
    with Store.open(store_path(name)) as st:
        rows = list_dlq(st).rows
    got = {
        (
            r.physical_offset,
            r.topic,
            r.queue_id,
            r.queue_offset,
            r.reconsume_times,
            r.store_timestamp,
            r.origin_topic,
            r.origin_message_id,
        )
        for r in rows
    }
    assert got == want
    for r in rows:  # the original is found, or why not is said
        assert (r.origin_queue_id is None) == (r.origin_note is not None)


def test_stats_by_group_topic_and_age() -> None:
    with Store.open(store_path("store-trace-b")) as st:
        listing = list_dlq(st)
    died = listing.rows[0].store_timestamp
    [stats] = dlq_stats(listing, died + 2 * 86_400_000)
    assert (stats.group, stats.origin_topic, stats.messages) == ("GID_retry", "TraceTopic", 1)
    assert stats.ages == {"<1h": 0, "1h-1d": 0, "1d-7d": 1, ">=7d": 0}
    assert [age_bucket(a) for a in (0, 3_599_999, 3_600_000, 604_800_000)] == ["<1h", "<1h", "1h-1d", ">=7d"]


def test_cli_formats_and_errors() -> None:
    root = str(store_path("store-trace-b"))
    for fmt in ("json", "jsonl", "csv", "plain", "markdown", "record"):
        done = run_mqtool("--store", root, "-f", fmt, "dlq", "list")
        assert done.returncode == 0 and "GID_retry" in done.stdout, (fmt, done.stderr)
    rows = json.loads(run_mqtool("--store", root, "-f", "json", "dlq", "stats").stdout)
    assert [(r["group"], r["originTopic"], r["messages"]) for r in rows] == [("GID_retry", "TraceTopic", 1)]
    bad = run_mqtool("--store", root, "dlq", "list", "--group", "nope")
    assert bad.returncode == 1 and bad.stderr.strip().count("\n") == 0 and "Traceback" not in bad.stderr
