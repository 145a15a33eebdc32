"""POP state kept in RocksDB (`popConsumerKVServiceEnable`, `kvStore/`) through `pop list` / `pop stats`:
store-rocksdb holds PopConsumerRecords written and deleted by RocketMQ 5.3.3's own PopConsumerRocksdbStore
(tests/data/store-rocksdb/README.md); expect.json's `popState` is its scanExpiredRecords' answer."""

from __future__ import annotations

import json
from functools import cache

from golden import GOLDEN

from mqtool.pop import pop_list, pop_stats
from store.pop.kv import KV_STORE_REVIVE_QUEUE
from store.storedir import Store

ROOT = GOLDEN / "store-rocksdb"


@cache
def records() -> list[dict]:
    return json.loads((ROOT / "expect.json").read_text(encoding="utf-8"))["popState"]


def test_pop_list_shows_every_unacked_kv_record_with_its_message() -> None:
    first_visible = min(r["visibilityTimeout"] for r in records())
    with Store.open(ROOT) as store:
        listing = pop_list(store, now=first_visible - 1)
        rows = {(m.group, m.topic, m.queue_id, m.queue_offset): m for m in listing.rows}
        assert len(rows) == len(records()) == len(listing.rows)
        for r in records():
            m = rows[(r["groupId"], r["topicId"], r["queueId"], r["offset"])]
            assert (m.pop_time, m.invisible_until) == (r["popTime"], r["visibilityTimeout"])
            assert m.kv_store and not m.orderly and m.revive_queue == KV_STORE_REVIVE_QUEUE
            assert m.state == "in-flight"
            queues = store.consume_queues
            unit = (
                store.consume_queue(r["topicId"], r["queueId"]).unit(r["offset"])
                if r["queueId"] in queues.queue_ids(r["topicId"])
                else None
            )
            # the fixture's records were written without the POP traffic: some name no stored message
            if unit is None:
                assert m.message is None
            else:
                assert m.message is not None and m.message.physical_offset == unit.phy_offset
        assert any(m.message is not None for m in listing.rows)


def test_pop_stats_counts_them_in_flight_then_overdue() -> None:
    times = sorted(r["visibilityTimeout"] for r in records())
    groups = {r["groupId"] for r in records()}
    with Store.open(ROOT) as store:
        for now in (times[0] - 1, times[0], times[-1]):
            stats = {g.group: g for g in pop_stats(store, now=now).groups}
            assert set(stats) == groups
            for group in groups:
                mine = [r["visibilityTimeout"] for r in records() if r["groupId"] == group]
                g = stats[group]
                assert g.popped == len(mine) and g.acked == 0 and g.revived == 0
                assert g.in_flight == sum(now < t for t in mine)
                assert g.overdue == sum(now >= t for t in mine)
