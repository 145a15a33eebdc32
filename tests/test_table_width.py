"""Tables in a real terminal (a pseudo-terminal of 80 and 200 columns): every line fits, a row's numbers and
times stay on its first line whole, columns are hidden by priority with a footer that says so, times drop
their shared date into the header; --wide shows every column, -x one field per line."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios

import pytest
from golden import child_env, run_mqtool, store_path
from rich.cells import cell_len

STORE = str(store_path("store-a"))
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def in_terminal(columns: int, *args: str) -> list[str]:
    """The lines `mqtool ARGS` prints to a terminal `columns` wide (colours stripped)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    env = child_env(TERM="xterm-256color")
    env.pop("COLUMNS", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "mqtool.cli", "--store", STORE, *args],
        stdin=slave,
        stdout=slave,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    os.close(slave)
    chunks = []
    while True:
        ready, _, _ = select.select([master], [], [], 60)
        if not ready:
            break
        try:
            data = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    assert proc.wait(timeout=60) == 0
    text = ANSI.sub("", b"".join(chunks).decode()).replace("\r\n", "\n")
    return text.splitlines()


def machine(*args: str) -> list[dict]:
    done = run_mqtool("--store", STORE, *args, "--format", "json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def row_line(lines: list[str], *values: str, on: str = "") -> str:
    """The one line (among those holding `on`) that holds these cell texts in this order, each whole
    (between column gaps)."""
    pattern = re.compile(r"(?:^|\s)" + r"\s+(?:\S.*?\s+)??".join(re.escape(v) for v in values) + r"(?:\s|$)")
    found = [line for line in lines if on in line and pattern.search(line)]
    assert len(found) == 1, (values, found)
    return found[0]


def fits(lines: list[str], columns: int) -> None:
    too_wide = [line for line in lines if cell_len(line) > columns]
    assert not too_wide, too_wide


KEY_QUERY = ("query", "key", "TopicTest", "shared-key", "-m", "3")  # several rows: a table (one is a record)


@pytest.mark.parametrize("columns", [80, 200])
def test_query_key_rows_fit_with_numbers_and_time_whole(columns: int) -> None:
    lines = in_terminal(columns, *KEY_QUERY)
    fits(lines, columns)
    docs = machine(*KEY_QUERY)
    assert len(docs) == 3
    for doc in docs:
        ms = f"{doc['storeTimestamp'] % 1000:03d}"
        row = row_line(
            lines, str(doc["physicalOffset"]), doc["topic"], str(doc["queueId"]), str(doc["queueOffset"])
        )
        assert re.search(r"\b\d\d:\d\d:\d\d\." + ms + r"\b", row), row  # the time of day whole
    first = row_line(lines, str(docs[0]["physicalOffset"]), docs[0]["topic"])
    header = " ".join(lines[: lines.index(first)])
    assert "storeTime" in header and "2026-11-21)" in header  # the shared date went to the header
    hidden = [line for line in lines if "hidden to fit the terminal" in line]
    if columns == 80:
        assert hidden and "--wide" in " ".join(lines[lines.index(hidden[0]) :])
        assert not any(doc["uniqKey"] in line for doc in docs for line in lines)  # hidden or abbreviated


@pytest.mark.parametrize("columns", [80, 200])
def test_offsets_show_rows_fit(columns: int) -> None:
    lines = in_terminal(columns, "offsets", "show")
    fits(lines, columns)
    for r in machine("offsets", "show"):
        if r["consumerOffset"] is None:
            continue
        numbers = (str(r["queueId"]), str(r["consumerOffset"]), str(r["maxOffset"]), str(r["lag"]))
        row = row_line(lines, *numbers, on=r["topic"][:3])
        consumed = r["lastConsumedTimestamp"]
        if consumed is not None:  # the time of day whole on the row's line (the date is in the header)
            ms = f"{consumed % 1000:03d}"
            assert re.search(r"\b\d\d:\d\d:\d\d\." + ms + r"\b", row), row


@pytest.mark.parametrize("columns", [80, 200])
def test_offsets_reset_plan_fits(columns: int) -> None:
    args = ["offsets", "reset", "-g", "groupA", "-t", "TopicTest", "--to-time", "2026-11-21T11:38:00Z"]
    lines = in_terminal(columns, *args)
    fits([line for line in lines if not line.startswith(("Note:", "Dry run:"))], columns)
    for r in machine(*args):
        row = row_line(lines, "TopicTest", str(r["queueId"]), str(r["currentOffset"]), str(r["newOffset"]))
        stored = r["newOffsetStoreTimestamp"]
        if stored is not None:
            assert re.search(r"\b11:38:0\d\.\d{3}\b", row), row  # the time whole, on the row's line


@pytest.mark.parametrize("columns", [80, 200])
def test_dump_commitlog_rows_fit(columns: int) -> None:
    lines = in_terminal(columns, "dump", "commitlog", "-n", "30")
    fits(lines, columns)
    for r in machine("dump", "commitlog", "-n", "30"):
        if r["kind"] == "message":
            row_line(lines, str(r["physicalOffset"]), "message", str(r["totalSize"]))


def test_wide_shows_every_column_past_the_edge() -> None:
    lines = in_terminal(80, *KEY_QUERY, "--wide")
    assert not any("hidden" in line for line in lines)
    assert all(any(doc["uniqKey"] in line for line in lines) for doc in machine(*KEY_QUERY))
    assert any(cell_len(line) > 80 for line in lines)


def test_record_view_is_one_field_per_line() -> None:
    lines = in_terminal(80, "query", "id", "C0A8010100002A9F000000000000010E", "-x")
    assert lines[1].startswith("-[ RECORD 1 ]")
    pairs = [line.split(" | ", 1) for line in lines[2:] if " | " in line]
    fields = {label.strip(): value for label, value in pairs}
    assert len({len(label) for label, _ in pairs}) == 1  # labels padded to one width
    (doc,) = machine("query", "id", "C0A8010100002A9F000000000000010E")
    assert fields["CommitLog Offset"] == str(doc["physicalOffset"])
    assert fields["Store Timestamp (UTC)"] == "2026-11-21 11:37:56.048"
    assert fields["MsgId (UNIQ_KEY)"] == doc["uniqKey"]


def test_abbreviate_middle_keeps_both_ends() -> None:
    from mqtool.render.fit import abbreviate_middle

    uniq = "FD0000000000000000000000000000024BA95FFD2B27697E2A4E0001"
    short = abbreviate_middle(uniq, 15)
    assert (short, cell_len(short)) == ("FD00000…A4E0001", 15)
    assert abbreviate_middle("short", 15) == "short"
    wide = abbreviate_middle("主题主题主题主题主题", 9)  # two cells per character
    assert cell_len(wide) <= 9 and wide.startswith("主题") and wide.endswith("主题")
