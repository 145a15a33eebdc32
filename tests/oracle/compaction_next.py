"""The next compaction of tests/data/store-compaction, run by the real 5.3.3 classes (`run.sh compaction-run`:
on a copy, one `CompactionLog.doCompaction` of every compaction log, what the compactionSchedule thread runs
next), recorded in tests/data/store-compaction/next-compaction.json: per queue the files before and after,
the position-checkpoint it recorded, and the queue offsets a consumer pulling from 0 gets afterwards.
tests/test_compaction_rebuild.py checks `CompactionLog.next_compaction` (what `dump compactionlog` says each
record's fate is) against it. Run from the repository root: `PYTHONPATH=. .venv/bin/python
tests/oracle/compaction_next.py` (needs the oracle built).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIXTURE = HERE.parent / "data" / "store-compaction"


def main() -> int:
    run = subprocess.run(
        [str(HERE / "run.sh"), "compaction-run", str(FIXTURE)], capture_output=True, text=True, check=True
    )
    read = json.loads(run.stdout)
    out = {
        "loaded": read["loaded"],
        "compactions": read["compactions"],
        "positionCheckpoint": read["positionCheckpoint"]["queueOffsetMap"],
        "consumed": {
            name: [m["recordQueueOffset"] for m in q["consumed"]]
            for name, q in sorted(read["compactionQueues"].items())
        },
    }
    (FIXTURE / "next-compaction.json").write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(json.dumps(out["compactions"]), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
