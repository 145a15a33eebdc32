"""Stores on object storage: moto's S3 server on 127.0.0.1 (tests/s3server.py) holds golden stores uploaded
by the test. `mqtool audit s3://...` equals the audit of the same local stores row for row (split into
~350 KB ranges that start mid-record, so the executors' ranged reads and record tails are exercised),
`--output s3://...` writes the tables there, `info` and `verify` read the URL, other commands refuse it,
and no error shows the secret key."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from golden import GOLDEN
from s3server import SECRET, s3_server, with_env
from test_spark_cluster import NOW_DEPENDENT, free_port, without_now

from mqtool.audit.results.output import OUTPUT_MARKER, TABLES

pytest.importorskip("moto")
pytest.importorskip("pyspark")

STORES = ("store-a", "store-c", "store-pop")  # 4.9, a torn and faulty store, 5.x POP


@pytest.fixture(scope="module")
def s3():
    with s3_server() as server:
        for name in STORES:
            server.upload(GOLDEN / name, name)
        yield server


def cli(args: list[str], env: dict[str, str], timeout: int = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mqtool.cli", *args],
        capture_output=True,
        text=True,
        cwd=GOLDEN,
        env=with_env(env),
        timeout=timeout,
    )


@pytest.fixture(scope="module")
def audited(s3) -> dict:
    """One run: every store by URL and by local path (one JVM), the output on S3."""
    urls = [s3.url(name) for name in STORES]
    args = ["audit", *urls, *STORES, "--master", "local[2]", "--split-size", "350001"]
    proc = cli([*args, "--format", "json", "--output", s3.url("out")], s3.env)
    assert proc.returncode == 1, proc.stderr[-3000:]  # store-c's torn tail is an error (exit status 1)
    assert SECRET not in proc.stdout + proc.stderr
    return json.loads(proc.stdout)


def _per_store(doc: dict, section: str, label: str) -> list:
    rows = [r for r in doc[section] if r.get("store") == label]
    return [without_now({k: v for k, v in r.items() if k not in ("store", "root")}) for r in rows]


def test_audit_by_url_equals_the_local_audit(audited, s3):
    sections = [k for k, v in audited.items() if isinstance(v, list) and k not in ("failedStores", "notes")]
    assert {"queues", "problems", "lag", "stores", "duplicates", "pop"} <= set(sections)
    for name in STORES:
        for section in sections:
            local = _per_store(audited, section, name)
            assert _per_store(audited, section, s3.url(name)) == local, (name, section)
    queues = _per_store(audited, "queues", s3.url("store-a"))
    assert queues and sum(q["messages"] for q in queues) > 0
    store_c = [p for p in audited["problems"] if p["store"] == s3.url("store-c")]
    assert store_c  # its faults are found through the ranged reads too
    # the store row names the URL, not the driver's private view
    roots = {r["store"]: r["root"] for r in audited["stores"]}
    assert roots[s3.url("store-a")] == s3.url("store-a")
    assert NOW_DEPENDENT


def test_output_url_holds_tables_report_and_message_rows(audited, s3):
    import pyarrow.fs as pafs
    import pyarrow.parquet as pq

    objects = s3.objects("out/")
    for name in TABLES:
        assert f"out/{name}.parquet" in objects
    assert objects["out/report.html"] > 0 and f"out/{OUTPUT_MARKER}" in objects
    fs = pafs.S3FileSystem(endpoint_override=s3.endpoint, access_key="mqtool", secret_key=SECRET)
    written = json.loads(fs.open_input_file(f"mqtool-stores/out/{OUTPUT_MARKER}").read())
    assert without_now(written["queues"]) == without_now(audited["queues"])
    queues = pq.read_table("mqtool-stores/out/queues.parquet", filesystem=fs)
    assert queues.num_rows == len(audited["queues"])
    messages = pq.read_table("mqtool-stores/out/messages", filesystem=fs).column("store").to_pylist()
    for row in audited["stores"]:
        assert messages.count(row["store"]) == row["records"], row["store"]


def _info(proc: subprocess.CompletedProcess[str]) -> dict:
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads(proc.stdout)
    assert doc.pop("store") in STORES or doc["broker"]  # the URL or the local path given
    doc["commitlog"].pop("directory", None)
    return doc


def test_info_and_verify_read_a_store_by_url(s3):
    for name in ("store-a", "store-pop"):
        by_url = _info(cli(["info", "--store", s3.url(name), "-f", "json"], s3.env))
        local = _info(cli(["info", "--store", name, "-f", "json"], s3.env))
        # the start-up verdict reads every file's size and the recovery's walk: local stores only
        assert by_url.pop("startup") is None and local.pop("startup")["verdict"] == "start"
        assert by_url == local
    by_url = cli(["verify", "--store", s3.url("store-c"), "-f", "json"], s3.env)
    local = cli(["verify", "--store", "store-c", "-f", "json"], s3.env)
    assert by_url.returncode == local.returncode == 1  # store-c has errors
    want, got = json.loads(local.stdout), json.loads(by_url.stdout)
    assert got.pop("store") == s3.url("store-c") and want.pop("store") == "store-c"
    for doc in (got, want):
        doc["summary"].pop("seconds")
        doc["summary"].pop("messagesPerSecond")
        for row in doc["problems"]:
            row.pop("store")
    assert got == want and got["problems"]


def test_replicas_diff_reads_stores_by_url(s3):
    """A replica on object storage against one on disk: the same answer as both on disk, the URL named."""
    for pair in (("store-a", "store-a"), ("store-c", "store-c")):
        local = cli(["replicas", "diff", *pair, "-f", "json"], s3.env)
        by_url = cli(["replicas", "diff", s3.url(pair[0]), pair[1], "-f", "json"], s3.env)
        assert by_url.returncode == local.returncode == 0, by_url.stderr  # the same store: identical
        want, got = json.loads(local.stdout), json.loads(by_url.stdout)
        assert got["stores"][0]["path"] == s3.url(pair[0])
        for doc in (got, want):
            doc["stores"][0].pop("path")
        assert got == want and got["commitlog"]["bytesRead"] > 0
    # a log on object storage whose bytes differ from the local one: the first difference is found there
    other = cli(["replicas", "diff", s3.url("store-a"), "store-c", "-f", "json"], s3.env)
    assert other.returncode == 1 and "/tmp/mqtool-view-" not in other.stdout + other.stderr
    assert s3.url("store-a") in json.loads(other.stdout)["commitlogNotCompared"]  # file sizes differ


def test_other_commands_refuse_a_url_in_one_line(s3):
    proc = cli(["offsets", "show", "--store", s3.url("store-a")], s3.env)
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert (
        len(lines) == 1
        and "needs a local store directory" in lines[0]
        and "audit, info, verify and replicas diff" in lines[0]
    )


def test_errors_never_show_the_secret(s3):
    # an endpoint where nothing listens
    bad = dict(s3.env, AWS_ENDPOINT_URL=f"http://127.0.0.1:{free_port()}")
    proc = cli(["info", "--store", s3.url("store-a")], bad, timeout=120)
    assert proc.returncode != 0 and proc.stderr.strip()
    assert SECRET not in proc.stdout + proc.stderr
    # keys given in the URL itself are not echoed either
    url = f"{s3.url('nothing-here')}?access_key=mqtool&secret_key={SECRET}"
    proc = cli(["info", "--store", url], s3.env)
    assert proc.returncode != 0 and len(proc.stderr.strip().splitlines()) == 1
    assert SECRET not in proc.stdout + proc.stderr
    proc = cli(["info", "--store", s3.url("nothing-here")], s3.env)
    assert proc.returncode != 0 and "no such store" in proc.stderr
    # a URL that is not a store
    proc = cli(["info", "--store", s3.url("store-a", "config")], s3.env)
    assert proc.returncode != 0 and "not a RocketMQ store" in proc.stderr
