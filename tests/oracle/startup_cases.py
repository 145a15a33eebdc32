"""Record what the real broker's load does on mutated stores: tests/data/startup/expect.json.

Each case copies a golden store (store-a for 5.3.3, store-49a for 4.9.8, store-c for an `abort` crash),
applies one mutation, and runs the oracle's `load` command (the real `DefaultMessageStore.load()` with its
recovery, and the real `ConsumerOffsetManager.load()`, on a copy). What a broker started on the store would
do follows from that: `BrokerController.initialize()` returns false when a manager's or the store's load
does (BrokerStartup then exits with -3: "refuse"). tests/test_startup.py checks mqtool's verdict on the same
mutations against the recorded outcome.

Run: PYTHONPATH=. .venv/bin/python tests/oracle/startup_cases.py (both oracles built).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from golden import unpack_store  # noqa: E402
from startup_mutations import MUTATIONS  # noqa: E402

OUT = ROOT / "tests" / "data" / "startup" / "expect.json"
DLEDGER_KEYS = ("ledgerBeginIndex", "ledgerEndIndex", "committedIndex", "committedPos", "currTerm")
CASES = [
    ("5.3.3", "store-a", "clean"),
    ("5.3.3", "store-a", "commitlog-file-short"),
    ("5.3.3", "store-a", "commitlog-middle-missing"),
    ("5.3.3", "store-a", "cq-file-short"),
    ("5.3.3", "store-a", "cq-last-file-zero-length"),
    ("5.3.3", "store-a", "offsets-and-bak-corrupt"),
    ("5.3.3", "store-a", "offsets-corrupt-bak-good"),
    ("5.3.3", "store-c", "clean"),
    ("5.3.3", "store-a", "controller-files"),
    ("5.3.3", "store-pop", "clean"),
    ("5.3.3", "store-pop", "request-mode-corrupt"),
    ("5.3.3", "store-pop", "request-mode-and-bak-corrupt"),
    ("5.3.3", "store-pop", "order-info-and-bak-corrupt"),
    ("5.3.3", "store-a", "offsets-corrupt-no-bak"),
    ("5.3.3", "store-timer5", "clean"),
    ("5.3.3", "store-timer5", "timer-wheel-short"),
    ("5.3.3", "store-timer5", "timerlog-second-file-short"),
    ("5.3.3", "store-timer5", "timerlog-empty-last-file"),
    ("5.3.3", "store-timer5", "timermetrics-and-bak-corrupt"),
    ("5.3.3", "store-timer5", "timermetrics-corrupt-bak-good"),
    ("5.3.3", "store-timer-crash", "clean"),
    ("5.3.3", "store-timer-crash", "timerlog-unit-bad-magic"),
    ("5.3.3", "store-timer-crash", "timerlog-split-bad-early-unit"),
    ("5.3.3", "store-timer-crash", "timerlog-split-bad-late-unit"),
    ("5.3.3", "store-dledger", "clean"),
    ("5.3.3", "store-dledger", "dledger-data-file-short"),
    ("5.3.3", "store-dledger", "dledger-data-middle-missing"),
    ("5.3.3", "store-dledger", "dledger-entries-zeroed"),
    ("5.3.3", "store-dledger", "dledger-entry-bad-magic"),
    ("5.3.3", "store-dledger", "dledger-third-last-file-bad"),
    ("5.3.3", "store-dledger", "dledger-checkpoint-not-a-number"),
    ("5.3.3", "store-dledger", "dledger-currterm-not-a-number"),
    ("5.3.3", "store-dledger-crash", "clean"),
    ("5.3.3", "store-dledger-mixed", "clean"),
    ("5.3.3", "store-dledger-mixed", "crash-abort"),
    ("5.3.3", "store-dledger-multipath", "clean"),  # its broker.conf names the two data directories
    ("4.9.8", "store-49a", "clean"),
    ("4.9.8", "store-49a", "commitlog-file-short"),
    ("4.9.8", "store-49a", "commitlog-middle-missing"),
    ("4.9.8", "store-49a", "cq-last-file-zero-length"),
    ("4.9.8", "store-49a", "offsets-and-bak-corrupt"),
    ("4.9.8", "store-49a", "controller-files"),
    ("4.9.8", "store-timer5", "timer-wheel-short"),
    ("4.9.8", "store-compaction", "compaction-delete-leftover"),  # 5.3.3: store-compaction/damaged.json
    ("4.9.8", "store-dledger-49", "clean"),
    ("4.9.8", "store-dledger-49", "crash-abort"),
    ("4.9.8", "store-dledger-49", "dledger-data-file-short"),
    ("4.9.8", "store-dledger-49", "dledger-data-middle-missing"),
]


def _no_paths(message: str) -> str:
    """A log line without the oracle's temporary copy's paths (they differ on every run)."""
    return re.sub(r"/\S*/store/", "<store>/", message)


def last_json(text: str) -> dict:
    """The JSON object the oracle prints (4.9.8's logging may print lines before it)."""
    return json.loads(text[text.index("{\n") :])


def run_case(version: str, store: str, mutation: str, work: Path) -> dict:
    copy = work / f"{version}-{store}-{mutation}"
    if (ROOT / "tests" / "data" / store / "store.tar.gz").exists():
        copy = unpack_store(store, copy)
    else:
        shutil.copytree(ROOT / "tests" / "data" / store, copy)
    MUTATIONS[mutation](copy)
    env = dict(os.environ, ORACLE_VERSION=version)
    done = subprocess.run(
        [str(ROOT / "tests" / "oracle" / "run.sh"), "load", str(copy)],
        capture_output=True,
        text=True,
        env=env,
    )
    shutil.rmtree(copy)
    if "{\n" not in done.stdout:
        # the JVM ended inside the load (DLedger's System.exit(-1)): no JSON, only the exit status
        return {"version": version, "store": store, "mutation": mutation, "loaded": None,
                "exitStatus": done.returncode}  # fmt: skip
    out = last_json(done.stdout)
    cl = out.get("commitlog") or {}
    offsets = (out.get("config") or {}).get("consumerOffset") or {}
    modes = (out.get("config") or {}).get("messageRequestMode") or {}
    timer = out.get("timer")
    dledger = out.get("dledger")
    return {
        "version": version,
        "store": store,
        "mutation": mutation,
        "loaded": out["loaded"],
        # a store part's constructor threw (BrokerController.initializeMessageStore returns false)
        "initError": out.get("initError"),
        "recovery": out["recovery"],
        "consumerOffsetLoaded": offsets.get("loaded"),
        "consumerOffsetSource": offsets.get("source"),
        # 5.x: ConsumerOrderInfoManager.load (initializeMetadata: false refuses), MessageRequestModeManager's
        "consumerOrderInfoLoaded": ((out.get("config") or {}).get("consumerOrderInfo") or {}).get("loaded"),
        "messageRequestModeLoaded": ((out.get("config") or {}).get("messageRequestMode") or {}).get("loaded"),
        # the tables the managers hold after their load (empty: the broker starts with none)
        "consumerOffsetTableSize": len(offsets["offsetTable"]) if "offsetTable" in offsets else None,
        "messageRequestModeTableSize": len(modes["table"]) if "table" in modes else None,
        "minPhyOffsetAfter": cl.get("minPhyOffsetAfter"),
        "maxPhyOffsetAfter": cl.get("maxPhyOffsetAfter"),
        "truncated": cl.get("truncated"),
        "truncatedAt": cl.get("truncatedAt"),
        # the timer store after TimerMessageStore.load (recover): where the timerlog ends, where the
        # enqueue resumes in rmq_sys_wheel_timer queue 0
        "timerLogMaxOffset": timer and timer["timerLogMaxOffset"],
        "timerCommitQueueOffset": timer and timer["commitQueueOffset"],
        # DLedger's recovery (DLedgerFiles.recovered): ledger end and committed index after the load
        "dledger": dledger and {k: dledger.get(k) for k in DLEDGER_KEYS},
        "errors": sorted(
            {
                _no_paths(line.split(" ERROR ", 1)[1])
                for line in done.stderr.splitlines()
                if " ERROR " in line and "[BUG]" in line
            }
        ),
    }


def main() -> None:
    only = set(sys.argv[1:])  # store or mutation names: run only those cases, print them, write nothing
    work = Path(tempfile.mkdtemp(prefix="mqtool-startup-"))
    try:
        if only:
            for v, s, m in CASES:
                if {s, m} & only:
                    print(json.dumps(run_case(v, s, m, work)))
            return
        recorded = [run_case(v, s, m, work) for v, s, m in CASES]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"cases": recorded}, indent=1) + "\n", encoding="utf-8")
    print(f"{len(recorded)} cases -> {OUT}")


if __name__ == "__main__":
    main()
