"""Record what the real controller-mode recovery makes of other confirm offsets: store-controller/cases.json.

Each case copies tests/data/store-controller, writes one confirmPhyOffset into its checkpoint (bytes 32-39,
as StoreCheckpoint.flush puts it) and runs the oracle's `controller-read` (the real DefaultMessageStore,
fenced and loaded as a controller-mode broker loads it, and without controller mode; normal and with `abort`).
Kept per start: the confirm offset after load, min/max physical offsets and each queue's min/max after start.
tests/test_controller.py checks mqtool's confirm offset on the same cases against it.

Run: MQTOOL_ORACLE_CACHE=... PYTHONPATH=. .venv/bin/python tests/oracle/controller_cases.py
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STORE = ROOT / "tests" / "data" / "store-controller"
OUT = STORE / "cases.json"
# name -> confirmPhyOffset: inside a record, past the log's end, zero, a record boundary before the tail
CASES = {"mid-record": 9600, "past-end": 20000, "zero": 0, "earlier-boundary": 9042}
KEPT = ("loaded", "confirmOffsetAfterLoad", "minPhyOffset", "maxPhyOffset")


def set_confirm(root: Path, value: int) -> None:
    with open(root / "checkpoint", "r+b") as fh:
        fh.seek(32)
        fh.write(value.to_bytes(8, "big", signed=True))


def run_case(value: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "s"
        shutil.copytree(STORE, copy)
        set_confirm(copy, value)
        out = subprocess.run(
            [str(ROOT / "tests" / "oracle" / "run.sh"), "controller-read", str(copy)],
            check=True, capture_output=True, text=True,
        ).stdout  # fmt: skip
    reads = json.loads(out[out.index("\n{") + 1 if not out.startswith("{") else 0 :])  # log4j errors first
    result = {}
    for start, r in reads.items():
        kept = {k: r.get(k) for k in KEPT}
        kept["queues"] = {q: [v["minOffset"], v["maxOffset"]] for q, v in r["queues"].items()}
        result[start] = kept
    return result


def main() -> None:
    cases = {name: {"confirmPhyOffset": value, "reads": run_case(value)} for name, value in CASES.items()}
    OUT.write_text(json.dumps(cases, indent=1, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
