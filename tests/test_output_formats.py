"""Every command x every --format: each value is honoured (the output parses as that format, and differs
from the other formats' outputs) or refused in one line with exit status 2. The command list comes from
the CLI itself, so a new command without an entry here fails `test_every_command_is_covered`.

The CLI runs in this process through its console entry point (`mqtool.cli.main`: the one-line errors and
their exit statuses), on a copy of the golden stores; `audit` is covered in test_audit.py (Spark).
"""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import click
import pytest
import typer.main
from golden import run_main, store_path

from mqtool.cli import app
from mqtool.render.output import FORMATS

NOW = "2026-11-21T11:38:00Z"

# command -> (golden store, arguments); {tmp} is a new directory per run
INVOCATIONS: dict[str, tuple[str, list[str]]] = {
    "info": ("store-a", []),
    "dump commitlog": ("store-a", ["-n", "4"]),
    "dump cq": ("store-a", ["TopicTest", "0", "-n", "4"]),
    "dump index": ("store-a", []),
    "dump checkpoint": ("store-a", []),
    "dump timerlog": ("store-timer5", ["-n", "4"]),
    "dump timerwheel": ("store-timer5", []),
    "dump timercheck": ("store-timer5", []),
    "dump config": ("store-a", ["consumerOffset"]),
    "dump compactionlog": ("store-compaction", ["CompactTopicA", "0"]),
    "topic update": ("store-a", ["NewTopic"]),
    "topic delete": ("store-a", ["OrderTopic"]),
    "group update": ("store-a", ["groupA", "--retry-max-times", "3"]),
    "group delete": ("store-a", ["groupB"]),
    "query key": ("store-a", ["TopicTest", "Aa"]),
    "query id": ("store-a", ["C0A8010100002A9F000000000000010E"]),
    "query offset": ("store-a", ["TopicTest", "0", "0", "-n", "2"]),
    "query time": (
        "store-a",
        ["TopicTest", "-b", "2026-11-21T11:37:55Z", "-e", "2026-11-21T11:37:57Z", "-m", "3"],
    ),
    "offsets show": ("store-a", []),
    "offsets reset": ("store-a", ["-g", "groupA", "-t", "TopicTest", "--to-earliest"]),
    "offsets clone": ("store-trace-b", ["--from-group", "GID_retry", "--to-group", "GID_ok"]),
    "offsets prune": ("store-trace-b", []),
    "dlq list": ("store-trace-b", []),
    "dlq stats": ("store-trace-b", ["--now", NOW]),
    "dlq export": ("store-trace-b", ["-o", "{tmp}.jsonl"]),
    "dlq resend": ("store-trace-b", ["-g", "GID_retry"]),
    # a dry run on the store's copy; the tree is read where it is (the dry run writes nothing)
    "tiered rebuild-metadata": (
        "store-tiered/store",
        ["--tiered", str(store_path("store-tiered") / "tiered")],
    ),
    "consume-mode show": ("store-a", []),
    "consume-mode set": ("store-a", ["-t", "OrderTopic", "-g", "groupA", "--mode", "POP"]),
    "delay list": ("store-a", ["--now", NOW]),
    "delay stats": ("store-a", ["--now", NOW]),
    "delay replay": ("store-a", ["--now", NOW]),
    "txn list": ("store-a", ["--now", NOW]),
    "txn commit": ("store-a", ["2", "--now", NOW]),
    "txn rollback": ("store-a", ["2", "--now", NOW]),
    "txn resolve": ("store-a", ["--policy", "rollback", "--now", NOW]),
    "pop list": ("store-pop", []),
    "pop stats": ("store-pop", []),
    "verify": ("store-a", []),
    "export": ("store-a", ["--output", "{tmp}"]),
    "rebuild": ("store-a", ["cq"]),
    "sample create": ("", ["{tmp}/new", "-n", "40"]),
    "trace": ("store-trace-b", ["FD00000000000000000000000000000212CA4E0E2F2A88D24EBF0002", "--now", NOW]),
    "dump trace": ("store-trace-a", []),
    "retention": ("store-a", ["--now", NOW, "--disk-used", "0.8"]),
    "bundle": ("store-a", ["-o", "{tmp}.tar.gz", "--now", NOW, "--disk-used", "0.8"]),
    # two-store commands: their store arguments name the copies ({stores}), the same store twice
    "offsets merge": ("", ["{stores}/store-a", "{stores}/store-a", "--into", "{stores}/store-a"]),
    "replicas diff": ("", ["{stores}/store-a", "{stores}/store-a"]),
    "replicas salvage": ("", ["--from", "{stores}/store-a", "--into", "{stores}/store-a"]),
}
ELSEWHERE = {"audit"}  # tests/test_audit.py: test_every_format_is_honoured_or_refused

# commands whose output is several tables: --format csv is refused (the others honour every format)
CSV_REFUSED = {
    "info",
    "retention",
    "bundle",
    "delay stats",
    "delay replay",
    "pop stats",
    "rebuild",
    "txn commit",
    "txn rollback",
    "txn resolve",
    "trace",
    "replicas diff",
    "dlq resend",
}


def command_paths() -> list[str]:
    root = typer.main.get_command(app)
    paths = []
    for name, sub in root.commands.items():
        if isinstance(sub, click.Group):
            paths += [f"{name} {child}" for child in sub.commands]
        else:
            paths.append(name)
    return sorted(paths)


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("formats")
    for name in {store for store, _ in INVOCATIONS.values() if store} | {"store-a"}:
        shutil.copytree(store_path(name), root / name)
    return root


def test_every_command_is_covered() -> None:
    assert set(command_paths()) == set(INVOCATIONS) | ELSEWHERE


def check_honoured(fmt: str, out: str) -> None:
    """The output parses as `fmt`."""
    assert out.strip(), "no output"
    if fmt == "json":
        json.loads(out)
    elif fmt == "jsonl":
        lines = [line for line in out.splitlines() if line]
        assert all(isinstance(json.loads(line), dict) for line in lines)
    elif fmt == "csv":
        rows = list(csv.reader(io.StringIO(out)))
        assert len(rows[0]) >= 2, rows[0]  # a header of fields, not a line of a table
        assert all(len(row) == len(rows[0]) for row in rows), "rows of another width than the header"
        assert not {"True", "False"} & {cell for row in rows[1:] for cell in row}, (
            "CSV booleans are true/false"
        )
    elif fmt == "markdown":
        assert any(line.startswith("|") for line in out.splitlines()) or "##" in out
    elif fmt == "record":
        assert " | " in out


@pytest.mark.parametrize("command", sorted(INVOCATIONS))
def test_every_format_is_honoured_or_refused(command: str, stores: Path, tmp_path: Path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    store, args = INVOCATIONS[command]
    outputs: dict[str, str] = {}
    for fmt in FORMATS:
        target = tmp_path / fmt
        given = (a.replace("{tmp}", str(target)).replace("{stores}", str(stores)) for a in args)
        argv = [*command.split(), *given, "--format", fmt]
        if store:
            argv += ["--store", str(stores / store)]
        code, out, err = run_main(argv, capsys)
        if fmt == "csv" and command in CSV_REFUSED:
            assert code == 2, (command, fmt, err)
            assert out == ""
            lines = err.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith("mqtool: error: --format csv:"), err
            continue
        assert code == 0, (command, fmt, err)
        assert "Traceback" not in err
        check_honoured(fmt, out)
        outputs[fmt] = out
    # a format silently ignored would print what another format prints
    texts = list(outputs.values())
    assert len(set(texts)) == len(texts), f"{command}: two formats print the same"


def test_an_unknown_format_is_refused_in_one_line(capsys) -> None:
    code, out, err = run_main(["--store", str(store_path("store-a")), "info", "--format", "yaml"], capsys)
    assert (code, out) == (2, "")
    assert err.strip().splitlines() == [
        f"mqtool: error: unknown --format 'yaml'; choose one of {', '.join(FORMATS)}"
    ]


def test_x_is_the_record_format_and_excludes_another_format(capsys) -> None:
    base = ["--store", str(store_path("store-a")), "dump", "checkpoint"]
    code, with_x, _ = run_main([*base, "-x"], capsys)
    assert code == 0
    assert (code, with_x) == (0, run_main([*base, "--format", "record"], capsys)[1])
    assert "physicMsgTimestamp (UTC) | 2026-11-21 11:38:01.940" in with_x
    code, out, err = run_main([*base, "-x", "--format", "json"], capsys)
    assert (code, out) == (2, "") and "exclude each other" in err


def test_dump_commitlog_csv_keeps_the_reason_of_the_record_that_ends_the_walk(capsys) -> None:
    code, out, _ = run_main(["--store", str(store_path("store-c")), "dump", "commitlog", "-f", "csv"], capsys)
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert rows[-1]["kind"] == "torn" and rows[-1]["reason"].startswith("torn write")


def test_csv_booleans_are_true_and_false(capsys) -> None:
    args = ["--store", str(store_path("store-timer5")), "dump", "timerlog", "-n", "3", "-f", "csv"]
    code, out, _ = run_main(args, capsys)
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert {r["roll"] for r in rows} <= {"true", "false"} and rows


def test_export_format_is_the_summary_and_file_format_the_file(tmp_path: Path, capsys) -> None:
    base = ["--store", str(store_path("store-a")), "export"]
    code, out, err = run_main(
        [*base, "-o", str(tmp_path / "a"), "-f", "json", "--file-format", "jsonl"], capsys
    )
    assert code == 0, err
    assert json.loads(out)["output"] == str(tmp_path / "a" / "messages.jsonl")
    # --format parquet writes Parquet to --output, as `dump commitlog --format parquet --output` does
    code, out, err = run_main([*base, "-o", str(tmp_path / "b"), "-f", "parquet"], capsys)
    assert code == 0, err
    assert (tmp_path / "b" / "messages.parquet").is_file()
    code, out, err = run_main(
        [*base, "-o", str(tmp_path / "c"), "-f", "parquet", "--file-format", "jsonl"], capsys
    )
    assert code == 2 and "exclude each other" in err
