"""Named damages of copies of tests/data/store-compaction, each judged by the real 5.3.3 classes
(`run.sh compaction-read`): whether the store loads and which compaction queues its CompactionStore serves.

Writes tests/data/store-compaction/damaged.json (tests/test_compaction_store.py and test_compaction_verify.py
assert mqtool's start-up reading of each damage against it). `appended-by-mqtool` is not a damage but the
proof that a record mqtool appends to a compaction topic is never served: the real broker's start leaves it
in the ConsumeQueue only. Run from the repository root: `PYTHONPATH=. .venv/bin/python
tests/oracle/compaction_damaged.py` (needs the oracle built).
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


def _append_with_mqtool(root: Path) -> None:
    """mqtool's own write path (appender + dispatch), past the layout refusal every write command makes:
    what a `delay replay` or `txn commit` targeting a compaction topic would leave."""
    from store.appender import CommitLogAppender, NewMessage

    with CommitLogAppender(root) as app:
        app.append(NewMessage(topic="CompactTopicA", queue_id=0, body=b"appended by mqtool",
                              properties={"KEYS": "user-9", "UNIQ_KEY": "AB" * 16}))  # fmt: skip


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
    "appended-by-mqtool": (
        "a record appended to CompactTopicA/0 and dispatched by mqtool",
        _append_with_mqtool,
    ),
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
            queues = result.get("compactionQueues") or {}
            out[name] = {
                "damage": what,
                "loaded": result["loaded"],
                "served": sorted(queues),
                "minMax": {k: [v["minOffset"], v["maxOffset"]] for k, v in queues.items()},
                "consumeQueueMax": {k: v["consumeQueueMaxOffset"] for k, v in queues.items()},
            }
            print(name, out[name]["loaded"], out[name]["served"], file=sys.stderr)
    (FIXTURE / "damaged.json").write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
