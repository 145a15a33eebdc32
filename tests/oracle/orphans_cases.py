"""Record what the real broker's cleanUnusedTopic leaves on stores with orphan queues:
tests/data/orphans/expect.json.

Each case copies a golden store, applies one mutation of tests/orphan_mutations.py (a topic deleted from the
topic config, a topic shrunk), and runs the oracle's `clean-unused-topic` command (the real
TopicConfigManager loads the topic config, the real DefaultMessageStore loads the store, and
cleanUnusedTopic(the topic table's keys) runs, as `mqadmin cleanUnusedTopic` makes a broker do).
tests/test_orphans.py checks what `mqtool rebuild cq --prune-orphans --execute` leaves against it.

Run: PYTHONPATH=. .venv/bin/python tests/oracle/orphans_cases.py (the 5.3.3 oracle built).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from orphan_mutations import MUTATIONS  # noqa: E402

OUT = ROOT / "tests" / "data" / "orphans" / "expect.json"
CASES = [
    ("store-a", "clean"),
    ("store-a", "topic-deleted"),
    ("store-a", "retry-topic-deleted"),
    ("store-a", "topic-shrunk"),
    ("store-49a", "clean"),  # its topics.json lacks the transaction topics: system topics, kept
]


def run_case(store: str, mutation: str, scratch: Path) -> dict:
    root = scratch / f"{store}-{mutation}"
    shutil.copytree(ROOT / "tests" / "data" / store, root)
    if mutation != "clean":
        MUTATIONS[mutation](root)
    proc = subprocess.run(
        [str(ROOT / "tests" / "oracle" / "run.sh"), "clean-unused-topic", str(root)],
        capture_output=True,
        text=True,
        env=os.environ,
    )
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{store} {mutation}: the oracle failed:\n{proc.stderr[-3000:]}")
    got = json.loads(proc.stdout)
    return {
        "version": "5.3.3",
        "store": store,
        "mutation": mutation,
        "topicsLoaded": got["topicsLoaded"],
        "loaded": got["loaded"],
        "deleted": got["deleted"],
        "consumeQueues": got["consumeQueues"],
    }


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="mqtool-orphans-") as tmp:
        cases = [run_case(store, mutation, Path(tmp)) for store, mutation in CASES]
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"cases": cases}, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT}: {len(cases)} cases")


if __name__ == "__main__":
    main()
