"""Judge `mqtool tiered rebuild-metadata` with the real 5.3.3 plugin: tests/data/store-tiered/rebuilt.json.

Each case copies tests/data/store-tiered, damages config/tieredStoreMetadata.json as the case says, runs
`mqtool tiered rebuild-metadata --execute` on the copy (except the control cases), then the oracle's
`tiered-load` (tests/oracle/harness/oracle/TieredLoad.java: the real TieredMessageStore loads the copy and
reports per queue ranges, getMessage at every offset, every tiered unit, getOffsetInQueueByTime, queryMessage
for every key, and the metadata it persisted at shutdown). What it served is compared with what it serves
from the untouched fixture (case `original`), section by section.

Cases: `original` (control: the fixture as written); `deleted` (the file removed, its .bak kept: the broker
would load the .bak); `corrupt-no-bak` (garbage JSON, .bak removed: the broker would start with empty
tables); `started-without-metadata` (file and .bak removed, the broker started and stopped once - it
persists a file of its own, with one bogus INDEX entry - then the rebuild); `deleted-no-rebuild`
(control: file and .bak removed, no rebuild: what the broker sees after the
incident).

Run: PYTHONPATH=. .venv/bin/python tests/oracle/tiered_rebuild_cases.py (5.3.3 oracle built; honours
MQTOOL_ORACLE_CACHE).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "data" / "store-tiered"
OUT = FIXTURE / "rebuilt.json"
META = Path("store") / "config" / "tieredStoreMetadata.json"
CASES = ("original", "deleted", "corrupt-no-bak", "started-without-metadata", "deleted-no-rebuild")
SERVED = ("queues", "reads", "tieredUnits", "offsetsByTime", "keyQueries")


def damage(case: str, work: Path) -> None:
    meta, bak = work / META, work / (str(META) + ".bak")
    if case == "deleted":
        meta.unlink()
    elif case == "corrupt-no-bak":
        meta.write_text('{"topicMetadataTable":{"TieredTopicA":{"topicId":1,garbage')
        bak.unlink()
    elif case in ("deleted-no-rebuild", "started-without-metadata"):
        meta.unlink()
        bak.unlink()
    if case == "started-without-metadata":
        # the broker started once without its metadata (it sees no tiered queue) and persisted at shutdown
        oracle = [
            str(ROOT / "tests" / "oracle" / "run.sh"),
            "tiered-load",
            str(work),
            str(work.parent / "first.json"),
        ]
        subprocess.run(oracle, check=True, capture_output=True)


def digest(value: object) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:16]


def canonical(served: dict) -> dict:
    out = dict(served)
    out["reads"] = sorted(served["reads"], key=lambda r: (r["topic"], r["queueId"], r["offset"]))
    out["offsetsByTime"] = sorted(
        served["offsetsByTime"], key=lambda r: (r["topic"], r["queueId"], r["timestamp"])
    )
    # the local and the tiered answers are joined as their futures complete: the order within one answer
    # varies from run to run, its content does not
    queries = [dict(q, messages=sorted(q["messages"], key=lambda m: json.dumps(m, sort_keys=True)))
               for q in served["keyQueries"]]  # fmt: skip
    out["keyQueries"] = sorted(queries, key=lambda r: (r["topic"], r["key"], json.dumps(r, sort_keys=True)))
    return out


def run_case(case: str, tmp: Path) -> dict:
    work = tmp / case
    shutil.copytree(FIXTURE, work, ignore=shutil.ignore_patterns("rebuilt.json"))
    damage(case, work)
    result: dict = {"case": case}
    if case in ("deleted", "corrupt-no-bak", "started-without-metadata"):
        cmd = [sys.executable, "-m", "mqtool.cli", "--store", str(work / "store"), "-f", "json",
               "tiered", "rebuild-metadata", "--tiered", str(work / "tiered"), "--execute"]  # fmt: skip
        plan = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
        result["rebuild"] = {"loadedFrom": plan["current"]["loadedFrom"], "changes": len(plan["changes"]),
                             "executed": plan["executed"]}  # fmt: skip
    started = int(time.time() * 1000)
    out = tmp / f"{case}.json"
    oracle = [str(ROOT / "tests" / "oracle" / "run.sh"), "tiered-load", str(work), str(out)]
    subprocess.run(oracle, check=True, capture_output=True)
    loaded = json.loads(out.read_text())
    result["loaded"] = loaded["loaded"]
    result["flatFiles"] = loaded["flatFiles"]
    served = canonical({k: loaded[k] for k in SERVED})
    result["served"] = {k: digest(served[k]) for k in SERVED}
    result["readStatuses"] = {}
    for r in served["reads"]:
        result["readStatuses"][r["status"]] = result["readStatuses"].get(r["status"], 0) + 1
    meta = loaded["metadata"]
    # a segment the run itself added (the index service's shutdown uploads a new INDEX segment, begun now)
    # is the plugin's doing on every copy, not the metadata's: named, left out of the comparison
    added = [s for s in meta["fileSegments"] if s["beginTimestamp"] >= started]
    result["segmentsAddedByTheRun"] = [f"{s['type']} {s['baseOffset']} ({s['fileName']})" for s in added]
    meta["fileSegments"] = [s for s in meta["fileSegments"] if s not in added]
    for s in meta["fileSegments"]:
        s.pop("createTimestamp")  # the time the entry was made: now, for an entry the rebuild creates
    result["metadata"] = meta
    result["_served"] = served
    return result


def run_all() -> list[dict]:
    with tempfile.TemporaryDirectory(prefix="tiered-rebuild-") as tmp:
        results = [run_case(c, Path(tmp)) for c in CASES]
    original = results[0]
    expect = json.loads((FIXTURE / "expect.json").read_text())
    live = canonical({k: expect[k] for k in SERVED})
    for r in results:
        served = r.pop("_served")
        r["sameAsOriginal"] = {k: r["served"][k] == original["served"][k] for k in SERVED}
        r["metadataSameAsOriginal"] = r["metadata"] == original["metadata"]
        if r is original:
            # what the live store served (expect.json) against a fresh load of the same files
            r["differencesFromLiveStore"] = [
                {
                    "topic": a["topic"],
                    "queueId": a["queueId"],
                    "offset": a["offset"],
                    "live": b["status"],
                    "afterLoad": a["status"],
                }  # fmt: skip
                for a, b in zip(served["reads"], live["reads"], strict=True)
                if a != b
            ]
            # keyQueries: the fixture asked a sample of keys, tiered-load asks every key; not comparable
            r["sameAsLiveStore"] = {k: served[k] == live[k] for k in SERVED if k != "keyQueries"}
    return results


def judge() -> int:
    """`make oracle-check`'s part: the rebuilt cases must serve as the original does (nothing recorded);
    returns the number of cases that do not."""
    failed = 0
    for r in run_all():
        if r["case"] in ("original", "deleted-no-rebuild"):
            continue
        ok = all(r["sameAsOriginal"].values()) and r["metadataSameAsOriginal"]
        failed += not ok
        print(
            f"tiered rebuild-metadata {r['case']:26} {'serves as the original' if ok else 'FAILED'}",
            flush=True,
        )
    return failed


def main() -> None:
    results = run_all()
    doc = {
        "generatedBy": "tests/oracle/tiered_rebuild_cases.py (oracle tiered-load, rocketmq-all-5.3.3)",
        "cases": results,
    }
    OUT.write_text(json.dumps(doc, indent=1) + "\n")
    for r in results:
        print(r["case"], r["flatFiles"], r["readStatuses"], r["sameAsOriginal"], r["metadataSameAsOriginal"])


if __name__ == "__main__":
    main()
