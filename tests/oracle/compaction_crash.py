"""A broker killed mid-compaction, and what the real 5.3.3 classes make of it afterwards.

1. A copy of tests/data/store-compaction, `run.sh compaction-crash`: every due compaction runs up to
   `replaceFiles` (the kept records written into compacting/) and the process halts. What that added to the
   store (`abort` and the compacting/ directories) is tests/data/store-compaction-crash/overlay/; a restart
   (`compaction-read`) serves exactly what the undamaged fixture serves (`restartServesAsBefore`).
2. `compaction-run CRASHED 60 4`: after the restart, 60 more puts (seed 4) and the next compaction of every
   log. That compaction opens the leftover compacting/ files and writes from their start (CompactionLog.java:
   681-705, the TopicPartitionLog's MappedFileQueue is not loaded, `roll` maps the existing file): its
   result is shorter than the leftover, so old bytes stay after its records in the log file and old units
   after its units in the CQ file. The store as it left it is tests/data/store-compaction-stale/; what the
   compaction served before any restart is `servedAfterCompaction`.
3. `compaction-read` of it (a restart): the CQ recovery takes the old units as valid and a consumer is served
   bytes no client decodes, after the queue's later offsets (`servedAfterRestart`).
4. `mqtool rebuild compaction-cq --execute` on a copy, then `compaction-read`: served as right after the
   compaction (`servedAfterRebuild`), and `rebuiltCqDigest` names the bytes judged.

Writes the two fixture directories and tests/data/store-compaction-stale/expect.json. Run from the
repository root: `PYTHONPATH=. .venv/bin/python tests/oracle/compaction_crash.py` (needs the oracle built).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.oracle.compaction_rebuild import cq_digest

HERE = Path(__file__).resolve().parent
DATA = HERE.parent / "data"
FIXTURE = DATA / "store-compaction"
CRASH = DATA / "store-compaction-crash"
STALE = DATA / "store-compaction-stale"
PUTS, SEED = 60, 4
FIXTURE_FILES = ("expect.json", "damaged.json", "rebuilt.json", "next-compaction.json", "README.md")


def _run(*args: str, keep: Path | None = None) -> dict:
    env = dict(os.environ)
    if keep is not None:
        env["MQTOOL_ORACLE_KEEP"] = str(keep)
    out = subprocess.run(
        [str(HERE / "run.sh"), *args], capture_output=True, text=True, check=True, env=env, timeout=300
    )
    return json.loads(out.stdout)


def _served(read: dict) -> dict[str, list]:
    """Per queue, what a consumer pulling from 0 got: [queue offset, the record's queue offset or None when
    the bytes do not decode]."""
    return {
        name: [[m["queueOffset"], m.get("recordQueueOffset")] for m in q["consumed"]]
        for name, q in sorted(read["compactionQueues"].items())
    }


def _copy_store(src: Path, dest: Path) -> None:
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns(*FIXTURE_FILES))


def main() -> int:
    expect = json.loads((FIXTURE / "expect.json").read_text())
    with tempfile.TemporaryDirectory(prefix="mqtool-compaction-crash-") as tmp:
        crashed = Path(tmp) / "crashed"
        _copy_store(FIXTURE, crashed)
        crash = _run("compaction-crash", str(crashed))
        shutil.rmtree(CRASH / "overlay", ignore_errors=True)
        for path in sorted(crashed.rglob("*")):
            rel = path.relative_to(crashed)
            if path.is_file() and (rel.name == "abort" or "compacting" in rel.parts):
                (CRASH / "overlay" / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, CRASH / "overlay" / rel)
        restart = _run("compaction-read", str(crashed))

        shutil.rmtree(STALE, ignore_errors=True)
        after = _run("compaction-run", str(crashed), str(PUTS), str(SEED), keep=STALE)
        stale_restart = _run("compaction-read", str(STALE))

        rebuilt = Path(tmp) / "rebuilt"
        shutil.copytree(STALE, rebuilt)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "mqtool.cli",
                "rebuild",
                "compaction-cq",
                "--store",
                str(rebuilt),
                "--execute",
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        after_rebuild = _run("compaction-read", str(rebuilt))
        rebuilt_digest = cq_digest(rebuilt)

    (CRASH / "expect.json").write_text(
        json.dumps(
            {
                "compactedUntilReplace": crash["compactedUntilReplace"],
                "restartLoaded": restart["loaded"],
                "restartServesAsBefore": restart["compactionQueues"] == expect["compactionQueues"],
            },
            indent=1,
            sort_keys=True,
        )
        + "\n"
    )
    (STALE / "expect.json").write_text(
        json.dumps(
            {
                "puts": PUTS,
                "seed": SEED,
                "compactions": after["compactions"],
                "servedAfterCompaction": _served(after),
                "restartLoaded": stale_restart["loaded"],
                "servedAfterRestart": _served(stale_restart),
                "cqUnitsAfterRestart": {
                    name: q[
                        "cqUnitsOnDisk[file,pos,phyOffset,size,tagsCode,storeTime,msgBaseOffset,batchSize,"
                        "compactedOffset,reserved]"
                    ]
                    for name, q in sorted(stale_restart["compactionQueues"].items())
                },
                "minMaxAfterRestart": {
                    name: [q["minOffset"], q["maxOffset"]]
                    for name, q in sorted(stale_restart["compactionQueues"].items())
                },
                "servedAfterRebuild": _served(after_rebuild),
                "rebuiltCqDigest": rebuilt_digest,
            },
            indent=1,
            sort_keys=True,
        )
        + "\n"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
