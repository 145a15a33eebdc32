"""The commitlog scanned in byte ranges over worker processes (store/checks/rangescan.py) gives what the
file-by-file scan gives (`store.log.scan.scan_file`, the reference): each file's walk facts and the records
indexed, on every golden store and on corrupted copies (a bad magic, a CRC mismatch, zeros before later
data, a wrong PHYSICALOFFSET field, a torn tail), however the files are cut and however many workers run;
and `verify` reports the same with 1 and N jobs."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from golden import copy_store, store_path

from formats.message.commitlog import Message, decode_record
from mqtool.verify import verify_store
from store.checks.rangescan import scan_ranges
from store.checks.records import RecordIndex
from store.log.scan import relative_name, scan_file
from store.storedir import Store


@pytest.fixture(autouse=True)
def parallel_on_small_stores(monkeypatch):
    """Worker processes even for the golden stores (a store under PARALLEL_MIN_BYTES is scanned in one)."""
    import store.log.ranges as ranges

    monkeypatch.setattr(ranges, "PARALLEL_MIN_BYTES", 0)


GOLDEN = ("store-a", "store-c", "store-c-recovered", "store-49a", "store-timer5", "store-pop", "store-lmq")
GOLDEN += ("store-batchcq", "store-timer-crash", "store-timer-states")


def _record_starts(path: Path) -> list[int]:
    data = path.read_bytes()
    pos, out = 0, []
    while True:
        rec = decode_record(data, pos, int(path.name))
        if not isinstance(rec, Message):
            return out
        out.append(pos)
        pos += rec.total_size


def _corrupt(root: Path, kind: str) -> Path:
    """One corruption in the middle of the second commitlog file (the first when there is one)."""
    files = sorted((root / "commitlog").iterdir())
    path = files[min(1, len(files) - 1)]
    starts = _record_starts(path)
    at = starts[len(starts) // 2]
    with open(path, "r+b") as fh:
        if kind == "bad_magic":
            fh.seek(at + 4)
            fh.write(b"\x00\x00\x00\x01")
        elif kind == "crc":
            fh.seek(at + 8)
            (crc,) = struct.unpack(">i", fh.read(4))
            fh.seek(at + 8)
            fh.write(struct.pack(">i", crc ^ 1))
        elif kind == "zeros":  # premature end: zeros where a record starts, records after them
            nxt = starts[len(starts) // 2 + 1]
            fh.seek(at)
            fh.write(bytes(nxt - at))
        elif kind == "phy_field":
            fh.seek(at + 28)
            fh.write(struct.pack(">q", 12345))
        elif kind == "torn":  # the last record of the file half zeroed
            last = starts[-1]
            fh.seek(last + 40)
            fh.write(bytes(64))
    return root


def _root(store: str, tmp_path: Path) -> Path:
    """A golden store, or a corrupted copy of store-a (`store` names the corruption)."""
    if store in GOLDEN:
        return store_path(store)
    return _corrupt(copy_store("store-a", tmp_path / "s"), store)


def _facts(files) -> list[tuple]:
    return [
        (f.name, f.start, f.size, f.stop(), f.message_count(), f.beyond_count(), f.data_end, f.stop_data_end)
        for f in files
    ]


def _index(records: RecordIndex) -> tuple:
    cols = ("phy", "size", "queue_id", "queue_offset", "sys_flag", "store_ts", "tags_code")
    topics = [records.topics[t] for t in records.topic]
    keys = None if records.keys is None else (records.keys.to_pylist(), records.uniq_keys.to_pylist())
    return tuple(getattr(records, c).tolist() for c in cols), topics, keys, records.multi_dispatch


def _reference(root: Path, deep: bool):
    """The file-by-file scan, as verify ran it before the ranges."""
    with Store.open(root) as store:
        scans, batches, ended = [], [], False
        for f in store.commitlog.queue.files:
            scan = scan_file(f, name=relative_name(f, root))
            stop = scan.stop()
            if not ended and scan.batch is not None:
                batches.append(scan.batch)
            ended = ended or (stop is not None and stop[0] != "blank")
            scans.append(scan)
        levels = store.layout.delay_levels.in_level_order
        records = RecordIndex.from_batches(
            batches, [s.start for s in scans], [s.name for s in scans], delay_levels=levels, with_keys=deep
        )
        return _facts(scans), _index(records), [_phy_rows(s) for s in scans]


def _phy_rows(f) -> list:
    """The rows check_file_records reports (wrong PHYSICALOFFSET fields) and its BLANK facts."""
    out = []
    for batch in (f.batch, f.beyond):
        if batch is None or not batch.num_rows:
            continue
        phy = batch.column("physicalOffset").to_numpy()
        field = batch.column("physicalOffsetField").to_numpy()
        ok = np.asarray(batch.column("status").indices) == 0
        out += [int(p) for p in phy[ok & (phy != field)]]
    return out


@pytest.mark.parametrize("store", [*GOLDEN, "bad_magic", "crc", "zeros", "phy_field", "torn"])
def test_ranges_give_the_file_by_file_scan(store, tmp_path):
    root = _root(store, tmp_path)
    deep = store in ("store-a", "zeros", "store-lmq")
    want = _reference(root, deep)
    with Store.open(root) as st:
        levels = st.layout.delay_levels.in_level_order
        for jobs, size in ((1, None), (2, 64 << 10), (3, 300_001), (1, 4096)):
            files, records, error = scan_ranges(
                st.commitlog, root=root, delay_levels=levels, with_keys=deep, jobs=jobs, range_size=size
            )
            assert error is None
            assert (_facts(files), _index(records), [_phy_rows(f) for f in files]) == want, (jobs, size)


def _report(root: Path, **kw) -> tuple:
    with Store.open(root) as st:
        report = verify_store(st, **kw)
    summary = {k: v for k, v in report.summary.items() if k not in ("seconds", "messagesPerSecond")}
    return report.problems.to_pylist(), report.counts, summary


@pytest.mark.parametrize("store", ["store-a", "store-c", "store-49a", "store-lmq", "zeros", "torn"])
def test_verify_with_one_and_many_jobs(store, tmp_path):
    root = _root(store, tmp_path)
    one = _report(root, deep=True)
    assert _report(root, deep=True, jobs=2) == one
    assert _report(root, deep=True, jobs=3, range_size=100_000) == one
    # without --deep the index check runs in a forked child beside the queue checks
    shallow = _report(root)
    assert _report(root, jobs=2) == shallow
    assert shallow[2]["index"]["files"] and shallow[2]["index"]["entries"]


def test_a_forked_check_answers_as_it_would_here(tmp_path) -> None:
    from formats.errors import FormatError, MqtoolError
    from store.checks.forked import ForkedCheck
    from store.checks.problems import ProblemList

    def check(problems: ProblemList) -> int:
        problems.add("index_file", "index/x", 7, "a problem found in the child")
        problems.add_many("index_file", "index/y", np.arange(5), "many", severity="warning")
        return os.getpid()

    here, there = ProblemList("s", max_rows=2), ProblemList("s", max_rows=2)
    assert ForkedCheck("index", check, here, 1).result(here) == os.getpid()
    assert ForkedCheck("index", check, there, 2).result(there) != os.getpid()  # ran in a child
    assert there.table().to_pylist() == here.table().to_pylist() and len(here.table()) == 4

    def fails(_problems: ProblemList) -> None:
        raise FormatError("bad header", "index/z", 40)

    with pytest.raises(FormatError, match="bad header") as raised:
        ForkedCheck("index", fails, there, 2).result(there)
    assert (raised.value.file, raised.value.offset) == ("index/z", 40)

    def dies(_problems: ProblemList) -> None:
        os._exit(3)

    with pytest.raises(MqtoolError, match="the index check's worker died"):
        ForkedCheck("index", dies, there, 2).result(there)


# --- export and dump --format parquet ------------------------------------------------------------------


def _chunked_export(store, *, topic, from_offset, to_offset, with_body, check_crc, limit, summary):
    """The export as it was before the ranges: `iter_batches` chunks (the broker's walk), one by one."""
    from mqtool.export import _count, export_batch
    from store.log.scan import iter_batches

    written = 0
    for f, batch in iter_batches(
        store.commitlog, from_offset, to_offset, check_crc=check_crc, with_body=with_body, chunk_bytes=200_000
    ):
        last = batch.num_rows - 1
        status = batch.column("status").cast(pa.string())[last].as_py()
        ok = np.asarray(batch.column("status").indices) == 0
        summary.bytes_read += int(batch.column("totalSize").to_numpy()[ok].sum())
        if status not in ("ok", "blank"):
            phy = batch.column("physicalOffset")[last].as_py()
            summary.stop = {
                "physicalOffset": phy,
                "status": status,
                "file": f.name,
                "position": phy - f.start_offset,
            }
        out = export_batch(batch, with_body=with_body, topic=topic)
        if limit is not None and written + out.num_rows > limit:
            out = out.slice(0, limit - written)
        if out.num_rows:
            written += out.num_rows
            _count(summary, out)
            yield out
        if limit is not None and written >= limit:
            return


def _exported(batches) -> list[dict]:
    return [row for batch in batches for row in batch.to_pylist()]


@pytest.mark.parametrize(
    "store", ["store-a", "store-c", "store-49a", "bad_magic", "zeros", "torn", "phy_field"]
)
def test_export_ranges_give_the_chunked_walk(store, tmp_path):
    from mqtool.export import ExportSummary, iter_export_batches

    root = _root(store, tmp_path)
    with Store.open(root) as st:
        files = st.commitlog.files
        mid = files[len(files) // 2]
        starts = _record_starts(mid.path)
        inside = mid.start_offset + starts[len(starts) // 3]
        cases = [
            {},
            {"check_crc": True, "with_body": True},
            {"from_offset": inside},
            {"to_offset": inside + 5},
            {"from_offset": files[0].start_offset + _record_starts(files[0].path)[7], "to_offset": inside},
            {"topic": "TopicTest", "limit": 500},
            {"limit": 3},
        ]
        for case in cases:
            args = {"topic": None, "from_offset": None, "to_offset": None, "with_body": False,
                    "check_crc": False, "limit": None, **case}  # fmt: skip
            want_summary = ExportSummary("x", "parquet")
            want = _exported(_chunked_export(st, summary=want_summary, **args))
            for jobs, size in ((1, None), (3, 4096)):
                summary = ExportSummary("x", "parquet")
                got = _exported(iter_export_batches(st, summary=summary, jobs=jobs, range_size=size, **args))
                assert got == want, (case, jobs, size)
                if "limit" in case:
                    summary.bytes_read = want_summary.bytes_read
                assert summary == want_summary, (case, jobs, size)


# --- info's walks -------------------------------------------------------------------------------------


@pytest.mark.parametrize("store", ["store-a", "store-c", "store-49a", "bad_magic", "crc", "zeros", "torn"])
def test_walks_in_ranges_end_where_the_struct_walk_ends(store, tmp_path, monkeypatch):
    """CommitLog.walk_end over worker processes in 256 KiB ranges (the compiled walk) against the struct
    walk in one piece: the same end, reason, last record and stopping record (info's walks)."""
    import store.log.commitlog as commitlog
    import store.log.ranges as ranges

    root = _root(store, tmp_path)
    with Store.open(root) as st:
        cl = st.commitlog
        starts = [cl.files[0].start_offset, cl.recovery_start_offset]
        want = [cl.stop_record(s, c) for s in starts for c in (False, True)]
        want_end = cl.walk_end(starts[0])
        want_last = cl.last_record()
        monkeypatch.setattr(commitlog, "COMPILED_WALK_MIN", 0)
        monkeypatch.setattr(ranges, "auto_range_size", lambda total, workers: 256 << 10)
        assert [cl.stop_record(s, c, jobs=2) for s in starts for c in (False, True)] == want
        end = cl.walk_end(starts[0], jobs=2)
        assert (end.valid_end, end.reason, end.last, end.position) == (
            want_end.valid_end, want_end.reason, want_end.last, want_end.position
        )  # fmt: skip
        assert cl.last_record(jobs=2) == want_last


def test_ranges_run_here_when_no_worker_pool_can_be_made(monkeypatch) -> None:
    """Found by the long fuzz run: where Python has no POSIX semaphores (a sandbox without /dev/shm) the pool
    cannot be made; the ranges then run in this process, in order, instead of an internal error."""
    import concurrent.futures

    from store.log.ranges import run_in_order

    def refuse(*_a, **_k):
        raise NotImplementedError("This Python build lacks multiprocessing.synchronize")

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", refuse)
    assert list(run_in_order(abs, [-3, 1, -2, 5], jobs=2)) == [3, 1, 2, 5]
