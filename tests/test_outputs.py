"""Where an output file may go (mqtool.outputs): every option that writes a file refuses a path inside a
store - the store given and any other directory that looks like one - whether it is named directly,
through `..`, through a symbolic link or relative to the working directory, before anything is written
(dry runs too); and none replaces an existing file mqtool did not write unless `--force`.

The stores are copies of golden stores written by the real RocketMQ 5.3.3 store code; each test checks
every byte of them afterwards.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from mqtool.cli import app
from mqtool.outputs import OutputRefused
from tests.golden import child_env, copy_store, snapshot, store_path

GROUP_RESET = ["offsets", "reset", "--group", "groupA", "--all-topics", "--to-earliest"]

# every option that writes a file: (command line before the path, the option, whether it names a file)
OPTIONS = {
    "offsets reset --export": ([*GROUP_RESET, "--export"], "file"),
    "dump commitlog --output": (
        ["dump", "commitlog", "--format", "parquet", "--count", "5", "--output"],
        "file",
    ),
    "export --output": (["export", "--to-offset", "2000", "--output"], "dir"),
    "query key --export": (["query", "key", "TopicTest", "order-123", "--export"], "dir"),
    "query id --export": (["query", "id", "0A0B0C0D00002A9F0000000000000000", "--export"], "dir"),
    "query offset --export": (["query", "offset", "TopicTest", "0", "0", "--export"], "dir"),
    "query time --export": (
        ["query", "time", "TopicTest", "--begin", "0", "--end", "now", "--max", "2", "--export"],
        "dir",
    ),
    "audit --output": (["audit", "--no-checks", "--output"], "dir"),
}


@pytest.fixture
def place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """tmp/store (store-a, the one given), tmp/other (store-c, not given), links into both; cwd tmp."""
    copy_store("store-a", tmp_path / "store")
    copy_store("store-c", tmp_path / "other")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "to-config").symlink_to(tmp_path / "store" / "config")
    (tmp_path / "to-store").symlink_to(tmp_path / "store")
    (tmp_path / "to-offsets").symlink_to(tmp_path / "store" / "config" / "consumerOffset.json")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _invoke(args: list[str]):
    return CliRunner().invoke(app, args)


def _paths(tmp: Path, kind: str) -> dict[str, str]:
    """The same places in the stores named every way a path can be."""
    name = "consumerOffset.json" if kind == "file" else "out"
    return {
        "direct": str(tmp / "store" / "config" / name),
        "root itself": str(tmp / "store"),
        "commitlog file": str(tmp / "store" / "commitlog" / "00000000000000000000"),
        "dotdot": str(tmp / "elsewhere" / ".." / "store" / "config" / name),
        "symlinked directory": str(tmp / "to-config" / name),
        "symlink then dotdot": "to-config/../x",  # the link's target's parent: the store root
        "symlink to a store file": "to-offsets",
        "relative": f"store/config/{name}",
        "relative symlink": "to-store/index/x",
        "another store": str(tmp / "other" / "config" / name),
        "another store, relative": "other/consumequeue/TopicTest/0/x",
    }


@pytest.mark.parametrize("option", OPTIONS)
def test_every_output_option_refuses_every_path_into_a_store(place: Path, option: str) -> None:
    args, kind = OPTIONS[option]
    before = {s: snapshot(place / s) for s in ("store", "other")}
    for how, path in _paths(place, kind).items():
        result = _invoke(["--store", str(place / "store"), *args, path])
        assert isinstance(result.exception, OutputRefused), (how, path, result.output, result.exception)
        assert "inside" in str(result.exception), how
    assert {s: snapshot(place / s) for s in ("store", "other")} == before
    assert sorted(p.name for p in place.iterdir()) == [
        "elsewhere",
        "other",
        "store",
        "to-config",
        "to-offsets",
        "to-store",
    ]
    assert list((place / "elsewhere").iterdir()) == []


def test_a_refusal_is_one_line_with_exit_status_2_and_the_dry_run_writes_nothing(place: Path) -> None:
    """The issue's case: a dry run with --export onto the live consumerOffset.json."""
    before = snapshot(place / "store")
    target = place / "store" / "config" / "consumerOffset.json"
    done = subprocess.run(
        [sys.executable, "-m", "mqtool.cli", "--store", "store", *GROUP_RESET, "--export", str(target)],
        capture_output=True,
        text=True,
        env=child_env(),
        cwd=place,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""  # refused before the plan
    assert done.stderr.splitlines() == [
        f"mqtool: error: {target}: --export is inside the store {place / 'store'}; choose a path outside it"
    ]
    assert snapshot(place / "store") == before


def test_a_directory_that_only_looks_like_a_store_is_refused(place: Path) -> None:
    """Not given with --store, not openable as one: a directory holding a 20-digit mapped file."""
    detached = place / "elsewhere" / "commitlog-copy"
    detached.mkdir()
    (detached / "00000000001073741824").write_bytes(b"\0" * 64)
    result = _invoke(["--store", "store", *GROUP_RESET, "--export", str(detached / "plan.csv")])
    assert isinstance(result.exception, OutputRefused)
    assert "mapped-file directory" in str(result.exception)
    # common names alone are not a store: config/ without the broker's files, a lone checkpoint
    plain = place / "elsewhere" / "project"
    (plain / "config").mkdir(parents=True)
    (plain / "config" / "app.yaml").write_text("x: 1\n")
    (plain / "checkpoint").write_text("model\n")
    result = _invoke(["--store", "store", *GROUP_RESET, "--export", str(plain / "plan.csv")])
    assert result.exit_code == 0, result.output
    assert (plain / "plan.csv").read_text().startswith("group,topic,queue,offset,")


def test_sample_create_refuses_a_directory_inside_a_store(place: Path) -> None:
    before = snapshot(place / "store")
    for path in ("store/sample", "to-store/sample", "elsewhere/../store/config/sample"):
        result = _invoke(["sample", "create", path, "--count", "10"])
        assert isinstance(result.exception, OutputRefused), (path, result.output)
    assert snapshot(place / "store") == before


# --- existing files: replaced only when mqtool wrote them, or with --force --------------------------


def test_the_plan_csv_replaces_only_a_plan_csv(place: Path) -> None:
    plan = place / "elsewhere" / "plan.csv"
    plan.write_text("my notes\n")
    refused = _invoke(["--store", "store", *GROUP_RESET, "--export", str(plan)])
    assert isinstance(refused.exception, OutputRefused)
    assert "not a plan CSV mqtool wrote" in str(refused.exception) and "--force" in str(refused.exception)
    assert plan.read_text() == "my notes\n"
    forced = _invoke(["--store", "store", *GROUP_RESET, "--export", str(plan), "--force"])
    assert forced.exit_code == 0, forced.output
    first = plan.read_text()
    assert first.startswith("group,topic,queue,offset,")
    latest = ["offsets", "reset", "--group", "groupA", "--all-topics", "--to-latest"]
    again = _invoke(["--store", "store", *latest, "--export", str(plan)])
    assert again.exit_code == 0, again.output  # its own plan: replaced without --force
    assert plan.read_text() != first


def test_force_replaces_a_hard_link_by_name_and_never_writes_through_it(place: Path) -> None:
    """A hard link outside the store to a store file: --force replaces the name; the store file keeps
    its bytes (the plan is renamed into place, never written into the old file)."""
    before = snapshot(place / "store")
    link = place / "elsewhere" / "offsets.csv"
    os.link(place / "store" / "config" / "consumerOffset.json", link)
    refused = _invoke(["--store", "store", *GROUP_RESET, "--export", str(link)])
    assert isinstance(refused.exception, OutputRefused)
    forced = _invoke(["--store", "store", *GROUP_RESET, "--export", str(link), "--force"])
    assert forced.exit_code == 0, forced.output
    assert link.read_text().startswith("group,topic,queue,offset,")
    assert snapshot(place / "store") == before


def test_a_stream_is_written_in_place(place: Path) -> None:
    was_link = os.path.islink("/dev/stdout")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mqtool.cli",
            "--store",
            "store",
            "-f",
            "csv",
            *GROUP_RESET,
            "--export",
            "/dev/stdout",
        ],
        capture_output=True,
        text=True,
        env=child_env(),
        cwd=place,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "group,topic,queue,offset,currentOffset,minOffset,maxOffset,newOffsetStoreTimestamp" in done.stdout
    assert os.path.islink("/dev/stdout") == was_link  # written to, not replaced


def test_dump_parquet_replaces_only_parquet_mqtool_wrote(place: Path) -> None:
    args = ["--store", "store", "dump", "commitlog", "--format", "parquet", "--count", "5", "--output"]
    out = place / "elsewhere" / "dump.parquet"
    out.write_bytes(b"PAR1 but not really")
    refused = _invoke([*args, str(out)])
    assert isinstance(refused.exception, OutputRefused)
    assert out.read_bytes() == b"PAR1 but not really"
    assert _invoke([*args, str(out), "--force"]).exit_code == 0
    assert pq.read_table(out).num_rows == 5
    assert pq.read_schema(out).metadata[b"mqtool"] == b"export"
    assert _invoke([*args[:-3], "--count", "7", "--output", str(out)]).exit_code == 0  # its own: replaced
    assert pq.read_table(out).num_rows == 7
    assert [p.name for p in out.parent.iterdir()] == ["dump.parquet"]  # no temporary file left


@pytest.mark.parametrize("fmt", ["parquet", "jsonl"])
def test_export_replaces_only_its_own_messages_file(place: Path, fmt: str) -> None:
    out = place / "elsewhere" / "export"
    out.mkdir()
    (out / f"messages.{fmt}").write_text("someone else's\n")
    args = ["--store", "store", "export", "--to-offset", "3000", "--file-format", fmt, "--output", str(out)]
    refused = _invoke(args)
    assert isinstance(refused.exception, OutputRefused)
    assert (out / f"messages.{fmt}").read_text() == "someone else's\n"
    assert _invoke([*args, "--force"]).exit_code == 0
    first = (out / f"messages.{fmt}").read_bytes()
    assert first != b"someone else's\n"
    assert _invoke(args).exit_code == 0  # its own
    if fmt == "jsonl":
        assert json.loads(first.splitlines()[0])["physicalOffset"] == 0


def test_query_export_refuses_an_earlier_export_and_files_it_would_replace(place: Path) -> None:
    args = ["--store", "store", "query", "key", "TopicTest", "order-123", "--export"]
    out = place / "elsewhere" / "bodies"
    assert _invoke([*args, str(out)]).exit_code == 0
    manifest = json.loads((out / "manifest.json").read_text())
    refused = _invoke([*args, str(out)])
    assert isinstance(refused.exception, OutputRefused) and "manifest.json" in str(refused.exception)
    assert _invoke([*args, str(out), "--force"]).exit_code == 0
    other = place / "elsewhere" / "mine"
    other.mkdir()
    (other / manifest[0]["file"]).write_text("mine\n")
    refused = _invoke([*args, str(other)])
    assert isinstance(refused.exception, OutputRefused) and manifest[0]["file"] in str(refused.exception)
    assert sorted(p.name for p in other.iterdir()) == [manifest[0]["file"]]
    assert (other / manifest[0]["file"]).read_text() == "mine\n"


def test_audit_output_refuses_a_directory_with_an_audit_json_it_did_not_write(place: Path) -> None:
    out = place / "elsewhere" / "audit"
    out.mkdir()
    (out / "audit.json").write_text('{"mine": true}\n')
    (out / "messages").mkdir()
    (out / "messages" / "keep.txt").write_text("x")
    refused = _invoke(["audit", str(place / "store"), "--no-checks", "--output", str(out)])
    assert refused.exception is not None and "holds no earlier audit" in str(refused.exception)
    assert (out / "messages" / "keep.txt").read_text() == "x"


def test_audit_output_under_a_store_url_is_refused(place: Path) -> None:
    from mqtool.audit.output import prepare_output

    with pytest.raises(OutputRefused, match="inside the store"):
        prepare_output("s3://bucket/brokers/a/out", ["s3://bucket/brokers/a"])
    with pytest.raises(OutputRefused, match="inside the store"):
        prepare_output((place / "store" / "out").as_uri(), [str(place / "store")])
    assert not (place / "store" / "out").exists()


def test_a_golden_store_is_recognised_and_common_directories_are_not() -> None:
    from store.recognise import store_evidence

    for name in ("store-a", "store-49a", "store-rocksdb-v2", "store-timer5"):
        assert store_evidence(store_path(name)) is not None, name
    assert store_evidence(store_path("store-a") / "commitlog") is not None
    assert store_evidence(Path(__file__).parent) is None
    assert store_evidence(Path(__file__).parent.parent) is None  # the repository: config? no
