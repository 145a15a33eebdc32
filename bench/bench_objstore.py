"""Benchmark the audit's scan stage on object storage and on a standalone cluster, ratios from one run.

    python bench/bench_objstore.py [--size 400000000] [--repeat 3] [--skip-cluster]

1. Object storage vs local: a generated store (`bench/gen_store.py`, ConsumeQueues by `mqtool rebuild cq`)
   is uploaded to moto's S3 server on 127.0.0.1 (tests/s3server.py); in one local[2] session the audit of
   s3://bucket/store and of the local directory alternate (after one warm-up audit of each), and the
   scan stage (`timings["scan"]`: decode, partial aggregates and the executors' checks of every range)
   is compared. Ratio = local scan seconds / S3 scan seconds (1.0: as fast as the page cache).
2. Cluster 2 workers vs 1: a standalone master and two workers of one core each (started with pyspark's
   `spark-class`, as tests/test_spark_cluster.py does), a session with spark.cores.max=1 (one executor,
   one core) and then =2 (one executor per worker), each warmed once; ratio = 1-core scan / 2-core scan.

The S3 server is moto (Python) on the same cores as Spark: its request handling competes with the
executors, so ratio 1 is a floor for a real object store on other machines. Medians of --repeat runs
are printed as a Markdown table.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from s3server import s3_server  # noqa: E402
from test_spark_cluster import SPARK_HOME, alive_workers, free_port, start  # noqa: E402


def generate(store: Path, size: int) -> None:
    py = sys.executable
    gen = [py, str(ROOT / "bench" / "gen_store.py"), str(store), "--size", str(size)]
    subprocess.run([*gen, "--file-size", str(128 << 20)], check=True)
    cmd = [py, "-m", "mqtool.cli", "rebuild", "cq", "--execute", "--store", str(store), "--format", "json"]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def scan_seconds(spark, store: str) -> float:
    from mqtool.audit.plan import AuditOptions
    from mqtool.audit.run import run_audit

    result = run_audit(AuditOptions(stores=[store]), spark=spark)
    return result.timings["scan"]


def alternate(spark, stores: dict[str, str], repeat: int) -> dict[str, list[float]]:
    """Warm each once, then time them in turn (so that load drifts hit both alike)."""
    for store in stores.values():
        scan_seconds(spark, store)
    times: dict[str, list[float]] = {name: [] for name in stores}
    for _ in range(repeat):
        for name, store in stores.items():
            times[name].append(scan_seconds(spark, store))
    return times


def session(master: str, conf: dict | None = None):
    from mqtool.audit.session.spark import start_session

    spark, _ = start_session(master, conf=conf)
    return spark


def object_storage(store: Path, repeat: int) -> dict[str, list[float]]:
    from mqtool.audit.session.spark import stop_session

    with s3_server() as s3:
        t = time.monotonic()
        url = s3.upload(store, "bench-store")
        print(f"uploaded in {time.monotonic() - t:.1f} s", file=sys.stderr)
        os.environ.update(s3.env)  # before the JVM starts: its Python workers inherit it
        spark = session("local[2]")
        try:
            return alternate(spark, {"local": str(store), "s3": url}, repeat)
        finally:
            stop_session(spark)


def cluster(store: Path, repeat: int) -> dict[str, list[float]]:
    from mqtool.audit.session.spark import stop_session

    tmp = Path(tempfile.mkdtemp(prefix="objstore-bench-cluster-"))
    env = dict(os.environ, SPARK_HOME=str(SPARK_HOME), SPARK_LOCAL_IP="127.0.0.1", SPARK_LOCAL_DIRS=str(tmp))
    port, ui = free_port(), free_port()
    master = f"spark://127.0.0.1:{port}"
    args = ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port)]
    procs = [start([*args, "--webui-port", str(ui)], tmp / "master.log", env)]
    for i in range(2):
        (tmp / f"w{i}").mkdir()
        worker = ["org.apache.spark.deploy.worker.Worker", master, "--host", "127.0.0.1", "--cores", "1"]
        worker += ["--memory", "1g", "--webui-port", str(free_port()), "--work-dir", str(tmp / f"w{i}")]
        procs.append(start(worker, tmp / f"worker{i}.log", env))
    try:
        deadline = time.monotonic() + 120
        while alive_workers(ui) < 2:
            if time.monotonic() > deadline:
                raise SystemExit("the standalone cluster did not come up")
            time.sleep(0.5)
        times: dict[str, list[float]] = {}
        for cores in (1, 2):
            spark = session(master, {"spark.cores.max": str(cores), "spark.executor.cores": "1"})
            try:
                times[f"{cores} worker"] = alternate(spark, {"s": str(store)}, repeat)["s"]
            finally:
                stop_session(spark)
        return times
    finally:
        for p in procs:
            os.killpg(p.pid, signal.SIGTERM)
        for p in procs:
            p.wait(timeout=30)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", type=Path, default=Path("/tmp/objstore-bench"))
    ap.add_argument("--size", type=int, default=400_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-cluster", action="store_true")
    args = ap.parse_args()
    if not args.store.exists():
        generate(args.store, args.size)
    rows = []
    s3 = object_storage(args.store, args.repeat)
    local, remote = statistics.median(s3["local"]), statistics.median(s3["s3"])
    rows.append(("scan, local[2]: local directory", local, ""))
    rows.append(("scan, local[2]: s3:// (moto on 127.0.0.1)", remote, f"{local / remote:.2f}x of local"))
    if not args.skip_cluster:
        spark_times = cluster(args.store, args.repeat)
        one, two = statistics.median(spark_times["1 worker"]), statistics.median(spark_times["2 worker"])
        rows.append(("scan, standalone: 1 worker x 1 core", one, ""))
        rows.append(("scan, standalone: 2 workers x 1 core", two, f"{one / two:.2f}x of 1 worker"))
    size = sum(f.stat().st_size for f in (args.store / "commitlog").iterdir())
    print(f"\nstore: {size / 1e6:.0f} MB of commitlog; medians of {args.repeat} runs\n")
    print("| run | scan s | ratio |\n|---|---|---|")
    for name, seconds, ratio in rows:
        print(f"| {name} | {seconds:.2f} | {ratio} |")


if __name__ == "__main__":
    main()
