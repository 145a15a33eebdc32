"""Record what the broker's real retention deletes: tests/data/retention/expect.json.

Each case copies a golden store (store-a for 5.3.3, store-49a for 4.9.8), gives its commitlog files the
ages it names (os.utime, hours before now), and runs the oracle's `clean` command (tests/oracle/harness/
oracle/Clean.java: the real CleanCommitLogService, CorrectLogicOffsetService and CleanConsumeQueueService
of a loaded DefaultMessageStore, configured by the case's broker.conf settings) on it. Disk-ratio settings
are chosen around the partition's real usage at recording time (`below` / `above` it), since the real code
reads the disk; the oracle's output records the usage it saw, and tests/test_retention.py replays every
case with that usage, the recorded file times and "now".

Run: PYTHONPATH=. .venv/bin/python tests/oracle/retention_cases.py (both oracles built).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from store.clean.disk import disk_usage  # noqa: E402

OUT = ROOT / "tests" / "data" / "retention" / "expect.json"


def cases(used_percent: int) -> list[dict]:
    """(name, store, version, ages in hours, settings, rounds); `below` is under the disk's usage."""
    below = used_percent - 3  # a ratio the usage exceeds
    forcibly = str(max(30, below))  # the getter clamps the forced-clean ratio to 0.30 at least
    five = [
        ("time-up-expired", [80, 79, 1], {"deleteWhen": "NOW"}, 1),
        ("not-time", [80, 79, 1], {"deleteWhen": "OTHER"}, 1),
        ("first-not-expired-stops", [10, 100, 1], {"deleteWhen": "NOW"}, 1),
        ("first-only", [80, 10, 1], {"deleteWhen": "NOW"}, 1),
        ("space-reclaims-expired-only", [80, 10, 1],
         {"deleteWhen": "OTHER", "diskMaxUsedSpaceRatio": str(below)}, 1),
        ("forced-clean", [10, 10, 1], {"deleteWhen": "OTHER", "diskSpaceCleanForciblyRatio": forcibly}, 1),
        ("forced-clean-disabled", [10, 10, 1],
         {"deleteWhen": "OTHER", "diskSpaceCleanForciblyRatio": forcibly,
          "cleanFileForciblyEnable": "false"}, 1),
        *([("warning-level", [10, 10, 1],
            {"deleteWhen": "OTHER", "diskSpaceWarningLevelRatio": str(below)}, 1)]
          if below >= 35 else []),  # the getter clamps the warning ratio to 0.35 at least
        ("batch-max-one", [80, 79, 1], {"deleteWhen": "NOW", "deleteFileBatchMax": "1"}, 3),
        ("deleteWhen-unparsable", [80, 79, 1], {"deleteWhen": "4am", "diskMaxUsedSpaceRatio": str(below)}, 1),
        ("reserved-zero", [1, 1, 0], {"deleteWhen": "NOW", "fileReservedTime": "0"}, 1),
        ("forcibly-system-property", [10, 10, 1],
         {"deleteWhen": "OTHER", "diskMaxUsedSpaceRatio": "95",
          "rocketmq.broker.diskSpaceCleanForciblyRatio": "0.3"}, 1),
        ("reserved-not-an-int", [60, 60, 1], {"deleteWhen": "NOW", "fileReservedTime": "48h"}, 1),
    ]  # fmt: skip
    four = [
        ("time-up-expired", [80, 79, 1], {"deleteWhen": "NOW"}, 1),
        ("not-time", [80, 79, 1], {"deleteWhen": "OTHER"}, 1),
        ("space-reclaims-expired-only", [80, 10, 1],
         {"deleteWhen": "OTHER", "diskMaxUsedSpaceRatio": str(below)}, 1),
        ("forcibly-property-but-max-ratio-95", [10, 10, 1],
         {"deleteWhen": "OTHER", "diskMaxUsedSpaceRatio": "95",
          "rocketmq.broker.diskSpaceCleanForciblyRatio": "0.3"}, 1),
        ("forcibly-property-at-delete-hour", [10, 10, 1],
         {"deleteWhen": "NOW", "diskMaxUsedSpaceRatio": "95",
          "rocketmq.broker.diskSpaceCleanForciblyRatio": "0.3"}, 1),
        ("batch-max-is-not-a-49-setting", [80, 79, 1], {"deleteWhen": "NOW", "deleteFileBatchMax": "1"}, 1),
    ]  # fmt: skip
    out = [
        dict(name=n, store="store-a", version="5.3.3", ages=a, settings=s, rounds=r) for n, a, s, r in five
    ]
    out += [
        dict(name=n, store="store-49a", version="4.9.8", ages=a, settings=s, rounds=r) for n, a, s, r in four
    ]
    return out


def run_case(case: dict, work: Path) -> dict:
    copy = work / case["name"]
    shutil.copytree(ROOT / "tests" / "data" / case["store"], copy)
    now = time.time()
    for name, age in zip(sorted(os.listdir(copy / "commitlog")), case["ages"], strict=True):
        stamp = now - age * 3600
        os.utime(copy / "commitlog" / name, (stamp, stamp))
    args = [f"{k}={v}" for k, v in case["settings"].items()] + [f"rounds={case['rounds']}"]
    env = dict(os.environ, ORACLE_VERSION=case["version"])
    done = subprocess.run(
        [str(ROOT / "tests" / "oracle" / "run.sh"), "clean", str(copy), *args],
        capture_output=True, text=True, env=env, check=True,
    )  # fmt: skip
    shutil.rmtree(copy)
    result = json.loads(done.stdout)
    result.pop("store")
    return {**case, "oracle": result}


def main() -> None:
    used = disk_usage(tempfile.gettempdir())
    percent = math.floor(used.ratio * 100)
    if percent < 34:
        sys.exit(f"the disk is {percent}% used: the forced-clean cases need a usage above 33% (clamp 0.30)")
    work = Path(tempfile.mkdtemp(prefix="mqtool-retention-"))
    try:
        recorded = [run_case(c, work) for c in cases(percent)]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"cases": recorded}, indent=1) + "\n", encoding="utf-8")
    print(f"{len(recorded)} cases -> {OUT}")


if __name__ == "__main__":
    main()
