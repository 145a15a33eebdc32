"""Benchmark whole-store scans and the end-to-end commands on one ~1 GB store (run by hand, never in CI).

    python bench/bench_scan.py STORE_DIR [--create] [--messages N] [--repeat N] [--sample N]

With --create (and no STORE_DIR yet) the store is made by `mqtool sample create` with the broker's real
sizes (1 GiB commitlog files, 6,000,000-byte ConsumeQueue files, 5M slots / 20M entries index files), so
the ConsumeQueues and the index exist for `verify`. Prints, for the same files in the same run:

* a plain `cat` of the commitlog files (the page-cache limit);
* the columnar decode: cold process (interpreter, imports, cached numba code) and warm, with and without
  body CRC; the construct decoder on a sample, extrapolated;
* end-to-end wall times (median of --repeat) of `mqtool --help`, `mqtool verify` (default, --no-crc,
  --deep), `query key`, `query id` (offsetMsgId and UNIQ_KEY), `offsets reset --to-time` (dry run);
* the goals (decode >= 2 M msg/s per core, query <= 0.35 s, --help <= 0.25 s, verify <= 2x decode) and,
  for each one missed, the profile that explains it (verify's phase times, the import profile of the
  command).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_decode import COLD, commitlog_files, decode_store, line, mapped, timed  # noqa: E402

MQTOOL = [sys.executable, "-m", "mqtool.cli"]
GOALS = {"decode_msgs_per_s": 2.0e6, "query_s": 0.35, "help_s": 0.25, "verify_vs_decode": 2.0}


def create(store: Path, messages: int) -> None:
    args = [
        *MQTOOL,
        "sample",
        "create",
        str(store),
        "--count",
        str(messages),
        "--file-size",
        str(1 << 30),
        "--cq-file-size",
        "6000000",
        "--max-hash-slot-num",
        "5000000",
        "--max-index-num",
        "20000000",
        "--format",
        "plain",
    ]
    t0 = time.perf_counter()
    subprocess.run(args, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    print(f"created {store} with {messages} messages in {time.perf_counter() - t0:.0f} s")


def _child_cpu() -> float:
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return kids.ru_utime + kids.ru_stime


def run(args: list[str], repeat: int) -> tuple[float, float, subprocess.CompletedProcess]:
    """Median wall and CPU seconds of a command (CPU suffers less from a loaded machine), last result."""
    walls, cpus = [], []
    proc = None
    for _ in range(repeat):
        c0, t0 = _child_cpu(), time.perf_counter()
        proc = subprocess.run(args, cwd=ROOT, capture_output=True, text=True)
        walls.append(time.perf_counter() - t0)
        cpus.append(_child_cpu() - c0)
    assert proc is not None
    return statistics.median(walls), statistics.median(cpus), proc


def import_profile(args: list[str], top: int = 8) -> str:
    """The slowest cumulative imports of a command (python -X importtime)."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", *args[1:]], cwd=ROOT, capture_output=True, text=True
    )
    rows = []
    for text in proc.stderr.splitlines():
        parts = text.removeprefix("import time:").split("|")
        if not text.startswith("import time:") or len(parts) != 3 or not parts[1].strip().isdigit():
            continue
        rows.append((int(parts[1]), parts[2].strip()))
    rows.sort(reverse=True)
    return "\n".join(f"      {us / 1e6:6.3f} s  {name.strip()}" for us, name in rows[:top])


def sample_ids(store: Path) -> dict[str, str]:
    """A topic/key, an offsetMsgId, a UNIQ_KEY and a time from the middle of the store."""
    from formats.columnar.decoder import decode_range
    from mqtool.export import offset_msg_ids

    files = commitlog_files(store)
    path = files[0]
    buf = mapped(path)
    size = len(buf)
    start_batch = decode_range(buf, int(path.name), 0, min(size, 1 << 20))
    mid = start_batch.num_rows // 2
    row = None
    for i in range(mid, start_batch.num_rows):
        r = start_batch.slice(i, 1).to_pylist()[0]
        if (
            r["status"] == "ok"
            and r["keys"]
            and r["uniqKey"]
            and not r["topic"].startswith(("%", "RMQ", "SCHED"))
        ):
            row, mid = r, i
            break
    assert row is not None, "no message with KEYS found"
    msg_id = offset_msg_ids(start_batch.column("storeHost").slice(mid, 1), [row["physicalOffset"]])[0].as_py()
    return {
        "topic": row["topic"],
        "key": row["keys"].split(" ")[0],
        "msgId": msg_id,
        "uniqKey": row["uniqKey"],
        "time": str(row["storeTimestamp"]),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("store", type=Path)
    ap.add_argument("--create", action="store_true", help="create the store if it does not exist")
    ap.add_argument("--messages", type=int, default=1_350_000, help="messages for --create (~1.2 GB)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--sample", type=int, default=20000, help="records for the construct decoder")
    args = ap.parse_args(argv)
    store = args.store
    if not store.exists():
        if not args.create:
            ap.error(f"{store} does not exist (use --create)")
        create(store, args.messages)

    files = commitlog_files(store)
    file_bytes = sum(p.stat().st_size for p in files)
    cat = ["cat", *map(str, files)]
    subprocess.run(cat, stdout=subprocess.DEVNULL, check=True)
    messages, data = decode_store(files)
    print(f"{store}: {len(files)} commitlog files, {file_bytes / 1e6:.0f} MB; {messages} messages, "
          f"{data / 1e6:.0f} MB of records")  # fmt: skip
    print(
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (wall times suffer when it is high)"
    )
    print(f"{'':<46} {'wall':>9} {'CPU':>9}  {'M msg/s':>13}  {'MB/s (wall, CPU)':>13}")
    t_cat, c_cat, _ = timed(lambda: subprocess.run(cat, stdout=subprocess.DEVNULL, check=True), args.repeat)
    print(f"{'cat of all files (page cache)':<46} {t_cat:7.3f} s {c_cat:7.3f} s  {'':>13}  "
          f"{file_bytes / t_cat / 1e6:6.0f} {file_bytes / c_cat / 1e6:6.0f}")  # fmt: skip

    def cold():
        out = subprocess.run(
            [sys.executable, "-c", COLD, str(store / "commitlog")], cwd=ROOT, capture_output=True, text=True
        )
        return out.stdout.split()

    t_cold, c_cold, _ = timed(cold, args.repeat)
    line("columnar, cold process (start+import+decode)", t_cold, c_cold, messages, data)
    decode = {}
    for label, options in (("columnar, warm", {}), ("columnar, warm, check_crc", {"check_crc": True})):
        t, c, _ = timed(lambda options=options: decode_store(files, **options), args.repeat)
        decode[label] = (t, c)
        line(label, t, c, messages, data)

    from formats.message.commitlog import Message, decode_record

    buf = mapped(files[0])
    base = int(files[0].name)
    t0 = time.perf_counter()
    pos = count = 0
    while count < args.sample:
        rec = decode_record(buf, pos, base, check_crc=False)
        if not isinstance(rec, Message):
            break
        pos += rec.total_size
        count += 1
    t_construct = (time.perf_counter() - t0) * messages / count
    line(f"construct decoder ({count} records, extrapolated)", t_construct, t_construct, messages, data)

    ids = sample_ids(store)
    s = ["--store", str(store)]
    commands = {
        "mqtool --help": [*MQTOOL, "--help"],
        "mqtool verify": [*MQTOOL, "verify", *s, "--format", "json"],
        "mqtool verify --no-crc": [*MQTOOL, "verify", *s, "--no-crc", "--format", "json"],
        "mqtool verify --deep": [*MQTOOL, "verify", *s, "--deep", "--format", "json"],
        "mqtool query key": [*MQTOOL, "query", "key", *s, ids["topic"], ids["key"], "--format", "json"],
        "mqtool query id (offsetMsgId)": [*MQTOOL, "query", "id", *s, ids["msgId"], "--format", "json"],
        "mqtool query id (UNIQ_KEY)": [*MQTOOL, "query", "id", *s, ids["uniqKey"], "--format", "json"],
        "mqtool offsets reset --to-time (dry run)": [
            *MQTOOL,
            "offsets",
            "reset",
            *s,
            "--group",
            "groupA",
            "--all-topics",
            "--to-time",
            ids["time"],
            "--format",
            "json",
        ],  # fmt: skip
    }
    print(f"\nend to end (median of {args.repeat}), sample ids {json.dumps(ids)}")
    times: dict[str, float] = {}
    reports: dict[str, dict] = {}
    print(f"{'':<46} {'wall':>9} {'CPU':>9}")
    for label, cmd in commands.items():
        t, c, proc = run(cmd, args.repeat)
        times[label] = min(t, c) if c > 0 else t  # on a loaded machine CPU time is the fairer figure
        note = "" if proc.returncode in (0, 1) else f"  (exit {proc.returncode}: {proc.stderr.strip()[:80]})"
        print(f"{label:<46} {t:7.3f} s {c:7.3f} s{note}")
        if label.startswith("mqtool verify") and proc.stdout.strip():
            reports[label] = json.loads(proc.stdout)
    for label, doc in reports.items():
        print(f"  {label}: errors {doc['errors']}, phases {doc['summary'].get('seconds')}")

    print("\ngoals (end-to-end figures: the smaller of wall and CPU time)")

    def best(pair: tuple[float, float]) -> float:
        return min(pair) if pair[1] > 0 else pair[0]

    warm = best(decode["columnar, warm"])
    rate = messages / warm
    misses = []

    def goal(text: str, ok: bool, why: str = "") -> None:
        print(f"  {'met ' if ok else 'MISS'}  {text}")
        if not ok:
            misses.append(why)

    goal(f"decode {rate / 1e6:.2f} M msg/s >= 2 M msg/s per core", rate >= GOALS["decode_msgs_per_s"])
    for label in ("mqtool query key", "mqtool query id (offsetMsgId)", "mqtool query id (UNIQ_KEY)"):
        goal(f"{label} {times[label]:.3f} s <= 0.35 s", times[label] <= GOALS["query_s"], label)
    helped = times["mqtool --help"]
    goal(f"--help {helped:.3f} s <= 0.25 s", helped <= GOALS["help_s"], "mqtool --help")
    # the decode a verify needs: a cold process decoding every file with CRC checks
    cold_crc = best((t_cold, c_cold)) - warm + best(decode["columnar, warm, check_crc"])
    verify_t = times["mqtool verify"]
    goal(
        f"verify {verify_t:.2f} s <= 2 x cold decode with CRC ({cold_crc:.2f} s)",
        verify_t <= GOALS["verify_vs_decode"] * cold_crc,
        "mqtool verify",
    )
    for label in misses:
        if label in commands:
            print(f"\n  import profile of {label} (cumulative):")
            print(import_profile(commands[label]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
