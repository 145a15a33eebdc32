"""Named damages of copies of tests/data/store-compaction, each judged by the real 5.3.3 classes
(`run.sh compaction-read`): whether the store loads and which compaction queues its CompactionStore serves.

Writes tests/data/store-compaction/damaged.json (tests/test_compaction.py asserts mqtool's start-up
reading of each damage against it). Run: `python tests/oracle/compaction_damaged.py` (needs the oracle built).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIXTURE = HERE.parent / "data" / "store-compaction"
LOG = "compaction/compactionLog"
CQ = "compaction/compactionCq"


def _remove(rel: str):
    return lambda root: os.remove(root / rel)


def _copy_as(rel: str, new: str):
    return lambda root: shutil.copyfile(root / rel, root / new)


def _mkdir(rel: str):
    return lambda root: (root / rel).mkdir()


def _rmtree(rel: str):
    return lambda root: shutil.rmtree(root / rel)


def _truncate(rel: str, size: int):
    return lambda root: os.truncate(root / rel, size)


DAMAGES = {
    "cq-file-missing": (
        "a CQ file removed (its log file stays)",
        _remove(f"{CQ}/CompactTopicB/0/00000000000000006624"),
    ),
    "log-file-missing": (
        "a log file removed (its CQ file stays)",
        _remove(f"{LOG}/CompactTopicA/1/00000000000000000000"),
    ),
    "delete-leftover": (
        "a `.delete` copy of a log file left beside it (a crash inside replaceFiles)",
        _copy_as(
            f"{LOG}/CompactTopicA/1/00000000000000006624",
            f"{LOG}/CompactTopicA/1/00000000000000006624.delete",
        ),
    ),
    "compacting-dir": (
        "an empty `compacting/` directory in a log directory",
        _mkdir(f"{LOG}/CompactTopicA/0/compacting"),
    ),
    "cq-dir-missing": ("a topic's compactionCq directory removed", _rmtree(f"{CQ}/CompactTopicB")),
    "log-file-short": (
        "a log file cut to 1000 bytes",
        _truncate(f"{LOG}/CompactTopicA/0/00000000000000009936", 1000),
    ),
}


def main() -> int:
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, (what, damage) in DAMAGES.items():
            root = Path(tmp) / name
            shutil.copytree(FIXTURE, root)
            damage(root)
            run = subprocess.run(
                [str(HERE / "run.sh"), "compaction-read", str(root)], capture_output=True, text=True
            )
            result = json.loads(run.stdout)
            out[name] = {
                "damage": what,
                "loaded": result["loaded"],
                "served": sorted(result.get("compactionQueues") or {}),
                "minMax": {
                    k: [v["minOffset"], v["maxOffset"]]
                    for k, v in (result.get("compactionQueues") or {}).items()
                },
            }
            print(name, out[name]["loaded"], out[name]["served"], file=sys.stderr)
    (FIXTURE / "damaged.json").write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
