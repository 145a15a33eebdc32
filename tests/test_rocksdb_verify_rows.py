"""verify's rows for units kept in RocksDB (store-rocksdb, storeType=defaultRocksDB) name where the unit
really is: the database directory `consumequeue` and the unit's key `topic@queueId@cqOffset`, with the queue
offset as the position, not a ConsumeQueue file path that does not exist. Checked on a copy whose unit was
rewritten in the database, and on the expired units of the untouched fixture."""

from __future__ import annotations

import json
from pathlib import Path

from golden import GOLDEN, copy_store
from test_rocksdb_store import shift_unit

from formats.rocksdb import cq_key, parse_cq_value
from mqtool.verify import verify_store
from store.rocksdb.consumequeue import COLUMN_FAMILIES
from store.rocksdb.db import ReadOnlyRocksDB
from store.storedir import Store

EXPECT = json.loads((GOLDEN / "store-rocksdb" / "expect.json").read_text(encoding="utf-8"))


def _key_of(row: dict) -> tuple[str, int, int]:
    """(topic, queueId, cqOffset) a row names: `consumequeue key topic@queueId@cqOffset`."""
    database, word, key = row["file"].split(" ", 2)
    assert (database, word) == ("consumequeue", "key"), row
    topic, queue_id, offset = key.rsplit("@", 2)
    assert int(offset) == row["offset"], row
    return topic, int(queue_id), int(offset)


def test_a_bad_unit_is_named_by_its_database_and_key(tmp_path: Path) -> None:
    root = copy_store("store-rocksdb", tmp_path / "s")
    offset = EXPECT["consumeQueue"]["queues"]["RdbTopic/2"]["minOffset"] + 3
    phy = shift_unit(root, "RdbTopic", 2, offset)
    with Store.open(root) as store:
        rows = verify_store(store).problems.to_pylist()
    bad = [r for r in rows if r["kind"] == "cq_not_record_start"]
    assert len(bad) == 1 and _key_of(bad[0]) == ("RdbTopic", 2, offset)
    assert not any(str(r["file"]).startswith("consumequeue/") for r in rows)
    with ReadOnlyRocksDB(root / bad[0]["file"].split(" ")[0], COLUMN_FAMILIES) as read:
        assert parse_cq_value(read.get("default", cq_key(*_key_of(bad[0]))))[0] == phy + 1  # the named unit


def test_expired_units_name_the_first_key_still_in_the_database() -> None:
    root = GOLDEN / "store-rocksdb"
    with Store.open(root) as store:
        rows = [r for r in verify_store(store).problems.to_pylist() if r["kind"] == "cq_expired_units"]
    assert {f"{t}/{q}" for t, q, _ in map(_key_of, rows)} == set(EXPECT["consumeQueue"]["queues"])
    with ReadOnlyRocksDB(root / "consumequeue", COLUMN_FAMILIES) as db:
        for row in rows:
            topic, queue_id, offset = _key_of(row)
            assert offset < EXPECT["consumeQueue"]["queues"][f"{topic}/{queue_id}"]["minOffset"]
            assert db.get("default", cq_key(topic, queue_id, offset)) is not None
