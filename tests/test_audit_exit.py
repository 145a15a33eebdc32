"""`mqtool audit` as a nightly job sees it: the exit status by the worst problem found (`--fail-on`), a
store that could not be read (3), the problems table worst first with its severity, and stores that are
told apart in every terminal table. On copies of golden stores written by the real RocketMQ code, in
process on the test session's SparkSession."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.golden import copy_store

pytest.importorskip("pyspark")
pytestmark = pytest.mark.xdist_group("spark")

PARENT = "brokers-of-the-production-cluster"


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> list[Path]:
    """Two stores under one long parent, so that their paths share far more than a table column's
    width: store-c (a torn tail: an error) and store-timer-crash (warnings only)."""
    parent = tmp_path_factory.mktemp("fleet") / PARENT
    return [copy_store("store-c", parent / "broker-a"), copy_store("store-timer-crash", parent / "broker-b")]


def _audit(spark, *args: str):
    from mqtool.cli import app

    assert spark is not None
    return CliRunner().invoke(app, ["audit", "--no-crc", *args], terminal_width=300)


def test_errors_fail_the_audit_and_the_terminal_tables_tell_the_stores_apart(spark, fleet) -> None:
    torn, timer = (str(p) for p in fleet)
    result = _audit(spark, torn, timer, "--format", "plain")
    assert result.exit_code == 1, result.output  # store-c's torn tail is an error, as verify says
    lines = result.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line == "Problems")
    header = lines[at + 1].split()
    assert header[:3] == ["severity", "store", "file"]
    rows = lines[at + 3 : lines.index("", at)]
    severities = [row.split()[0] for row in rows]
    rank = {"error": 0, "warning": 1, "info": 2}
    assert severities == sorted(severities, key=rank.__getitem__)  # worst first, across the stores
    assert severities[0] == "error" and "warning" in severities
    stores = {row.split()[1] for row in rows}
    assert stores == {"broker-a", "broker-b"}
    tables = [block.splitlines() for block in result.stdout.split("\n\n") if block.count("\n") >= 3]
    with_stores = [t for t in tables if t[1].split()[:1] == ["store"]]
    assert len(with_stores) >= 5  # stores, queues, topics, lag, transactions, ...
    for title, _, _, *rows in with_stores:
        assert {row.split()[0] for row in rows} <= {"broker-a", "broker-b"}, title
    stores_table = result.stdout.split("Stores\n")[1].split("\n\n")[0]
    assert torn in stores_table and timer in stores_table  # the legend: each label with its path


def test_fail_on_never_and_warning(spark, fleet) -> None:
    torn, timer = (str(p) for p in fleet)
    assert _audit(spark, torn, "--fail-on", "never", "--format", "json").exit_code == 0
    assert _audit(spark, timer, "--format", "json").exit_code == 0  # warnings only
    result = _audit(spark, timer, "--fail-on", "warning", "--format", "json")
    assert result.exit_code == 1
    assert {p["severity"] for p in json.loads(result.stdout)["problems"]} >= {"warning"}


def test_a_store_that_cannot_be_read_exits_3_and_the_others_are_audited(spark, fleet, tmp_path) -> None:
    timer = str(fleet[1])
    result = _audit(spark, timer, str(tmp_path / "gone"), "--fail-on", "never", "--format", "json")
    assert result.exit_code == 3, result.output
    assert [s["store"] for s in json.loads(result.stdout)["stores"]] == [timer]


def test_store_labels_are_the_shortest_unique_suffixes() -> None:
    from mqtool.cli.audit_render import store_labels

    assert store_labels(["/data/a/store", "/data/b/store"]) == {
        "/data/a/store": "a/store",
        "/data/b/store": "b/store",
    }
    assert store_labels(["/x/s", "/x/s#2"]) == {"/x/s": "s", "/x/s#2": "s#2"}
    assert store_labels(["/srv/store"]) == {"/srv/store": "store"}
    assert store_labels(["s3://bucket/brokers/a", "/local/a"]) == {
        "s3://bucket/brokers/a": "brokers/a",
        "/local/a": "local/a",
    }
    long = ["/d/" + "x" * 30 + "/one", "/d/" + "x" * 30 + "/two", "/e/" + "x" * 30 + "/one"]
    assert store_labels(long) == {long[0]: "#1", long[1]: "#2", long[2]: "#3"}
