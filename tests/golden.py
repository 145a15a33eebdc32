"""Paths of the golden stores under tests/data, a cached loader of their expect.json, and what the
tests that write share: store copies, snapshots, the lock holder, the CLI run as a new process."""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

GOLDEN = Path(__file__).parent / "data"
STORES = ("store-a", "store-c", "store-49a")


@functools.cache
def expect(store: str) -> dict:
    """The expect.json of a golden store (what the real Java code reads back)."""
    with open(GOLDEN / store / "expect.json", encoding="utf-8") as fh:
        return json.load(fh)


def store_path(store: str) -> Path:
    """The directory of a golden store."""
    return GOLDEN / store


# --- copies, snapshots, the CLI as a new process: what the tests that write share ------------------

ROOT = Path(__file__).resolve().parent.parent

# a script that holds the broker's store lock (lockf on `lock`, as the broker does) until stdin closes
LOCK_HOLDER = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 0)
print("held", flush=True)
sys.stdin.read()
"""


def copy_store(
    name: str, dest: Path, *, parts: tuple[str, ...] | None = None, drop: tuple[str, ...] = ()
) -> Path:
    """A copy of golden store `name` at `dest`: every file, or only the top-level `parts`; less `drop`."""
    src = store_path(name)
    if parts is None:
        shutil.copytree(src, dest)
    else:
        dest.mkdir(parents=True, exist_ok=True)
        for part in parts:
            if (src / part).is_dir():
                shutil.copytree(src / part, dest / part)
            elif (src / part).exists():
                shutil.copy2(src / part, dest / part)
    for name_ in drop:
        shutil.rmtree(dest / name_)
    return dest


def snapshot(root: Path) -> dict[str, bytes]:
    """The bytes of every file under `root`."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def snapshot_config(root: Path) -> dict[str, tuple[bytes, int]]:
    """Bytes and mtimes of every file under config/ and the store root."""
    return {
        str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted([*root.glob("config/*"), *root.glob("*")])
        if p.is_file()
    }


def child_env(**extra: str) -> dict[str, str]:
    """The environment of a child Python process: this checkout on PYTHONPATH, `extra` added."""
    return dict(os.environ, PYTHONPATH=str(ROOT), **extra)


def run_mqtool(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`python -m mqtool.cli ARGS` in a new process (`child_env(**env)`)."""
    return subprocess.run(
        [sys.executable, "-m", "mqtool.cli", *args],
        capture_output=True,
        text=True,
        env=child_env(**env),
        timeout=120,
    )


def run_main(args: list[str], capsys) -> tuple[int, str, str]:
    """`mqtool ARGS` through the console entry point (`mqtool.cli.main`: its one-line errors and exit
    statuses) in this process, output captured by pytest's `capsys`: (exit status, stdout, stderr)."""
    from mqtool.cli import main

    saved = sys.argv
    sys.argv = ["mqtool", *args]
    code = 0
    try:
        main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        sys.argv = saved
    out, err = capsys.readouterr()
    return code, out, err


def rebuild_staged(root: Path):
    """ConsumeQueues and index rebuilt from the commitlog into a staging directory (geometry from the
    files), as the broker's dispatcher would build them."""
    import time

    from formats.message.commitlog import DEFAULT_DELAY_LEVELS_MS
    from store.layout import existing_cq_file_size, existing_index_geometry
    from store.rebuild import build as rebuild

    return rebuild.build_staging(
        root,
        rebuild.prepare_staging(root),
        cq=True,
        index=True,
        cq_file_size=existing_cq_file_size(root),
        index_geometry=existing_index_geometry(root),
        delay_levels=DEFAULT_DELAY_LEVELS_MS,
        now_ms=lambda: int(time.time() * 1000),
    )


def rebuild_matches(root: Path) -> None:
    """The store passes the rebuild check: ConsumeQueues and index rebuilt from the commitlog are equal."""
    from store.rebuild import build as rebuild

    result = rebuild_staged(root)
    try:
        diffs = [d for d in rebuild.compare_consume_queues(root, result) if d.status != "same"]
        assert diffs == []
        index = rebuild.compare_index(root, result)
        assert index.status == "same", index.first_difference
    finally:
        shutil.rmtree(result.staging, ignore_errors=True)


def recover_like_the_broker(root: Path) -> None:
    """What the broker's abnormal recovery does for these tests: dispatch what is in the commitlog, then a
    clean shutdown removes `abort`."""
    from store.rebuild import build as rebuild

    rebuild.finish(root, rebuild_staged(root), ["consumequeue", "index"])
    (root / "abort").unlink(missing_ok=True)
