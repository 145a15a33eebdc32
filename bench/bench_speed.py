"""Issue 29's figures in one run, side by side (by hand; needs the oracle build for the Java side).

    python bench/bench_speed.py [--dir /work/bigstores] [--messages 1600000] [--repeat 3]

Stores, written once (and reused) by the oracle's `make-big` through the real 5.3.3 put path, 20 topics,
1 GiB commitlog files: `mixed` - a born host per message, 0.5 % of them IPv6 clients (short-lived producers
on a dual-stack network) - and `p200` - the same messages from 200 producer connections. Then:

* RocketMQ's own `MessageDecoder.decode` over every record of `mixed` (tests/oracle/run.sh bench: one
  thread, warm median; and the whole process, JVM start included, for one pass);
* mqtool's columnar decode of every file (this process, one thread, warm median; wall and CPU) of both
  stores: the ratio host-per-message / 200 producers (goal <= 1.3x) and the rate against Java;
* `mqtool verify` as a new process with --jobs 1 and 2: wall, CPU and peak memory (the sum of the resident
  sets of its processes, sampled) of both stores, against Java's decode with its start;
* `export` (Parquet) and `info` with --jobs 1 and 2 (the speed-up from one core to two);
* start-up: `--help` and read commands on the golden stores (bytecode cached, as an installed mqtool).

Every child runs in its own session, sampled every 50 ms for CPU (user + sys of all its processes) and
resident memory. The machine is shared: CPU figures hardly depend on its load, wall times do; the load
average is printed with the figures.
"""

from __future__ import annotations

import argparse
import json
import mmap
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
ORACLE = ROOT / "tests" / "oracle" / "run.sh"
PAGE = os.sysconf("SC_PAGE_SIZE")
TICK = os.sysconf("SC_CLK_TCK")
STORES = {"mixed": ("0", "5"), "p200": ("200", "0")}  # make-big PRODUCERS IPV6_PER_MILLE


def _env() -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: bytecode cached
    return env


def _tree(sid: int) -> dict[int, tuple[float, int]]:
    """(CPU seconds, resident bytes) of every process of session `sid`."""
    out = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as fh:
                fields = fh.read().rpartition(")")[2].split()
        except OSError:
            continue
        if int(fields[3]) == sid:
            out[int(entry.name)] = ((int(fields[11]) + int(fields[12])) / TICK, int(fields[21]) * PAGE)
    return out


def measured(cmd: list[str], env: dict[str, str] | None = None) -> dict:
    """Run cmd in a new session: stdout, return code, wall s, CPU s and peak resident bytes of its tree."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, text=True, env=env or _env(), cwd=ROOT,
                                start_new_session=True)  # fmt: skip
        cpu: dict[int, float] = {}
        peak = 0
        while proc.poll() is None:
            now = _tree(proc.pid)
            cpu.update({pid: c for pid, (c, _) in now.items()})
            peak = max(peak, sum(rss for _, rss in now.values()))
            time.sleep(0.05)
        wall = time.monotonic() - t0
        out.seek(0)
        err.seek(0)
        return {"out": out.read(), "err": err.read(), "code": proc.returncode, "wall": wall,
                "cpu": sum(cpu.values()), "rss": peak}  # fmt: skip


def median_of(runs: list[dict]) -> dict:
    return {k: statistics.median(r[k] for r in runs) for k in ("wall", "cpu", "rss")}


def cpu_now() -> float:
    t = os.times()
    return t.user + t.system


def decode_store(store: Path) -> tuple[int, float, float]:
    """(rows, wall s, CPU s) of the columnar decode of every commitlog file, one thread, this process."""
    from formats.columnar.decoder import decode_range

    rows = 0
    t, c = time.perf_counter(), cpu_now()
    for p in sorted((store / "commitlog").iterdir()):
        with open(p, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            batch = decode_range(memoryview(buf), int(p.name))
            rows += batch.num_rows
            del batch
    return rows, time.perf_counter() - t, cpu_now() - c


def make_store(path: Path, messages: int, producers: str, ipv6: str) -> None:
    if (path / "commitlog").is_dir():
        return
    print(f"writing {path} through the real put path ...", file=sys.stderr, flush=True)
    subprocess.run([str(ORACLE), "make-big", str(path), str(messages), producers, ipv6, "20"], check=True,
                   stdout=subprocess.DEVNULL)  # fmt: skip


def mqtool(*args: str) -> list[str]:
    return [sys.executable, "-m", "mqtool.cli", *args]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", type=Path, default=Path("/work/bigstores/speed"))
    ap.add_argument("--messages", type=int, default=1_600_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    stores = {name: args.dir / name for name in STORES}
    for name, (producers, ipv6) in STORES.items():
        make_store(stores[name], args.messages, producers, ipv6)
    rows: list[str] = []
    load = os.getloadavg()

    # RocketMQ's MessageDecoder: warm median in its own process, and the process with its JVM start
    java_run = measured([str(ORACLE), "bench", str(stores["mixed"]), str(args.repeat)], dict(os.environ))
    java = json.loads(java_run["out"])
    jw = java["warmSecondsMedian"]
    n = java["messages"]
    cold = [measured([str(ORACLE), "bench", str(stores["mixed"]), "1"], dict(os.environ)) for _ in range(2)]
    # one cold pass with the JVM start: the process less its one warm pass
    java_cold = statistics.median(r["wall"] - json.loads(r["out"])["warmSecondsMedian"] for r in cold)
    rows.append(f"| RocketMQ MessageDecoder.decode, warm, 1 thread | mixed | {jw:.2f} | | | "
                f"{n / jw / 1e6:.2f} M/s | 1.00x |")  # fmt: skip
    rows.append(f"| RocketMQ MessageDecoder.decode, once, JVM start included | mixed | {java_cold:.2f} | | | "
                f"{n / java_cold / 1e6:.2f} M/s | |")  # fmt: skip

    decode = {}
    for name, store in stores.items():
        decode_store(store)  # warm: page cache, the kernels
        runs = [decode_store(store) for _ in range(args.repeat)]
        decode[name] = (statistics.median(r[1] for r in runs), statistics.median(r[2] for r in runs))
        wall, cpu = decode[name]
        rows.append(f"| mqtool columnar decode, warm, 1 thread | {name} | {wall:.2f} | {cpu:.2f} | | "
                    f"{runs[0][0] / wall / 1e6:.2f} M/s | {jw / wall:.2f}x |")  # fmt: skip

    verify = {}
    for name, store in stores.items():
        for jobs in ("1", "2"):
            cmd = mqtool("verify", "--store", str(store), "--format", "json", "--jobs", jobs)
            measured(cmd)
            v = median_of([measured(cmd) for _ in range(args.repeat)])
            verify[name, jobs] = v
            rows.append(f"| mqtool verify --jobs {jobs} (new process) | {name} | {v['wall']:.2f} | "
                        f"{v['cpu']:.2f} | {v['rss'] / 2**30:.2f} | {n / v['wall'] / 1e6:.2f} M/s | "
                        f"{java_cold / v['wall']:.2f}x |")  # fmt: skip

    others = {}
    with tempfile.TemporaryDirectory() as tmp:
        for what, base in (("export", ["export", "--output", tmp]), ("info", ["info", "--format", "json"])):
            for jobs in ("1", "2"):
                cmd = mqtool(*base, "--store", str(stores["mixed"]), "--jobs", jobs)
                measured(cmd)
                o = median_of([measured(cmd) for _ in range(args.repeat)])
                others[what, jobs] = o
                rows.append(f"| mqtool {what} --jobs {jobs} (new process) | mixed | {o['wall']:.2f} | "
                            f"{o['cpu']:.2f} | {o['rss'] / 2**30:.2f} | | |")  # fmt: skip

    end_load = os.getloadavg()[0]
    print(
        f"\n{n:,} messages, {java['bytes'] / 1e9:.2f} GB of records; machine {os.cpu_count()} cores, "
        f"load average {load[0]:.1f} at the start, {end_load:.1f} at the end; medians of {args.repeat}"
    )
    print("\n| what | store | wall s | CPU s | peak memory GiB | rate | vs Java |")
    print("|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    print("\nratios:")
    print(f"- decode CPU, a host per message (0.5 % IPv6) / 200 producers: "
          f"{decode['mixed'][1] / decode['p200'][1]:.2f}x (goal <= 1.3x)")  # fmt: skip
    for jobs in ("1", "2"):
        print(f"- verify --jobs {jobs} CPU, mixed / p200: "
              f"{verify['mixed', jobs]['cpu'] / verify['p200', jobs]['cpu']:.2f}x")  # fmt: skip
    for what in ("verify", "export", "info"):
        one = verify["mixed", "1"] if what == "verify" else others[what, "1"]
        two = verify["mixed", "2"] if what == "verify" else others[what, "2"]
        print(f"- {what} speed-up, 1 -> 2 jobs (wall): {one['wall'] / two['wall']:.2f}x")

    print("\nstart-up (new process, warm, bytecode cached):\n")
    print("| command | store | wall s | CPU s |")
    print("|---|---|---|---|")
    commands = [["--help"], ["info"], ["delay", "stats"], ["pop", "stats"], ["query", "id",
                "C0A8000100002A9F000000000000010E"], ["offsets", "show"], ["txn", "list"]]  # fmt: skip
    for store in ("samples/store-a", "tests/data/store-pop", "tests/data/store-timer-states"):
        for cmd in commands:
            if cmd == ["--help"] and store != "samples/store-a":
                continue
            full = mqtool(*cmd) if cmd == ["--help"] else mqtool("--store", store, *cmd, "--format", "json")
            measured(full)
            s = median_of([measured(full) for _ in range(args.repeat)])
            print(f"| {' '.join(cmd)} | {store.rsplit('/', 1)[-1]} | {s['wall']:.2f} | {s['cpu']:.2f} |")


if __name__ == "__main__":
    main()
