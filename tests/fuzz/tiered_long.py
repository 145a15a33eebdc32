"""The tiered family of the long fuzz run, by hand (from the repository root):

    python -m tests.fuzz.tiered_long --trees 1000 [--jobs 2] [--seed S] [--failures F.json] [--only I]

Each tree is a copy of the real plugin's fixture (tests/data/store-tiered: a 5.3.3 store and the tiered tree
its TieredMessageStore wrote) with one to three random damages: bytes of a segment file (COMMIT_LOG,
CONSUME_QUEUE, INDEX) flipped, zeroed, cut or extended; a segment file removed, renamed to another offset's
name, copied under another name; values of `tieredStoreMetadata.json` (and its `.bak`) changed, removed or
cut; or one of tests/test_tiered_robust.py's named damages. Every `--tiered` read command then runs on it
(in this process, as the fuzz harness runs commands) and is judged by the harness's `judge`: exit 0, or
exit 1 with one error line naming a file - never a traceback, a hang or a stray line. Tree I of seed S is
always the same damage: `--only I` replays it.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import random
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

from formats.tiered import segment_base_offset, segment_file_name
from tests.test_tiered_robust import CLUSTER, COMMANDS, DAMAGES, FIXTURE, META, judged_runs

PARTS = ("COMMIT_LOG", "CONSUME_QUEUE", "INDEX")


def _segments(root: Path) -> list[Path]:
    return sorted(p for p in (root / "tiered" / CLUSTER).rglob("*") if p.is_file())


def _bytes(root: Path, rnd: random.Random) -> str:
    f = rnd.choice(_segments(root))
    data = bytearray(f.read_bytes())
    how = rnd.choice(("flip", "zero", "cut", "extend"))
    if how == "flip" and data:
        for _ in range(rnd.choice((1, 4, 32))):
            data[rnd.randrange(len(data))] ^= 1 << rnd.randrange(8)
    elif how == "zero" and data:
        at = rnd.randrange(len(data))
        data[at : at + rnd.choice((4, 8, 20, 64, 4096))] = bytes(min(len(data) - at, 4096))
    elif how == "cut":
        del data[rnd.randrange(len(data) + 1) :]
    else:
        data += bytes(rnd.randrange(256) for _ in range(rnd.choice((1, 7, 20, 300))))
    f.write_bytes(bytes(data))
    return f"{how} {f.relative_to(root)}"


def _files(root: Path, rnd: random.Random) -> str:
    f = rnd.choice(_segments(root))
    how = rnd.choice(("remove", "rename", "copy", "junk name"))
    base = segment_base_offset(f.name)
    if how == "remove":
        f.unlink()
    elif how in ("rename", "copy") and base is not None:
        other = f.with_name(segment_file_name(base + rnd.choice((1, 20, 5000, 10**9)) * rnd.choice((-1, 1))))
        if other == f or segment_base_offset(other.name) is None:  # below 0: no name the broker writes
            other = f.with_name(segment_file_name(base + 1))
        (f.rename if how == "rename" else lambda p: shutil.copyfile(f, p))(other)
        return f"{how} {f.relative_to(root)} -> {other.name}"
    else:
        f.rename(f.with_name(rnd.choice(("x", "0" * 20, f.name + ".tmp", "-1"))))
    return f"{how} {f.relative_to(root)}"


_NUMBER = re.compile(r"(?<=[:\[,])-?\d+")


def _metadata(root: Path, rnd: random.Random) -> str:
    how = rnd.choice(("number", "drop key", "cut", "bak only"))
    path = root / META
    text = path.read_text()
    if how == "number":
        spots = list(_NUMBER.finditer(text))
        m = rnd.choice(spots)
        value = rnd.choice(
            ("-1", "0", "2147483648", "9223372036854775807", "-9223372036854775808", "1e3", '"7"')
        )
        text = text[: m.start()] + value + text[m.end() :]
    elif how == "drop key":
        keys = list(re.finditer(r'"\w+":', text))
        m = rnd.choice(keys)
        text = text[: m.start()] + '"zz' + text[m.start() + 1 :]
    elif how == "cut":
        text = text[: rnd.randrange(len(text))]
    else:
        shutil.copyfile(path, root / (META + ".bak"))
        path.unlink()
        return how
    path.write_text(text)
    if rnd.random() < 0.5:
        (root / (META + ".bak")).write_text(text)
    return how


def _named(root: Path, rnd: random.Random) -> str:
    name = rnd.choice(sorted(DAMAGES))
    DAMAGES[name](root, rnd)
    return name


KINDS = (_bytes, _bytes, _files, _metadata, _named)


def run_tree(seed: int, index: int, work: Path) -> list[dict]:
    rnd = random.Random(f"{seed}-{index}")
    root = work / f"t{index}"
    shutil.copytree(FIXTURE, root)
    (root / "expect.json").unlink(missing_ok=True)
    (root / "store" / "lock").unlink(missing_ok=True)
    done = []
    for kind in rnd.sample(KINDS, rnd.choice((1, 1, 2, 3))):
        try:
            done.append(kind(root, rnd))
        except (OSError, IndexError, ValueError) as exc:  # an earlier damage took what this one edits
            done.append(f"{kind.__name__} skipped: {type(exc).__name__}")
    failures = []
    try:
        for argv, outcome, verdict in judged_runs(root, lambda: rnd.choice(("json", "plain"))):
            if verdict.failure:
                failures.append(
                    {"tree": index, "seed": seed, "damage": done, "command": argv, "failure": verdict.failure,
                     "stderr": outcome.stderr[-600:], "trace": outcome.trace[-2000:]}
                )  # fmt: skip
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return failures


def _worker(args: tuple[int, int, str]) -> tuple[int, list[dict]]:
    seed, index, work = args
    return index, run_tree(seed, index, Path(work))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trees", type=int, default=200)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--seed", type=int, default=20261128)
    ap.add_argument("--only", type=int, help="replay one tree")
    ap.add_argument("--failures", type=Path)
    args = ap.parse_args()
    indices = [args.only] if args.only is not None else list(range(args.trees))
    started = time.perf_counter()
    failures: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="mqtool-fuzz-tiered-") as work:
        tasks = [(args.seed, i, work) for i in indices]
        with multiprocessing.get_context("fork").Pool(max(1, args.jobs), maxtasksperchild=20) as pool:
            for _index, found in pool.imap_unordered(_worker, tasks):
                failures += found
    seconds = time.perf_counter() - started
    runs = len(indices) * len(COMMANDS)
    print(f"{len(indices)} trees, {runs} command runs, {len(failures)} failures, {seconds:.0f} s")
    for f in failures[:20]:
        print(json.dumps({k: f[k] for k in ("tree", "damage", "command", "failure")}))
    if args.failures is not None:
        args.failures.write_text(json.dumps(failures, indent=1))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
