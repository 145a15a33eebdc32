"""Broker liveness: is a broker holding this store (`lock`), and did the last run crash (`abort`)?

The broker takes an exclusive POSIX record lock (fcntl F_SETLK, byte 0, length 1) on `lock` while it
runs (`DefaultMessageStore.start`: `tryLock` on `lock`). `flock` does not see that lock, so we ask with
F_GETLK on a read-only descriptor: it reports a conflicting lock and its owner's PID without taking anything,
so read commands stay read-only. Writers take the lock themselves (`hold_store_lock`), exactly as the broker
would.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from formats.errors import MqtoolError

# struct flock on Linux: short l_type, short l_whence, off_t l_start, off_t l_len, pid_t l_pid (+ padding).
_FLOCK = "hhqqi4x"


@dataclass(frozen=True)
class Liveness:
    """What the `lock` and `abort` files say about a store."""

    lock_present: bool
    locked: bool
    holder_pid: int | None
    abort_present: bool

    @property
    def broker_running(self) -> bool:
        return self.locked

    @property
    def unclean_shutdown(self) -> bool:
        """`abort` left behind while no broker runs: the last run crashed."""
        return self.abort_present and not self.locked

    def describe(self) -> str:
        if self.locked:
            pid = f" (pid {self.holder_pid})" if self.holder_pid else ""
            return f"a broker holds the store lock{pid}: it is running"
        if self.abort_present:
            return "not running; `abort` is present: the last shutdown was not clean (crash)"
        return "not running; last shutdown was clean"


class BrokerRunningError(MqtoolError):
    """A write was refused because a broker (or another mqtool) holds the store lock."""


def lock_holder(lock_path: Path) -> int | None:
    """PID of the process holding the broker's lock on byte 0 of `lock_path`, or None if free.

    Returns -1 when a lock is held but the kernel does not name the owner (e.g. another host via NFS).
    """
    try:
        fd = os.open(lock_path, os.O_RDONLY | os.O_NONBLOCK)  # O_NONBLOCK: a FIFO here must not block
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise MqtoolError(f"cannot open the lock file: {exc.strerror}", str(lock_path)) from exc
    try:
        query = struct.pack(_FLOCK, fcntl.F_WRLCK, os.SEEK_SET, 0, 1, 0)
        answer = fcntl.fcntl(fd, fcntl.F_GETLK, query)
        l_type, _, _, _, pid = struct.unpack(_FLOCK, answer)
    except OSError as exc:
        raise MqtoolError(f"cannot query the lock: {exc.strerror}", str(lock_path)) from exc
    finally:
        os.close(fd)
    if l_type == fcntl.F_UNLCK:
        return None
    return pid if pid > 0 else -1


def check_liveness(root: Path) -> Liveness:
    lock = root / "lock"
    holder = lock_holder(lock)
    return Liveness(
        lock_present=lock.exists(),
        locked=holder is not None,
        holder_pid=holder if holder and holder > 0 else None,
        abort_present=(root / "abort").exists(),
    )


@contextlib.contextmanager
def hold_store_lock(root: Path) -> Iterator[int]:
    """Take the broker's store lock for the duration of a write, or refuse if someone holds it.

    Holding it makes a broker started meanwhile fail with "Lock failed,MQ already started". The
    descriptor is opened exactly once: closing any descriptor of the file would drop a POSIX lock.
    """
    lock = root / "lock"
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise MqtoolError(f"cannot open the lock file for writing: {exc.strerror}", str(lock)) from exc
    try:
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 0)
        except OSError as exc:
            if exc.errno in (errno.EAGAIN, errno.EACCES):
                holder = lock_holder(lock)
                who = f" (pid {holder})" if holder and holder > 0 else ""
                raise BrokerRunningError(
                    f"the store is locked{who}: a broker or another mqtool is using it; stop it first",
                    str(lock),
                ) from exc
            raise MqtoolError(f"cannot lock: {exc.strerror}", str(lock)) from exc
        yield fd
    finally:
        os.close(fd)
