"""tests/data/ha-pairs: a master/slave pair under the real classic HA of 5.3.3, a failover and a rejoin
(`run.sh ha-pair`, class HaPair), and what the real recovery makes of the rejoined old master
(`run.sh load`: expect.json's `rejoinOldLoad`). Run from the repository root: `PYTHONPATH=.
.venv/bin/python tests/oracle/ha_pairs.py` (needs the oracle built; rewrites the fixture)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIXTURE = HERE.parent / "data" / "ha-pairs"
SEED = 20261127


def main() -> int:
    readme = (FIXTURE / "README.md").read_text() if (FIXTURE / "README.md").exists() else None
    shutil.rmtree(FIXTURE, ignore_errors=True)
    subprocess.run(
        [str(HERE / "run.sh"), "ha-pair", str(FIXTURE), str(SEED)], check=True, capture_output=True
    )
    expect = json.loads((FIXTURE / "expect.json").read_text())
    load = subprocess.run(
        [str(HERE / "run.sh"), "load", str(FIXTURE / "rejoin" / "old"), "64", "4000"],
        capture_output=True,
        text=True,
    )  # exit 1: not clean (its recovery truncates), the JSON is printed all the same
    read = json.loads(load.stdout)
    expect["rejoinOldLoad"] = {k: read[k] for k in ("loaded", "commitlog")}
    (FIXTURE / "expect.json").write_text(json.dumps(expect, indent=1) + "\n")
    if readme is not None:
        (FIXTURE / "README.md").write_text(readme)
    print(json.dumps(expect["rejoin"]), json.dumps(expect["rejoinOldLoad"]["commitlog"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
