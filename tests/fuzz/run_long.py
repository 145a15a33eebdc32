"""The long fuzz run, by hand: `python -m tests.fuzz.run_long --per-type 10000` (from the repository root).

Makes the pristine stores (small samples, and the golden stores the real broker wrote), then runs
`--per-type` corrupted inputs of every file type (commitlog, consumequeue, index, checkpoint, config,
layout, timerlog, timerwheel, timercheck) through every read command that reads that type, in `--jobs`
forked workers bounded in time and memory (see tests/fuzz/harness.py). A sample of inputs also goes
through the real console script in a new process (`--subprocess-share`). Prints, per file type, the
inputs, command runs, exits 0 and 1, error lines that name a position, and failures; then every distinct
failure with one example, how to reproduce it, and the innermost frame of its traceback. Exit status 0
when nothing failed, 1 otherwise.

A run of 10,000 inputs per type takes a few hours on two cores; `--per-type 200` is a quick look. A SIGINT
(Ctrl-C) stops it after the inputs in flight and prints the report of the inputs run so far.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .corrupt import KINDS, restore_permissions, strategy_names
from .harness import (
    GOLDEN_STORES,
    SAMPLES,
    Failure,
    Fuzzer,
    Outcome,
    Task,
    format_for,
    judge,
    make_tasks,
    prepare_bases,
    reproduce,
    run_subprocess,
)

DEFAULT_BASES = (*SAMPLES, *GOLDEN_STORES)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m tests.fuzz.run_long", description=__doc__.split("\n\n")[0])
    p.add_argument("--per-type", type=int, default=10_000, help="corrupted inputs per file type")
    p.add_argument("--types", default=",".join(KINDS), help=f"file types (default: {','.join(KINDS)})")
    p.add_argument("--bases", default=",".join(DEFAULT_BASES), help="pristine stores to corrupt")
    p.add_argument(
        "--golden-weight",
        type=float,
        default=0.02,
        help="weight of each golden store against 1.0 for each sample (golden stores are ~20x slower)",
    )
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="worker processes")
    p.add_argument("--seed", type=int, default=20261121)
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per command")
    p.add_argument("--memory-mb", type=int, default=1024, help="address space a worker may add")
    p.add_argument(
        "--subprocess-share", type=float, default=0.002, help="share of inputs also run as a process"
    )
    p.add_argument("--keep-root", action="store_true", help="do not drop root privileges in the workers")
    p.add_argument(
        "--copy-stores",
        action="store_true",
        help="copy each input's store whole instead of hard-linking the files it leaves unchanged",
    )
    p.add_argument(
        "--workdir", type=Path, default=None, help="where bases and copies live (default: a temp dir)"
    )
    p.add_argument("--failures", type=Path, default=None, help="also write failures as JSON lines here")
    p.add_argument(
        "--replay",
        type=Path,
        default=None,
        help="instead: rerun the failures of a --failures file as new processes, with tracebacks "
        "(exit 1 when any still fails)",
    )
    return p.parse_args(argv)


def failure_row(f: Failure, task: Task) -> dict:
    """A failure as one JSON line of --failures: enough to rebuild its input and rerun it (--replay)."""
    c = f.corruption
    return {
        "base": f.base,
        "corruption": str(c),
        "kind": c.kind,
        "strategy": c.strategy,
        "description": c.description,
        "focus": c.focus,
        "ops": [op.__dict__ | {"data": op.data.hex()} for op in c.ops],
        "command": f.command,
        "argv": f.argv,
        "fmt": task.fmt,
        "commands": task.commands,  # the input's commands: a dead or hung worker names none of them
        "reason": f.reason,
        "where": f.where(),
        "stderr": f.stderr,
    }


def replay(path: Path, workdir: Path, timeout: float) -> int:
    """Rerun the failures of a --failures file, each command as a new process judged as in the run (a
    dead or hung worker's input: each of its commands); an internal error again with MQTOOL_DEBUG=1, for
    its traceback. Exit status 1 when any still fails."""
    from .corrupt import Corruption, Op

    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    bases = {b.name: b for b in prepare_bases(workdir / "bases", sorted({r["base"] for r in rows}))}
    still = 0
    for i, row in enumerate(rows):
        ops = tuple(Op(**{**op, "data": bytes.fromhex(op["data"])}) for op in row["ops"])
        if "kind" in row:
            corruption = Corruption(
                row["kind"], row["strategy"], row["description"], ops, row.get("focus", "")
            )
        else:  # a file written before these fields: "[kind/strategy] description"
            head, _, description = row["corruption"].partition("] ")
            kind, _, strategy = head[1:].partition("/")
            corruption = Corruption(kind, strategy, description, ops)
        if row["argv"]:
            runs = [(row["command"], row["argv"])]
        else:  # the worker died or hung: every command of the input
            runs = [
                (name, ["-s", "<store>", "-f", format_for(row.get("fmt", "json"), argv), *argv])
                for name, argv in row.get("commands", [])
            ]
        print(f"=== {row['base']} {corruption}\n    recorded: {row['command']}: {row['reason']}")
        if not runs:
            print("    nothing to rerun (no command recorded)")
        if any(op.action == "chmod" for op in ops) and os.geteuid() == 0:
            print("    note: replayed as root, which a chmod does not stop (the workers ran as nobody)")
        for name, argv in runs:
            failure = Failure(row["base"], corruption, name, argv, row["reason"], None, "")
            directory = workdir / f"replay-{i}"
            outcome = _rerun(failure, bases[row["base"]].path, directory, timeout, debug=False)
            verdict = judge(outcome, str(directory / "store"))
            print(
                f"    mqtool {' '.join(argv)}  ->  exit {outcome.code}: "
                + (f"STILL FAILS: {verdict.failure}" if verdict.failure else "passes now")
            )
            if verdict.failure:
                still += 1
                if outcome.code == 70:  # the traceback the one-line internal error stands for
                    outcome = _rerun(failure, bases[row["base"]].path, directory, timeout, debug=True)
                print("      " + "\n      ".join(outcome.stderr.strip().splitlines()[-15:]))
    print(f"\n{len(rows)} recorded failures, {still} command runs still fail")
    return 1 if still else 0


def _rerun(failure: Failure, base: Path, directory: Path, timeout: float, debug: bool) -> Outcome:
    started = time.perf_counter()
    try:
        proc = reproduce(failure, base, directory, timeout=timeout, debug=debug)
    except subprocess.TimeoutExpired as exc:
        err = exc.stderr.decode("utf-8", "replace") if isinstance(exc.stderr, bytes) else exc.stderr or ""
        crash = f"timeout: still running after {timeout:g} s"
        return Outcome(failure.command, failure.argv, None, "", err, timeout, crash)
    finally:
        restore_permissions(directory)
    seconds = time.perf_counter() - started
    return Outcome(failure.command, failure.argv, proc.returncode, proc.stdout, proc.stderr, seconds)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    kinds = [k for k in args.types.split(",") if k]
    unknown = set(kinds) - set(KINDS)
    if unknown:
        print(f"unknown file types: {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="mqtool-fuzz-"))
    workdir.mkdir(parents=True, exist_ok=True)
    os.chmod(workdir, 0o755)
    if args.replay is not None:
        try:
            return replay(args.replay, workdir, args.timeout)
        finally:
            if args.workdir is None:
                restore_permissions(workdir)
                shutil.rmtree(workdir, ignore_errors=True)
    started = time.monotonic()
    bases = prepare_bases(workdir / "bases", [b for b in args.bases.split(",") if b])
    weights = {b.name: (args.golden_weight if b.golden else 1.0) for b in bases}
    print(
        f"bases: {', '.join(b.name for b in bases)} in {workdir} ({time.monotonic() - started:.0f} s)",
        flush=True,
    )
    for kind in kinds:
        print(f"  {kind}: strategies {', '.join(strategy_names(kind))}")

    stats = {k: collections.Counter() for k in kinds}
    error_shapes = {k: collections.Counter() for k in kinds}
    by_strategy: collections.Counter[tuple[str, str]] = collections.Counter()
    failures: list[Failure] = []
    total = args.per_type * len(kinds)
    done = 0
    slowest: list[tuple[float, str, str]] = []
    sampled = []
    rng = random.Random(args.seed + 1)
    tasks = make_tasks(bases, kinds, args.per_type, args.seed, weights=weights)
    # failures go to --failures as they are found: a long run stopped early keeps what it found
    sink = open(args.failures, "w", encoding="utf-8") if args.failures else None  # noqa: SIM115

    def record(found: list[Failure], task: Task) -> None:
        failures.extend(found)
        if sink is not None:
            sink.writelines(json.dumps(failure_row(f, task)) + "\n" for f in found)
            sink.flush()

    stopping: list[int] = []  # a SIGINT ends the run after the inputs in flight, with its report
    signal.signal(signal.SIGINT, lambda signum, _frame: stopping.append(signum))

    def tee(iterable):
        for task in iterable:
            if stopping:
                print(f"interrupted: {done} of {total} inputs run, the report covers them", flush=True)
                return
            if rng.random() < args.subprocess_share:
                sampled.append(task)
            yield task

    try:
        with Fuzzer(
            bases,
            jobs=args.jobs,
            timeout=args.timeout,
            memory_mb=args.memory_mb,
            drop_privileges=not args.keep_root,
            scratch=workdir / "work",
            link=not args.copy_stores,
        ) as fuzzer:
            print(f"{args.jobs} workers ready ({time.monotonic() - started:.0f} s)", flush=True)
            for result in fuzzer.run(tee(tasks)):
                c = result.task.corruption
                s = stats[c.kind]
                s["inputs"] += 1
                by_strategy[(c.kind, c.strategy)] += 1
                for name, code, seconds, has_position in result.outcomes:
                    s["commands"] += 1
                    s[f"exit {code}"] += 1
                    if code == 1:
                        s["error lines with a position"] += has_position
                    slowest.append((seconds, name, str(c)))
                slowest = sorted(slowest, reverse=True)[:5]
                for line in result.error_lines:  # their shapes: the numbers folded
                    error_shapes[c.kind][re.sub(r"-?\d+", "N", line)[:160]] += 1
                if result.failures:
                    s["failed inputs"] += 1
                    s["failures"] += len(result.failures)
                    record(result.failures, result.task)
                done += 1
                if done % 500 == 0 or done == total:
                    rate = done / max(1e-9, time.monotonic() - started)
                    print(
                        f"{done}/{total} inputs, {len(failures)} failures, {rate:.1f} inputs/s, "
                        f"eta {(total - done) / max(rate, 1e-9) / 60:.0f} min",
                        flush=True,
                    )
        for failure, task in run_subprocess_sample(sampled, {b.name: b for b in bases}, workdir, args):
            record([failure], task)
    finally:
        if sink is not None:
            sink.close()
    report(kinds, stats, by_strategy, failures, slowest, len(sampled), started, error_shapes)
    if args.failures and failures:
        print(f"\nrerun them one by one: python -m tests.fuzz.run_long --replay {args.failures}")
    if args.workdir is None:
        restore_permissions(workdir)
        shutil.rmtree(workdir, ignore_errors=True)
    return 1 if failures else 0


def run_subprocess_sample(tasks, bases, workdir: Path, args) -> list[tuple[Failure, Task]]:
    """Each sampled input's first two commands through `python -m mqtool.cli` (a new process with
    RLIMIT_AS and a timeout): the real entry point, real streams."""
    if not tasks:
        return []
    print(f"subprocess sample: {len(tasks)} inputs", flush=True)

    def one(item: tuple[int, Task]) -> list[tuple[Failure, Task]]:
        i, task = item
        root = workdir / "sub" / str(i) / "store"
        if root.exists():
            restore_permissions(root)
            shutil.rmtree(root)
        shutil.copytree(bases[task.base].path, root, symlinks=True)
        task.corruption.apply(root)
        out = []
        try:
            for name, argv in task.commands[:2]:
                full = ["-s", str(root), "-f", format_for(task.fmt, argv), *argv]
                outcome = run_subprocess(full, timeout=args.timeout * 2, name=name)
                verdict = judge(outcome, str(root))
                if verdict.failure:
                    failure = Failure(
                        task.base,
                        task.corruption,
                        f"{name} (subprocess)",
                        [a.replace(str(root), "<store>") for a in full],
                        verdict.failure,
                        outcome.code,
                        outcome.stderr.replace(str(root), "<store>"),
                    )
                    out.append((failure, task))
        finally:
            restore_permissions(root)
            shutil.rmtree(root.parent, ignore_errors=True)
        return out

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        return [f for fs in pool.map(one, enumerate(tasks)) for f in fs]


def report(
    kinds, stats, by_strategy, failures: list[Failure], slowest, sampled: int, started: float, error_shapes
) -> None:
    print()
    columns = [
        "inputs",
        "commands",
        "exit 0",
        "exit 1",
        "error lines with a position",
        "failed inputs",
        "failures",
    ]
    widths = [max(10, len(c) + 2) for c in columns]
    print(f"{'file type':<14}" + "".join(f"{c:>{w}}" for c, w in zip(columns, widths, strict=True)))
    totals: collections.Counter = collections.Counter()
    for kind in kinds:
        totals.update(stats[kind])
        print(f"{kind:<14}" + "".join(f"{stats[kind][c]:>{w}}" for c, w in zip(columns, widths, strict=True)))
    print(f"{'total':<14}" + "".join(f"{totals[c]:>{w}}" for c, w in zip(columns, widths, strict=True)))
    other = sorted(k for k in totals if k.startswith("exit ") and k not in ("exit 0", "exit 1"))
    if other:
        print("other exit statuses: " + ", ".join(f"{k}: {totals[k]}" for k in other))
    print(f"subprocess sample: {sampled} inputs; elapsed {(time.monotonic() - started) / 60:.1f} min")
    print("\ninputs per strategy:")
    for kind in kinds:
        row = ", ".join(f"{s}={n}" for (k, s), n in sorted(by_strategy.items()) if k == kind)
        print(f"  {kind}: {row}")
    print("\ncommonest error lines (numbers folded to N):")
    for kind in kinds:
        for line, n in error_shapes[kind].most_common(8):
            print(f"  {kind} {n:>6}  {line}")
    print("\nslowest commands:")
    for seconds, name, corruption in slowest:
        print(f"  {seconds:6.2f} s  {name}  {corruption}")
    if not failures:
        print("\nno failures")
        return
    groups: dict[tuple[str, str, str], list[Failure]] = collections.defaultdict(list)
    for f in failures:
        groups[(f.command, f.reason.split(":")[0][:80], f.where())].append(f)
    print(f"\n{len(failures)} failures in {len(groups)} groups:")
    for (command, reason, where), items in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        print(f"\n[{len(items)}x] {command}: {reason}" + (f" at {where}" if where else ""))
        print("  " + str(items[0]).replace("\n", "\n  "))


if __name__ == "__main__":
    sys.exit(main())
