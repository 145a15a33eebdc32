"""One pass over the commitlog answers every later walk (`store.log.walks`): after verify's ranged decode
(or one walk_end) the recovery end, the newest record and the last records come from the recorded file
walks - equal to a fresh walk of the files, the broker's own maxPhyOffset on the golden stores - and the
bundle reads the log once. On corrupt copies (a body CRC flipped, a bad magic, a zeroed last file) the
answers still equal a fresh walk: an unchecked walk goes on past the CRC mismatch a checked one stopped at."""

from __future__ import annotations

import base64
import shutil
import struct
from pathlib import Path

import pytest
from golden import expect, store_path

import formats.columnar.decoder as decoder
import store.log.commitlog as commitlog_module
from store.checks.rangescan import scan_ranges
from store.log.commitlog import CommitLog
from store.log.walks import TAIL_KEPT

KEEPS = (1, 20, 700, TAIL_KEPT, TAIL_KEPT + 1, 5000)


def _messages(store: str) -> list[dict]:
    return [m for m in expect(store)["messages"] if m["kind"] == "MESSAGE"]


def _flip_body(root: Path, m: dict) -> None:
    """One bit of the message's body flipped: its BODYCRC no longer matches."""
    path = root / "commitlog" / m["file"]
    data = bytearray(path.read_bytes())
    pos = m["physicalOffset"] - int(m["file"])
    at = data.find(base64.b64decode(m["bodyBase64"]), pos, pos + m["totalSize"])
    assert at > pos
    data[at + m["bodyLength"] // 2] ^= 0x01
    path.write_bytes(bytes(data))


def _bad_magic(root: Path, m: dict) -> None:
    path = root / "commitlog" / m["file"]
    data = bytearray(path.read_bytes())
    pos = m["physicalOffset"] - int(m["file"])
    data[pos + 4 : pos + 8] = struct.pack(">i", 0x12345678)
    path.write_bytes(bytes(data))


def _store(case: str, tmp_path: Path) -> Path:
    """A golden store, or a copy of store-a corrupted as `case` says."""
    if case in ("store-a", "store-c", "store-49a"):
        return store_path(case)
    root = tmp_path / case
    shutil.copytree(store_path("store-a"), root)
    messages = _messages("store-a")
    files = sorted({m["file"] for m in messages})
    if case == "crc-middle":  # the recovery's checked walk stops in the middle file; unchecked goes on
        _flip_body(root, next(m for m in messages if m["file"] == files[1] and m["bodyLength"] > 200))
    elif case == "crc-last":  # the last records lie past the CRC mismatch
        _flip_body(root, [m for m in messages if m["file"] == files[-1] and m["bodyLength"] > 200][-30])
    elif case == "magic-middle":
        _bad_magic(root, [m for m in messages if m["file"] == files[1]][40])
    elif case == "zeroed-last":  # the newest record is in the file before the last
        with open(root / "commitlog" / files[-1], "r+b") as fh:
            fh.write(bytes(8))
    return root


CASES = ("store-a", "store-c", "store-49a", "crc-middle", "crc-last", "magic-middle", "zeroed-last")


def _answers(cl: CommitLog) -> dict:
    """Every walk the commands ask of a commitlog, as plain values."""
    out: dict = {}
    for f in cl.files:
        for crc in (False, True):
            end = cl.walk_end(f.start_offset, check_crc=crc)
            out[("end", f.start_offset, crc)] = (end.valid_end, end.reason, end.last)
            out[("stop", f.start_offset, crc)] = cl.stop_record(f.start_offset, check_crc=crc)
        for keep in KEEPS:
            out[("tail", f.start_offset, keep)] = cl.tail_positions(f, keep)
    out["last"] = cl.last_record()
    out["max"] = cl.max_offset
    return out


@pytest.mark.parametrize("case", CASES)
def test_verify_scan_then_every_walk_as_a_fresh_walk(case, tmp_path):
    root = _store(case, tmp_path)
    fresh = _answers(CommitLog.open(root))
    shared = CommitLog.open(root)
    scan_ranges(shared, check_crc=True, range_size=64 << 10)  # many ranges a file: tails joined
    assert shared.walks.known, "verify's scan records the files' walks"
    assert _answers(shared) == fresh


@pytest.mark.parametrize("case", CASES)
def test_one_walk_end_then_every_walk_as_a_fresh_walk(case, tmp_path, monkeypatch):
    """info's first walk (the recovery's, CRC checked) records the files it walks whole, struct and
    compiled alike; the answers after it are a fresh walk's."""
    root = _store(case, tmp_path)
    fresh = _answers(CommitLog.open(root))
    for compiled_min in (commitlog_module.COMPILED_WALK_MIN, 0):
        monkeypatch.setattr(commitlog_module, "COMPILED_WALK_MIN", compiled_min)
        shared = CommitLog.open(root)
        shared.stop_record(shared.recovery_start_offset, check_crc=True)
        assert shared.walks.known
        assert _answers(shared) == fresh


def _no_walks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make every walk over the files fail: what follows must come from the recorded walks."""

    def walked(*args, **kwargs):
        raise AssertionError("the commitlog was walked again")

    monkeypatch.setattr(commitlog_module, "_walk_file", walked)
    monkeypatch.setattr(commitlog_module, "_walk_range", walked)
    monkeypatch.setattr(decoder, "walk_stop", walked)
    monkeypatch.setattr(decoder, "walk_chain", walked)


def test_the_recovery_end_from_verify_is_the_brokers(monkeypatch):
    logs = {name: CommitLog.open(store_path(name)) for name in ("store-a", "store-49a", "store-c")}
    for cl in logs.values():
        scan_ranges(cl, check_crc=True)
    _no_walks(monkeypatch)
    assert logs["store-a"].max_offset == expect("store-a")["maxPhyOffset"]
    assert logs["store-49a"].max_offset == expect("store-49a")["maxPhyOffset"]
    c = logs["store-c"]
    assert c.valid_end(c.recovery_start_offset) == expect("store-c")["afterRecovery"]["maxPhyOffset"]


@pytest.mark.parametrize("name", ["store-a", "store-49a", "zeroed-last"])
def test_after_verify_nothing_walks_again(name, tmp_path, monkeypatch):
    root = _store(name, tmp_path)
    fresh = CommitLog.open(root)
    want = (
        fresh.stop_record(fresh.recovery_start_offset),
        fresh.last_record(),
        fresh.tail_positions(fresh.files[-1], 20),
    )
    cl = CommitLog.open(root)
    scan_ranges(cl, check_crc=True, range_size=64 << 10)
    _no_walks(monkeypatch)
    got = (cl.stop_record(cl.recovery_start_offset), cl.last_record(), cl.tail_positions(cl.files[-1], 20))
    assert got == want


def test_the_bundle_reads_the_commitlog_once(tmp_path, monkeypatch):
    """verify's decode is the bundle's one pass: info's end and newest record, the start-up verdict's
    recovery end and the last records walk nothing again."""
    import tarfile

    from mqtool.oncall.bundle import write_bundle
    from store.storedir import Store

    root = _store("store-a", tmp_path)
    _no_walks(monkeypatch)
    out = tmp_path / "b.tar.gz"
    summary = write_bundle(Store.open(root), out, now_ms=1767225600000, zone=None, records=30)
    assert summary.notes == []
    with tarfile.open(out, "r:gz") as tar:
        names = [m.name.split("/", 1)[1] for m in tar.getmembers()]
    assert names[:5] == ["README.txt", "info.json", "startup.json", "verify.json", "retention.json"]
