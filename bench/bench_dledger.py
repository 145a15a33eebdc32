"""Benchmark a whole-log scan of a DLedger store against the same messages in a classic store (by hand).

    python bench/bench_dledger.py DIR [--create] [--messages N] [--repeat N]

With --create, `mqtool sample create` writes DIR/classic and DIR/dledger (--dledger) from the same seed and
message count with the broker's real sizes (1 GiB data/commitlog files, 6,000,000-byte ConsumeQueue
files, 5M slots / 20M entries index files): the same records, one store with each in a DLedger entry (48-byte
header, pads, index units) at pos + 48. Then, for both in the same run, alternating so that a busy machine
weighs on both alike:

* the columnar scan of every file with the body CRC, as `verify` runs it (`store.log.scan.scan_file` /
  `scan_data_file`): wall and CPU seconds (median of --repeat), messages per second;
* `mqtool verify` end to end (a new process: imports, scan, ConsumeQueue/index/DLedger checks);

and the ratios DLedger / classic against the goal (scan within 1.2x).
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

GOAL = 1.2
SIZES = ["--file-size", str(1 << 30), "--cq-file-size", "6000000", "--max-hash-slot-num", "5000000",
         "--max-index-num", "20000000"]  # fmt: skip


def create(directory: Path, messages: int, seed: int) -> None:
    for name, extra in (("classic", []), ("dledger", ["--dledger"])):
        target = directory / name
        if target.exists():
            continue
        t0 = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "mqtool.cli", "sample", "create", str(target), "--count", str(messages),
             "--seed", str(seed), *SIZES, *extra, "--format", "plain"],
            cwd=ROOT, check=True, stdout=subprocess.DEVNULL,
        )  # fmt: skip
        print(f"created {target} ({messages} messages) in {time.perf_counter() - t0:.0f} s", flush=True)


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def scan(root: Path) -> tuple[int, int]:
    """Decode every file of the store's log as verify does: (messages, bytes)."""
    from store.log.dledger import DLedgerCommitLog
    from store.log.scan import relative_name, scan_data_file, scan_file
    from store.storedir import Store

    messages = size = 0
    with Store.open(root) as st:
        cl = st.commitlog
        if isinstance(cl, DLedgerCommitLog):
            prev = (-1, -1)
            for f in cl.log.data_files:
                s = scan_data_file(f, name=relative_name(f, root), prev_index=prev[0], prev_term=prev[1])
                prev = (s.last_index, s.last_term)
                messages += int((s.entries()["status"] == 0).sum())
                size += f.size
        else:
            for f in cl.files:
                s = scan_file(f, name=relative_name(f, root))
                messages += s.message_count()
                size += f.size
    return messages, size


def timed_scan(root: Path) -> tuple[float, float, int, int]:
    c0, t0 = _cpu(), time.perf_counter()
    messages, size = scan(root)
    return time.perf_counter() - t0, _cpu() - c0, messages, size


def timed_verify(root: Path) -> tuple[float, float, int]:
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    c0, t0 = kids.ru_utime + kids.ru_stime, time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "mqtool.cli", "--store", str(root), "verify", "--format", "json"],
        cwd=ROOT, capture_output=True, text=True,
    )  # fmt: skip
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.perf_counter() - t0, kids.ru_utime + kids.ru_stime - c0, proc.returncode


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("directory", type=Path)
    p.add_argument("--create", action="store_true")
    p.add_argument("--messages", type=int, default=1_250_000)
    p.add_argument("--seed", type=int, default=29)
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args(argv)
    if args.create:
        create(args.directory, args.messages, args.seed)
    stores = {name: args.directory / name for name in ("classic", "dledger")}
    for root in stores.values():  # page cache and compiled kernels warm for both
        scan(root)
    walls: dict[str, list[float]] = {n: [] for n in stores}
    cpus: dict[str, list[float]] = {n: [] for n in stores}
    counts: dict[str, tuple[int, int]] = {}
    for _ in range(args.repeat):
        for name, root in stores.items():
            wall, cpu, messages, size = timed_scan(root)
            walls[name].append(wall)
            cpus[name].append(cpu)
            counts[name] = (messages, size)
    vwalls: dict[str, list[float]] = {n: [] for n in stores}
    vcpus: dict[str, list[float]] = {n: [] for n in stores}
    for _ in range(max(1, args.repeat // 2)):
        for name, root in stores.items():
            wall, cpu, code = timed_verify(root)
            vwalls[name].append(wall)
            vcpus[name].append(cpu)
            if code != 0:
                print(f"verify {root}: exit {code}", flush=True)
    med = {n: (statistics.median(walls[n]), statistics.median(cpus[n])) for n in stores}
    vmed = {n: (statistics.median(vwalls[n]), statistics.median(vcpus[n])) for n in stores}
    for name in stores:
        messages, size = counts[name]
        wall, cpu = med[name]
        print(
            f"{name:8} scan: {messages} messages, {size / 1e9:.2f} GB of files: wall {wall:.2f} s, "
            f"CPU {cpu:.2f} s ({messages / cpu / 1e6:.2f} M msg/s per CPU s); verify: wall "
            f"{vmed[name][0]:.1f} s, CPU {vmed[name][1]:.1f} s",
            flush=True,
        )
    ratio_cpu = med["dledger"][1] / med["classic"][1]
    ratio_wall = med["dledger"][0] / med["classic"][0]
    vratio = vmed["dledger"][1] / vmed["classic"][1]
    verdict = "met" if ratio_cpu <= GOAL else "MISSED"
    print(
        f"DLedger / classic scan: CPU {ratio_cpu:.2f}x, wall {ratio_wall:.2f}x (goal <= {GOAL}x: {verdict}); "
        f"verify CPU {vratio:.2f}x"
    )
    return 0 if ratio_cpu <= GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
