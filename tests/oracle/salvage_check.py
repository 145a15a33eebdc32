"""`mqtool replicas salvage --execute` judged by the real 5.3.3 store code: a failover pair built from copies
of tests/data/store-a as tests/test_replicas_salvage.py builds it (the dead master keeps the whole log; the
slave that took over had received the bytes before a record boundary, its queues and index as its own
dispatch built them, and wrote messages of its own), the dead master's tail salvaged into the new master,
then `run.sh load` of the result (`check.judge`: it loads, recovers without truncating, walks without CRC
errors, holds ConsumeQueue units equal to the dispatcher's and finds every index key) - once after the
first run and once after a second run, which must append nothing. Needs the oracle built. Run from the
repository root: `PYTHONPATH=.:tests .venv/bin/python tests/oracle/salvage_check.py`.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.oracle.check import OUT, geometry_of, judge


def main() -> int:
    from test_replicas_diff import B_TAIL, _append, _copy, _cut
    from test_replicas_salvage import CUT_AT, MESSAGES

    from mqtool.rebuild import rebuild
    from store.storedir import Store

    OUT.mkdir(parents=True, exist_ok=True)
    failed = 0
    with tempfile.TemporaryDirectory(prefix="mqtool-salvage-") as tmp:
        old, new = _copy(Path(tmp), "old-master"), _copy(Path(tmp), "new-master")
        _cut(new, MESSAGES[CUT_AT]["physicalOffset"])
        with Store.open(new) as st:
            rebuild(st, "all", execute=True, note=lambda _m: None)
        _append(new, B_TAIL)
        for run in ("first", "second"):
            out = subprocess.run(
                [sys.executable, "-m", "mqtool.cli", "replicas", "salvage", "--from", str(old), "--into",
                 str(new), "--execute", "-f", "json"],
                capture_output=True, text=True, check=True,
            )  # fmt: skip
            doc = json.loads(out.stdout)
            copied = sum(1 for m in doc["messages"] if m["written"])
            ok, problems, got = judge(new, geometry_of("store-a"), f"salvage-{run}")
            if run == "second" and copied:
                ok, problems = False, [*problems, f"the second run appended {copied} message(s)"]
            failed += not ok
            print(
                f"salvage {run}: appended {copied}, counts {doc['counts']}: "
                + ("clean" if ok else "NOT CLEAN: " + "; ".join(problems))
            )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
