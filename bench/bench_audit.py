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

The first audit on a machine writes the driver JVM's class-data archive (mqtool/audit/session/cds.py); the
bench runs one audit before timing so that every timed run starts on it, as an operator's runs do after their
first; --no-cds-row adds the last master with MQTOOL_SPARK_CDS=0 for comparison, --no-preload-row with
MQTOOL_SPARK_PRELOAD=0 (Python workers that load numpy, pyarrow and the kernels themselves), --no-c1-row
with MQTOOL_SPARK_C1=0 (the driver JVM with both JIT compilers, C2's threads competing with the workers).

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


def _session_cpu(sid: int) -> dict[int, float]:
    """CPU seconds (user + sys) so far of every process in session `sid`: the driver, its JVM, the
    Python daemon and workers (which leave their parents' process group, not the session)."""
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as fh:
                fields = fh.read().rpartition(")")[2].split()
        except OSError:
            continue
        if int(fields[3]) == sid:  # fields after the name: state ppid pgrp session ... utime(11) stime(12)
            out[int(entry.name)] = (int(fields[11]) + int(fields[12])) / tick
    return out


def run_measured(cmd: list[str], env: dict[str, str]) -> tuple[str, str, int, float, float]:
    """Run cmd in a new session: (stdout, stderr, returncode, wall seconds, CPU seconds of the whole
    process tree, sampled every 0.1 s). CPU time hardly depends on what else the machine runs; wall
    time on a shared machine does."""
    import tempfile

    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, text=True, env=env, start_new_session=True)
        cpu: dict[int, float] = {}
        while proc.poll() is None:
            cpu.update(_session_cpu(proc.pid))
            time.sleep(0.1)
        wall = time.monotonic() - t0
        out.seek(0)
        err.seek(0)
        return out.read(), err.read(), proc.returncode, wall, sum(cpu.values())


def run_once(store: Path, master: str, extra: list[str], switch: str | None = None) -> dict:
    """One fresh `mqtool audit` process; `switch`: an MQTOOL_SPARK_* variable set to 0 for it."""
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
    if switch:
        env[switch] = "0"
    stdout, stderr, code, wall, cpu = run_measured(cmd, env)
    if code:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{stderr[-3000:]}")
    doc = json.loads(stdout)
    secs = doc["scan"]["seconds"]
    return {
        "wall": wall,
        "cpu": cpu,
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
from mqtool.audit.plan import AuditOptions
from mqtool.audit.run import run_audit
from mqtool.audit.session.spark import start_session
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


BREAKDOWN = """
import json, resource, sys, time
from pathlib import Path
t0 = time.monotonic()
marks = []
def mark(name, **extra):
    cpu = resource.getrusage(resource.RUSAGE_SELF)
    marks.append(dict(step=name, at=time.monotonic() - t0, cpu=cpu.ru_utime + cpu.ru_stime, **extra))
import mqtool.cli.batch.audit
mark("import mqtool.cli")
from mqtool.audit.plan import AuditOptions
from mqtool.audit.run import run_audit
mark("import mqtool.audit")
import mmap
from formats.columnar.decoder import decode_resync
from store.storedir import Store
with open(Store.open(sys.argv[2]).commitlog.queue.files[0].path, "rb") as fh:
    buf = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
decode_resync(buf, 0, 0, min(len(buf), 1 << 16))
mark("numba kernels from their cache")
import pyspark.sql
mark("import pyspark")
from mqtool.audit.session.spark import start_session, stop_session
conf = {"spark.eventLog.enabled": "true", "spark.eventLog.dir": "file://" + sys.argv[3],
        "spark.eventLog.compress": "false", "spark.eventLog.rolling.enabled": "false"}
spark, _ = start_session(sys.argv[1], conf=conf, create_class_archive=True)
mark("JVM + SparkSession")
for i in range(2):
    r = run_audit(AuditOptions(stores=[sys.argv[2]], output=Path(sys.argv[4] + str(i))), spark=spark)
    mark(f"audit {i + 1}", timings=r.timings)
stop_session(spark)
mark("session stop")
print(json.dumps(marks))
"""


def stage_times(event_dir: Path) -> list[dict]:
    """The Spark jobs of an event log: wall time, tasks, summed task run and CPU time."""
    jobs: dict[int, dict] = {}
    stages: dict[int, dict] = {}
    for log in event_dir.iterdir():
        for line in log.read_text().splitlines():
            e = json.loads(line)
            if e["Event"] == "SparkListenerJobStart":
                jobs[e["Job ID"]] = {"start": e["Submission Time"], "stages": e["Stage IDs"]}
            elif e["Event"] == "SparkListenerJobEnd":
                jobs[e["Job ID"]]["end"] = e["Completion Time"]
            elif e["Event"] == "SparkListenerStageCompleted":
                info = e["Stage Info"]
                acc = {a["Name"]: int(a.get("Value") or 0) for a in info.get("Accumulables", [])}
                stages[info["Stage ID"]] = {
                    "name": info["Stage Name"],
                    "tasks": info["Number of Tasks"],
                    "run": acc.get("internal.metrics.executorRunTime", 0) / 1e3,
                    "cpu": acc.get("internal.metrics.executorCpuTime", 0) / 1e9,
                }
    out = []
    for job_id, job in sorted(jobs.items()):
        done = [stages[s] for s in job["stages"] if s in stages]
        out.append(
            {
                "job": job_id,
                "seconds": (job.get("end", job["start"]) - job["start"]) / 1e3,
                "tasks": sum(s["tasks"] for s in done),
                "run": sum(s["run"] for s in done),
                "cpu": sum(s["cpu"] for s in done),
                "name": done[-1]["name"].split(" at ")[0] if done else "",
            }
        )
    return out


def breakdown(store: Path, master: str) -> None:
    """Where a fresh process's audit of a (small) store spends its time: imports, the numba cache, the
    JVM and session, then two audits in that session (the first pays the JVM's JIT and the Python
    workers' start), each Spark job, the report."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        events = Path(tmp) / "events"
        events.mkdir()
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        cmd = [sys.executable, "-c", BREAKDOWN, master, str(store), str(events), f"{tmp}/out"]
        stdout, stderr, code, wall, cpu = run_measured(cmd, env)
        if code:
            raise SystemExit(stderr[-3000:])
        marks = json.loads(stdout.strip().splitlines()[-1])
        jobs = stage_times(events)
    print(f"\nbreakdown: one process, {store} at {master}, {wall:.1f} s wall (interpreter start included), "
          f"{cpu:.1f} s CPU in all its processes\n")  # fmt: skip
    print("| step | wall | driver CPU | detail |")
    print("|---|---|---|---|")
    at = cpu = 0.0
    for m in marks:
        detail = ", ".join(f"{k} {v:.2f}" for k, v in m.get("timings", {}).items())
        print(f"| {m['step']} | {m['at'] - at:.2f} s | {m['cpu'] - cpu:.2f} s | {detail} |")
        at, cpu = m["at"], m["cpu"]
    print("\n| Spark job | wall | tasks | task run time | task CPU |")
    print("|---|---|---|---|---|")
    for j in jobs:
        print(f"| {j['job']} {j['name']} | {j['seconds']:.2f} s | {j['tasks']} | {j['run']:.2f} s | "
              f"{j['cpu']:.2f} s |")  # fmt: skip


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
    ap.add_argument(
        "--no-preload-row", action="store_true", help="also the last master without the worker preload"
    )
    ap.add_argument(
        "--no-c1-row", action="store_true", help="also the last master with the driver JVM's C2 compiler"
    )
    ap.add_argument(
        "--breakdown",
        type=Path,
        metavar="SMALL_STORE",
        help="only the fixed-cost breakdown of one process auditing SMALL_STORE (e.g. samples/store-a)",
    )
    args = ap.parse_args(argv)
    if args.breakdown:
        breakdown(args.breakdown, args.masters.split(",")[-1])
        return 0
    if args.generate or not args.store.exists():
        generate(args.store, args.index)
    warmed = warm(args.store)
    extra = ["--no-crc"] if args.no_crc else []
    if args.split_size:
        extra += ["--split-size", args.split_size]
    masters = args.masters.split(",")
    runs = [(m, None) for m in masters]
    runs += [(masters[-1], "MQTOOL_SPARK_CDS")] if args.no_cds_row else []
    runs += [(masters[-1], "MQTOOL_SPARK_PRELOAD")] if args.no_preload_row else []
    runs += [(masters[-1], "MQTOOL_SPARK_C1")] if args.no_c1_row else []
    first_ever = run_once(args.store, masters[-1], extra)  # writes the class archive when there is none
    print(f"first audit ({masters[-1]}): wall {first_ever['wall']:.1f} s", file=sys.stderr)
    results: dict[str, list[dict]] = {}
    for _ in range(args.repeat):  # interleaved, so that machine load hits all alike
        for master, switch in runs:
            r = run_once(args.store, master, extra, switch)
            label = f"{master}, {switch}=0" if switch else master
            results.setdefault(label, []).append(r)
            print(f"{label}: wall {r['wall']:.1f} s, CPU {r['cpu']:.1f} s, scan {r['scan']:.2f} s, "
                  f"session {r['session']:.1f} s, aggregate {r['aggregate']:.2f} s",
                  file=sys.stderr)  # fmt: skip
    first = next(iter(results.values()))[0]
    print(f"store {args.store}: {first['messages']:,} messages, {first['bytes'] / 1e9:.2f} GB of records, "
          f"{warmed / 1e9:.2f} GB of files (page cache warm), {first['splits']} ranges, "
          f"errors found {first['errors']}\n")  # fmt: skip
    print(
        "| master | wall (median) | CPU, all processes (median) | session start | scan stage (median) | "
        "scan stage min | aggregate | runs |"
    )
    print("|---|---|---|---|---|---|---|---|")
    med = {}
    for master, rs in results.items():
        med[master] = statistics.median(r["scan"] for r in rs)
        wall = statistics.median(r["wall"] for r in rs)
        cpu = statistics.median(r["cpu"] for r in rs)
        session = statistics.median(r["session"] for r in rs)
        aggregate = statistics.median(r["aggregate"] for r in rs)
        fastest = min(r["scan"] for r in rs)
        print(
            f"| {master} | {wall:.1f} s | {cpu:.1f} s | {session:.1f} s | {med[master]:.2f} s | "
            f"{fastest:.2f} s | {aggregate:.2f} s | {len(rs)} |"
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
