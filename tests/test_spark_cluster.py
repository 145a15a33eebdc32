"""`mqtool audit --master spark://...` on a real Spark standalone cluster: a master and two workers started by
this test with the `spark-class` launcher that pyspark ships, bound to 127.0.0.1, stopped by the test. The
audit of a golden store on the cluster equals the embedded local[2] audit of the same store, row for row,
and so does the cluster's audit of the same store uploaded to an S3 bucket (moto's server on 127.0.0.1,
tests/s3server.py; the workers get the standard AWS environment, as a cluster's nodes have it)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from golden import GOLDEN
from s3server import s3_server

pyspark = pytest.importorskip("pyspark")  # the `spark` extra

SPARK_HOME = Path(pyspark.__file__).parent
WORKERS = 2
# Fields that depend on the moment each audit runs (now, and how late or lagging that makes a message).
NOW_DEPENDENT = {"now", "lagMs", "lateMs"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(args: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    with open(log, "wb") as out:
        return subprocess.Popen(
            [str(SPARK_HOME / "bin" / "spark-class"), *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )


def alive_workers(ui_port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=2) as resp:
            state = json.load(resp)
    except OSError:
        return 0
    return sum(1 for w in state.get("workers", []) if w.get("state") == "ALIVE")


@pytest.fixture(scope="module")
def s3():
    pytest.importorskip("moto")
    with s3_server() as server:
        server.upload(GOLDEN / "store-a", "store-a")
        yield server


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, s3) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("spark-cluster")
    env = dict(
        os.environ,
        **s3.env,
        SPARK_HOME=str(SPARK_HOME),
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_LOCAL_DIRS=str(tmp),
        SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false",
        SPARK_WORKER_OPTS="-Dspark.worker.cleanup.enabled=false",
    )
    port, ui_port = free_port(), free_port()
    master_url = f"spark://127.0.0.1:{port}"
    procs = [
        start(
            [
                "org.apache.spark.deploy.master.Master",
                *("--host", "127.0.0.1", "--port", str(port), "--webui-port", str(ui_port)),
            ],
            tmp / "master.log",
            env,
        )
    ]
    for i in range(WORKERS):
        work = tmp / f"worker{i}"
        work.mkdir()
        procs.append(
            start(
                [
                    "org.apache.spark.deploy.worker.Worker",
                    master_url,
                    *("--host", "127.0.0.1", "--cores", "1", "--memory", "1g"),
                    *("--webui-port", str(free_port()), "--work-dir", str(work)),
                ],
                tmp / f"worker{i}.log",
                env,
            )
        )
    try:
        deadline = time.monotonic() + 120
        while alive_workers(ui_port) < WORKERS:
            if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
                logs = "\n".join(f.read_text(errors="replace")[-1500:] for f in sorted(tmp.glob("*.log")))
                pytest.fail(f"the standalone cluster did not come up:\n{logs}")
            time.sleep(0.5)
        yield master_url
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()


def audit(master: str, store: str, cwd: Path, env: dict[str, str] | None = None) -> dict:
    proc = subprocess.run(
        [sys.executable, "-m", "mqtool.cli", "audit", store, "--master", master, "--format", "json"],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=600,
        env=dict(os.environ, **(env or {})),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def without_now(value: object) -> object:
    if isinstance(value, dict):
        return {k: without_now(v) for k, v in value.items() if k not in NOW_DEPENDENT}
    if isinstance(value, list):
        return [without_now(v) for v in value]
    return value


@pytest.fixture(scope="module")
def local() -> dict:
    return audit("local[2]", "store-a", cwd=GOLDEN)


def test_audit_on_a_standalone_cluster_equals_local(cluster: str, local: dict) -> None:
    # A store named by a relative path, as a user types it: the executors run in the workers' own
    # directories, so the driver must hand them absolute paths.
    on_cluster = audit(cluster, "store-a", cwd=GOLDEN)

    assert on_cluster["scan"]["master"] == cluster
    assert on_cluster["scan"]["splits"] == local["scan"]["splits"]
    assert on_cluster.keys() == local.keys()
    for section in local.keys() - {"scan", "now"}:
        assert without_now(on_cluster[section]) == without_now(local[section]), section
    # What was left out is consistent with each run's own clock.
    for result in (on_cluster, local):
        for row in result["lag"]:
            if row.get("lagMs") is not None:
                assert row["lagMs"] == result["now"] - row["firstUnconsumedStoreTimestamp"]
    assert on_cluster["queues"] and on_cluster["problems"] is not None


def test_audit_of_a_bucket_on_a_standalone_cluster_equals_local(cluster: str, s3, local: dict) -> None:
    url = s3.url("store-a")
    on_cluster = audit(cluster, url, cwd=GOLDEN, env=s3.env)

    assert on_cluster["scan"]["master"] == cluster and on_cluster["scan"]["splits"] == local["scan"]["splits"]
    assert on_cluster.keys() == local.keys()
    for section in local.keys() - {"scan", "now"}:
        want = without_now(local[section])
        got = without_now(on_cluster[section])
        if isinstance(want, list):  # rows name the store as given: the URL, or the local path
            assert all(r.get("store") == url for r in got if isinstance(r, dict) and "store" in r)
            want = [_unnamed(r) for r in want]
            got = [_unnamed(r) for r in got]
        assert got == want, section
    assert on_cluster["queues"]


def _unnamed(row: object) -> object:
    return {k: v for k, v in row.items() if k not in ("store", "root")} if isinstance(row, dict) else row
