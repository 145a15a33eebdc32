"""Every output format streams: rows are written while later ones are still being produced, and a dump's
memory does not grow with the store (peak RSS of `dump commitlog` on stores of different sizes)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from datetime import UTC
from pathlib import Path

import pytest
from golden import ROOT, child_env

from mqtool.render.output import FORMATS, Column, RenderContext, emit_rows
from mqtool.render.pages import PAGE_ROWS

COLUMNS = [Column("n", kind="int"), Column("name", kind="name"), Column("at", kind="time")]


def rows(out: io.StringIO, total: int, seen: dict[int, str], *, big_after: int | None = None):
    """`total` rows; records what was written when each was asked for."""
    for i in range(total):
        seen[i] = out.getvalue()
        n = i * 1000 if big_after is not None and i >= big_after else i
        yield {"n": n, "name": f"row-{i}", "at": 1795261076000 + i, "ok": i % 2 == 0}


@pytest.mark.parametrize("fmt", FORMATS)
def test_rows_are_written_before_the_last_is_produced(fmt: str) -> None:
    out = io.StringIO()
    seen: dict[int, str] = {}
    ctx = RenderContext(fmt=fmt, zone=UTC, out=out, width=80)
    assert emit_rows(rows(out, 3 * PAGE_ROWS, seen), COLUMNS, ctx, title="T") == 3 * PAGE_ROWS
    assert seen[0] == ""
    first_page = seen[PAGE_ROWS + 1]
    assert "row-0" in first_page and f"row-{PAGE_ROWS - 1}" in first_page  # a page is out
    assert f"row-{PAGE_ROWS}" not in first_page  # the rest is not held back to be printed at the end
    assert f"row-{3 * PAGE_ROWS - 1}" in out.getvalue()


def test_json_is_one_array_written_element_by_element() -> None:
    out = io.StringIO()
    seen: dict[int, str] = {}
    emit_rows(rows(out, PAGE_ROWS + 3, seen), COLUMNS, RenderContext(fmt="json", zone=UTC, out=out))
    docs = [
        {"n": i, "name": f"row-{i}", "at": 1795261076000 + i, "ok": i % 2 == 0} for i in range(PAGE_ROWS + 3)
    ]
    assert out.getvalue() == json.dumps(docs, indent=2) + "\n"  # what scripts read before: the same text
    empty = io.StringIO()
    emit_rows(iter(()), COLUMNS, RenderContext(fmt="json", zone=UTC, out=empty))
    assert json.loads(empty.getvalue()) == []


@pytest.mark.parametrize("fmt", ["plain", "markdown"])
def test_text_pages_keep_the_first_pages_widths(fmt: str) -> None:
    out = io.StringIO()
    emit_rows(rows(out, 2 * PAGE_ROWS, {}), COLUMNS, RenderContext(fmt=fmt, zone=UTC, out=out))
    lines = [line for line in out.getvalue().splitlines() if "row-" in line]
    assert len(lines) == 2 * PAGE_ROWS
    assert len({len(line) for line in lines}) == 1  # page two is written in page one's columns


def test_a_page_that_does_not_fit_starts_a_new_block_with_its_header() -> None:
    out = io.StringIO()
    ctx = RenderContext(fmt="table", zone=UTC, out=out, width=80)
    emit_rows(rows(out, 2 * PAGE_ROWS, {}, big_after=PAGE_ROWS), COLUMNS, ctx)
    text = out.getvalue()
    assert text.count("name") == 2  # the header again over the wider numbers
    assert f"{(2 * PAGE_ROWS - 1) * 1000}" in text  # never cut


# --- peak memory of a whole dump --------------------------------------------------------------------

MEASURE = """
import resource, subprocess, sys
done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
assert done.returncode == 0, done.stderr.decode()
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)
"""


def peak_rss_mib(*args: str) -> int:
    """Peak resident set (MiB) of `mqtool ARGS`, measured by a fresh parent that runs nothing else."""
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, sys.executable, "-m", "mqtool.cli", *args],
        capture_output=True,
        text=True,
        env=child_env(COLUMNS="80"),
        timeout=900,
    )
    assert done.returncode == 0, done.stderr
    return int(done.stdout)


@pytest.fixture(scope="module")
def two_stores(tmp_path_factory) -> tuple[Path, Path]:
    """Stores of ~2 MiB and ~13 MiB of commitlog, each in one 64 MiB file (the walk within a file is
    what must not keep its pages)."""
    made = []
    for messages in (2_000, 15_000):
        path = tmp_path_factory.mktemp("rss") / f"s{messages}"
        done = subprocess.run(
            [sys.executable, "-m", "mqtool.cli", "sample", "create", str(path), "-n", str(messages)]
            + ["--file-size", str(64 << 20), "--producers", "2"],
            capture_output=True,
            text=True,
            env=child_env(),
            cwd=ROOT,
            timeout=600,
        )
        assert done.returncode == 0, done.stderr
        made.append(path)
    return made[0], made[1]


@pytest.mark.parametrize("fmt", ["table", "json", "csv"])
def test_dump_memory_does_not_grow_with_the_store(two_stores, fmt: str) -> None:
    """On the old code a table or JSON dump kept every record (and every page of the commitlog map):
    +70 MiB for the larger store here, and 12-21 GB on a 1.3 GB store. A 1 GiB store measured by hand:
    see the commit message."""
    from store.storedir import Store

    small, large = two_stores
    data = []
    for path in two_stores:
        with Store.open(path) as st:
            data.append(st.commitlog.max_offset)
    assert data[1] > 6 * data[0] and data[1] - data[0] > 10 << 20
    peak_small = peak_rss_mib("--store", str(small), "dump", "commitlog", "--format", fmt)
    peak_large = peak_rss_mib("--store", str(large), "dump", "commitlog", "--format", fmt)
    assert peak_large - peak_small < 8, (peak_small, peak_large)
    assert peak_large < 200
