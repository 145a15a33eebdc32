"""Damaged copies of store-dledger read by the real DLedger recovery: tests/data/store-dledger/damaged.json.

    MQTOOL_ORACLE_CACHE=... python tests/oracle/dledger_damaged.py

Each damage (DAMAGES: a name, what it does, byte writes into the unpacked fixture) is applied to a fresh copy
of store-dledger, then `run.sh dledger-read` (the real DLedgerMmapFileStore.load/recover through RocketMQ
5.3.3's DLedgerCommitLog, on its own temporary copy) reads it; the JSON keeps, per damage, whether the store
loaded and what DLedger's recovery kept (`afterLoad`: ledger end index, committed index and position,
`recoveryCut`) - or, when the broker exits at load, that it did. tests/test_dledger_read.py applies the same
damages and compares verify's truncation point with it. Needs the DLedger oracle; never run by the tests.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests" / "data" / "store-dledger"
RUN = REPO / "tests" / "oracle" / "run.sh"
DATA = "dledger-n0/data/"
INDEX = "dledger-n0/index/00000000000000000000"

# name -> (what, [(file, position, bytes hex)]): positions from the fixture's expect.json onDisk entries
LAST = DATA + "00000000000001179648"  # the last data file, from 1179648
DAMAGES: dict[str, tuple[str, list[tuple[str, int, str]]]] = {
    "pos-260": ("entry 260's pos field zeroed", [(LAST, 1293761 - 1179648 + 24, "00" * 8)]),
    "term-265": ("entry 265's term set to -1 (below the previous entry's 0)",
                 [(LAST, 1296542 - 1179648 + 16, "ff" * 8)]),
    "magic-262": ("entry 262's magic set to 2", [(LAST, 1294933 - 1179648, "00000002")]),
    "index-258": ("entry 258's index set to 300", [(LAST, 1292885 - 1179648 + 8, "000000000000012c")]),
    "unit-268": ("index unit 268's pos zeroed", [(INDEX, 268 * 32 + 4, "00" * 8)]),
    "body-200": ("a body byte of entry 200's message flipped (its BODYCRC no longer holds)", []),
    "zeros-266": ("entries 266 to 270 zeroed (never written)",
                  [(LAST, 1297051 - 1179648, "00" * (1298975 - 1297051))]),
    "pad-size": ("the pad of data file 1048576 says 8 bytes", []),
    "start-file": ("the first entry of the third-last data file (917504) has a wrong pos field",
                   [(DATA + "00000000000000917504", 24, "00" * 8)]),
}  # fmt: skip


def _fill_lazy(root: Path) -> None:
    """The damages whose positions are found in the files (a body byte, a pad)."""
    expect = json.loads((FIXTURE / "expect.json").read_text())
    entry = next(e for e in expect["onDisk"]["data"]["entries"] if e["index"] == 200)
    f = entry["file"]
    at = entry["pos"] - int(Path(f).name) + 48 + 88 + 5  # the record's body starts 88 bytes in (IPv4 hosts)
    byte = (root / f).read_bytes()[at] ^ 0x01
    DAMAGES["body-200"] = (DAMAGES["body-200"][0], [(f, at, f"{byte:02x}")])
    pad = next(p for p in expect["onDisk"]["data"]["pads"] if p["file"].endswith("00000000000001048576"))
    DAMAGES["pad-size"] = (DAMAGES["pad-size"][0], [(pad["file"], pad["filePos"] + 4, "00000008")])


def apply(root: Path, writes: list[tuple[str, int, str]]) -> None:
    for rel, position, data in writes:
        with open(root / rel, "r+b") as fh:
            fh.seek(position)
            fh.write(bytes.fromhex(data))


def unpack(dest: Path) -> Path:
    with tarfile.open(FIXTURE / "store.tar.gz") as tar:
        tar.extractall(dest, filter="data")
    return dest / "store-dledger"


def main() -> int:
    out = {}
    with tempfile.TemporaryDirectory(prefix="dledger-damaged-") as tmp:
        _fill_lazy(unpack(Path(tmp) / "probe"))
        for name, (what, writes) in DAMAGES.items():
            root = unpack(Path(tmp) / name)
            apply(root, writes)
            run = subprocess.run([str(RUN), "dledger-read", str(root)], capture_output=True, text=True)
            try:
                got = json.loads(run.stdout)
            except json.JSONDecodeError:
                got = None
            row = {"what": what, "writes": writes, "exitStatus": run.returncode}
            if got is not None:
                row["loaded"] = got.get("loaded")
                row["afterLoad"] = got.get("afterLoad")
                row["crcErrors"] = len(got.get("crcErrors") or [])
            out[name] = row
            print(
                name, run.returncode, json.dumps((row.get("afterLoad") or {}).get("recoveryCut")), flush=True
            )
            shutil.rmtree(root.parent, ignore_errors=True)
    doc = {
        "generator": "tests/oracle/dledger_damaged.py (run.sh dledger-read, RocketMQ 5.3.3, DLedger 0.3.1.2)",
        "damages": out,
    }
    (FIXTURE / "damaged.json").write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
