"""The store's checkpoint file: read it (one reader, one set of guards) and raise its times crash-safely.

The broker's `StoreCheckpoint` (constructor: load, `flush`): a 4096-byte file whose times bound the
abnormal recovery (`getMinTimestamp`) and the index files kept after a crash (`getMinTimestampIndex`).
"""

from __future__ import annotations

import os
import stat
from dataclasses import replace
from pathlib import Path

from formats.checkpoint import CHECKPOINT_FILE_SIZE, StoreCheckpoint, decode_checkpoint, encode_checkpoint
from store.io.filewrites import create_sparse_file, pwrite_all
from store.log.mappedfile import StoreFileError


def checkpoint_path(root: Path) -> Path:
    return root / "checkpoint"


def read_checkpoint(root: Path) -> StoreCheckpoint | None:
    """The decoded checkpoint of the store at `root`, or None when the file is missing.

    Refuses a file that is not a regular file (a FIFO would block, a device never end), an unreadable
    one, and one that is not exactly 4096 bytes, each with the file named.
    """
    path = checkpoint_path(root)
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StoreFileError(f"cannot read: {exc.strerror}", str(path)) from exc
    if not stat.S_ISREG(mode):
        raise StoreFileError("cannot read: not a regular file", str(path))
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StoreFileError(f"cannot read: {exc.strerror}", str(path)) from exc
    return decode_checkpoint(data, file=str(path))


def write_checkpoint(
    root: Path,
    *,
    physic_msg_timestamp: int | None = None,
    logics_msg_timestamp: int | None = None,
    index_msg_timestamp: int | None = None,
    scratch: Path | None = None,
) -> StoreCheckpoint:
    """Raise the given checkpoint fields (never lower them) and write the 4096-byte file (fsync).

    A missing checkpoint is created, as the broker does at load, full-size.
    """
    path = checkpoint_path(root)
    current = read_checkpoint(root)
    base = current or StoreCheckpoint()
    new = replace(
        base,
        physic_msg_timestamp=max(base.physic_msg_timestamp, physic_msg_timestamp or 0),
        logics_msg_timestamp=max(base.logics_msg_timestamp, logics_msg_timestamp or 0),
        index_msg_timestamp=max(base.index_msg_timestamp, index_msg_timestamp or 0),
    )
    if current is not None and new == current:
        return current
    data = encode_checkpoint(new)
    if current is None:
        create_sparse_file(path, CHECKPOINT_FILE_SIZE, scratch or root, [(0, data)])
        return new
    fd = os.open(path, os.O_RDWR)
    try:
        pwrite_all(fd, data, 0)  # one page: all or nothing for a killed process
        os.fsync(fd)
    finally:
        os.close(fd)
    return new


__all__ = ["checkpoint_path", "read_checkpoint", "write_checkpoint"]
