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
