"""Broker liveness: a lock held the way the JVM holds it (fcntl lockf on byte 0) is seen; flock is not."""

import fcntl
import os
import subprocess
import sys
from pathlib import Path

import pytest
from golden import LOCK_HOLDER as HOLDER

from store.liveness import BrokerRunningError, check_liveness, hold_store_lock, lock_holder


@pytest.fixture
def store_root(tmp_path: Path) -> Path:
    (tmp_path / "lock").write_bytes(b"lock")
    return tmp_path


def _hold(lock: Path) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(lock)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_free_store(store_root: Path) -> None:
    live = check_liveness(store_root)
    assert live.lock_present and not live.locked and not live.abort_present
    assert lock_holder(store_root / "lock") is None


def test_lock_held_like_the_jvm_is_seen_with_its_pid(store_root: Path) -> None:
    proc = _hold(store_root / "lock")
    try:
        live = check_liveness(store_root)
        assert live.locked and live.holder_pid == proc.pid
        with pytest.raises(BrokerRunningError), hold_store_lock(store_root):
            pass
    finally:
        proc.communicate("")
    assert not check_liveness(store_root).locked


def test_detection_is_read_only(store_root: Path) -> None:
    os.chmod(store_root / "lock", 0o444)
    before = (store_root / "lock").stat().st_mtime_ns
    assert not check_liveness(store_root).locked
    assert (store_root / "lock").stat().st_mtime_ns == before


def test_flock_does_not_count_as_a_broker(store_root: Path) -> None:
    # A BSD flock is independent of the broker's POSIX lock: it neither blocks nor is reported.
    with open(store_root / "lock", "rb") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        assert not check_liveness(store_root).locked


def test_our_own_lock_stops_a_second_writer(store_root: Path) -> None:
    with hold_store_lock(store_root):
        probe = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys;from store.liveness import *;from pathlib import Path;"
                "print(check_liveness(Path(sys.argv[1])).locked)",
                str(store_root),
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        assert probe.stdout.strip() == "True"


def test_abort_means_unclean_shutdown(store_root: Path) -> None:
    (store_root / "abort").write_text("1234")
    live = check_liveness(store_root)
    assert live.unclean_shutdown and "not clean" in live.describe()
