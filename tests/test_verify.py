"""`mqtool verify` (store.checks over decoded batches) and `mqtool export`, on golden stores and on
copies with injected faults: every fault is reported at its file and offset."""

from __future__ import annotations

import base64
import json
import shutil
import struct
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import typer
from golden import expect, store_path
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from formats.columnar.decoder import decode_range
from formats.java.hash import index_key, index_key_hash, java_string_hash
from formats.java.strings import java_hash_strings, split_tokens
from mqtool.cli.examine.verify import export, verify
from mqtool.export import dump_commitlog_parquet, export_range
from mqtool.verify import verify_store
from store.checks.problems import PROBLEM_SCHEMA, ProblemList, fmt
from store.checks.records import RecordIndex, delay_levels_of, index_key_hashes
from store.storedir import Store

# --- helpers ------------------------------------------------------------------------------------


def run(root: Path, deep: bool = True):
    with Store.open(root) as st:
        return verify_store(st, deep=deep)


def rows(report, kind: str | None = None, severity: str | None = None) -> list[dict]:
    return [
        r
        for r in report.problems.to_pylist()
        if (kind is None or r["kind"] == kind) and (severity is None or r["severity"] == severity)
    ]


def errors(report) -> list[dict]:
    return rows(report, severity="error")


def copy(store: str, tmp_path: Path) -> Path:
    dst = tmp_path / store
    shutil.copytree(store_path(store), dst)
    (dst / "expect.json").unlink()
    return dst


def messages(store: str) -> list[dict]:
    return [m for m in expect(store)["messages"] if m["kind"] == "MESSAGE"]


def patch(path: Path, position: int, data: bytes) -> None:
    with open(path, "r+b") as fh:
        fh.seek(position)
        fh.write(data)


def record_at(store: str, index: int) -> tuple[str, int, dict]:
    m = messages(store)[index]
    return f"commitlog/{m['file']}", m["physicalOffset"] - int(m["file"]), m


# --- golden stores --------------------------------------------------------------------------------


@pytest.mark.parametrize("store", ["store-a", "store-49a"])
def test_clean_stores_verify_clean(store):
    report = run(store_path(store))
    assert report.clean
    assert report.counts == {"error": 0, "warning": 0, "info": 1}
    assert [r["kind"] for r in report.problems.to_pylist()] == ["recovery"]
    assert report.summary["commitlog"]["messages"] == len(messages(store))
    assert report.summary["commitlog"]["validEnd"] == expect(store)["maxPhyOffset"]
    assert report.summary["index"]["keysChecked"] == sum(
        f["indexCount"] - 1 for f in expect(store)["indexFiles"]
    )


def test_store_c_reports_the_torn_tail_and_the_undispatched_appends():
    c = expect("store-c")
    report = run(store_path("store-c"))
    assert not report.clean
    torn = c["asWritten"]["tornRecordOffset"]
    assert errors(report) == [
        {
            "store": str(store_path("store-c")),
            "file": "commitlog/00000000000004194304",
            "offset": torn - 4194304,
            "kind": "truncated_tail",
            "severity": "error",
            "detail": f"torn record at phy {torn}: 2981 of 6228 bytes written, the rest zero (crc_mismatch); "
            "the broker's recovery drops it and ends the commitlog here",
        }
    ]
    finals = [
        a["physicalOffset"] for a in c["afterRecovery"]["finalAppends(never dispatched before the kill)"]
    ]
    undispatched = rows(report, "undispatched")
    assert [r["offset"] + 4194304 for r in undispatched] == finals[:2]
    assert {r["severity"] for r in undispatched} == {"warning"}
    assert {r["detail"].split(":")[0] for r in undispatched} == {"RetentionTopic/0", "OrderTopic/1"}
    assert rows(report, "abort_present")
    assert report.summary["recovery"]["end"] == c["afterRecovery"]["maxPhyOffset"]
    assert (
        report.summary["recovery"]["droppedBytes"] == c["tear"]["bytesOfTornRecordOnDisk"]
        if "tear" in c
        else True
    )
    # retention facts are infos, not errors
    expired = rows(report, "cq_expired_units")
    assert expired and {r["severity"] for r in expired} == {"info"}
    assert rows(report, "index_expired_entries")[0]["severity"] == "info"


def test_store_c_without_abort_makes_undispatched_an_error(tmp_path):
    root = copy("store-c", tmp_path)
    (root / "abort").unlink()
    report = run(root, deep=False)
    assert {r["severity"] for r in rows(report, "undispatched")} == {"error"}
    assert not rows(report, "abort_present")


# --- injected faults --------------------------------------------------------------------------------


def test_body_bit_flip_is_a_crc_error_at_that_record(tmp_path):
    root = copy("store-a", tmp_path)
    file, pos, m = record_at("store-a", 300)
    assert m["bodyLength"] > 100 and not m["sysFlag"] & 0x30
    data = (root / file).read_bytes()
    patch(root / file, pos + 100, bytes([data[pos + 100] ^ 0x04]))
    report = run(root)
    crc = rows(report, "crc_mismatch")
    assert [(r["file"], r["offset"], r["severity"]) for r in crc] == [(file, pos, "error")]
    assert "drops" in crc[0]["detail"]
    assert report.summary["commitlog"]["validEnd"] == m["physicalOffset"]
    # the other errors are consequences: units and checkpoint times past the new valid end
    kinds = {r["kind"] for r in errors(report)}
    assert kinds == {"crc_mismatch", "cq_points_outside", "checkpoint_ahead"}
    assert report.summary["recovery"]["end"] == m["physicalOffset"]
    # without CRC checks the store is clean
    with Store.open(root) as st:
        assert verify_store(st, check_crc=False).clean


def test_corrupted_cq_units_are_reported_at_the_unit(tmp_path):
    root = copy("store-a", tmp_path)
    cq = root / "consumequeue/TopicTest/0/00000000000000000000"
    units = expect("store-a")["consumeQueues"]["TopicTest/0"]["units[queueOffset,phyOffset,size,tagsCode]"]
    _, phy10, size10, _ = units[10]
    _, phy12, _, _ = units[12]
    patch(cq, 10 * 20 + 8, struct.pack(">i", size10 + 1))
    patch(cq, 11 * 20 + 12, struct.pack(">q", 12345))
    patch(cq, 12 * 20, struct.pack(">q", phy12 + 1))
    report = run(root)
    name = "consumequeue/TopicTest/0/00000000000000000000"
    assert [(r["file"], r["offset"]) for r in rows(report, "cq_size_mismatch")] == [(name, 200)]
    assert [(r["file"], r["offset"]) for r in rows(report, "cq_tags_code_mismatch")] == [(name, 220)]
    assert [(r["file"], r["offset"]) for r in rows(report, "cq_not_record_start")] == [(name, 240)]
    # the record unit 12 pointed at has lost its unit
    missing = rows(report, "cq_missing_unit")
    m = next(m for m in messages("store-a") if m["physicalOffset"] == phy12)
    assert [(r["file"], r["offset"]) for r in missing] == [(f"commitlog/{m['file']}", phy12 - int(m["file"]))]
    assert {r["kind"] for r in errors(report)} == {
        "cq_size_mismatch",
        "cq_tags_code_mismatch",
        "cq_not_record_start",
        "cq_missing_unit",
    }


def test_cq_unit_of_another_queue_and_offset(tmp_path):
    root = copy("store-a", tmp_path)
    units0 = expect("store-a")["consumeQueues"]["TopicTest/0"]["units[queueOffset,phyOffset,size,tagsCode]"]
    units1 = expect("store-a")["consumeQueues"]["TopicTest/1"]["units[queueOffset,phyOffset,size,tagsCode]"]
    _, phy, size, tags = units1[5]
    patch(
        root / "consumequeue/TopicTest/0/00000000000000000000", 7 * 20, struct.pack(">qiq", phy, size, tags)
    )
    report = run(root, deep=False)
    name = "consumequeue/TopicTest/0/00000000000000000000"
    assert [(r["file"], r["offset"]) for r in rows(report, "cq_queue_mismatch")] == [(name, 140)]
    assert [(r["file"], r["offset"]) for r in rows(report, "cq_queue_offset_mismatch")] == [(name, 140)]
    lost = units0[7][1]
    m = next(m for m in messages("store-a") if m["physicalOffset"] == lost)
    assert [r["offset"] for r in rows(report, "cq_missing_unit")] == [lost - int(m["file"])]


def test_broken_index_slot_is_reported_at_the_slot(tmp_path):
    root = copy("store-a", tmp_path)
    name = expect("store-a")["indexFiles"][1]["file"]
    path = root / "index" / name
    slot = 5
    (old,) = struct.unpack_from(">i", path.read_bytes(), 40 + slot * 4)
    assert old > 0
    patch(path, 40 + slot * 4, struct.pack(">i", 0))
    report = run(root)
    chain = rows(report, "index_chain")
    assert [(r["file"], r["offset"]) for r in chain] == [(f"index/{name}", 40 + slot * 4)]
    assert f"holds 0, but its newest entry is {old}" in chain[0]["detail"]
    unreachable = rows(report, "index_unreachable")
    assert [r["file"] for r in unreachable] == [f"index/{name}"]
    keys = rows(report, "index_key_unreachable")
    assert keys and all(r["file"].startswith("commitlog/") for r in keys)
    # every key reported is one whose entry sits in that slot of that file
    assert all(int(r["detail"].split("hash ")[1].split()[0]) % 64 == slot for r in keys)


def test_broken_index_chain_link(tmp_path):
    root = copy("store-a", tmp_path)
    name = expect("store-a")["indexFiles"][0]["file"]
    path = root / "index" / name
    entry = 1000
    at = 40 + 64 * 4 + entry * 20
    patch(path, at + 16, struct.pack(">i", entry + 5))  # prevIndex pointing forward
    report = run(root)
    chain = rows(report, "index_chain")
    assert (f"index/{name}", at) in [(r["file"], r["offset"]) for r in chain]
    assert rows(report, "index_key_unreachable")


def test_index_header_mismatch(tmp_path):
    root = copy("store-a", tmp_path)
    name = expect("store-a")["indexFiles"][1]["file"]
    patch(root / "index" / name, 24, struct.pack(">q", 999))
    report = run(root, deep=False)
    assert [(r["file"], r["offset"]) for r in rows(report, "index_header")] == [(f"index/{name}", 24)]


def test_truncated_commitlog_file(tmp_path):
    root = copy("store-a", tmp_path)
    last = root / "commitlog/00000000000002097152"
    with open(last, "r+b") as fh:
        fh.truncate(300_000)
    report = run(root, deep=False)
    sizes = rows(report, "commitlog_file_size")
    assert [(r["file"], r["offset"]) for r in sizes] == [("commitlog/00000000000002097152", 0)]
    torn = rows(report, "truncated_tail")
    cut = next(
        m
        for m in messages("store-a")
        if m["physicalOffset"] - 2097152 < 300_000 <= m["physicalOffset"] - 2097152 + m["totalSize"]
    )
    assert [(r["file"], r["offset"]) for r in torn] == [
        ("commitlog/00000000000002097152", cut["physicalOffset"] - 2097152)
    ]
    assert rows(report, "cq_points_outside")


def test_physical_offset_field(tmp_path):
    root = copy("store-a", tmp_path)
    file, pos, m = record_at("store-a", 42)
    patch(root / file, pos + 28, struct.pack(">q", m["physicalOffset"] + 8))
    report = run(root, deep=False)
    assert [(r["file"], r["offset"], r["kind"]) for r in errors(report)] == [(file, pos, "phy_offset_field")]


def test_zeros_before_data_is_a_premature_end(tmp_path):
    root = copy("store-a", tmp_path)
    file, pos, m = record_at("store-a", 500)
    patch(root / file, pos, bytes(m["totalSize"]))
    report = run(root, deep=False)
    premature = rows(report, "premature_end")
    assert [(r["file"], r["offset"]) for r in premature] == [(file, pos)]
    assert report.summary["commitlog"]["validEnd"] == m["physicalOffset"]


def test_nonzero_bytes_after_the_end(tmp_path):
    root = copy("store-a", tmp_path)
    end = expect("store-a")["maxPhyOffset"] - 2097152
    patch(root / "commitlog/00000000000002097152", end + 5000, b"\x01\x02\x03")
    report = run(root, deep=False)
    assert report.clean
    tail = rows(report, "nonzero_after_end")
    assert [(r["file"], r["offset"], r["severity"]) for r in tail] == [
        ("commitlog/00000000000002097152", end, "warning")
    ]
    assert str(end + 5003) in tail[0]["detail"]


def test_record_after_garbage_is_found_by_resync(tmp_path):
    root = copy("store-a", tmp_path)
    file, pos, m = record_at("store-a", 600)
    patch(root / file, pos + 4, struct.pack(">i", 0x0BADBEEF))
    report = run(root, deep=False)
    bad = rows(report, "bad_magic")
    assert [(r["file"], r["offset"]) for r in bad] == [(file, pos)]
    later = sum(1 for x in messages("store-a") if x["physicalOffset"] > m["physicalOffset"])
    assert f"drops {later} later records" in bad[0]["detail"]


def test_store_ending_in_a_blank(tmp_path):
    root = copy("store-a", tmp_path)
    (root / "commitlog/00000000000002097152").unlink()
    blank = [r for r in expect("store-a")["messages"] if r["kind"] == "BLANK"][-1]
    report = run(root, deep=False)
    assert report.summary["commitlog"]["validEnd"] == blank["physicalOffset"]
    with Store.open(root) as st:
        assert st.commitlog.valid_end(st.commitlog.files[0].start_offset) == blank["physicalOffset"]
    assert {r["kind"] for r in errors(report)} == {"cq_points_outside", "checkpoint_ahead"}
    assert not rows(report, "cq_missing_unit")


def test_checkpoint_ahead_of_the_data(tmp_path):
    root = copy("store-a", tmp_path)
    patch(root / "checkpoint", 0, struct.pack(">q", 2**62))
    report = run(root, deep=False)
    assert [(r["file"], r["offset"], r["kind"]) for r in errors(report)] == [
        ("checkpoint", 0, "checkpoint_ahead")
    ]


def test_missing_consume_queue(tmp_path):
    root = copy("store-a", tmp_path)
    shutil.rmtree(root / "consumequeue/OrderTopic/1")
    report = run(root, deep=False)
    missing = rows(report, "cq_missing_unit")
    expected = [m for m in messages("store-a") if m["topic"] == "OrderTopic" and m["queueId"] == 1]
    assert len(missing) == min(len(expected), 1000) + (1 if len(expected) > 1000 else 0)
    assert all("no ConsumeQueue for the record's queue" in r["detail"] for r in missing)


def test_records_of_a_deleted_topic_are_facts(tmp_path):
    root = copy("store-a", tmp_path)
    shutil.rmtree(root / "consumequeue/OrderTopic")
    topics = json.loads((root / "config/topics.json").read_text())
    del topics["topicConfigTable"]["OrderTopic"]
    (root / "config/topics.json").write_text(json.dumps(topics))
    (root / "config/topics.json.bak").unlink()
    report = run(root, deep=False)
    assert report.clean, errors(report)
    gone = rows(report, "deleted_topic")
    assert sorted(r["detail"].split(":")[0] for r in gone) == ["OrderTopic/0", "OrderTopic/1"]
    counts = {
        q: sum(1 for m in messages("store-a") if m["topic"] == "OrderTopic" and m["queueId"] == q)
        for q in (0, 1)
    }
    for r in gone:
        q = int(r["detail"].split(":")[0].split("/")[1])
        assert f" {counts[q]} record(s)" in r["detail"]


def test_bad_cq_file_size(tmp_path):
    root = copy("store-a", tmp_path)
    with open(root / "consumequeue/TopicTest/2/00000000000000006000", "r+b") as fh:
        fh.truncate(5000)
    report = run(root, deep=False)
    bad = rows(report, "cq_file")
    assert [(r["file"], r["offset"]) for r in bad] == [
        ("consumequeue/TopicTest/2/00000000000000006000", None)
    ]
    assert "is not the queue's file size 6000: length not matched" in bad[0]["detail"]
    assert rows(report, "cq_missing_unit")  # its records now lack units


# --- CLI ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cli():
    app = typer.Typer()
    app.command()(verify)
    app.command()(export)
    return app


def test_cli_exit_status_and_json(cli, tmp_path):
    runner = CliRunner()
    ok = runner.invoke(cli, ["verify", "--store", str(store_path("store-a")), "--format", "json"])
    assert ok.exit_code == 0, ok.output
    doc = json.loads(ok.output)
    assert doc["clean"] is True and doc["errors"] == 0 and doc["problems"][0]["kind"] == "recovery"
    bad = runner.invoke(
        cli, ["verify", "--store", str(store_path("store-c")), "--format", "jsonl", "--show", "warning"]
    )
    assert bad.exit_code == 1
    lines = [json.loads(line) for line in bad.output.splitlines()]
    assert {r["severity"] for r in lines} == {"error", "warning"}
    strict = runner.invoke(
        cli, ["verify", "--store", str(store_path("store-a")), "--strict", "--format", "plain"]
    )
    assert strict.exit_code == 0 and "clean" in strict.output
    root = copy("store-c", tmp_path)
    patch(root / "commitlog/00000000000004194304", 218203, bytes(8))  # no torn record left: warnings only
    warn = runner.invoke(cli, ["verify", "--store", str(root), "--strict", "--format", "csv"])
    assert warn.exit_code == 1
    plain = runner.invoke(cli, ["verify", "--store", str(root), "--format", "csv"])
    assert plain.exit_code == 0, plain.output
    assert plain.output.splitlines()[0] == "store,file,offset,kind,severity,detail"


# --- export -----------------------------------------------------------------------------------------


def test_export_parquet_matches_the_broker(tmp_path):
    with Store.open(store_path("store-a")) as st:
        summary = export_range(st, tmp_path / "out", with_body=True)
    table = pq.read_table(tmp_path / "out" / "messages.parquet")
    msgs = messages("store-a")
    assert summary.messages == table.num_rows == len(msgs)
    assert summary.stop["status"] == "end"
    for row, m in zip(table.to_pylist(), msgs, strict=True):
        assert row["physicalOffset"] == m["physicalOffset"]
        assert dict(row["properties"]) == m["properties"]
        assert row["offsetMsgId"] == m["offsetMsgId"]
        assert base64.b64encode(row["body"]).decode() == m["bodyBase64"]
        assert (row["keys"], row["tags"], row["uniqKey"]) == (m["keys"], m["tags"], m["uniqKey"])


def test_export_jsonl_topic_and_range(cli, tmp_path):
    msgs = messages("store-a")
    lo, hi = msgs[100]["physicalOffset"], msgs[1500]["physicalOffset"]
    result = CliRunner().invoke(
        cli,
        [
            "export",
            "--store",
            str(store_path("store-a")),
            "--output",
            str(tmp_path),
            "--format",
            "jsonl",
            "--topic",
            "OrderTopic",
            "--from-offset",
            str(lo),
            "--to-offset",
            str(hi),
        ],
    )
    assert result.exit_code == 0, result.output
    got = [json.loads(line) for line in (tmp_path / "messages.jsonl").read_text().splitlines()]
    want = [m for m in msgs if m["topic"] == "OrderTopic" and lo <= m["physicalOffset"] < hi]
    assert [g["physicalOffset"] for g in got] == [m["physicalOffset"] for m in want]
    assert all(g["properties"] == m["properties"] and "body" not in g for g, m in zip(got, want, strict=True))
    summary = json.loads(result.stdout.splitlines()[0])  # --format jsonl: the summary is JSONL too
    assert summary["topics"] == {"OrderTopic": len(want)} and summary["messages"] == len(want)


def test_dump_commitlog_parquet(tmp_path):
    out = tmp_path / "dump.parquet"
    with Store.open(store_path("store-c")) as st:
        summary = dump_commitlog_parquet(st, out, count=25, topic="RetentionTopic")
    table = pq.read_table(out)
    assert table.num_rows == 25 and set(table.column("topic").to_pylist()) == {"RetentionTopic"}
    with Store.open(store_path("store-c")) as st:
        summary = dump_commitlog_parquet(st, out)
    assert summary.stop["status"] == "crc_mismatch"
    assert summary.stop["physicalOffset"] == expect("store-c")["asWritten"]["tornRecordOffset"]
    assert pq.read_table(out).num_rows == expect("store-c")["asWritten"]["messageRecords"]


# --- check functions ----------------------------------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(st.none(), st.text(max_size=80)), max_size=40), st.integers(0, 3))
def test_java_hash_of_arrow_strings(values, offset):
    arr = pa.array(["x"] * offset + values, pa.string()).slice(offset)
    hashes, len16, valid = java_hash_strings(arr)
    for v, h, n, ok in zip(values, hashes.tolist(), len16.tolist(), valid.tolist(), strict=True):
        assert ok == (v is not None)
        if v is not None:
            assert h == java_string_hash(v)
            assert n == len(v.encode("utf-16-le", "surrogatepass")) // 2


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(st.none(), st.text(alphabet="ab é中\U0001f600", max_size=90)), max_size=40))
def test_java_hash_across_hash_chunks(values):
    """Strings hashed chunk by chunk (a 64-byte chunk here): spans that end a chunk, start the next, or
    are longer than one are hashed as Java's String.hashCode does."""
    import formats.java.strings as strings

    saved = strings._HASH_CHUNK
    strings._HASH_CHUNK = 64
    strings._power_tables.cache_clear()
    try:
        hashes, len16, valid = java_hash_strings(pa.array(values, pa.string()))
    finally:
        strings._HASH_CHUNK = saved
        strings._power_tables.cache_clear()
    want = [java_string_hash(v) if v is not None else 0 for v in values]
    assert hashes.tolist() == want
    assert len16.tolist() == [len(v.encode("utf-16-le")) // 2 if v is not None else 0 for v in values]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(st.none(), st.text(alphabet="ab é中 ", max_size=30)), max_size=30))
def test_split_tokens_is_java_split(values):
    row, data, starts, lengths = split_tokens(pa.array(values, pa.string()))
    got = [(int(r), bytes(data[s : s + n]).decode()) for r, s, n in zip(row, starts, lengths, strict=True)]
    want = [(i, t) for i, v in enumerate(values) if v for t in v.split(" ") if t]
    assert got == want


_PROPS = st.lists(
    st.tuples(
        st.sampled_from(["DELAY", "TAGS", "MYDELAY", "", "DELAY\x01x"]),
        st.one_of(
            st.from_regex(r"[+-]?[0-9]{0,11}", fullmatch=True), st.text("0123456789١\x01 ", max_size=4)
        ),
    ),
    max_size=4,
)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(_PROPS, st.booleans()), max_size=12))
def test_delay_levels_as_the_broker_reads_them(cases):
    from formats.message.commitlog import java_parse_int
    from formats.message.properties import decode_properties

    raws = [
        "".join(
            f"{k}\x01{v}" + ("\x02" if trail or i < len(pairs) - 1 else "") for i, (k, v) in enumerate(pairs)
        )
        for pairs, trail in cases
    ]
    got = delay_levels_of(pa.array([r.encode() for r in raws], pa.binary()))
    for raw, level in zip(raws, got.tolist(), strict=True):
        delay = decode_properties(raw).get("DELAY")
        assert level == ((java_parse_int(delay) or 0) if delay is not None else 0)


@pytest.mark.parametrize("store", ["store-a", "store-49a", "store-c"])
def test_tags_codes_and_index_keys_as_the_dispatcher(store):
    with Store.open(store_path(store)) as st:
        batches = [decode_range(f.buffer(), f.start_offset) for f in st.commitlog.files]
        records = RecordIndex.from_batches(
            batches, [f.start_offset for f in st.commitlog.files], ["x"] * len(batches), with_keys=True
        )
        by_phy = {m["physicalOffset"]: m for m in messages(store)}
        assert len(records) == len(by_phy)
        for phy, code in zip(records.phy.tolist(), records.tags_code.tolist(), strict=True):
            assert code == by_phy[phy]["dispatch"]["tagsCode"]
        rows_, hashes = index_key_hashes(records)
        want_rows, want = [], []
        for i, msg in enumerate(st.commitlog.iter_messages(check_crc=False)):
            for key in msg.index_keys():
                want_rows.append(i)
                want.append(index_key_hash(index_key(msg.topic, key)))
        assert rows_.tolist() == want_rows
        assert hashes.tolist() == want


def test_problem_list_caps_rows():
    problems = ProblemList("s", max_rows=3)
    problems.add_many("cq_order", "f", np.arange(10), fmt("unit ", np.arange(10)))
    problems.add("recovery", None, None, "x")
    table = problems.table()
    assert table.schema == PROBLEM_SCHEMA
    assert table.column("kind").to_pylist() == ["cq_order"] * 3 + ["more", "recovery"]
    assert table.column("offset").to_pylist()[:4] == [0, 1, 2, 9]
    assert "7 more cq_order problems" in table.column("detail")[3].as_py()


# --- finding a queue's records ----------------------------------------------------------------------


def _same_find(records: RecordIndex, phy: np.ndarray, topic: str, queue_id: int) -> None:
    want_idx, want_found = records.find(phy)
    idx, found = records.find_in_queue(phy, topic, queue_id)
    assert (found == want_found).all()
    assert (idx[found] == want_idx[want_found]).all()


@pytest.mark.parametrize(
    "store", ["store-a", "store-c", "store-49a", "store-lmq", "store-batchcq", "store-pop"]
)
def test_find_in_queue_is_find(store):
    """Every queue's units found among the queue's own records first give what the whole-log search gives:
    the real units, units moved to other queues' records, to no record start, past the end, unknown names."""
    from store.checks.rangescan import scan_ranges

    with Store.open(store_path(store)) as st:
        _, records, _ = scan_ranges(st.commitlog)
        queues = list(st.consume_queues.queues())
        assert queues
        rng = np.random.default_rng(7)
        for topic, queue_id in queues:
            q = st.consume_queues.open(topic, queue_id)
            try:
                phy = np.asarray(q.units(0)["phyOffset"], dtype=np.int64)
            finally:
                q.close()
            _same_find(records, phy, topic, queue_id)
            mixed = np.sort(
                np.concatenate([phy, rng.choice(records.phy, 50), records.phy[:3] + 1, [0, 1 << 40]])
            )
            _same_find(records, mixed, topic, queue_id)
            _same_find(records, mixed, topic, queue_id + 1000)
            _same_find(records, mixed, topic, -5)
        _same_find(records, records.phy[::7], "no-such-topic", 0)
        _same_find(records, np.zeros(0, np.int64), queues[0][0], queues[0][1])
