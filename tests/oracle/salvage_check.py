"""`mqtool replicas salvage --execute` judged by the real 5.3.3 store code: a failover pair built from copies
of tests/data/store-a as tests/test_replicas_salvage.py builds it (the dead master keeps the whole log; the
slave that took over had received the bytes before a record boundary, its queues and index as its own
dispatch built them, and wrote messages of its own), the dead master's tail salvaged into the new master,
then `run.sh load` of the result (`check.judge`: it loads, recovers without truncating, walks without CRC
errors, holds ConsumeQueue units equal to the dispatcher's and finds every index key) - once after the
first run and once after a second run, which must append nothing. Then the real classic HA runs the
salvaged master with two slaves (`run.sh ha-sync`): a copy of the new master from before the salvage (a slave
that was in sync with it) and an empty store (a new replica). Each must reach the master's end with the
master's bytes (compared here) and load clean. Needs the oracle built. Run from the repository root:
`PYTHONPATH=.:tests .venv/bin/python tests/oracle/salvage_check.py`.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.oracle.check import LOAD, OUT, geometry_of, judge


def log_bytes(root: Path, lo: int, hi: int) -> bytes:
    """The commitlog's bytes [lo, hi) of the store at `root`, from its files by name."""
    out = bytearray()
    for f in sorted((root / "commitlog").iterdir()):
        base, size = int(f.name), f.stat().st_size
        if base + size <= lo or base >= hi:
            continue
        with f.open("rb") as fh:
            fh.seek(max(lo, base) - base)
            out += fh.read(min(hi, base + size) - max(lo, base))
    return bytes(out)


def ha_sync(master: Path, slave: Path, tmp: Path, label: str) -> bool:
    """The real HA syncs `slave` from a copy of `master`; True when it reached the end with the master's
    bytes and loads clean."""
    work = tmp / f"ha-{label}"
    shutil.copytree(master, work / "master")
    if slave.exists():
        shutil.copytree(slave, work / "slave")
    geometry = geometry_of("store-a")
    run = subprocess.run(
        [str(LOAD), "ha-sync", str(work / "master"), str(work / "slave"), *map(str, geometry)],
        capture_output=True, text=True,
    )  # fmt: skip
    doc = json.loads(run.stdout)
    lo, hi = doc["slave"]["minPhyOffset"], doc["master"]["maxPhyOffset"]
    same = log_bytes(work / "slave", lo, hi) == log_bytes(work / "master", lo, hi)
    ok, problems, _ = judge(work / "slave", geometry, f"ha-sync-{label}")
    print(
        f"ha-sync {label}: slave {doc['slave']['maxPhyOffsetBefore']} -> {doc['slave']['maxPhyOffset']} "
        f"(master {hi}), bytes [{lo}, {hi}) "
        + ("equal" if same else "DIFFER")
        + ", load "
        + ("clean" if ok else "NOT CLEAN: " + "; ".join(problems))
    )
    return bool(doc["reachedMasterEnd"]) and same and ok


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
        in_sync = Path(tmp) / "slave-in-sync"
        shutil.copytree(new, in_sync)
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
        for label, slave in (("in-sync-slave", in_sync), ("new-replica", Path(tmp) / "empty")):
            failed += not ha_sync(new, slave, Path(tmp), label)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
