"""Issue 29's figures in one run, side by side (by hand; needs the oracle build for the Java side).

    python bench/bench_speed.py [--dir /work/bigstores/speed] [--messages 1600000] [--repeat 3]
                                [--baseline /path/to/other/checkout]

Stores, written once (and reused) by the oracle's `make-big` through the real 5.3.3 put path, 20 topics,
1 GiB commitlog files: `mixed` - a born host per message, 0.5 % of them IPv6 clients (short-lived producers
on a dual-stack network) - and `p200` - the same messages from 200 producer connections. Then:

* RocketMQ's own `MessageDecoder.decode` over every record of `mixed` (tests/oracle/run.sh bench: one
  thread, warm median over files mapped once, wall and the process's CPU; and the whole process, JVM start
  included, for one pass);
* mqtool's columnar decode of every file (a child process, one thread, files mapped once as Java's are,
  warm median; wall and CPU) of both stores, also with the bodies copied out (with_body, as Java's decode
  copies each body into a byte[]): the ratio host-per-message / 200 producers (goal <= 1.3x) and the rate
  against Java;
* `mqtool verify` as a new process with --jobs 1 and 2: wall, CPU and peak memory (the sum of the resident
  sets of its processes, sampled) of both stores, against Java's decode with its start;
* `export` (Parquet) and `info` with --jobs 1 and 2 (the speed-up from one core to two);
* start-up: `--help` and read commands on the golden stores (bytecode cached, as an installed mqtool).

What the two decodes produce (like with like): Java's decode makes a MessageExt per record - every header
field, the hosts as InetSocketAddress, the topic as a String, the body copied into a byte[], every property
parsed into a HashMap, the msgId string - and checks nothing (its bench loop stops at a size <= 0 or a
BLANK). mqtool's makes one Arrow column per field - every header field, topic and hosts dictionary-encoded
as text, KEYS / TAGS / UNIQ_KEY as strings, the raw properties as views into the file, the body as offset +
length (with_body: copied) - and applies the broker's record check (`checkMessageAndReturnSize`: the length
formula, the property rules) to every record. Neither checks body CRCs; `verify` does.

With --baseline, every mqtool figure is also measured with the mqtool of that checkout (its own compiled
kernels; its bytecode cached under the temporary directory, so the checkout is not written to), in the same
run, in a column beside this checkout's: before / after on the same machine at the same load.

Every child runs in its own session, sampled every 50 ms for CPU (user + sys of all its processes) and
resident memory. The machine is shared: CPU figures hardly depend on its load, wall times do; the load
average is printed with the figures.
"""

from __future__ import annotations

import argparse
import json
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


_PYCACHE = Path(tempfile.gettempdir()) / "mqtool-bench-pycache"


def _env(tree: Path = ROOT) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(tree))
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: bytecode cached
    if tree != ROOT:  # another checkout: read only, its bytecode kept apart
        env["PYTHONPYCACHEPREFIX"] = str(_PYCACHE / tree.name)
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


def measured(cmd: list[str], env: dict[str, str] | None = None, cwd: Path = ROOT) -> dict:
    """Run cmd in a new session: stdout, return code, wall s, CPU s and peak resident bytes of its tree."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, text=True, env=env or _env(), cwd=cwd,
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


# the columnar decode of every commitlog file of a store, in a child process of the checkout measured: the
# files mapped once (as the Java bench maps them), one warm-up pass, then `repeat` passes; JSON out
_DECODE = """
import json, mmap, os, sys, time
from pathlib import Path
from formats.columnar.decoder import decode_range

store, repeat, with_body = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1"
maps = []
for p in sorted((store / "commitlog").iterdir()):
    with open(p, "rb") as fh:
        maps.append((mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ), int(p.name)))

def one():
    rows = 0
    t, c = time.perf_counter(), time.process_time()
    for m, base in maps:
        batch = decode_range(memoryview(m), base, with_body=with_body)
        rows += batch.num_rows
        del batch
    return rows, time.perf_counter() - t, time.process_time() - c

one()
print(json.dumps([one() for _ in range(repeat)]))
"""


def decode_store(
    store: Path, repeat: int, tree: Path = ROOT, with_body: bool = False
) -> tuple[int, float, float]:
    """(rows, wall s, CPU s: medians) of the columnar decode of every commitlog file, one thread."""
    run = measured([sys.executable, "-c", _DECODE, str(store), str(repeat), "1" if with_body else "0"],
                   _env(tree), cwd=tree)  # fmt: skip
    if run["code"] != 0:
        raise SystemExit(f"the decode in {tree} failed: {run['err'][-2000:]}")
    runs = json.loads(run["out"])
    return runs[0][0], statistics.median(r[1] for r in runs), statistics.median(r[2] for r in runs)


def make_store(path: Path, messages: int, producers: str, ipv6: str) -> None:
    if (path / "commitlog").is_dir():
        return
    print(f"writing {path} through the real put path ...", file=sys.stderr, flush=True)
    subprocess.run([str(ORACLE), "make-big", str(path), str(messages), producers, ipv6, "20"], check=True,
                   stdout=subprocess.DEVNULL)  # fmt: skip


def mqtool(*args: str) -> list[str]:
    return [sys.executable, "-m", "mqtool.cli", *args]


def timed(cmd: list[str], repeat: int, tree: Path) -> dict:
    """Median wall, CPU and peak memory of `repeat` runs of cmd after one warm-up, in checkout `tree`."""
    measured(cmd, _env(tree), cwd=tree)
    return median_of([measured(cmd, _env(tree), cwd=tree) for _ in range(repeat)])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", type=Path, default=Path("/work/bigstores/speed"))
    ap.add_argument("--messages", type=int, default=1_600_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--baseline", type=Path, help="another checkout of mqtool to measure beside this one")
    args = ap.parse_args()
    stores = {name: args.dir / name for name in STORES}
    for name, (producers, ipv6) in STORES.items():
        make_store(stores[name], args.messages, producers, ipv6)
    trees = {"this": ROOT}
    if args.baseline:
        trees = {"baseline": args.baseline.resolve(), "this": ROOT}
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
    # CPU (a harness built before it reported warmCpuSecondsMedian: none): the warm pass's process CPU, and
    # the cold process's CPU less its warm pass
    jc = java.get("warmCpuSecondsMedian")
    java_cold_cpu = None
    if jc is not None:
        java_cold_cpu = statistics.median(
            r["cpu"] - json.loads(r["out"])["warmCpuSecondsMedian"] for r in cold
        )
    rest = " | | | |" * (len(trees) - 1)  # the Java rows fill the first figures' columns

    def java_cpu(v: float | None) -> str:
        return f"{v:.2f}" if v is not None else ""

    rows.append(f"| RocketMQ MessageDecoder.decode, warm, 1 thread | mixed | {jw:.2f} | {java_cpu(jc)} | | "
                f"1.00x |{rest}")  # fmt: skip
    rows.append(f"| RocketMQ MessageDecoder.decode, once, JVM start included | mixed | {java_cold:.2f} | "
                f"{java_cpu(java_cold_cpu)} | | |{rest}")  # fmt: skip

    def cells(fig: dict, ref: float | None) -> str:
        parts = [
            f"{fig['wall']:.2f}",
            f"{fig['cpu']:.2f}",
            f"{fig['rss'] / 2**30:.2f}" if fig.get("rss") else "",
        ]
        parts.append(f"{ref / fig['wall']:.2f}x" if ref else "")
        return " | ".join(parts)

    decode: dict = {}
    for name, store in stores.items():
        for with_body in (False, True):
            if with_body and name != "mixed":
                continue
            figs = {}
            for label, tree in trees.items():
                rows_n, wall, cpu = decode_store(store, args.repeat, tree, with_body)
                figs[label] = {"wall": wall, "cpu": cpu, "rows": rows_n}
            decode[name, with_body] = figs
            what = "mqtool columnar decode, warm, 1 thread" + (", bodies copied" if with_body else "")
            rows.append(f"| {what} | {name} | " + " | ".join(cells(f, jw) for f in figs.values()) + " |")

    verify: dict = {}
    for name, store in stores.items():
        for jobs in ("1", "2"):
            cmd = mqtool("verify", "--store", str(store), "--format", "json", "--jobs", jobs)
            figs = {label: timed(cmd, args.repeat, tree) for label, tree in trees.items()}
            verify[name, jobs] = figs
            rows.append(f"| mqtool verify --jobs {jobs} (new process) | {name} | "
                        + " | ".join(cells(f, java_cold) for f in figs.values()) + " |")  # fmt: skip

    others: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        for what, base in (("export", ["export", "--output", tmp]), ("info", ["info", "--format", "json"])):
            for jobs in ("1", "2"):
                cmd = mqtool(*base, "--store", str(stores["mixed"]), "--jobs", jobs)
                figs = {label: timed(cmd, args.repeat, tree) for label, tree in trees.items()}
                others[what, jobs] = figs
                rows.append(f"| mqtool {what} --jobs {jobs} (new process) | mixed | "
                            + " | ".join(cells(f, None) for f in figs.values()) + " |")  # fmt: skip

    end_load = os.getloadavg()[0]
    print(
        f"\n{n:,} messages, {java['bytes'] / 1e9:.2f} GB of records; machine {os.cpu_count()} cores, "
        f"load average {load[0]:.1f} at the start, {end_load:.1f} at the end; medians of {args.repeat}"
    )
    if args.baseline:
        print(f"baseline: {trees['baseline']}; this: {ROOT}")
    head = " | ".join(f"{label}: wall s | CPU s | peak memory GiB | vs Java" for label in trees)
    print(f"\n| what | store | {head} |")
    print("|---|---|" + "---|" * (4 * len(trees)))
    print("\n".join(rows))
    print("\nratios (" + " / ".join(trees) + "):")

    def each(fn) -> str:
        return " / ".join(f"{fn(label):.2f}x" for label in trees)

    walls = {name: decode[name, False] for name in stores}
    print("- decode vs Java warm (goal >= 1.0x): mixed " + each(lambda t: jw / walls["mixed"][t]["wall"])
          + ", p200 " + each(lambda t: jw / walls["p200"][t]["wall"]))  # fmt: skip
    if jc is not None:
        print("- decode vs Java warm by CPU (load-proof): mixed "
              + each(lambda t: jc / walls["mixed"][t]["cpu"])
              + ", p200 " + each(lambda t: jc / walls["p200"][t]["cpu"]))  # fmt: skip
    print("- decode CPU, a host per message (0.5 % IPv6) / 200 producers (goal <= 1.3x): "
          + each(lambda t: decode["mixed", False][t]["cpu"] / decode["p200", False][t]["cpu"]))  # fmt: skip
    for jobs, goal in (("1", "0.6"), ("2", "1.0")):
        print(f"- verify --jobs {jobs} vs Java decode with its JVM start (goal >= {goal}x): mixed "
              + each(lambda t, j=jobs: java_cold / verify["mixed", j][t]["wall"]))  # fmt: skip
        if java_cold_cpu is not None:
            print(f"- verify --jobs {jobs} CPU vs Java decode's CPU with its JVM start: mixed "
                  + each(lambda t, j=jobs: java_cold_cpu / verify["mixed", j][t]["cpu"]))  # fmt: skip
        print(
            f"- verify --jobs {jobs} CPU, mixed / p200: "
            + each(lambda t, j=jobs: verify["mixed", j][t]["cpu"] / verify["p200", j][t]["cpu"])
        )
    print(
        "- verify peak memory, mixed (goal <= 1 GiB): "
        + " / ".join(
            f"{max(verify['mixed', j][t]['rss'] for j in ('1', '2')) / 2**30:.2f} GiB" for t in trees
        )
    )
    for what in ("verify", "export", "info"):
        table = verify if what == "verify" else others
        key = (lambda j: ("mixed", j)) if what == "verify" else (lambda j, w=what: (w, j))
        print(f"- {what} speed-up, 1 -> 2 jobs (wall): "
              + each(lambda t, k=key, tb=table: tb[k("1")][t]["wall"] / tb[k("2")][t]["wall"]))  # fmt: skip

    print("\nstart-up (new process, warm, bytecode cached):\n")
    print("| command | store | " + " | ".join(f"{label}: wall s | CPU s" for label in trees) + " |")
    print("|---|---|" + "---|" * (2 * len(trees)))
    commands = [["--help"], ["info"], ["delay", "stats"], ["pop", "stats"], ["query", "id",
                "C0A8000100002A9F000000000000010E"], ["offsets", "show"], ["txn", "list"]]  # fmt: skip
    for store in ("samples/store-a", "tests/data/store-pop", "tests/data/store-timer-states"):
        for cmd in commands:
            if cmd == ["--help"] and store != "samples/store-a":
                continue
            full = (
                mqtool(*cmd)
                if cmd == ["--help"]
                else mqtool("--store", str(ROOT / store), *cmd, "--format", "json")
            )
            figs = [timed(full, args.repeat, tree) for tree in trees.values()]
            print(f"| {' '.join(cmd)} | {store.rsplit('/', 1)[-1]} | "
                  + " | ".join(f"{s['wall']:.2f} | {s['cpu']:.2f}" for s in figs) + " |")  # fmt: skip


if __name__ == "__main__":
    main()
