"""Record the files the real managers write for the topic and group edits of tests/config_edit_cases.py:
tests/data/config-edits/expect.json.

Each case's ops become the requests mqadmin would send (`oracle_op`) and run through the oracle's
`config-edit` command: the real TopicConfigManager / SubscriptionGroupManager / ConsumerOffsetManager of
5.3.3 (store-a, store-pop, store-batchcq) or 4.9.8 (store-49a) load a copy of the store's config/ and make
the edits as AdminBrokerProcessor does; the persisted topics.json, subscriptionGroup.json and
consumerOffset.json are kept.

Run: PYTHONPATH=. .venv/bin/python tests/oracle/config_edit_cases.py (both oracles built; with
MQTOOL_ORACLE_CACHE for a private build).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from config_edit_cases import CASES, oracle_op  # noqa: E402

OUT = ROOT / "tests" / "data" / "config-edits" / "expect.json"
VERSIONS = {"store-a": "5.3.3", "store-pop": "5.3.3", "store-batchcq": "5.3.3", "store-49a": "4.9.8"}


def main() -> None:
    recorded: dict[str, dict] = {}
    for version in ("5.3.3", "4.9.8"):
        spec = []
        for case in CASES:
            if VERSIONS[case.store] != version:
                continue
            store = ROOT / "tests" / "data" / case.store
            entry = {"name": case.name, "store": str(store), "ops": [oracle_op(store, op) for op in case.ops]}
            if version == "5.3.3":  # the store's broker ran the timer wheel if it has the timer's topic
                entry["timerWheelEnable"] = (
                    "rmq_sys_wheel_timer" in (store / "config" / "topics.json").read_text()
                )
            spec.append(entry)
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(spec, f)
        try:
            env = {**os.environ, "ORACLE_VERSION": version}
            done = subprocess.run(
                [str(ROOT / "tests" / "oracle" / "run.sh"), "config-edit", f.name],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
        finally:
            os.unlink(f.name)
        for name, files in json.loads(done.stdout).items():
            case = next(c for c in CASES if c.name == name)
            recorded[name] = {"store": case.store, "rocketmq": version, "files": files}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"cases": recorded}, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {OUT}: {len(recorded)} cases")


if __name__ == "__main__":
    main()
