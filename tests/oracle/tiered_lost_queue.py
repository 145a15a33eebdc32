"""What the real 5.3.3 tiered plugin serves for a queue whose local files are gone: tests/data/store-tiered/
lost-queue.json.

A copy of tests/data/store-tiered loses `store/consumequeue/TieredTopicB` (what a replaced local disk, or a
local cleanup the tiered tree outlived, leaves: the queue exists only in the tiered tree). The oracle's
`tiered-load` (tests/oracle/harness/oracle/TieredLoad.java) then reports per queue the ranges the plugin
answers, getMessage at every offset up to the flat file's commit offset, every tiered unit, offsets by time
and key queries. The file keeps what concerns TieredTopicB, in the canonical order of tiered_rebuild_cases;
and,
from a second copy whose commitlog file is renamed to start at 0, which store each of its offsets is asked of
(`checkInStoreByConsumeOffset` takes a missing unit's position as 0).

Run: PYTHONPATH=. .venv/bin/python tests/oracle/tiered_lost_queue.py (5.3.3 oracle built; honours
MQTOOL_ORACLE_CACHE).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tiered_rebuild_cases import FIXTURE, ROOT, SERVED, canonical  # noqa: E402

OUT = FIXTURE / "lost-queue.json"
LOST = "TieredTopicB"


def load(commitlog_at_zero: bool) -> dict:
    """tiered-load of a copy without the lost queue's local files; `commitlog_at_zero`: the commitlog's one
    file renamed to start at 0 (CommitLog.getMinOffset 0, as on a new local disk)."""
    with tempfile.TemporaryDirectory(prefix="tiered-lost-") as tmp:
        work = Path(tmp) / "copy"
        for part in ("store", "tiered"):
            shutil.copytree(FIXTURE / part, work / part)
        shutil.rmtree(work / "store" / "consumequeue" / LOST)
        if commitlog_at_zero:
            (only,) = (work / "store" / "commitlog").iterdir()
            only.rename(only.with_name("0" * 20))
            shutil.rmtree(
                work / "store" / "index"
            )  # its entries name the old offsets: key queries would fail
        out = Path(tmp) / "served.json"
        oracle = [str(ROOT / "tests" / "oracle" / "run.sh"), "tiered-load", str(work), str(out)]
        subprocess.run(oracle, check=True, capture_output=True)
        return json.loads(out.read_text())


def run() -> dict:
    loaded = load(False)
    served = canonical({k: loaded[k] for k in SERVED})
    at_zero = canonical({k: v for k, v in load(True).items() if k in SERVED})
    return {
        "generatedBy": "tests/oracle/tiered_lost_queue.py (oracle tiered-load, rocketmq-all-5.3.3)",
        "removed": f"store/consumequeue/{LOST}",
        # the same with the commitlog's file renamed to start at 0: which store each offset is asked of
        "commitLogAtZeroReads": [
            {k: r[k] for k in ("offset", "fromTiered", "status", "minOffset", "maxOffset")}
            for r in at_zero["reads"]
            if r["topic"] == LOST
        ],
        "loaded": loaded["loaded"],
        "queues": {k: v for k, v in served["queues"].items() if v["topic"] == LOST},
        "reads": [r for r in served["reads"] if r["topic"] == LOST],
        "tieredUnits": {k: v for k, v in served["tieredUnits"].items() if k.startswith(LOST + "/")},
        "offsetsByTime": [r for r in served["offsetsByTime"] if r["topic"] == LOST],
        "keyQueries": [r for r in served["keyQueries"] if r["topic"] == LOST],
    }


def main() -> None:
    doc = run()
    OUT.write_text(json.dumps(doc, indent=1) + "\n")
    print(OUT, {k: len(v) for k, v in doc.items() if isinstance(v, (list, dict))})


if __name__ == "__main__":
    main()
