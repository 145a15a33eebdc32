"""Special files and oversized fixed-size files at the paths mqtool opens (issue 26, items 5 and 6).

Every file a command reads goes through `store.io.filereads`: a FIFO, a socket, a device, a directory or a
symbolic link loop where a store file should be is one error line naming it - never a hang - and a file
the broker reads only the head of (config/timercheck: TimerCheckpoint maps the first page) is read only
that far, whatever its size. Mutated copies of stores the real RocketMQ classes wrote.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from golden import child_env, copy_store, expect

from store.io.filereads import StoreFileError, file_size, read_file, read_head

TIMER_STORE = "store-timer-states"
LIMIT_AS = 2 << 30  # a command that reads a 100 GiB file whole fails under this


def mqtool(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """The CLI in a new process with a 2 GiB address-space limit; a hang fails the test by its timeout."""

    def limit() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (LIMIT_AS, LIMIT_AS))

    return subprocess.run(
        [sys.executable, "-m", "mqtool.cli", *args],
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=timeout,
        preexec_fn=limit,
    )


def one_error_naming(proc: subprocess.CompletedProcess[str], path: Path) -> str:
    errors = [line for line in proc.stderr.splitlines() if line.startswith("mqtool: error: ")]
    assert proc.returncode == 1, proc.stderr
    assert len(errors) == 1, proc.stderr
    assert str(path) in errors[0], errors[0]
    return errors[0]


# --- the one open path ----------------------------------------------------------------------------


def test_special_files_are_refused_by_kind(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    loop = tmp_path / "loop"
    loop.symlink_to("loop")
    directory = tmp_path / "dir"
    directory.mkdir()
    device = tmp_path / "zero"
    device.symlink_to("/dev/zero")
    sock_path = tmp_path / "sock"
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(sock_path))
    try:
        expected = {
            fifo: "a FIFO, not a regular file",
            sock_path: "a socket, not a regular file",
            device: "a character device, not a regular file",
            directory: "a directory, not a regular file",
            loop: "a symbolic link loop",
        }
        for path, words in expected.items():
            for read in (lambda p: read_head(p, 8), lambda p: read_file(p, 1 << 20), file_size):
                with pytest.raises(StoreFileError) as err:
                    read(path)
                assert words in str(err.value) and str(path) in str(err.value)
    finally:
        sock.close()


def test_an_oversized_file_is_refused_not_read(tmp_path):
    big = tmp_path / "big"
    with open(big, "wb") as fh:
        fh.truncate(100 << 30)
    assert read_head(big, 16) == bytes(16)
    with pytest.raises(StoreFileError, match=r"107374182400 bytes is larger than 1024: not read"):
        read_file(big, 1024, "config file")


# --- item 5: a FIFO at config/timercheck, and at every other path the commands open ----------------


@pytest.mark.parametrize(
    "argv",
    [
        ["info"],
        ["verify"],
        ["dump", "timerlog"],
        ["dump", "timercheck"],
        ["delay", "stats"],
        ["pop", "stats"],
        ["pop", "list"],
        ["delay", "list", "--timer"],
    ],
    ids=" ".join,
)
def test_fifo_at_timercheck_never_blocks(tmp_path, argv):
    # the POP commands read the timer wheel for checkpoints still in it: the store where POP ran
    root = copy_store("store-pop" if argv[0] == "pop" else TIMER_STORE, tmp_path / "s")
    check = root / "config" / "timercheck"
    check.unlink()
    os.mkfifo(check)
    proc = mqtool("-s", str(root), "-f", "json", *argv)
    if proc.returncode == 0:  # info and pop stats report the timer part as unreadable and go on
        assert "timercheck: cannot read: a FIFO, not a regular file" in proc.stdout, proc.stdout[-2000:]
    elif argv == ["verify"]:  # a problem of the report, exit 1
        report = json.loads(proc.stdout)
        assert any(
            p["file"] == "config/timercheck" and "a FIFO" in p["detail"] for p in report["problems"]
        ), report["problems"]
    else:
        assert "a FIFO, not a regular file" in one_error_naming(proc, check)


FIFO_PATHS = (
    "checkpoint",
    "config/consumerOffset.json",
    "config/timermetrics",
    "timerwheel",
    "timerlog/00000000000000000000",
    "commitlog/00000000000000000000",
    "index/{index}",
    "consumequeue/TimerTopic/0/00000000000000000000",
)


@pytest.mark.parametrize("rel", FIFO_PATHS)
def test_fifo_anywhere_is_named_not_waited_on(tmp_path, rel):
    root = copy_store(TIMER_STORE, tmp_path / "s")
    rel = rel.format(index=sorted(os.listdir(root / "index"))[0])
    (root / rel).unlink(missing_ok=True)
    os.mkfifo(root / rel)
    for argv in (["info"], ["verify"], ["dump", "config", "timermetrics"]):
        proc = mqtool("-s", str(root), "-f", "json", *argv)
        assert proc.returncode in (0, 1), proc.stderr
        assert "Traceback" not in proc.stderr
        errors = [line for line in proc.stderr.splitlines() if line.startswith("mqtool: error: ")]
        assert len(errors) <= 1, proc.stderr
        if errors:
            assert rel in errors[0], errors[0]


# --- item 6: a 100 GiB timercheck and timermetrics --------------------------------------------------


def test_huge_timercheck_reads_the_first_page_as_the_broker(tmp_path):
    root = copy_store(TIMER_STORE, tmp_path / "s")
    check = root / "config" / "timercheck"
    os.truncate(check, 100 << 30)  # the broker maps the first OS page: the fields read the same
    proc = mqtool("-s", str(root), "-f", "json", "dump", "timercheck")
    assert proc.returncode == 0, proc.stderr
    dumped = json.loads(proc.stdout)
    for name, value in expect(TIMER_STORE)["timercheck"].items():
        assert dumped[name] == value, name
    assert mqtool("-s", str(root), "-f", "json", "info").returncode == 0


def test_huge_timermetrics_loads_the_bak_as_file2string_does(tmp_path):
    """MixAll.file2String allocates (int) file.length() bytes: 100 GiB is (int) 0, an empty read, and
    ConfigManager.load falls back to the .bak."""
    root = copy_store(TIMER_STORE, tmp_path / "s")
    metrics = root / "config" / "timermetrics"
    os.truncate(metrics, 100 << 30)
    proc = mqtool("-s", str(root), "-f", "json", "dump", "config", "timermetrics")
    assert proc.returncode == 0, proc.stderr
    dumped = json.loads(proc.stdout)
    assert dumped["source"] == "bak"
    assert "107374182400 bytes" in dumped["reason"] and "= 0 bytes" in dumped["reason"]
    bak = json.loads((root / "config" / "timermetrics.bak").read_text())
    assert dumped["content"]["dataVersion"] == bak["dataVersion"]


def test_config_file_past_2gib_whose_length_wraps_negative_falls_back(tmp_path):
    """(int) (2**32 - 10) is -10: file2String throws NegativeArraySizeException, load() takes the .bak."""
    root = copy_store(TIMER_STORE, tmp_path / "s")
    metrics = root / "config" / "timermetrics"
    os.truncate(metrics, (1 << 32) - 10)
    proc = mqtool("-s", str(root), "-f", "json", "dump", "config", "timermetrics")
    assert proc.returncode == 0, proc.stderr
    dumped = json.loads(proc.stdout)
    assert dumped["source"] == "bak" and "NegativeArraySizeException" in dumped["reason"]


# --- found by the hostile fuzz families ----------------------------------------------------------------


def test_a_huge_rocksdb_options_file_is_named_not_an_abort(tmp_path):
    """RocksDB reads OPTIONS-* (and CURRENT, IDENTITY) whole: a 4 GiB one aborted the process with
    std::bad_alloc, past any handler. It is refused, named, before RocksDB opens the database."""
    root = copy_store("store-rocksdb", tmp_path / "s")
    options = next((root / "config" / "consumerOffsets").glob("OPTIONS-*"))
    os.truncate(options, 4 << 30)
    proc = mqtool("-s", str(root), "offsets", "show")
    assert "RocksDB reads this file whole" in one_error_naming(proc, options)


@pytest.mark.parametrize("where", ["commitlog", "consumequeue"])
def test_names_that_are_not_utf8_are_escaped_in_verify(tmp_path, where):
    """A commitlog entry or an LMQ queue directory whose name is not UTF-8: verify's problems table held
    the raw name and stopped with exit 70 (UnicodeEncodeError); the name is now escaped."""
    root = copy_store("store-lmq", tmp_path / "s")
    if where == "commitlog":
        (root / os.fsdecode(b"commitlog/\xff\xfe")).write_bytes(b"x" * 8)
    else:
        queue = root / os.fsdecode(b"consumequeue/%LMQ%\xff/0")
        queue.mkdir(parents=True)
        source = next((root / "consumequeue").glob("%LMQ%*/0/0*"))
        (queue / source.name).write_bytes(source.read_bytes())
    for fmt in ("json", "table"):
        proc = mqtool("-s", str(root), "-f", fmt, "verify")
        assert proc.returncode == 1 and "internal error" not in proc.stderr, proc.stderr
        if fmt == "json":  # (a table fits its columns to the terminal)
            assert "udcff" in proc.stdout  # the name, escaped


def test_fifo_topics_json_never_blocks_a_write_layout_check(tmp_path):
    """Every write first names the store's layout (store.kind), which reads topics.json for compaction
    topics: it read a FIFO there without the one open path, and the write hung before its plan."""
    root = copy_store("store-a", tmp_path / "s")
    topics = root / "config" / "topics.json"
    topics.unlink()
    os.mkfifo(topics)
    for argv in (
        ["offsets", "reset", "-g", "groupA", "-t", "TopicTest", "--to-earliest"],
        ["rebuild", "cq"],
        ["info"],
    ):
        proc = mqtool("-s", str(root), "-f", "json", *argv)  # a hang fails by the timeout
        assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr, proc.stderr
        if argv[0] != "rebuild":  # (the rebuild reads no config file)
            assert "a FIFO, not a regular file" in proc.stdout + proc.stderr
