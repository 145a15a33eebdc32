"""DLedger stores read as the real classes read them: the fixtures store-dledger, -mixed, -multipath, -crash
(5.3.3) and -49 (4.9.8), written by the real DLedgerCommitLog, against their expect.json (the real code's
own reading: tests/oracle/README.md `dledger-read`). Entries, pads, index units, DLedger's recovery, every
message, ConsumeQueue units and min/max, time searches, index look-ups, consumer offsets."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from formats.message.commitlog import Message
from store.config.brokerconf import load_broker_config
from store.storedir import Store
from tests.golden import DLEDGER_STORES, expect, unpack_store

UNITS_KEY = "units[queueOffset,phyOffset,size,tagsCode]"
FIELDS = ("physicalOffset", "totalSize", "queueId", "queueOffset", "sysFlag", "storeTimestamp", "bornHost",
          "storeHost", "topic", "properties", "offsetMsgId", "preparedTransactionOffset", "bodyCRC",
          "reconsumeTimes")  # fmt: skip


@pytest.fixture(scope="module")
def roots(tmp_path_factory) -> dict[str, Path]:
    return {name: unpack_store(name, tmp_path_factory.mktemp(name)) for name in DLEDGER_STORES}


def _open(root: Path) -> Store:
    return Store.open(root, load_broker_config(root / "broker.conf"))


@pytest.mark.parametrize("name", DLEDGER_STORES)
def test_entries_pads_and_index_units_as_on_disk(roots, name: str) -> None:
    e = expect(name)["onDisk"]
    with _open(roots[name]) as st:
        log = st.commitlog.log
        assert [f.path.relative_to(roots[name]).as_posix() for f in log.data_files] == sorted(
            (f["path"] for f in e["layout"]["dataFiles"]), key=lambda p: p.rsplit("/", 1)[1]
        )
        entries, pads, prev = [], [], (-1, -1)
        for f in log.data_files:
            w = log.walk(f, 0, *prev)
            entries += zip(w.index.tolist(), w.term.tolist(), w.pos.tolist(), w.size.tolist(), strict=True)
            if len(w):
                prev = (int(w.index[-1]), int(w.term[-1]))
            if w.reason == "pad":
                pads.append((w.end, w.stop_size))
        assert entries == [(x["index"], x["term"], x["pos"], x["size"]) for x in e["data"]["entries"]]
        assert pads == [(p["pos"], p["remaining"]) for p in e["data"]["pads"]]
        assert log.recovery.end == e["data"]["walkStop"]["at"] == e["data"]["dataEnd"]
        units = e["index"]["units[offset,magic,pos,size,index,term]"]
        got = log.index_units_at(np.arange(len(units)))
        columns = [np.arange(len(units)) * 32, *(got[n] for n in got.dtype.names)]
        assert [list(u) for u in zip(*columns, strict=True)] == units
        assert log.recovery.index_units_on_disk == len(units)


@pytest.mark.parametrize("name", DLEDGER_STORES)
def test_recovery_as_dledger_recovers(roots, name: str) -> None:
    e = expect(name)
    after, cut = e["afterLoad"], e["afterLoad"]["recoveryCut"]
    with _open(roots[name]) as st:
        cl = st.commitlog
        r = cl.log.recovery
        assert (r.begin_index, r.last_index, r.last_term) == (
            after["ledgerBeginIndex"],
            after["ledgerEndIndex"],
            after["ledgerEndTerm"],
        )
        assert (r.committed_index, r.committed_pos) == (after["committedIndex"], after["committedPos"])
        assert r.end == cut["dataKeptTo"] and r.files_deleted == cut["dataFilesDeleted"]
        assert r.last_index + 1 - (r.index_rewrite_from or r.last_index + 1) == (
            cut["indexUnitsKept"] - cut["indexUnitsOnDisk"]
        )
        assert cl.divided_offset == after["dividedCommitlogOffset"]
        assert cl.divided_offset == e["afterStart"]["dividedCommitlogOffset"]
        assert cl.min_offset == after["commitLogMinOffset"] == e["afterStart"]["minPhyOffset"]
        # what the store serves once a leader committed what the recovery kept
        assert cl.max_offset == e["afterStart"]["maxPhyOffset"]
        assert r.exits is None


@pytest.mark.parametrize("name", DLEDGER_STORES)
def test_every_message_as_the_dispatcher_reads_it(roots, name: str) -> None:
    want = expect(name)["messages"]
    with _open(roots[name]) as st:
        got = [m for m in st.commitlog.iter_records() if isinstance(m, Message)]
        assert len(got) == len(want)
        for m, w in zip(got, want, strict=True):
            doc = m.to_json(include_body=True)
            for key in FIELDS:
                assert doc[key] == w[key], (key, w["physicalOffset"])
            assert hashlib.sha256(base64.b64decode(doc["body"])).hexdigest() == w["bodySha256"]
            if w["storage"] == "dledger":
                assert m.physical_offset == w["entryPos"] + 48
            # random access reads the same record
            assert st.commitlog.read_message_at(m.physical_offset, m.total_size).to_json() == m.to_json()


@pytest.mark.parametrize("name", [n for n in DLEDGER_STORES if n != "store-dledger-crash"])
def test_consume_queues_min_max_and_units(roots, name: str) -> None:
    queues = expect(name)["consumeQueues"]
    with _open(roots[name]) as st:
        on_disk = sorted(f"{t}/{q}" for t, q in st.consume_queues.queues())
        # 4.9.8's ScheduleMessageService opens a queue per delay level: empty, never on disk
        assert on_disk == sorted(k for k, q in queues.items() if q[UNITS_KEY] or q["maxOffset"])
        for want in queues.values():
            cq = st.consume_queue(want["topic"], want["queueId"])
            assert (cq.min_offset, cq.max_offset) == (want["minOffset"], want["maxOffset"])
            assert cq.units().tolist() == [tuple(u) for u in want[UNITS_KEY]]


def test_crash_consume_queues_as_the_halt_left_them(roots) -> None:
    """Dispatched up to entry 97: TopicA/2's unit 17 (entry 98) is written by the broker's start only."""
    queues = expect("store-dledger-crash")["consumeQueues"]
    with _open(roots["store-dledger-crash"]) as st:
        for key, want in queues.items():
            units = [tuple(u) for u in want[UNITS_KEY]]
            if key == "TopicA/2":
                units = units[:-1]
            assert st.consume_queue(want["topic"], want["queueId"]).units().tolist() == units


@pytest.mark.parametrize("name", [n for n in DLEDGER_STORES if n != "store-dledger-crash"])
def test_time_searches(roots, name: str) -> None:
    from mqtool.offsets.progress import store_time_of

    e = expect(name)
    header, *rows = e["timeSearches"]
    with _open(roots[name]) as st:
        times = store_time_of(st)
        for row in rows:
            cq = st.consume_queue(row[0], row[1])
            if header.endswith("LOWER,UPPER]"):
                assert cq.offset_by_time(5, row[2], times, "lower") == row[3], row
                assert cq.offset_by_time(5, row[2], times, "upper") == row[4], row
            else:  # 4.9.8: by the ConsumeQueue files' mtimes, which a copy does not keep; the searches
                # within one file do not depend on them
                if len(cq.live_files) == 1:
                    assert cq.offset_by_time(4, row[2], times) == row[3], row


@pytest.mark.parametrize("name", [n for n in DLEDGER_STORES if n != "store-dledger-crash"])
def test_every_key_and_unique_key_through_the_index(roots, name: str) -> None:
    from mqtool.query.key import query_by_key

    index = expect(name)["index"]
    with _open(roots[name]) as st:
        for topic_key, phys in index.items():
            topic, key = topic_key.split("#", 1)
            result = query_by_key(st, topic, key)
            assert sorted(m.physical_offset for m in result.messages) == sorted(phys), topic_key


@pytest.mark.parametrize("name", DLEDGER_STORES)
def test_offset_msg_ids_are_found(roots, name: str) -> None:
    from mqtool.query.msgid import query_by_id

    want = expect(name)["messages"]
    with _open(roots[name]) as st:
        for w in want[:: max(1, len(want) // 20)]:
            found = query_by_id(st, w["offsetMsgId"])
            assert [m.physical_offset for m in found.messages] == [w["physicalOffset"]]


@pytest.mark.parametrize("name", [n for n in DLEDGER_STORES if n != "store-dledger-crash"])
def test_consumer_offsets(roots, name: str) -> None:
    from mqtool.offsets.progress import committed_offsets

    table = expect(name)["config"]["consumerOffset"]["offsetTable"]
    with _open(roots[name]) as st:
        got = committed_offsets(st).by_group
    want: dict[str, dict[str, dict[int, int]]] = {}
    for topic_group, queues in table.items():
        topic, group = topic_group.split("@")
        want.setdefault(group, {})[topic] = {int(q): o for q, o in queues.items()}
    assert got == want


# --- rebuild: ConsumeQueues and index from the DLedger log, as the broker's dispatch builds them ------------


@pytest.mark.parametrize("name", [n for n in DLEDGER_STORES if n != "store-dledger-crash"])
def test_rebuild_from_the_dledger_log_is_byte_identical(roots, name: str) -> None:
    """The real dispatch's ConsumeQueues and index, rebuilt from the entries: every queue the same bytes,
    the index the same contents."""
    from mqtool.rebuild import rebuild

    with _open(roots[name]) as st:
        report = rebuild(st, "all", note=lambda _m: None)
    assert report.build.messages == len(expect(name)["messages"])
    assert report.build.valid_end == expect(name)["afterStart"]["maxPhyOffset"]
    assert [(q.topic, q.queue_id, q.status) for q in report.queues if q.status != "same"] == []
    assert report.index is not None and report.index.status == "same", report.index.first_difference


def test_rebuild_of_the_crash_store_dispatches_what_the_broker_start_dispatches(roots, tmp_path) -> None:
    """The halt left entry 98 undispatched; the rebuild writes the units the real broker's start wrote
    (expect.json consumeQueues: after the election and commit)."""
    import shutil

    from mqtool.rebuild import rebuild

    root = tmp_path / "store"
    shutil.copytree(roots["store-dledger-crash"], root)
    want = expect("store-dledger-crash")["consumeQueues"]
    with _open(root) as st:
        report = rebuild(st, "cq", execute=True, note=lambda _m: None)
        assert [(q.topic, q.queue_id, q.first_difference) for q in report.queues if q.status != "same"] == [
            ("TopicA", 2, 17)
        ]
    with _open(root) as st:
        for w in want.values():
            cq = st.consume_queue(w["topic"], w["queueId"])
            assert cq.units().tolist() == [tuple(u) for u in w[UNITS_KEY]]


# --- whole-log scans: export, records at positions ----------------------------------------------------------


@pytest.mark.parametrize("name", DLEDGER_STORES)
def test_export_reads_every_message_through_the_columnar_decoder(roots, name: str, tmp_path) -> None:
    import pyarrow.parquet as pq

    from mqtool.export import export_range
    from store.log.scan import iter_batches

    want = expect(name)["messages"]
    with _open(roots[name]) as st:
        summary = export_range(st, tmp_path / "all")
        rows = pq.read_table(summary.output).to_pylist()
        got = [(r["physicalOffset"], r["topic"], r["queueId"], r["queueOffset"], r["uniqKey"]) for r in rows]
        assert got == [
            (w["physicalOffset"], w["topic"], w["queueId"], w["queueOffset"], w.get("uniqKey")) for w in want
        ]
        assert summary.stop["physicalOffset"] == st.commitlog.log.recovery.end
        # a range inside the DLedger entries, from a message to before another one, in small chunks
        lo, hi = want[len(want) // 3]["physicalOffset"], want[2 * len(want) // 3]["physicalOffset"]
        phys = []
        for _f, batch in iter_batches(st.commitlog, lo, hi, chunk_bytes=4096):
            ok = batch.column("status").cast("string").to_pylist()
            phys += [
                p for p, s in zip(batch.column("physicalOffset").to_pylist(), ok, strict=True) if s == "ok"
            ]
        assert phys == [w["physicalOffset"] for w in want if lo <= w["physicalOffset"] < hi]


@pytest.mark.parametrize("name", ["store-dledger-mixed", "store-dledger-crash"])
def test_records_at_positions(roots, name: str) -> None:
    from store.log.scan import records_at

    want = expect(name)["messages"]
    phys = np.array([w["physicalOffset"] for w in want] + [w["physicalOffset"] + 1 for w in want[:5]] + [0])
    sizes = np.array([w["totalSize"] for w in want] + [0] * 6)
    with _open(roots[name]) as st:
        got = records_at(st.commitlog, phys, None, ("KEYS",), chunk_bytes=8192)
    n = len(want)
    assert got.found.tolist() == [True] * n + [False] * 5 + [want[0]["physicalOffset"] == 0]
    assert got.store_timestamp[:n].tolist() == [w["storeTimestamp"] for w in want]
    assert got.properties["KEYS"].to_pylist()[:n] == [w["properties"].get("KEYS") for w in want]
    assert len(sizes) == len(phys)


def test_a_position_that_is_no_message_is_one_clear_error(roots) -> None:
    from store.log.commitlog import OffsetError

    with _open(roots["store-dledger"]) as st:
        with pytest.raises(OffsetError, match="not the message of a DLedger entry"):
            next(iter(st.commitlog.iter_records(1000)))
        with pytest.raises(OffsetError, match="not the message of a DLedger entry"):
            st.commitlog.read_message_at(524)


@pytest.mark.parametrize("name", DLEDGER_STORES)
def test_info_shows_what_dledger_recovery_keeps(roots, name: str) -> None:
    from mqtool.info import store_info

    e = expect(name)
    after, on_disk = e["afterLoad"], e["onDisk"]
    with _open(roots[name]) as st:
        doc = store_info(st)
    dl = doc["dledger"]
    assert (dl["ledgerBeginIndex"], dl["ledgerEndIndex"], dl["ledgerEndTerm"]) == (
        after["ledgerBeginIndex"], after["ledgerEndIndex"], after["ledgerEndTerm"]
    )  # fmt: skip
    assert (dl["committedIndex"], dl["committedPos"]) == (after["committedIndex"], after["committedPos"])
    assert dl["dividedCommitlogOffset"] == after["dividedCommitlogOffset"]
    assert dl["indexUnitsOnDisk"] == after["recoveryCut"]["indexUnitsOnDisk"]
    assert dl["checkpoint"] == on_disk["meta"]["checkpoint"]["text"]
    assert (
        dl["currTerm"] == after["currTerm"] and dl["loadProblems"] == [] and dl["brokerDoesNotStart"] is None
    )
    assert doc["commitlog"]["minOffset"] == after["commitLogMinOffset"]
    assert doc["commitlog"]["maxOffset"] == e["afterStart"]["maxPhyOffset"]


# --- rebuild dledger-index: DLedger's index units from its entries ------------------------------------------


def _copy(roots, name: str, tmp_path) -> Path:
    import shutil

    root = tmp_path / name
    shutil.copytree(roots[name], root)
    return root


def test_rebuild_dledger_index_writes_the_unit_recovery_rewrites(roots, tmp_path) -> None:
    """The crash fixture lost entry 98's unit; the rebuild writes it as DLedger's recovery does (the real
    recovery then keeps 99 units, expect.json indexUnitsKept), the other units byte for byte as they were."""
    from mqtool.rebuild import rebuild_dledger_index

    root = _copy(roots, "store-dledger-crash", tmp_path)
    index = root / "dledger-n0" / "index" / "00000000000000000000"
    before = index.read_bytes()[: 99 * 32]
    with _open(root) as st:
        plan = rebuild_dledger_index(st, note=lambda _m: None)
        assert [(f.status, f.first_difference) for f in plan.plan.files] == [("differs", 98)]
        assert plan.plan.rewrite_from == 98
        done = rebuild_dledger_index(st, execute=True, note=lambda _m: None)
        assert done.written == ["00000000000000000000"]
    after = index.read_bytes()
    assert len(after) == 167_772_160 and after[: 98 * 32] == before[: 98 * 32]
    entries = expect("store-dledger-crash")["entries"]
    assert len(entries) == expect("store-dledger-crash")["afterLoad"]["recoveryCut"]["indexUnitsKept"] == 99
    units = np.frombuffer(after[: 99 * 32], dtype=[("magic", ">i4"), ("pos", ">i8"), ("size", ">i4"),
                                                   ("index", ">i8"), ("term", ">i8")])  # fmt: skip
    assert [tuple(int(v) for v in u) for u in units] == [
        (x["magic"], x["pos"], x["size"], x["index"], x["term"]) for x in entries
    ]
    with _open(root) as st:
        assert st.commitlog.log.recovery.index_rewrite_from is None
        assert not rebuild_dledger_index(st, note=lambda _m: None).plan.changes


def test_a_wrong_unit_before_the_recovered_range_is_an_error_the_rebuild_repairs(roots, tmp_path) -> None:
    """DLedger's recovery compares units from the third-last data file on: a wrong unit of entry 5 is never
    repaired by the broker (DLedgerMmapFileStore.get(5) then fails); verify names it, the rebuild fixes it."""
    from mqtool.rebuild import rebuild_dledger_index
    from mqtool.verify import verify_store

    root = _copy(roots, "store-dledger", tmp_path)
    index = root / "dledger-n0" / "index" / "00000000000000000000"
    with open(index, "r+b") as fh:
        fh.seek(5 * 32 + 4)
        fh.write((123).to_bytes(8, "big"))
    with _open(root) as st:
        report = verify_store(st)
        rows = [p for p in report.problems.to_pylist() if p["kind"] == "dledger_index_unit"]
        assert [(r["severity"], r["file"]) for r in rows] == [
            ("error", "dledger-n0/data/00000000000000000000")
        ]
        assert "entries from 5 " in rows[0]["detail"] and not report.clean
        rebuild_dledger_index(st, execute=True, note=lambda _m: None)
    with _open(root) as st:
        assert verify_store(st).clean


# --- damaged stores: verify names where the real DLedger recovery truncates ---------------------------------

DAMAGED = json.loads((Path(__file__).parent / "data" / "store-dledger" / "damaged.json").read_text())[
    "damages"
]


@pytest.mark.parametrize("damage", DAMAGED)
def test_verify_names_where_the_real_recovery_truncates(roots, tmp_path, damage: str) -> None:
    """Each damage of tests/data/store-dledger/damaged.json (tests/oracle/dledger_damaged.py: the real DLedger
    recovery of a damaged copy) applied to a copy: verify's truncation point, ledger end and index rewrite
    are the real recovery's; an error names every cut; a damage DLedger does not cut for cuts nothing; a store
    whose load exits the broker says so."""
    from mqtool.verify import verify_store

    row = DAMAGED[damage]
    root = _copy(roots, "store-dledger", tmp_path)
    for rel, position, data in row["writes"]:
        with open(root / rel, "r+b") as fh:
            fh.seek(position)
            fh.write(bytes.fromhex(data))
    with _open(root) as st:
        report = verify_store(st)
        r = st.commitlog.log.recovery
    problems = report.problems.to_pylist()
    kinds = {p["kind"] for p in problems if p["severity"] == "error"}
    after = row.get("afterLoad")
    if row["exitStatus"] != 0 or after is None:
        assert "dledger_exit" in kinds and not report.clean
        return
    cut = after["recoveryCut"]
    assert report.summary["recovery"]["end"] == r.end == cut["dataKeptTo"]
    assert (r.last_index, r.committed_index, r.committed_pos) == (
        after["ledgerEndIndex"], after["committedIndex"], after["committedPos"]
    )  # fmt: skip
    assert r.last_index + 1 == cut["indexUnitsKept"]
    if cut["dataBytesCut"]:
        cuts = [p for p in problems if p["kind"] in ("dledger_entry", "dledger_torn_tail")]
        assert [p["offset"] + 1179648 for p in cuts] == [cut["dataKeptTo"]], cuts
    else:
        assert not kinds & {"dledger_entry", "dledger_torn_tail", "dledger_exit"}
    assert ("crc_mismatch" in kinds) == bool(row["crcErrors"])
    rewritten = [p for p in problems if p["kind"] == "dledger_index_unit"]
    assert bool(rewritten) == (damage == "unit-268")


# --- delay and transaction listings ---------------------------------------------------------------------


@pytest.mark.parametrize("name", [n for n in DLEDGER_STORES if n not in ("store-dledger-crash",)])
def test_transactions_pair_as_the_real_end_transaction_did(roots, name: str) -> None:
    """Halves paired with their op messages from the DLedger log: committed, rolled back and pending as the
    real EndTransactionProcessor left them (write.json), commit copies pointing at their half's offset."""
    from mqtool.transactions.listing import list_transactions

    events = json.loads((Path(__file__).parent / "data" / name / "write.json").read_text())["events"]
    want = {
        "committed": {e["halfQueueOffset"] for e in events if e["kind"] == "commit"},
        "rolled-back": {e["halfQueueOffset"] for e in events if e["kind"] == "rollback"},
        "pending": {e["queueOffset"] for e in events if e["kind"] == "pending"},
    }
    with _open(roots[name]) as st:
        report = list_transactions(st, now=1_900_000_000_000)
    got = {s: {t.original.queue_offset for t in report.transactions if t.state == s} for s in want}
    assert got == want
    halves = {e["halfQueueOffset"]: e["halfOffset"] for e in events if e["kind"] == "commit"}
    for t in report.transactions:
        if t.state == "committed":
            assert (
                t.commit is not None
                and t.commit.prepared_transaction_offset == halves[t.original.queue_offset]
            )


@pytest.mark.parametrize("name", [n for n in DLEDGER_STORES if n not in ("store-dledger-crash",)])
def test_delay_listing_is_what_the_schedule_service_left(roots, name: str) -> None:
    """The units of SCHEDULE_TOPIC_XXXX at or after each level's progress in delayOffset.json (as the real
    ScheduleMessageService persisted it): the rest of each level's queue, each read from the DLedger log."""
    from mqtool.delay.listing import list_delayed

    e = expect(name)
    progress = {int(k): v for k, v in e["config"]["delayOffset"]["offsetTable"].items()}
    want = set()
    for key, cq in e["consumeQueues"].items():
        topic, qid = key.rsplit("/", 1)
        if topic == "SCHEDULE_TOPIC_XXXX" and cq["maxOffset"]:
            level = int(qid) + 1
            start = min(max(progress.get(level, 0), cq["minOffset"]), cq["maxOffset"])
            want |= {(level, q) for q in range(start, cq["maxOffset"])}
    with _open(roots[name]) as st:
        listing = list_delayed(st, now=1_900_000_000_000)
    assert {(r.level, r.queue_offset) for r in listing.rows} == want
    phys = {m["physicalOffset"]: m for m in e["messages"]}
    for r in listing.rows:
        assert r.real_topic == phys[r.phy_offset]["properties"]["REAL_TOPIC"]


# --- hostile DLedger files (found by the long fuzz run on the merged tree) ----------------------------------


@pytest.mark.parametrize("name", ["checkpoint", "currterm"])
def test_a_fifo_or_a_huge_properties_file_is_named_not_read(roots, tmp_path, name: str) -> None:
    """DLedger's checkpoint and currterm are read through the store's one reader: a FIFO there hung every
    command, a 2 GiB file ran it out of memory. Now `info` answers at once, its DLedger section naming the
    file, and `verify` returns (naming an unreadable checkpoint in an error)."""
    import os

    from tests.golden import run_mqtool

    root = _copy(roots, "store-dledger", tmp_path)
    target = root / "dledger-n0" / name
    conf = ("--store", str(root), "--broker-config", str(root / "broker.conf"))
    for make in ("fifo", "huge"):
        target.unlink(missing_ok=True)
        if make == "fifo":
            os.mkfifo(target)
        else:
            with open(target, "wb") as f:
                f.truncate(2 << 30)  # sparse: nothing written, 2 GiB to a reader
        done = run_mqtool(*conf, "info", "-f", "json")
        assert done.returncode == 0, (make, done.stderr[-500:])
        section = json.loads(done.stdout)["dledger"]
        assert f"dledger-n0/{name}" in section["error"] and "out of memory" not in section["error"], section
        done = run_mqtool(*conf, "verify", "-f", "json")  # returns (run_mqtool's timeout: no hang)
        assert done.returncode in (0, 1, 3) and "Traceback" not in done.stderr, (make, done.stderr[-500:])
        if name == "checkpoint":  # what DLedger's recovery reads: verify names it in an error
            assert done.returncode in (1, 3) and f"dledger-n0/{name}" in done.stdout + done.stderr
