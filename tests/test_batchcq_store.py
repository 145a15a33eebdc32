"""store.queue.batchconsumequeue against what the real 5.3.3 BatchConsumeQueue read back (store-batchcq)."""

from __future__ import annotations

import pytest
from golden import expect, store_path

from formats.batchconsumequeue import decode_unit, encode_unit
from store.queue.batchconsumequeue import BatchConsumeQueueStore

STORE = "store-batchcq"
QUEUES = expect(STORE)["batchConsumeQueues"]


def _field(q: dict, prefix: str):
    return next(v for k, v in q.items() if k.startswith(prefix))


@pytest.fixture(scope="module")
def bcq_store():
    return BatchConsumeQueueStore(store_path(STORE))


def test_lists_the_batchcq_queues(bcq_store):
    assert [f"{t}/{q}" for t, q in bcq_store.queues()] == sorted(QUEUES)


@pytest.mark.parametrize("key", sorted(QUEUES))
def test_min_max_and_every_unit(bcq_store, key):
    q = QUEUES[key]
    cq = bcq_store.open(q["topic"], q["queueId"])
    assert (cq.min_offset, cq.max_offset) == (q["minOffset"], q["maxOffset"])
    assert cq.message_count == q["messageTotalInQueue"]
    files = _field(q, "files[")
    assert [[f.start_offset, cq.read_position(f)] for f in cq.live_files] == files
    assert len(files) > 1  # the searches below cross files
    want = [u[:8] for u in _field(q, "units[")]
    got = [
        [u.phy_offset, u.size, u.tags_code, u.store_time, u.base_offset, u.batch_size]
        + [u.compacted_offset, u.reserved]
        for u in cq.iter_units()
    ]
    assert got == want
    assert any(u[5] > 1 for u in want) and any(u[5] == 1 for u in want)


@pytest.mark.parametrize("key", sorted(QUEUES))
def test_get_at_every_offset(bcq_store, key):
    q = QUEUES[key]
    cq = bcq_store.open(q["topic"], q["queueId"])
    for offset, base in _field(q, "get["):
        unit = cq.unit(offset)
        assert (-1 if unit is None else unit.base_offset) == base, offset


@pytest.mark.parametrize("key", sorted(QUEUES))
def test_offset_by_time_lower_and_upper(bcq_store, key):
    q = QUEUES[key]
    cq = bcq_store.open(q["topic"], q["queueId"])
    rows = _field(q, "byTime[")
    assert any(row[2] == -1 for row in rows)  # UPPER's search finding nothing in a gap is covered
    for ts, cq_lower, cq_upper, store_lower, store_upper in rows:
        assert cq.offset_in_queue_by_time(ts, "lower") == cq_lower, ts
        assert cq.offset_in_queue_by_time(ts, "upper") == cq_upper, ts
        assert cq.offset_by_time(5, ts, None, "lower") == store_lower, ts
        assert cq.offset_by_time(5, ts, None, "upper") == store_upper, ts


def test_unit_bytes_round_trip(bcq_store):
    cq = bcq_store.open("BatchTopicA", 0)
    f = cq.live_files[0]
    raw = bytes(f.buffer()[: cq.read_position(f)])
    for position in range(0, len(raw), 46):
        assert encode_unit(decode_unit(raw, position)) == raw[position : position + 46]


def test_min_offset_moves_past_deleted_records(bcq_store):
    """correctMinOffset: units whose record is below the commitlog's min offset are skipped."""
    q = QUEUES["BatchTopicA/1"]
    units = _field(q, "units[")
    cut = units[2][0] + 1  # the commitlog now starts after the third unit's record
    cq = BatchConsumeQueueStore(store_path(STORE), commitlog_min_offset=cut).open("BatchTopicA", 1)
    assert cq.min_offset == units[3][4]
    assert cq.max_offset == q["maxOffset"]
