"""Run every read command on corrupted copies of a store, bounded in time and memory, and judge the ends.

* `prepare_bases` makes the pristine stores the corruptions start from: small sample stores written by
  `mqtool sample create` (5.x and 4.x) and copies of the golden stores written by the real broker
  (without their expect.json).
* `read_commands` lists the read commands (info, every dump, every query, offsets/consume-mode show, delay
  list/stats, txn list, verify, and the dry run of every write command) that read a given file type.
* `run_cli` runs one command in-process through `mqtool.cli.main` - the console entry itself, with its
  one-line error handler - with argv patched and the click command built once (typer rebuilds it on every
  call otherwise), a SIGALRM time bound, and stdout/stderr captured as real UTF-8 streams.
  `run_subprocess` runs it as a new `python -m mqtool.cli` process with RLIMIT_AS and a timeout.
* `judge` accepts exit 0, or exit 1 with exactly one `mqtool: error:` line naming a file (notes and
  warnings allowed besides); anything else - exit 70 (internal error), a traceback, a usage error, more
  than one error line, a stray stderr line, a timeout, running out of memory - is a failure.
* `Fuzzer` is a pool of forked worker processes. Each runs with RLIMIT_AS (its current address space plus
  a budget, so a size field trusted to allocate shows up as MemoryError), drops root privileges to
  `nobody` when it has them (so chmod-based "permission denied" is real), copies a base, applies a
  corruption, runs the commands and sends back the outcomes; the parent kills a worker that overruns
  its wall-clock bound (a hang in C code the alarm cannot interrupt) and counts that as a failure.
  Instead of copying a base whole (a timer store holds a 38 MB wheel), a worker hard-links the files of
  a read-only copy of it (`link_sources`, `link_store`), and each file a corruption changes in place gets
  a copy of its own first (`corrupt`); the commands run here only read. After an input nothing may have
  appeared in the store (a read) or beside it, nor in the worker's TMPDIR where dry runs stage
  (`escaped`: a path built from a hostile name that climbed out, a staging directory left behind).
* A write family (`corrupt.WRITE_KINDS`: `unwritable`) runs its `--execute` command on a writable copy of
  its own (`execute_writes`); on exit 1 the store must be byte for byte as it was, the corrupted paths
  aside: the command refused before its first byte.
* For the other robustness tests (tests/test_readonly.py, test_broker_lock.py, test_concurrency.py,
  test_disk_errors.py): `write_commands` (every `--execute` path with arguments that change a sample
  store), `snapshot` (a store tree's bytes and mtimes), `in_private_mounts` / `can_mount` (tmpfs and
  read-only mounts in a forked child's own mount namespace, so they vanish with it).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import multiprocessing
import os
import random
import re
import resource
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from pathlib import Path

from .corrupt import (
    HOSTILE_KINDS,
    KINDS,
    POP_KINDS,
    ROCKSDB_KIND,
    TIMER_KINDS,
    TRACE_KINDS,
    WRITE_KINDS,
    Corruption,
    StoreLayout,
    apply_op,
    map_store,
    restore_permissions,
    rocksdb_dirs,
)

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "data"
NOBODY = 65534

# Small stores written through mqtool's broker write path: fast enough for thousands of inputs.
SAMPLES: dict[str, list[str]] = {
    "tiny5": ["-n", "60", "--seed", "11", "--file-size", "16384", "--cq-file-size", "200",
              "--max-hash-slot-num", "16", "--max-index-num", "40"],
    "tiny4": ["-n", "50", "--seed", "12", "--version", "4", "--file-size", "16384", "--cq-file-size", "120",
              "--max-hash-slot-num", "8", "--max-index-num", "30"],
    "small5": ["-n", "300", "--seed", "13", "--file-size", "65536", "--cq-file-size", "600",
               "--max-hash-slot-num", "64", "--max-index-num", "100"],
    # DLedger commitlogs (sample create --dledger): the dledger corruptions
    "dtiny5": ["-n", "60", "--seed", "14", "--file-size", "16384", "--cq-file-size", "200",
               "--max-hash-slot-num", "16", "--max-index-num", "40", "--dledger", "1"],
    "dtiny4": ["-n", "50", "--seed", "15", "--version", "4", "--file-size", "16384", "--cq-file-size", "120",
               "--max-hash-slot-num", "8", "--max-index-num", "30", "--dledger", "1"],
}  # fmt: skip
GOLDEN_STORES = (
    "store-a", "store-c", "store-49a", "store-timer-states", "store-timer5", "store-rocksdb",
    "store-rocksdb-v2", "store-pop", "store-dledger-mixed", "store-dledger-crash", "store-trace-b",
    "store-compaction",
)  # fmt: skip
GOLDEN_SKIP = ("expect.json", "README.md")
FORMATS = ("json", "plain", "table", "jsonl", "csv", "markdown", "record")
# commands that print several tables refuse --format csv before reading anything (a usage error, tested
# in tests/test_output_formats.py): a task drawn with csv runs them in json, so the corruption is still read
CSV_REFUSED = ("info", "rebuild", "delay stats", "delay replay", "pop stats", "txn commit", "txn rollback",
               "txn resolve", "audit", "trace", "dlq resend")  # fmt: skip


def format_for(fmt: str, argv: list[str]) -> str:
    """The --format the command `argv` runs with in a task of format `fmt`: json where it refuses fmt."""
    refuses = argv[0] in CSV_REFUSED or " ".join(argv[:2]) in CSV_REFUSED
    return "json" if fmt == "csv" and refuses else fmt


# --- bases and their targets ------------------------------------------------------------------------


@dataclass(frozen=True)
class Targets:
    """Arguments that name real things of a pristine store (a topic, queue, key, ids, times, a group)."""

    topic: str = "TopicTest"
    queue: int = 0
    key: str = "none"
    uniq: str = "00" * 16
    offset_id: str = "00" * 16
    begin: int = 0
    end: int = 0
    group: str = "groupA"
    index_file: str | None = None


@dataclass
class Base:
    name: str
    path: Path
    targets: Targets
    layout: StoreLayout
    golden: bool = False


def _find_targets(root: Path) -> Targets:
    from formats.message.commitlog import Message
    from store.storedir import Store

    with Store.open(root) as st:  # a DLedger store's messages too
        msgs = [r for r in st.commitlog.iter_records() if isinstance(r, Message)]
    topic_msgs = [m for m in msgs if m.topic == "TopicTest"] or msgs
    with_key = [m for m in topic_msgs if m.keys] or topic_msgs
    m = with_key[len(with_key) // 2]
    offsets_file = root / "config" / "consumerOffset.json"
    offsets = offsets_file.read_text(encoding="utf-8") if offsets_file.is_file() else ""
    groups = re.findall(r'"[^"@]+@([^"]+)"', offsets)
    group = "groupA" if "groupA" in groups else (groups[0] if groups else "groupA")
    index = sorted(p.name for p in (root / "index").iterdir()) if (root / "index").is_dir() else []
    return Targets(
        topic=m.topic,
        queue=m.queue_id,
        key=(m.keys or "none").split(" ")[0],
        uniq=m.uniq_key or "00" * 16,
        offset_id=m.offset_msg_id,
        begin=min(x.store_timestamp for x in msgs),
        end=max(x.store_timestamp for x in msgs),
        group=group,
        index_file=index[0] if index else None,
    )


def _open_tree(path: Path) -> None:
    """World-readable (so a worker that dropped its privileges can copy it)."""
    os.chmod(path, 0o755)
    for dirpath, dirs, files in os.walk(path):
        for d in dirs:
            os.chmod(Path(dirpath) / d, 0o755)
        for f in files:
            os.chmod(Path(dirpath) / f, 0o644)


def prepare_bases(directory: Path, names: Iterable[str]) -> list[Base]:
    """Create (samples) or copy (golden stores) the named pristine stores under `directory`."""
    from mqtool.sample.create import create_sample
    from mqtool.sample.options import SampleOptions

    bases = []
    for name in names:
        path = directory / name
        if not path.exists():
            if name in SAMPLES:
                args = SAMPLES[name]
                opts = dict(zip(args[::2], args[1::2], strict=True))
                create_sample(
                    SampleOptions(
                        path,
                        messages=int(opts["-n"]),
                        seed=int(opts["--seed"]),
                        file_size=int(opts["--file-size"]),
                        cq_file_size=int(opts["--cq-file-size"]),
                        hash_slot_num=int(opts["--max-hash-slot-num"]),
                        index_num=int(opts["--max-index-num"]),
                        version=int(opts.get("--version", 5)),
                        dledger=opts.get("--dledger") == "1",
                    )
                )
            elif (GOLDEN / name / "store.tar.gz").exists():  # the DLedger fixtures (holes kept)
                import tarfile

                with tarfile.open(GOLDEN / name / "store.tar.gz") as tar:
                    tar.extractall(directory, filter="data")
            else:
                shutil.copytree(GOLDEN / name, path, ignore=shutil.ignore_patterns(*GOLDEN_SKIP))
            _open_tree(path)
        geometry = None
        if name in SAMPLES:
            opts = dict(zip(SAMPLES[name][::2], SAMPLES[name][1::2], strict=True))
            geometry = (int(opts["--max-hash-slot-num"]), int(opts["--max-index-num"]))
        layout = map_store(path, geometry)
        bases.append(Base(name, path, _find_targets(path), layout, golden=name in GOLDEN_STORES))
    return bases


# --- the read commands ----------------------------------------------------------------------------

ALL = frozenset(KINDS)
CL, CQ, IX, CP, CFG, LAY, TL, TW, TC, RDB, POP, DL, TRACE, COMP = KINDS[: len(KINDS) - len(HOSTILE_KINDS)]
TIMER = frozenset(TIMER_KINDS)  # every timer command opens the timerlog, the wheel and timercheck
POP_READERS = frozenset(POP_KINDS)  # the revive topic's records and the revive group's offsets
TRACE_READERS = frozenset(TRACE_KINDS)  # the trace topic's records


@dataclass(frozen=True)
class Command:
    name: str
    reads: frozenset[str]
    argv: object  # (Targets, focus) -> list[str]


def _queue(t: Targets, kind: str, focus: str) -> tuple[str, str]:
    if kind == CQ and "/" in focus:
        topic, queue = focus.rsplit("/", 1)
        return topic, queue
    return t.topic, str(t.queue)


def _compaction_queue(kind: str, focus: str) -> tuple[str, str]:
    """The compaction queue a compaction corruption touched (else store-compaction's CompactTopicA/0)."""
    if kind == COMP and "/" in focus:
        topic, queue = focus.rsplit("/", 1)
        return topic, queue
    return "CompactTopicA", "0"


def _config_name(kind: str, focus: str) -> str:
    return focus if kind == CFG and focus else "consumerOffset.json"


COMMANDS: tuple[Command, ...] = (
    Command("info", ALL, lambda t, k, f: ["info"]),
    Command("dump commitlog", frozenset({CL, LAY}), lambda t, k, f: ["dump", "commitlog"]),
    Command(
        "dump commitlog --topic --body",
        frozenset({CL}),
        lambda t, k, f: ["dump", "commitlog", "-t", t.topic, "--body"],
    ),
    Command("dump cq", frozenset({CQ, LAY}), lambda t, k, f: ["dump", "cq", *_queue(t, k, f)]),
    Command(
        "dump cq (compaction)",
        frozenset({COMP}),
        lambda t, k, f: ["dump", "cq", *_compaction_queue(k, f)],
    ),
    Command(
        "query offset (compaction)",
        frozenset({COMP}),
        lambda t, k, f: ["query", "offset", *_compaction_queue(k, f), "0", "--count", "60"],
    ),
    Command(
        "query time (compaction)",
        frozenset({COMP}),
        lambda t, k, f: ["query", "time", _compaction_queue(k, f)[0], "-b", "0", "-e", "now", "--max", "0"],
    ),
    Command(
        "dump compactionlog",
        frozenset({COMP}),
        lambda t, k, f: ["dump", "compactionlog", *_compaction_queue(k, f), "--body"],
    ),
    # the dry run plans from every compaction log, damaged ones included, and must write nothing
    Command("rebuild compaction-cq", frozenset({COMP}), lambda t, k, f: ["rebuild", "compaction-cq"]),
    # the two-store commands: the corrupted copy beside the pristine base ("<base>"), both read only
    Command(
        "replicas diff",
        frozenset({CL, CQ, IX, CP, CFG, LAY}),  # the queues, index and checkpoint are compared too
        lambda t, k, f: ["replicas", "diff", "<store>", "<base>"],
    ),
    Command(
        "replicas salvage",
        frozenset({CL, CFG, LAY}),
        lambda t, k, f: ["replicas", "salvage", "--from", "<base>", "--into", "<store>"],
    ),
    Command(
        "offsets merge",
        frozenset({CL, CFG, LAY}),
        lambda t, k, f: ["offsets", "merge", "<store>", "<base>", "--into", "<store>"],
    ),
    Command("dump index", frozenset({IX, LAY}), lambda t, k, f: ["dump", "index"]),
    Command(
        "dump index --entries",
        frozenset({IX, LAY}),
        lambda t, k, f: ["dump", "index", "--entries", "--", (f if k == IX and f else t.index_file) or "x"],
    ),
    Command("dump checkpoint", frozenset({CP, LAY}), lambda t, k, f: ["dump", "checkpoint"]),
    Command("dump config", frozenset({CFG, LAY}), lambda t, k, f: ["dump", "config", _config_name(k, f)]),
    Command("dump timerlog", TIMER, lambda t, k, f: ["dump", "timerlog"]),
    Command("dump timerwheel", TIMER, lambda t, k, f: ["dump", "timerwheel"]),
    Command("dump timercheck", TIMER, lambda t, k, f: ["dump", "timercheck"]),
    Command(
        "dump config --bak", frozenset({CFG}), lambda t, k, f: ["dump", "config", _config_name(k, f), "--bak"]
    ),
    Command("query key", frozenset({CL, IX, LAY}), lambda t, k, f: ["query", "key", t.topic, t.key]),
    Command(
        "query key --scan", frozenset({CL, IX}), lambda t, k, f: ["query", "key", t.topic, t.key, "--scan"]
    ),
    Command("query id (offset id)", frozenset({CL, LAY}), lambda t, k, f: ["query", "id", t.offset_id]),
    Command("query id (unique key)", frozenset({CL, IX, CQ, LAY}), lambda t, k, f: ["query", "id", t.uniq]),
    Command(
        "query offset",
        frozenset({CL, CQ, LAY}),
        lambda t, k, f: ["query", "offset", *_queue(t, k, f), "0", "--count", "40"],
    ),
    Command(
        "query time",
        frozenset({CL, CQ, LAY}),
        lambda t, k, f: [
            "query",
            "time",
            _queue(t, k, f)[0],
            "--begin",
            str(t.begin),
            "--end",
            str(t.end),
            "--max",
            "0",
        ],  # fmt: skip
    ),
    Command("offsets show", frozenset({CL, CQ, CFG, LAY, POP}), lambda t, k, f: ["offsets", "show"]),
    Command(
        "consume-mode show", frozenset({CL, CQ, CFG, LAY, POP}), lambda t, k, f: ["consume-mode", "show"]
    ),
    Command(
        "pop list",
        frozenset({CL, CQ, CFG, LAY, POP, *TIMER}),
        lambda t, k, f: [
            "pop",
            "list",
            "--state",
            "in-flight",
            "--state",
            "overdue",
            "--state",
            "revived",
            "--state",
            "acked",
            "--now",
            str(t.end),
        ],
    ),  # fmt: skip
    Command(
        "pop stats",
        frozenset({CL, CQ, CFG, LAY, POP, *TIMER}),
        lambda t, k, f: ["pop", "stats", "--now", str(t.end)],
    ),
    Command(
        "delay list", frozenset({CL, CQ, CFG, LAY}), lambda t, k, f: ["delay", "list", "--now", str(t.end)]
    ),
    Command(
        "delay list --timer",
        frozenset({CL, LAY, *TIMER}),
        lambda t, k, f: ["delay", "list", "--timer", "--now", str(t.end)],
    ),
    Command(
        "delay stats",
        frozenset({CL, CQ, CFG, LAY, *TIMER}),
        lambda t, k, f: ["delay", "stats", "--now", str(t.end)],
    ),
    Command("txn list", frozenset({CL, CQ, CFG, LAY}), lambda t, k, f: ["txn", "list", "--now", str(t.end)]),
    Command("dump trace", frozenset({CL, CQ, CFG, LAY, TRACE}), lambda t, k, f: ["dump", "trace"]),
    Command(
        "trace",
        frozenset({CL, CQ, IX, CFG, LAY, POP, TRACE, *TIMER}),
        lambda t, k, f: ["trace", t.uniq, "--workers", "1", "--now", str(t.end)],
    ),
    Command("verify", ALL, lambda t, k, f: ["verify"]),
    Command("rebuild (dry run)", frozenset({CL, CQ, IX, CP, LAY}), lambda t, k, f: ["rebuild", "all"]),
    Command(
        "rebuild --prune-orphans (dry run)",
        frozenset({CL, CQ, CP, CFG, LAY}),
        lambda t, k, f: ["rebuild", "cq", "--prune-orphans"],
    ),
    Command(
        "offsets reset (dry run)",
        frozenset({CL, CQ, CFG, LAY, POP}),
        lambda t, k, f: [
            "offsets",
            "reset",
            "-g",
            t.group,
            "--all-topics",
            "--to-time",
            str((t.begin + t.end) // 2),
        ],
    ),
    Command(
        "offsets clone (dry run)",
        frozenset({CL, CQ, CFG, LAY}),
        lambda t, k, f: [
            "offsets",
            "clone",
            "--from-group",
            t.group,
            "--to-group",
            "GID_fuzz",
            "--allow-new-group",
        ],
    ),
    Command("offsets prune (dry run)", frozenset({CQ, CFG, LAY}), lambda t, k, f: ["offsets", "prune"]),
    Command(
        "topic update (dry run)",
        frozenset({CQ, CFG, LAY}),
        lambda t, k, f: ["topic", "update", t.topic, "--write-queues", "1"],
    ),
    Command(
        "topic delete (dry run)", frozenset({CQ, CFG, LAY}), lambda t, k, f: ["topic", "delete", t.topic]
    ),
    Command(
        "group update (dry run)",
        frozenset({CFG, LAY}),
        lambda t, k, f: ["group", "update", t.group, "--retry-max-times", "3"],
    ),
    Command(
        "group delete (dry run)",
        frozenset({CFG, LAY}),
        lambda t, k, f: ["group", "delete", t.group, "--clean-offset"],
    ),
    Command("dlq list", frozenset({CL, CQ, LAY}), lambda t, k, f: ["dlq", "list"]),
    Command("dlq stats", frozenset({CL, CQ, LAY}), lambda t, k, f: ["dlq", "stats", "--now", str(t.end)]),
    Command(
        "dlq resend (dry run)",
        frozenset({CL, CQ, CFG, LAY}),
        lambda t, k, f: ["dlq", "resend", "-g", t.group, "--key", t.key, "--begin", str(t.begin)],
    ),
    Command(
        "dlq resend --to origin (dry run)",
        frozenset({CL, CQ, CFG, LAY}),
        lambda t, k, f: ["dlq", "resend", "-g", t.group, "--msg-id", t.uniq, "--to", "origin"],
    ),
    Command(
        "consume-mode set (dry run)",
        frozenset({CQ, CFG, LAY}),
        lambda t, k, f: ["consume-mode", "set", "-t", t.topic, "-g", t.group, "--mode", "POP"],
    ),
    Command(
        "delay replay (dry run)",
        frozenset({CL, CQ, IX, CP, CFG, LAY}),
        lambda t, k, f: ["delay", "replay", "--now", str(t.end + 10**8)],
    ),
    Command(
        "delay replay --timer (dry run)",
        TIMER,
        lambda t, k, f: ["delay", "replay", "--timer", "--now", str(t.end + 10**8)],
    ),
    Command(
        "txn resolve (dry run)",
        frozenset({CL, CQ, IX, CP, CFG, LAY}),
        lambda t, k, f: ["txn", "resolve", "--policy", "commit", "--now", str(t.end + 10**8)],
    ),
)


# on a RocksDB-mode store whatever reads consume queues or config files reads the RocksDB databases
COMMANDS = tuple(
    Command(c.name, c.reads | {RDB} if c.reads & {CQ, CFG} else c.reads, c.argv) for c in COMMANDS
)
# on a DLedger store whatever reads the commitlog reads DLedger's files
COMMANDS = tuple(Command(c.name, c.reads | {DL} if CL in c.reads else c.reads, c.argv) for c in COMMANDS)


def read_commands(targets: Targets, kind: str, focus: str = "") -> list[tuple[str, list[str]]]:
    """(name, argv after the global options) of every read command that reads file type `kind`."""
    return [(c.name, c.argv(targets, kind, focus)) for c in COMMANDS if kind in c.reads]  # type: ignore[operator]


def write_commands(base: Base) -> list[tuple[str, list[str]]]:
    """Every `--execute` path, with arguments that change the pristine sample store (dry run: drop the
    trailing --execute); `dlq resend` only on a store with a dead-letter queue (store-a, store-trace-b:
    the samples' few messages rarely die)."""
    t = base.targets
    later = str(t.end + 10**8)
    listing = run_cli(
        ["-s", str(base.path), "-f", "json", "txn", "list", "--state", "pending", "--now", later]
    )
    import json

    halves = [str(row["halfQueueOffset"]) for row in json.loads(listing.stdout or "[]")] or ["0"]
    queues = base.path / "consumequeue"
    dlq_groups = (
        sorted(p.name[5:] for p in queues.iterdir() if p.name.startswith("%DLQ%")) if queues.is_dir() else []
    )
    return [
        ("offsets reset", ["offsets", "reset", "-g", t.group, "-t", t.topic, "--to-earliest", "--execute"]),
        (
            "offsets clone",
            [
                "offsets",
                "clone",
                "--from-group",
                t.group,
                "--to-group",
                "GID_fuzz",
                "--allow-new-group",
                "--execute",
            ],
        ),
        (
            "consume-mode set",
            ["consume-mode", "set", "-t", t.topic, "-g", t.group, "--mode", "POP", "--execute"],
        ),
        ("rebuild", ["rebuild", "all", "--max-index-num", "35", "--execute"]),
        # the index geometry changed too: a base has no orphans, and a write must change the store
        (
            "rebuild --prune-orphans",
            ["rebuild", "all", "--prune-orphans", "--max-index-num", "35", "--execute"],
        ),
        ("topic update", ["topic", "update", "FuzzTopic", "--read-queues", "2", "--execute"]),
        ("topic delete", ["topic", "delete", t.topic, "--execute"]),
        ("group update", ["group", "update", "GID_fuzz", "--retry-max-times", "3", "--execute"]),
        ("group delete", ["group", "delete", t.group, "--clean-offset", "--execute"]),
        ("delay replay", ["delay", "replay", "--now", later, "--execute"]),
        ("txn commit", ["txn", "commit", halves[0], "--now", later, "--execute"]),
        ("txn rollback", ["txn", "rollback", halves[0], "--now", later, "--execute"]),
        ("txn resolve", ["txn", "resolve", "--policy", "commit", "--now", later, "--execute"]),
        *([("dlq resend", ["dlq", "resend", "-g", dlq_groups[0], "--execute"])] if dlq_groups else []),
        *(
            [("delay replay --timer", ["delay", "replay", "--timer", "--now", later, "--execute"])]
            if base.layout.timer_units
            else []
        ),
    ]


def file_digest(path: Path) -> bytes:
    """A digest of a file's size and the bytes of its data extents (with their offsets): a sparse mapped
    file of 1 GiB (a DLedger data file) costs what it holds, not its size, and is never held in memory."""
    h = hashlib.blake2b(digest_size=20)
    with open(path, "rb", buffering=0) as f:
        fd = f.fileno()
        size = os.fstat(fd).st_size
        h.update(size.to_bytes(8, "little"))
        pos = 0
        while pos < size:
            try:
                start = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError as exc:
                if exc.errno == errno.ENXIO:  # only a hole is left
                    break
                raise
            end = os.lseek(fd, start, os.SEEK_HOLE)
            h.update(start.to_bytes(8, "little"))
            f.seek(start)
            while start < end:
                chunk = f.read(min(1 << 20, end - start))
                if not chunk:
                    break
                h.update(chunk)
                start += len(chunk)
            pos = end
    return h.digest()


def snapshot(root: Path) -> dict[str, tuple[bytes, int] | str]:
    """Every file's digest (`file_digest`) and mtime, every directory, every symlink (its target), and what
    any other entry is (a FIFO is never opened) under root."""
    out: dict[str, tuple[bytes, int] | str] = {}
    for dirpath, dirs, files in os.walk(root):
        for name in dirs:
            out[str(Path(dirpath, name).relative_to(root)) + "/"] = "dir"
        for name in files:
            p = Path(dirpath, name)
            rel = str(p.relative_to(root))
            st = p.lstat()
            if stat.S_ISLNK(st.st_mode):
                out[rel] = f"-> {os.readlink(p)}"
            elif stat.S_ISREG(st.st_mode):
                out[rel] = (file_digest(p), st.st_mtime_ns)
            else:
                out[rel] = f"mode {stat.S_IFMT(st.st_mode):o}"
    return out


# --- running one command ----------------------------------------------------------------------------


@dataclass
class Outcome:
    name: str
    argv: list[str]
    code: int | None
    stdout: str
    stderr: str
    seconds: float
    crash: str | None = None  # timeout, an exception that escaped main(), a dead worker
    trace: str = ""  # the traceback main() turned into an "internal error" line


class _Timeout(BaseException):
    """Raised by the alarm: a BaseException, so the CLI's `except Exception` cannot swallow it."""


_CLICK: list[object] = []


def click_command():
    """The click command typer builds for `mqtool.cli.app`, built once."""
    if not _CLICK:
        import typer.main

        import mqtool.cli

        _CLICK.append(typer.main.get_command(mqtool.cli.app))
    return _CLICK[0]


def _stream(errors: str) -> io.TextIOWrapper:
    return io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors=errors, write_through=True)


def _text(stream: io.TextIOWrapper) -> str:
    stream.flush()
    return stream.buffer.getvalue().decode("utf-8", "replace")  # type: ignore[attr-defined]


def _on_alarm(_signum, _frame) -> None:
    raise _Timeout()


def run_cli(argv: list[str], timeout: float = 30.0, name: str = "") -> Outcome:
    """`mqtool ARGV` in this process, through `mqtool.cli.main`, bounded by `timeout` seconds."""
    import mqtool.cli as cli
    from mqtool.cli.options import GLOBALS

    command = click_command()
    out, err = _stream("strict"), _stream("backslashreplace")
    saved = (sys.argv, cli.app, sys.stdout, sys.stderr, cli._fail)
    traces: list[str] = []

    def fail(message: str, code: int) -> None:
        if code == 70:
            traces.append(traceback.format_exc())
        saved[4](message, code)

    old_handler = signal.signal(signal.SIGALRM, _on_alarm)
    code: int | None = None
    crash = None
    started = time.perf_counter()
    try:
        sys.argv = ["mqtool", *argv]
        cli.app = lambda: command.main(args=argv, prog_name="mqtool")  # type: ignore[attr-defined]
        GLOBALS.store = GLOBALS.fmt = GLOBALS.tz = None
        GLOBALS.wide = GLOBALS.record = False
        sys.stdout, sys.stderr, cli._fail = out, err, fail
        signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
            cli.main()
            code = 0
        except SystemExit as exc:
            if exc.code is None:
                code = 0
            elif isinstance(exc.code, int):
                code = exc.code
            else:
                err.write(f"{exc.code}\n")
                code = 1
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except _Timeout:
        crash = f"timeout: still running after {timeout:g} s"
    except BaseException as exc:  # noqa: BLE001 - what escaped main() is the finding
        crash = f"escaped main(): {type(exc).__name__}: {exc}\n{traceback.format_exc()}"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old_handler)
        sys.argv, cli.app, sys.stdout, sys.stderr, cli._fail = saved
    elapsed = time.perf_counter() - started
    return Outcome(name, argv, code, _text(out), _text(err), elapsed, crash, "".join(traces))


def run_subprocess(argv: list[str], timeout: float = 60.0, memory_mb: int = 3072, name: str = "") -> Outcome:
    """`python -m mqtool.cli ARGV` as a new process with RLIMIT_AS of `memory_mb` and a timeout."""

    def limit() -> None:
        limit_bytes = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("MQTOOL_DEBUG", None)
    started = time.perf_counter()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "mqtool.cli", *argv],
            capture_output=True,
            timeout=timeout,
            preexec_fn=limit,
            env=env,
            cwd=ROOT,
        )
    except subprocess.TimeoutExpired as exc:
        return Outcome(
            name,
            argv,
            None,
            "",
            (exc.stderr or b"").decode("utf-8", "replace"),
            timeout,
            f"timeout after {timeout:g} s",
        )
    return Outcome(
        name,
        argv,
        proc.returncode,
        proc.stdout.decode("utf-8", "replace"),
        proc.stderr.decode("utf-8", "replace"),
        time.perf_counter() - started,
    )


# --- judging ---------------------------------------------------------------------------------------

ERROR_PREFIX = "mqtool: error: "
INFO_PREFIXES = ("mqtool: ",)  # note:, warning:, done:, plan written to ...
# Store file names an error may name instead of a full path (config files by name, parts of the store).
STORE_NAMES = re.compile(
    r"[\w%.-]+\.json\b|\b(commitlog|consumequeue|index|config)/|\b(checkpoint|abort|lock)\b"
)
# Errors about the command's arguments against what the (corrupted) store now holds: no file to name.
ARGUMENT_ERRORS = re.compile(
    r"not exist|no half message|unknown topic|no such topic|not in topics\.json|not in subscriptionGroup"
    r"|no ConsumeQueue|has no queue|no queue|group .* (unknown|not found)|no committed offsets"
    r"|retry topic|4\.9\.x|no index file|not an index file|no message|queue offset -?\d+ of .* (below|above)"
    r"|half -?\d+ (already|is)|conflict with system topic|the broker defines or creates itself"
)
POSITION = re.compile(
    r"offset -?\d+|line \d+|column \d+|position \d+|byte \d+|char(acter)? \d+|\bat \d+|@\d+"
)


@dataclass
class Verdict:
    failure: str | None
    error_line: str | None = None
    has_position: bool = False


def judge(o: Outcome, root: str) -> Verdict:
    """Accept exit 0, or exit 1 (verify, audit: also 3, a store that could not be read) with one error
    line naming a file; anything else is a failure."""
    if o.crash:
        return Verdict(o.crash)
    if "Traceback (most recent call last)" in o.stderr or "Traceback (most recent call last)" in o.stdout:
        return Verdict("a traceback was printed")
    lines = [line for line in o.stderr.split("\n") if line.strip()]  # what a terminal shows as lines
    errors = [line for line in lines if line.startswith(ERROR_PREFIX)]
    stray = [line for line in lines if not line.startswith((ERROR_PREFIX, *INFO_PREFIXES))]
    if stray:
        return Verdict(f"stray stderr line(s): {stray[:3]}")
    if o.code == 0:
        return Verdict("an error line but exit 0" if errors else None)
    if o.code == 1 and not errors and o.name in ("verify", "replicas diff"):
        return Verdict(None)  # verify's report found errors, the replicas differ: the exit status says so
    if o.code == 70 or any("internal error" in e for e in errors):
        return Verdict("internal error (exit 70)", errors[0] if errors else None)
    if o.code == 2 and len(errors) == 1 and "--format csv:" in errors[0]:
        return Verdict(None, errors[0])  # a file whose content has no table: csv refused, as designed
    if o.code != 1 and not (o.code == 3 and o.name in ("verify", "audit")):
        return Verdict(f"exit status {o.code}", errors[0] if errors else None)
    if len(errors) != 1:
        return Verdict(f"{len(errors)} error lines on exit 1")
    line = errors[0]
    if "out of memory" in line:
        return Verdict("out of memory: a size was trusted to allocate", line)
    if len(line) > 2000:
        return Verdict("an error line of more than 2000 characters", line[:300])
    names_file = root in line or STORE_NAMES.search(line[len(ERROR_PREFIX) :]) is not None
    if not names_file and not ARGUMENT_ERRORS.search(line):
        return Verdict("the error names no file", line)
    return Verdict(None, line, POSITION.search(line) is not None)


# --- corrupted inputs, and a pool of workers that run them ---------------------------------------


@dataclass
class Task:
    base: str
    corruption: Corruption
    commands: list[tuple[str, list[str]]]
    fmt: str = "json"


@dataclass
class Failure:
    base: str
    corruption: Corruption
    command: str
    argv: list[str]
    reason: str
    code: int | None
    stderr: str

    def where(self) -> str:
        """The innermost project frame of the traceback, when there is one."""
        frames = re.findall(
            r'File "[^"]*?/((?:mqtool|store|formats)/[^"]+)", line (\d+), in (\w+)', self.stderr
        )
        return ":".join(frames[-1]) if frames else ""

    def __str__(self) -> str:
        tail = [line for line in self.stderr.strip().splitlines() if line.startswith("mqtool: ")][-3:]
        if self.where():
            tail.append(f"at {self.where()}")
        head = f"{self.base} {self.corruption}\n    mqtool {' '.join(self.argv)}"
        return f"{head}\n    -> {self.reason} (exit {self.code})" + "".join(
            f"\n       {x[:300]}" for x in tail
        )


@dataclass
class Result:
    task: Task
    outcomes: list[tuple[str, int | None, float, bool]] = field(default_factory=list)  # name, code, s, pos
    failures: list[Failure] = field(default_factory=list)
    error_lines: list[str] = field(default_factory=list)


def _sanitise(text: str, root: str) -> str:
    return text.replace(root, "<store>")


def fill_paths(argv: list[str], store: Path | str, base: Path | str) -> list[str]:
    """A command's arguments with "<store>" (the input's copy; a --broker-config the corruption wrote into
    it) and "<base>" (the pristine base: the other store of a two-store command) made paths."""
    return [a.replace("<store>", str(store)).replace("<base>", str(base)) for a in argv]


# --- an input's store: the base's files hard-linked, a file of its own where the corruption changes it --

# Op actions that change a file in place (its bytes or its mode), not only its directory entry
CHANGES_FILE = frozenset({"write", "truncate", "append", "replace", "chmod"})


# Files from this size up (the 38 MB timer wheel, mostly zeros) are copied by cp, which leaves holes for
# runs of zeros: a fraction of the writes and of the blocks to free again.
SPARSE_COPY_MIN = 1 << 22


def copy_sparse(src: Path, dst: Path) -> None:
    """Copy a file's bytes (a big one with holes where it holds zeros)."""
    if os.path.getsize(src) >= SPARSE_COPY_MIN:
        subprocess.run(["cp", "--sparse=always", str(src), str(dst)], check=True, capture_output=True)
    else:
        shutil.copyfile(src, dst)


def link_store(base: Path, root: Path) -> None:
    """`root` as a copy of `base` whose files are hard links to the base's (new directories): the read
    commands never change a store, and `corrupt` gives a file a copy of its own before changing it."""
    shutil.copytree(base, root, symlinks=True, copy_function=os.link)


def own_file(path: Path) -> None:
    """Replace a hard link shared with a base by a copy of its own, writable by its owner."""
    try:
        st = path.lstat()
    except OSError:
        return
    if not stat.S_ISREG(st.st_mode) or st.st_nlink < 2:
        return
    copy = path.with_name(f".{path.name}.own")
    copy_sparse(path, copy)
    os.chmod(copy, stat.S_IMODE(st.st_mode) | 0o200)  # the base's files are read-only (link_sources)
    os.replace(copy, path)


def corrupt(corruption: Corruption, root: Path) -> None:
    """Apply a corruption to a linked store: each file it changes in place becomes its own first."""
    for op in corruption.ops:
        if op.action in CHANGES_FILE:
            own_file(root / op.path)
        apply_op(root, op)


def link_sources(bases: dict[str, Path], directory: Path, owner: int | None) -> dict[str, Path]:
    """Each base copied once under `directory` for the workers to hard-link: files read-only (a command
    that writes fails instead of changing every input after it), owned by the workers' user
    (fs.protected_hardlinks lets a user link only files it owns or may write)."""
    out = {}
    for name, path in bases.items():
        dst = directory / name
        if not dst.exists():
            shutil.copytree(path, dst, symlinks=True, copy_function=copy_sparse)
        for dirpath, _dirs, files in os.walk(dst):
            if owner is not None:
                os.chown(dirpath, owner, owner)
            for f in files:
                p = Path(dirpath) / f
                if owner is not None:
                    os.chown(p, owner, owner, follow_symlinks=False)
                if not p.is_symlink():
                    os.chmod(p, 0o444)
        out[name] = dst
    return out


def execute(task: Task, base_path: Path, scratch: Path, timeout: float, link: bool = False) -> Result:
    """Copy a base (or hard-link it: `link_store`), corrupt it, run the commands, judge them, remove
    the copy. Then nothing may have appeared outside the copy (`escaped`), nor inside it: these commands
    only read. A task of a write family (`corrupt.WRITE_KINDS`) goes to `execute_writes`."""
    if task.corruption.kind in WRITE_KINDS:
        return execute_writes(task, base_path, scratch, timeout)
    root = scratch / "store"
    if root.exists():
        restore_permissions(root)
        shutil.rmtree(root)
    if link:
        link_store(base_path, root)
    else:
        shutil.copytree(base_path, root, symlinks=True)
    result = Result(task)
    try:
        corrupt(task.corruption, root)
        names_before = _entries(root)
        for name, argv in task.commands:
            full = ["-s", str(root), "-f", format_for(task.fmt, argv), *fill_paths(argv, root, base_path)]
            outcome = run_cli(full, timeout=timeout, name=name)
            shown = [a.replace(str(base_path), "<base>") for a in full]  # a replay has a base of its own
            _judge_into(result, task, name, shown, outcome, str(root))
            created = sorted(_entries(root) - names_before)
            if created:
                shown = [c.replace(str(root), "<store>") for c in created[:3]]
                argv_shown = [_sanitise(a, str(root)) for a in full]
                failure = f"a read command created {shown} in the store"
                result.failures.append(
                    Failure(task.base, task.corruption, name, argv_shown, failure, outcome.code, "")
                )
                names_before |= set(created)
    finally:
        restore_permissions(root)
        shutil.rmtree(root, ignore_errors=True)
        result.failures.extend(escaped(task, scratch))
    return result


def _judge_into(
    result: Result, task: Task, name: str, full: list[str], outcome: Outcome, root: str
) -> Verdict:
    verdict = judge(outcome, root)
    result.outcomes.append((name, outcome.code, outcome.seconds, verdict.has_position))
    if verdict.error_line:
        result.error_lines.append(_sanitise(verdict.error_line, root))
    if verdict.failure:
        result.failures.append(
            Failure(
                task.base,
                task.corruption,
                name,
                [_sanitise(a, root) for a in full],
                _sanitise(verdict.failure, root),
                outcome.code,
                _sanitise(outcome.stderr + (outcome.crash or "") + outcome.trace, root),
            )
        )
    return verdict


def _entries(root: Path) -> set[str]:
    """Every path under `root` (names only: cheap, and never opens a FIFO)."""
    out = set()
    for dirpath, dirs, files in os.walk(root):
        out.update(os.path.join(dirpath, n) for n in (*dirs, *files))
    return out


# Temporary directories a command may leave until the garbage collector closes what holds them.
_LINGERING = ("mqtool-rocksdb-",)


def escaped(task: Task, scratch: Path) -> list[Failure]:
    """Anything a command created beside the store copy or in the worker's temporary directory (where
    dry runs stage): a path built from a hostile name that climbed out (`../`), or a staging directory
    a dry run left. Removed, so the next input starts clean."""
    found = []
    tmp = scratch / "tmp"
    for entry in sorted(os.listdir(scratch)):
        if entry not in ("store", "tmp"):
            found.append(str(scratch / entry))
    if tmp.is_dir():
        found += [str(tmp / e) for e in sorted(os.listdir(tmp)) if not e.startswith(_LINGERING)]
    for path in found:
        p = Path(path)
        if p.is_dir() and not p.is_symlink():
            restore_permissions(p)
            shutil.rmtree(p, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                p.unlink()
    if not found:
        return []
    where = [f.replace(str(scratch), "<scratch>") for f in found[:3]]
    failure = f"created outside the store: {where}"
    return [Failure(task.base, task.corruption, "(after the commands)", [], failure, None, "")]


def _writable_copy(base_path: Path, root: Path) -> None:
    """A copy of a base its commands may write: the files of the workers' base copies are read-only."""
    if root.exists():
        restore_permissions(root)
        shutil.rmtree(root)
    shutil.copytree(base_path, root, symlinks=True, copy_function=copy_sparse)
    for dirpath, _dirs, files in os.walk(root):
        os.chmod(dirpath, 0o755)
        for f in files:
            p = Path(dirpath) / f
            if not p.is_symlink():
                os.chmod(p, 0o644)


def execute_writes(task: Task, base_path: Path, scratch: Path, timeout: float) -> Result:
    """Each write command on a writable copy of its own, corrupted: judged as a read command, and on an
    error the store must be byte for byte as it was, the corrupted paths aside - the command refused
    before its first byte (an append's `lock` file the broker's lock creates aside)."""
    root = scratch / "store"
    result = Result(task)
    touched = {op.path for op in task.corruption.ops}
    try:
        for name, argv in task.commands:
            _writable_copy(base_path, root)
            corrupt(task.corruption, root)
            before = snapshot(root)
            full = ["-s", str(root), "-f", format_for(task.fmt, argv), *argv]
            outcome = run_cli(full, timeout=timeout, name=name)
            verdict = _judge_into(result, task, name, full, outcome, str(root))
            if outcome.code == 1 and verdict.failure is None:
                after = snapshot(root)
                changed = sorted(
                    k
                    for k in set(before) | set(after)
                    if before.get(k) != after.get(k)
                    and k.rstrip("/") not in touched
                    and not any(k.startswith(t.rstrip("/") + "/") for t in touched if t != ".")
                    and k != "lock"
                )
                if changed:
                    argv_shown = [_sanitise(a, str(root)) for a in full]
                    failure = f"failed after changing the store: {changed[:4]}"
                    stderr = _sanitise(outcome.stderr, str(root))
                    result.failures.append(
                        Failure(task.base, task.corruption, name, argv_shown, failure, outcome.code, stderr)
                    )
    finally:
        restore_permissions(root)
        shutil.rmtree(root, ignore_errors=True)
        result.failures.extend(escaped(task, scratch))
    return result


def reproduce(
    failure: Failure, base_path: Path, directory: Path, timeout: float = 300.0, debug: bool = True
) -> subprocess.CompletedProcess[str]:
    """Apply the failure's corruption to a fresh copy under `directory` and rerun its command as a new
    process, with MQTOOL_DEBUG=1 (the traceback) unless `debug` is false. The copy is left in place for a
    look. Raises subprocess.TimeoutExpired after `timeout` seconds."""
    root = directory / "store"
    if root.exists():
        restore_permissions(root)
        shutil.rmtree(root)
    shutil.copytree(base_path, root, symlinks=True)
    failure.corruption.apply(root)
    argv = fill_paths(failure.argv, root, base_path)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("MQTOOL_DEBUG", None)
    if debug:
        env["MQTOOL_DEBUG"] = "1"

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))

    return subprocess.run(
        [sys.executable, "-m", "mqtool.cli", *argv],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        preexec_fn=limit,
    )


def _limit_memory(budget_mb: int) -> None:
    """RLIMIT_AS = this process's current address space + budget (the imports already reserve a lot)."""
    with open("/proc/self/status", encoding="ascii") as fh:
        size_kb = int(re.search(r"VmSize:\s+(\d+)", fh.read()).group(1))  # type: ignore[union-attr]
    limit = size_kb * 1024 + budget_mb * 1024 * 1024
    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


PRELOAD = (
    "encodings.ascii", "encodings.latin_1", "encodings.utf_8", "encodings.utf_8_sig", "encodings.idna",
    "encodings.utf_16", "encodings.utf_16_le", "encodings.utf_16_be", "encodings.utf_32", "encodings.cp437",
    "encodings.unicode_escape", "encodings.raw_unicode_escape", "encodings.punycode", "zoneinfo", "csv",
    "json", "difflib", "base64", "zlib", "lz4.frame", "lz4.block", "zstandard", "tabulate", "uuid",
    "statistics", "decimal", "gzip", "bz2", "lzma", "shlex", "textwrap", "unicodedata", "locale",
    "calendar", "heapq", "bisect", "hashlib", "ipaddress", "pprint", "typer.rich_utils", "click.exceptions",
    "rich.table", "rich.console", "rich.markup", "rich.text", "rich.progress", "rich.box", "rich.pretty",
    "rich.traceback", "rocksdict", "tempfile",
)  # fmt: skip


def preload() -> None:
    """Import what the commands may import lazily: a worker that dropped root privileges cannot read the
    Python installation under /root."""
    import importlib
    import pkgutil

    for name in PRELOAD:
        with contextlib.suppress(Exception):
            importlib.import_module(name)
    for package in ("formats", "store", "mqtool"):
        pkg = importlib.import_module(package)
        # every module of every subpackage (store.timer, formats.columnar's kernels, ...): a kernel module
        # imported after the fork would try to write its numba cache, which `nobody` cannot
        for info in pkgutil.walk_packages(pkg.__path__, f"{package}."):
            if info.name.endswith(".__main__"):  # runs the CLI when imported
                continue
            with contextlib.suppress(Exception):
                importlib.import_module(info.name)


def warm_up(bases: list[Base]) -> None:
    """Every command on every base once, and every output format once: imports, caches, kernels."""
    for i, base in enumerate(bases):
        for command in COMMANDS:
            name, argv = command.name, command.argv(base.targets, LAY, "")  # type: ignore[operator]
            formats = (
                FORMATS if i == 0 and name in ("info", "query time", "verify", "dump index") else ("json",)
            )
            for fmt in formats:
                with contextlib.suppress(BaseException):
                    run_cli(
                        [
                            "-s",
                            str(base.path),
                            "-f",
                            format_for(fmt, argv),
                            *fill_paths(argv, base.path, base.path),
                        ],
                        timeout=300,
                        name=name,
                    )


def _drop_privileges(scratch: Path) -> bool:
    if os.geteuid() != 0:
        return False
    os.chown(scratch, NOBODY, NOBODY)
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)
    return True


def _no_kernel_cache() -> None:
    """A worker that dropped root cannot write the numba cache the kernels were loaded with (root's, in the
    checkout's __pycache__): a type specialization first met on a corrupt input then compiles uncached,
    as a user whose cache directory is read-only would see it, instead of failing on the cache write."""
    from numba.core.caching import NullCache
    from numba.core.dispatcher import Dispatcher

    for name, module in list(sys.modules.items()):
        if module is None or not name.startswith(("formats", "store", "mqtool")):
            continue
        for value in list(vars(module).values()):
            if isinstance(value, Dispatcher) and getattr(value, "_cache", None) is not None:
                value._cache = NullCache()


@dataclass(frozen=True)
class _Probe:
    """Ask a worker to allocate `size` bytes (a test of its memory bound)."""

    size: int


def _worker(
    conn: Connection,
    bases: dict[str, Path],
    scratch: Path,
    timeout: float,
    memory_mb: int,
    drop: bool,
    link: bool,
) -> None:
    scratch.mkdir(parents=True, exist_ok=True)
    # dry runs stage here, where `escaped` looks for what they left or what climbed out of them
    (scratch / "tmp").mkdir(exist_ok=True)
    os.environ["TMPDIR"] = str(scratch / "tmp")
    tempfile.tempdir = None
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.fsync = lambda _fd: None  # only the rebuild dry run's staging files in /tmp are synced: no need
    if drop and os.geteuid() == 0:
        preload()
    if drop and _drop_privileges(scratch):
        _no_kernel_cache()
    _limit_memory(memory_mb)
    conn.send(("ready", os.getpid()))
    while True:
        try:
            task = conn.recv()
        except EOFError:
            return
        if task is None:
            return
        if isinstance(task, _Probe):  # the memory bound, tested
            try:
                block = bytearray(task.size)
                conn.send(("probe", f"allocated {len(block)}"))
            except MemoryError:
                conn.send(("probe", "MemoryError"))
            continue
        try:
            result = execute(task, bases[task.base], scratch, timeout, link)
        except BaseException as exc:  # noqa: BLE001 - a harness problem, reported as such
            result = Result(task)
            result.failures.append(
                Failure(
                    task.base,
                    task.corruption,
                    "(harness)",
                    [],
                    f"harness: {exc!r}",
                    None,
                    traceback.format_exc(),
                )
            )
        conn.send(("result", result))


class Fuzzer:
    """A pool of forked workers running `Task`s (see the module docstring)."""

    def __init__(
        self,
        bases: list[Base],
        jobs: int = 1,
        timeout: float = 30.0,
        memory_mb: int = 1024,
        drop_privileges: bool = True,
        scratch: Path | None = None,
        warm: bool = True,
        link: bool = True,
    ) -> None:
        self.bases = {b.name: b.path for b in bases}
        preload()
        if warm:  # in the parent, so every forked worker starts warm (the POP kernels on the POP store, the
            # classic and DLedger kernels on a store switched to DLedger)
            warm_up(
                [b for b in bases if not b.golden or b.name in ("store-pop", "store-dledger-mixed")]
                or bases[:1]
            )
        self.jobs = max(1, jobs)
        self.timeout = timeout
        self.memory_mb = memory_mb
        self.drop = drop_privileges
        self._own_scratch = scratch is None
        self.scratch = Path(scratch or tempfile.mkdtemp(prefix="mqtool-fuzz-work-"))
        self.scratch.mkdir(parents=True, exist_ok=True)
        os.chmod(self.scratch, 0o755)
        self.link = link
        if link:  # the workers hard-link read-only copies of the bases instead of copying them whole
            owner = NOBODY if drop_privileges and os.geteuid() == 0 else None
            self.bases = link_sources(self.bases, self.scratch / "bases", owner)
        self._ctx = multiprocessing.get_context("fork")
        self._workers: list[tuple[multiprocessing.Process, Connection, Path]] = []
        self._serial = 0

    def _spawn(self) -> tuple[multiprocessing.Process, Connection, Path]:
        self._serial += 1
        parent, child = self._ctx.Pipe()
        scratch = self.scratch / f"w{self._serial}"
        proc = self._ctx.Process(
            target=_worker,
            args=(child, self.bases, scratch, self.timeout, self.memory_mb, self.drop, self.link),
            daemon=True,
        )
        proc.start()
        child.close()
        if not parent.poll(600):
            raise RuntimeError("a fuzz worker did not start")
        parent.recv()
        return proc, parent, scratch

    def __enter__(self) -> Fuzzer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for proc, conn, _ in self._workers:
            with contextlib.suppress(OSError, BrokenPipeError):
                conn.send(None)
            proc.join(5)
            if proc.is_alive():
                proc.kill()
                proc.join()
        self._workers.clear()
        if self._own_scratch:
            restore_permissions(self.scratch)
            shutil.rmtree(self.scratch, ignore_errors=True)

    def run(self, tasks: Iterable[Task]) -> Iterator[Result]:
        """Results as they complete (not in task order)."""
        pending = iter(tasks)
        while len(self._workers) < self.jobs:
            self._workers.append(self._spawn())
        busy: dict[int, tuple[Task, float]] = {}
        exhausted = False

        def feed(slot: int) -> None:
            nonlocal exhausted
            if exhausted:
                return
            task = next(pending, None)
            if task is None:
                exhausted = True
                return
            self._workers[slot][1].send(task)
            busy[slot] = (task, time.monotonic())

        for slot in range(len(self._workers)):
            feed(slot)
        while busy:
            conns = {self._workers[s][1]: s for s in busy}
            ready = wait(list(conns), timeout=1.0)
            for conn in ready:
                slot = conns[conn]
                task, _ = busy.pop(slot)
                try:
                    kind, payload = conn.recv()
                except (EOFError, OSError):
                    yield self._dead(slot, task, "the worker died (killed by a signal or out of memory)")
                    feed(slot)
                    continue
                yield payload
                feed(slot)
            now = time.monotonic()
            for slot, (task, started) in list(busy.items()):
                bound = self.timeout * (len(task.commands) + 2) + 30
                if now - started > bound:
                    busy.pop(slot)
                    yield self._dead(slot, task, f"hang: the worker was killed after {bound:g} s")
                    feed(slot)

    def _dead(self, slot: int, task: Task, reason: str) -> Result:
        proc, conn, scratch = self._workers[slot]
        code = proc.exitcode
        if proc.is_alive():
            proc.kill()
        proc.join()
        conn.close()
        self._workers[slot] = self._spawn()
        result = Result(task)
        result.failures.append(
            Failure(task.base, task.corruption, "(worker)", [], f"{reason} [exit {code}]", None, "")
        )
        return result


def kind_applies(base: Base, kind: str) -> bool:
    """Timer corruptions need a store with the timer wheel, RocksDB ones a RocksDB-mode store (whose
    consume queue is no ConsumeQueue files), POP ones a revive topic; every other kind applies to every
    base."""
    if kind in HOSTILE_KINDS:
        return True
    if kind in POP_READERS:
        return base.name == "store-pop"
    dledger = bool(base.layout.dledger_entries)
    if kind == DL:
        return dledger
    if kind == CL and dledger:
        return bool(base.layout.records)  # the classic files of a store switched to DLedger
    if kind in TRACE_READERS:
        return base.name.startswith("store-trace")
    if kind == COMP:
        return bool(base.layout.compaction_log)
    rocksdb = bool(rocksdb_dirs(base.layout))
    if kind in (ROCKSDB_KIND, CQ):
        return rocksdb == (kind == ROCKSDB_KIND)
    return kind not in TIMER or bool(base.layout.timer_units)


def make_tasks(
    bases: list[Base],
    kinds: Iterable[str],
    per_kind: int,
    seed: int,
    *,
    cycle_strategies: bool = False,
    weights: dict[str, float] | None = None,
    formats: tuple[str, ...] = FORMATS,
) -> Iterator[Task]:
    """`per_kind` corrupted inputs of every kind, over the bases (weighted), each with its commands."""
    from .corrupt import NoCorruption, generate

    rng = random.Random(seed)
    names = [b.name for b in bases]
    w = [(weights or {}).get(n, 1.0) for n in names]
    by_name = {b.name: b for b in bases}
    for i in range(per_kind):  # file types interleaved, so a run stopped early has some of each
        for kind in kinds:
            eligible = [n for n in names if kind_applies(by_name[n], kind)]
            corruption = None
            while eligible and corruption is None:
                base = (
                    by_name[rng.choices(eligible, [w[names.index(n)] for n in eligible])[0]]
                    if not cycle_strategies
                    else by_name[eligible[i % len(eligible)]]
                )
                try:
                    corruption = generate(
                        kind, base.layout, random.Random(rng.getrandbits(64)), i if cycle_strategies else None
                    )
                except NoCorruption:  # e.g. no config JSON on a store of timer files only: another base
                    eligible.remove(base.name)
            if corruption is None:
                continue
            fmt = "json" if rng.random() < 0.6 else rng.choice(formats)
            if base.golden and fmt in ("table", "markdown"):
                fmt = "plain"  # rich tables of thousands of rows take seconds each: not what is tested here
            yield Task(base.name, corruption, task_commands(base, corruption), fmt)


_WRITE_COMMANDS: dict[Path, list[tuple[str, list[str]]]] = {}


def task_commands(base: Base, corruption: Corruption) -> list[tuple[str, list[str]]]:
    """The commands an input runs: the read commands of the file type it changed (`Corruption.reads`,
    else its kind), or for a write family the write command it names (`Corruption.focus`)."""
    if corruption.kind in WRITE_KINDS:
        if base.path not in _WRITE_COMMANDS:
            _WRITE_COMMANDS[base.path] = write_commands(base)
        return [c for c in _WRITE_COMMANDS[base.path] if c[0] == corruption.focus]
    return read_commands(base.targets, corruption.reads or corruption.kind, corruption.focus)


# --- a private mount namespace (read-only and full file systems for the tests) ---------------------

CLONE_NEWNS = 0x00020000


def in_private_mounts(fn, *args, timeout: float = 600.0):
    """`fn(*args)` in a forked child with its own mount namespace, so its mounts vanish with it; returns
    what `fn` returns (picklable), re-raises its failure as AssertionError. Needs root (CAP_SYS_ADMIN)."""
    import ctypes
    import pickle

    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(read_end)
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            if libc.unshare(CLONE_NEWNS) != 0:
                raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS) failed")
            subprocess.run(["mount", "--make-rprivate", "/"], check=True, capture_output=True)
            payload = ("ok", fn(*args))
        except BaseException as exc:  # noqa: BLE001 - sent to the parent
            payload = ("error", f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}")
        data = pickle.dumps(payload)
        view = memoryview(data)
        while view:
            view = view[os.write(write_end, view) :]
        os._exit(0)
    os.close(write_end)
    chunks = []
    deadline = time.monotonic() + timeout
    with os.fdopen(read_end, "rb") as fh:
        while True:
            chunk = fh.read(1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                break
    os.waitpid(pid, 0)
    if not chunks:
        raise AssertionError("the child in a private mount namespace died without an answer")
    kind, value = pickle.loads(b"".join(chunks))
    if kind != "ok":
        raise AssertionError(value)
    return value


def _probe_mount(directory: str) -> bool:
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", directory], check=True, capture_output=True
    )
    return True


def can_mount() -> bool:
    """Whether this process may mount a tmpfs in a private mount namespace (root with CAP_SYS_ADMIN)."""
    if os.geteuid() != 0 or not shutil.which("mount"):
        return False
    directory = tempfile.mkdtemp(prefix="mqtool-mount-probe-")
    try:
        return bool(in_private_mounts(_probe_mount, directory, timeout=60))
    except AssertionError:
        return False
    finally:
        shutil.rmtree(directory, ignore_errors=True)
