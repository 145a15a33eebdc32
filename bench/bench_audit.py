"""Benchmark `mqtool audit` on a ~1.3 GB generated store: wall time at local[1] and local[2], and the scan
stage alone.

    python bench/bench_audit.py [STORE] [--generate] [--masters local[1],local[2]] [--repeat 3] [--warm 3]

With --generate (or when STORE does not exist) the store is written first: `bench/gen_store.py` (1.3 GB
of records in 1 GiB commitlog files, 5 topics / 38 queues, 200-1000 byte bodies with correct CRCs), then
`mqtool rebuild cq --execute` builds its ConsumeQueues (the audit's ConsumeQueue checks then have
something to compare) and, with --index, `mqtool rebuild index --execute` its index files.

Every run is a fresh `mqtool audit STORE --master M --format json` process, so the wall time includes
Python and JVM start, the SparkSession (~10 s here), planning, the scan, the Spark SQL aggregation, the
driver's checks and the output; the scan stage (decode + partial aggregates + executor-side checks of
every range, as one Spark job) is read from the JSON (`scan.seconds.scan`). The page cache is warmed
first (the goal is about CPU, not the disk). Medians of --repeat runs are printed as a Markdown table.

The first audit on a machine writes the driver JVM's class-data archive (mqtool/audit/cds.py); the bench
runs one audit before timing so that every timed run starts on it, as an operator's runs do after their
first; --no-cds-row adds the last master with MQTOOL_SPARK_CDS=0 for comparison.

A fresh process pays ~8 s for its first Python Spark job (JVM JIT, Python workers importing pyspark,
pandas, pyarrow) on top of the session start; --warm N also runs N + 1 audits in one session per master
and reports the later ones, i.e. the scan stage without that fixed cost (its parallel speed-up).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_STORE = Path("/tmp/audit-bench")
SIZE = 1_300_000_000


def generate(store: Path, index: bool) -> None:
    py = sys.executable
    subprocess.run(
        [
            py,
            str(ROOT / "bench" / "gen_store.py"),
            str(store),
            "--size",
            str(SIZE),
            "--file-size",
            str(1 << 30),
        ],
        check=True,
    )
    mqtool = [py, "-m", "mqtool.cli"]
    for part in ("cq", "index") if index else ("cq",):
        cmd = [*mqtool, "rebuild", part, "--execute", "--store", str(store), "--format", "json"]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def warm(store: Path) -> int:
    total = 0
    for path in sorted(store.rglob("*")):
        if path.is_file():
            with open(path, "rb") as fh:
                while chunk := fh.read(1 << 24):
                    total += len(chunk)
    return total


def run_once(store: Path, master: str, extra: list[str], cds: bool = True) -> dict:
    cmd = [
        sys.executable,
        "-m",
        "mqtool.cli",
        "audit",
        str(store),
        "--master",
        master,
        "--format",
        "json",
        *extra,
    ]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    if not cds:
        env["MQTOOL_SPARK_CDS"] = "0"
    t0 = time.monotonic()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env)
    wall = time.monotonic() - t0
    doc = json.loads(out.stdout)
    secs = doc["scan"]["seconds"]
    return {
        "wall": wall,
        "session": secs.get("session"),
        "scan": secs.get("scan"),
        "aggregate": secs.get("aggregate"),
        "total": secs.get("total"),
        "splits": doc["scan"]["splits"],
        "messages": sum(s["records"] for s in doc["stores"]),
        "bytes": sum(s["recordBytes"] for s in doc["stores"]),
        "errors": sum(s.get("errors", 0) for s in doc["stores"]),
    }


WARM = """
import json, sys
from mqtool.audit import AuditOptions, run_audit
from mqtool.audit.spark import start_session
spark, _ = start_session(sys.argv[1])
out = []
for _ in range(int(sys.argv[3])):
    r = run_audit(AuditOptions(stores=[sys.argv[2]], check_crc=sys.argv[4] == "crc"), spark=spark)
    out.append(r.timings)
print(json.dumps(out))
"""


def run_warm(store: Path, master: str, runs: int, crc: bool) -> list[dict]:
    """Audits repeated in one process: the first pays the JVM/Python cold start, the later ones do not."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    cmd = [sys.executable, "-c", WARM, master, str(store), str(runs), "crc" if crc else "nocrc"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("store", type=Path, nargs="?", default=DEFAULT_STORE)
    ap.add_argument("--generate", action="store_true", help="write the store first")
    ap.add_argument("--index", action="store_true", help="also build index files when generating")
    ap.add_argument("--masters", default="local[1],local[2]")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-crc", action="store_true")
    ap.add_argument("--split-size", default=None)
    ap.add_argument("--warm", type=int, default=0, help="also N audits in one session per master")
    ap.add_argument(
        "--no-cds-row", action="store_true", help="also the last master without the JVM class archive"
    )
    args = ap.parse_args(argv)
    if args.generate or not args.store.exists():
        generate(args.store, args.index)
    warmed = warm(args.store)
    extra = ["--no-crc"] if args.no_crc else []
    if args.split_size:
        extra += ["--split-size", args.split_size]
    masters = args.masters.split(",")
    runs = [(m, True) for m in masters] + ([(masters[-1], False)] if args.no_cds_row else [])
    first_ever = run_once(args.store, masters[-1], extra)  # writes the class archive when there is none
    print(f"first audit ({masters[-1]}): wall {first_ever['wall']:.1f} s", file=sys.stderr)
    results: dict[str, list[dict]] = {}
    for _ in range(args.repeat):  # interleaved, so that machine load hits all alike
        for master, cds in runs:
            r = run_once(args.store, master, extra, cds)
            label = master if cds else f"{master}, MQTOOL_SPARK_CDS=0"
            results.setdefault(label, []).append(r)
            print(f"{label}: wall {r['wall']:.1f} s, scan {r['scan']:.2f} s, session {r['session']:.1f} s, "
                  f"aggregate {r['aggregate']:.2f} s", file=sys.stderr)  # fmt: skip
    first = next(iter(results.values()))[0]
    print(f"store {args.store}: {first['messages']:,} messages, {first['bytes'] / 1e9:.2f} GB of records, "
          f"{warmed / 1e9:.2f} GB of files (page cache warm), {first['splits']} ranges, "
          f"errors found {first['errors']}\n")  # fmt: skip
    print(
        "| master | wall (median) | session start | scan stage (median) | scan stage min | aggregate | runs |"
    )
    print("|---|---|---|---|---|---|---|")
    med = {}
    for master, rs in results.items():
        med[master] = statistics.median(r["scan"] for r in rs)
        wall = statistics.median(r["wall"] for r in rs)
        session = statistics.median(r["session"] for r in rs)
        aggregate = statistics.median(r["aggregate"] for r in rs)
        fastest = min(r["scan"] for r in rs)
        print(
            f"| {master} | {wall:.1f} s | {session:.1f} s | {med[master]:.2f} s | {fastest:.2f} s | "
            f"{aggregate:.2f} s | {len(rs)} |"
        )
    if "local[1]" in med and "local[2]" in med and med["local[2]"]:
        print(f"\nscan stage speed-up local[1] -> local[2]: {med['local[1]'] / med['local[2]']:.2f}x")
    if args.warm:
        warm_scan = {}
        print("\nwarm session (audits after the first in one process; no JVM/Python worker cold start):\n")
        print("| master | scan stage (median) | scan stage min | aggregate | audit total | runs |")
        print("|---|---|---|---|---|---|")
        for master in args.masters.split(","):
            timings = run_warm(args.store, master, args.warm + 1, not args.no_crc)[1:]
            warm_scan[master] = statistics.median(t["scan"] for t in timings)
            print(
                f"| {master} | {warm_scan[master]:.2f} s | {min(t['scan'] for t in timings):.2f} s | "
                f"{statistics.median(t['aggregate'] for t in timings):.2f} s | "
                f"{statistics.median(t['total'] for t in timings):.2f} s | {len(timings)} |"
            )
        if "local[1]" in warm_scan and "local[2]" in warm_scan:
            ratio = warm_scan["local[1]"] / warm_scan["local[2]"]
            print(f"\nwarm scan stage speed-up local[1] -> local[2]: {ratio:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
