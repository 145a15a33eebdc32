"""Exit statuses every script can rely on: a closed pipe downstream is not an error (exit 0, nothing on
stderr, in every output format), as `head` users expect."""

from __future__ import annotations

import subprocess
import sys

import pytest

from mqtool.render import FORMATS
from tests.golden import child_env, store_path


def _run_into_closed_pipe(*args: str) -> tuple[int, str]:
    """Run the CLI with stdout into a pipe whose reader takes one line and closes it (`| head -1`)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "mqtool.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=child_env(),
    )
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    code = proc.wait(timeout=120)
    assert first, err  # the command did start writing
    return code, err


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_closed_pipe_downstream_exits_0_in_every_format(fmt: str) -> None:
    # store-a's commitlog dump is megabytes in every format: far more than a pipe buffer holds, so the
    # writer is still writing when the reader closes
    code, err = _run_into_closed_pipe("--store", str(store_path("store-a")), "-f", fmt, "dump", "commitlog")
    assert (code, err) == (0, "")


# --- verify: the exit status says what was found, at the --fail-on severity -------------------------


def _status(*args: str) -> tuple[int, str]:
    done = subprocess.run(
        [sys.executable, "-m", "mqtool.cli", *args],
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=120,
    )
    return done.returncode, done.stderr


@pytest.mark.parametrize(
    "store, args, status",
    [
        ("store-c", [], 1),  # a torn tail: an error
        ("store-c", ["--fail-on", "never"], 0),
        ("store-c", ["--fail-on", "warning"], 1),
        ("store-timer-crash", [], 0),  # warnings only (a crash's twice-enqueued timer messages)
        ("store-timer-crash", ["--fail-on", "warning"], 1),
        ("store-timer-crash", ["--strict"], 1),
        ("store-timer-crash", ["--strict", "--fail-on", "warning"], 1),
        ("store-a", ["--fail-on", "warning"], 0),  # infos never fail
        ("store-a", ["--fail-on", "sometimes"], 2),
        ("store-a", ["--strict", "--fail-on", "never"], 2),
    ],
)
def test_verify_exit_status(store: str, args: list[str], status: int) -> None:
    code, err = _status("--store", str(store_path(store)), "verify", *args)
    assert code == status, err


def test_verify_of_a_store_that_cannot_be_read_exits_3(tmp_path) -> None:
    code, err = _status("--store", str(tmp_path / "gone"), "verify")
    assert code == 3
    assert err.startswith("mqtool: error: ") and err.count("\n") == 1
    (tmp_path / "notes").mkdir()
    assert _status("--store", str(tmp_path / "notes"), "verify")[0] == 3


def test_an_audit_of_no_readable_store_exits_3_before_spark_starts(tmp_path) -> None:
    code, err = _status("audit", str(tmp_path / "gone"), str(tmp_path / "also-gone"))
    assert code == 3, err
    assert "no store could be audited" in err


def test_exit_statuses_are_documented_alike_in_readme_help_and_man() -> None:
    """One source (mqtool.exitstatus.STATUSES): every man page lists each status with its meaning, `mqtool
    --help`, `verify --help` and `audit --help` end with the same paragraph, the README lists each meaning."""
    from typer.testing import CliRunner

    from mqtool.cli import app
    from mqtool.cli.manpages import generate
    from mqtool.exitstatus import STATUSES, exit_status_help
    from tests.golden import ROOT

    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    for args in ([], ["verify"], ["audit"]):
        shown = " ".join(CliRunner().invoke(app, [*args, "--help"], terminal_width=400).output.split())
        assert exit_status_help() in shown, args
    for name, page in generate().items():
        text = " ".join(page.replace("\\-", "-").replace("\\fB", "").replace("\\fR", "").split())
        section = text[text.index(".SH EXIT STATUS") : text.index(".SH ENVIRONMENT")]
        assert all(f".TP {s.code} {s.meaning}" in section for s in STATUSES), name
    assert all(f"`{s.code}`: {s.meaning}" in readme for s in STATUSES)
