"""tests/data/epochs: controller-mode epoch files written by the real 5.3.3 EpochFileCache (`run.sh
epoch-write`), and the truncation point the real `findConsistentPoint` gives for each slave/master pair
(`run.sh epoch-consistent`, as AutoSwitchHAClient.doTruncate uses it). `store.ha.epochcache` is tested
against expect.json. Run from the repository root: `PYTHONPATH=. .venv/bin/python tests/oracle/epoch_cases.py`
(needs the oracle built; rewrites the fixture)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIXTURE = HERE.parent / "data" / "epochs"
FILE = "epochFileCheckpoint"

# name: (slave entries, slave max offset, master entries, master max offset, damage to the slave's file)
CASES = {
    "slave-behind": ("1-0,2-1000", 3000, "1-0,2-1000", 5000, None),
    "slave-ahead": ("1-0,2-1000", 6000, "1-0,2-1000", 5000, None),
    "diverged-epochs": ("1-0,2-1000,4-5000", 6000, "1-0,2-1000,3-4000", 7000, None),
    "no-common-epoch": ("2-100", 500, "3-0", 800, None),
    "same-epoch-other-start": ("1-0,2-1500", 3000, "1-0,2-1000", 4000, None),
    "slave-newer-epoch": ("1-0,2-1000,3-2000", 2500, "1-0,2-1000", 4000, None),
    "last-start-past-end": ("1-0,2-9000", 5000, "1-0,2-9000", 12000, None),
    "crc-damaged-read-bak": ("1-0,2-1000,3-2000", 2500, "1-0,2-1000,3-2000", 2400, "crc"),
}


def _run(*args: str) -> str:
    return subprocess.run([str(HERE / "run.sh"), *args], capture_output=True, text=True, check=True).stdout


def main() -> int:
    shutil.rmtree(FIXTURE / "cases", ignore_errors=True)
    expect = {}
    for name, (slave, slave_end, master, master_end, damage) in CASES.items():
        base = FIXTURE / "cases" / name
        for side, spec in (("slave", slave), ("master", master)):
            (base / side).mkdir(parents=True)
            _run("epoch-write", str(base / side / FILE), spec)
        if damage == "crc":  # the file's CRC line changed; its .bak (the flush before) stays as written
            _run("epoch-write", str(base / "slave" / FILE), "1-0,2-1000")
            _run("epoch-write", str(base / "slave" / FILE), slave)
            path = base / "slave" / FILE
            lines = path.read_text().split("\n")
            lines[1] = str(int(lines[1]) ^ 1)
            path.write_text("\n".join(lines))
        got = json.loads(
            _run("epoch-consistent", str(base / "slave" / FILE), str(slave_end), str(base / "master" / FILE),
                 str(master_end))
        )  # fmt: skip
        expect[name] = {"slaveMaxPhyOffset": slave_end, "masterMaxPhyOffset": master_end, **got}
        print(name, got["consistentPoint"], file=sys.stderr)
    (FIXTURE / "expect.json").write_text(json.dumps(expect, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
