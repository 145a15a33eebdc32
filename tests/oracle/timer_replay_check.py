"""`mqtool delay replay --timer --execute` judged by RocketMQ 5.3.3's own TimerMessageStore (issue 15).

For each timer fixture (store-timer-states, store-timer5, store-timer-crash), on two copies:

- run B: `mqtool delay replay --timer --execute --now T` on one copy, then the real broker runs on it
  (`run.sh timer-run COPY ORIGINAL_MAX_PHY`: load, start, run until the timer caught up, clean shutdown);
- run A: the real broker runs on a pristine copy (`run.sh timer-run COPY`), after B, so that its read time
  is past T.

Both copies get a broker.conf with the fixture's timer settings (expect.json "config"), read by mqtool
(`--broker-config`) and by the harness alike. A crashed fixture (`abort`: store-timer-crash), which mqtool
refuses to write to, first gets the real recovery on both copies with the timer off
(`run.sh recover-without-timer`: the message store recovers, the timer files stay, nothing is delivered).
Judged:

- (a) no (real topic, UNIQ_KEY) is delivered in B more often than in A: mqtool's copy plus the broker's
  copy must not make a second delivery (store-timer-crash: the real broker delivers the messages it
  enqueues again after the crash twice by itself; B must do the same, no more);
- (b) the deliveries into real topics, (topic, queueId, UNIQ_KEY) with their counts, are the same in B
  (mqtool's and the broker's) as in A;
- (c) each record mqtool wrote equals the real broker's record of the same message in A (same topic,
  queue, UNIQ_KEY, TIMER_ROLL_TIMES, tombstone or not) field by field and its properties in the same order,
  except the store timestamp, queue offset, physical offset (and what follows from it: the offset message
  id) and TIMER_DEQUEUE_MS, and TIMER_ENQUEUE_MS where the broker's copy was enqueued again (Long.MAX_VALUE);
- (d) `load` (check.py's judge) is clean on the store mqtool replayed, and (e) mqtool left timercheck's
  lastReadTimeMs at T cut to the precision.

(a) and (b) count only messages whose TIMER_OUT_MS is before both runs' final read time: a message falling
due between B's end and A's end is delivered by A only (listed, not judged).

Then the case with nothing due, on two copies (C, D) of the store B's broker left (it delivered everything
due): `mqtool delay replay --timer --execute --now T'` on C, then the broker runs on C and on D. Judged:
(f) mqtool wrote no record and left lastReadTimeMs at T' cut to the precision, where the real dequeue
moves it across slots without a time of their own (`moveReadTime`, TimerMessageStore.java:917-920 at
rocketmq-all-5.3.3) up to the slot of now; and the broker's deliveries after it are the same on C as on D
(moving the read time skipped nothing the broker would deliver).

Only meaningful within 7 days of the fixtures' slots (written 2026-11-24 23:46 and 2026-11-26 03:47 /
04:52 UTC): the broker's recover() moves an older read time up to now - 7 days and never reads the slots
before it, so from then on A skips what mqtool would deliver (the check then reports the difference).
Needs `make oracle-build`; never run by the test suite. Writes build/oracle/check/timer-replay-*.json.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import check  # tests/oracle/check.py: paths, mqtool runner, the `load` judge

STORES = ("store-timer-states", "store-timer5", "store-timer-crash")
WHEEL_TOPIC = "rmq_sys_wheel_timer"  # TimerMessageStore.TIMER_TOPIC
NEVER_ENQUEUED = str(2**63 - 1)  # TIMER_ENQUEUE_MS of a message the broker put without the wheel
# Record fields that are where and when it was stored, not what: free in (c).
PLACE = {"file", "physicalOffset", "queueOffset", "storeTimestamp", "offsetMsgId", "dispatch"}
DISPATCH_PLACE = {"msgSize", "consumeQueueOffset"}


def oracle(*args: str) -> dict:
    run = subprocess.run([str(check.LOAD), *args], capture_output=True, text=True)
    try:
        return json.loads(run.stdout)
    except json.JSONDecodeError:
        tail = run.stderr.strip().splitlines()[-3:]
        raise RuntimeError(f"run.sh {' '.join(args)} failed (exit {run.returncode}): {tail}") from None


def broker_conf(root: Path, config: dict) -> Path:
    """The fixture's timer settings as the broker.conf both mqtool and the harness read."""
    keys = ("timerPrecisionMs", "timerRollWindowSlot")
    conf = root / "broker.conf"
    conf.write_text("".join(f"{k}={config[k]}\n" for k in keys if k in config))
    return conf


def pairs(raw: str) -> list[tuple[str, str]]:
    """A record's properties string in its order (MessageDecoder's NAME_VALUE / PROPERTY separators)."""
    return [tuple(p.split("\x01", 1)) for p in raw.split("\x02") if p]  # type: ignore[misc]


def props(r: dict) -> dict:
    return r["properties"]


def due(r: dict) -> int:
    return int(props(r).get("TIMER_OUT_MS", 0))


def message_key(r: dict) -> tuple:
    """Which message a record is a copy of, and which copy: a roll re-put carries its roll count."""
    p = props(r)
    return (r["topic"], r["queueId"], p.get("UNIQ_KEY"), p.get("TIMER_ROLL_TIMES"), "TIMER_DEL_UNIQKEY" in p)


def differences(ours: dict, theirs: dict) -> list[str]:
    """What differs between mqtool's record and the broker's, beyond where and when each was stored."""
    out = []
    for k in sorted((set(ours) | set(theirs)) - PLACE - {"properties", "propertiesRaw", "totalSize"}):
        if ours.get(k) != theirs.get(k):
            out.append(f"{k}: expected {theirs.get(k)!r}, got {ours.get(k)!r}")
    for k in sorted(set(ours["dispatch"]) - DISPATCH_PLACE):
        if ours["dispatch"][k] != theirs["dispatch"].get(k):
            out.append(f"dispatch.{k}: expected {theirs['dispatch'].get(k)!r}, got {ours['dispatch'][k]!r}")
    mine, real = pairs(ours["propertiesRaw"]), pairs(theirs["propertiesRaw"])
    if [k for k, _ in mine] != [k for k, _ in real]:
        out.append(f"property order: expected {[k for k, _ in real]}, got {[k for k, _ in mine]}")
    real_values = dict(real)
    for k, v in mine:
        free = k == "TIMER_DEQUEUE_MS" or (k == "TIMER_ENQUEUE_MS" and real_values.get(k) == NEVER_ENQUEUED)
        if not free and real_values.get(k) != v:
            out.append(f"property {k}: expected {real_values.get(k)!r}, got {v!r}")
    # the record's size apart from its properties (the free values may differ in length)
    rest = [r["totalSize"] - len(r["propertiesRaw"].encode()) for r in (ours, theirs)]
    if rest[0] != rest[1]:
        out.append(f"totalSize less properties: expected {rest[1]}, got {rest[0]}")
    return out


def deliveries(records: list[dict], cutoff: int) -> Counter:
    """(topic, queueId, UNIQ_KEY) delivered into real topics, of messages due before `cutoff`."""
    return Counter(
        (r["topic"], r["queueId"], props(r).get("UNIQ_KEY"))
        for r in records
        if r["topic"] != WHEEL_TOPIC and due(r) < cutoff
    )


def replay_then_run(root: Path, geometry: tuple[int, int], label: str) -> tuple[int, dict, list[str]]:
    """Run B on `root`: mqtool's replay at the current second, `load` on the result, then the broker.
    Returns the --now given, the broker run's JSON and (d)'s problems; raises when mqtool refuses."""
    start_phy = oracle("load", str(root), *map(str, geometry))["commitlog"]["maxPhyOffsetAfter"]
    now = int(time.time()) * 1000
    conf = str(root / "broker.conf")
    replay = check.mqtool(
        root, "delay", "replay", "--timer", "--execute", "--now", str(now), "--broker-config", conf
    )
    (check.OUT / f"{label}-mqtool.json").write_text(replay.stdout)
    if replay.returncode != 0:
        raise RuntimeError(
            f"mqtool delay replay --timer refused (exit {replay.returncode}): {replay.stderr.strip()}"
        )
    _, load_problems, _ = check.judge(root, geometry, f"{label}-replayed")
    return now, oracle("timer-run", str(root), str(start_phy)), [f"(d) load: {p}" for p in load_problems]


def judge_deliveries(a: dict, b: dict, mqtool_end: int) -> tuple[list[str], str]:
    """(a) and (b) on the messages due before both runs' final read time."""
    cutoff = min(a["timercheck"]["lastReadTimeMs"], b["timercheck"]["lastReadTimeMs"])
    got, want = deliveries(b["records"], cutoff), deliveries(a["records"], cutoff)
    by_mqtool = deliveries([r for r in b["records"] if r["physicalOffset"] < mqtool_end], cutoff)
    by_broker = deliveries([r for r in b["records"] if r["physicalOffset"] >= mqtool_end], cutoff)
    both = [k for k in by_mqtool if k in by_broker]
    twice = sorted(k for k in both if got[k] > want[k])
    problems = [f"(a) delivered by mqtool and again by the broker: {k}" for k in twice]
    problems += [
        f"(b) {k}: delivered {got[k]} time(s) in B, {want[k]} in A"
        for k in sorted(set(got) | set(want))
        if got[k] != want[k] and k not in twice
    ]
    late = sum(1 for r in a["records"] if r["topic"] != WHEEL_TOPIC and due(r) >= cutoff)
    summary = (
        f"deliveries of messages due before {cutoff}: {sum(want.values())} in A, {sum(got.values())} in B"
        f" ({len(both) - len(twice)} by mqtool and the broker, as A's broker delivers them twice too);"
        f" {late} due later, in A only (not judged)"
    )
    return problems, summary


def judge_records(ours: list[dict], broker: list[dict]) -> tuple[list[str], int]:
    """(c): each of mqtool's records against the broker's records of the same message copy."""
    candidates: dict[tuple, list[dict]] = {}
    for r in broker:
        candidates.setdefault(message_key(r), []).append(r)
    problems = []
    for r in ours:
        where = f"(c) mqtool's record at {r['physicalOffset']} {message_key(r)}"
        options = candidates.get(message_key(r), [])
        best = min((differences(r, t) for t in options), key=len) if options else ["the broker wrote none"]
        if best:
            problems.append(f"{where}: {'; '.join(best)}")
    return problems, len(ours) - len(problems)


def judge_store(store: str, tmp: Path) -> tuple[bool, list[str]]:
    config = json.loads((check.DATA / store / "expect.json").read_text())["config"]
    geometry = (config["maxHashSlotNum"], config["maxIndexNum"])
    a_root, b_root = tmp / "A" / store, tmp / "B" / store
    crashed = (check.DATA / store / "abort").exists()
    for root in (a_root, b_root):
        shutil.copytree(check.DATA / store, root)
        broker_conf(root, config)
        if crashed:  # mqtool writes only after a recovery; one with the timer off delivers nothing
            subprocess.run(
                [str(check.LOAD), "recover-without-timer", str(root)], check=True, capture_output=True
            )
    now, b, problems = replay_then_run(b_root, geometry, f"timer-replay-{store}")
    a = oracle("timer-run", str(a_root))  # after B: its read time passes mqtool's --now
    for name, got in (("A", a), ("B", b)):
        (check.OUT / f"timer-replay-{store}-{name}.json").write_text(json.dumps(got, indent=1))

    mqtool_end = b["maxPhyOffsetAtStart"]
    ours = [r for r in b["records"] if r["physicalOffset"] < mqtool_end]
    read = now // config["timerPrecisionMs"] * config["timerPrecisionMs"]
    if b["timercheckBefore"]["lastReadTimeMs"] != read:
        problems.append(f"(e) lastReadTimeMs: expected {read}, got {b['timercheckBefore']['lastReadTimeMs']}")
    delivery_problems, delivery_summary = judge_deliveries(a, b, mqtool_end)
    record_problems, matched = judge_records(ours, a["records"])
    nothing_due_problems, nothing_due_summary = judge_nothing_due(store, tmp, b_root, geometry)
    problems += delivery_problems + record_problems + nothing_due_problems
    wheel = sum(1 for r in ours if r["topic"] == WHEEL_TOPIC)
    first = " (recovered with the timer off first)" if crashed else ""
    line = (
        f"{store}{first}: mqtool wrote {len(ours)} records"
        f" ({len(ours) - wheel} deliveries, {wheel} roll re-puts),"
        f" {matched} equal to the broker's; then B's broker wrote {len(b['records']) - len(ours)},"
        f" A's broker {len(a['records'])}; {delivery_summary}; {nothing_due_summary}"
    )
    return not problems, [line] + [f"  {p}" for p in problems]


def judge_nothing_due(
    store: str, tmp: Path, b_root: Path, geometry: tuple[int, int]
) -> tuple[list[str], str]:
    """(f) on copies of the store B's broker left, where nothing is due: mqtool's replay, then both runs."""
    config = json.loads((check.DATA / store / "expect.json").read_text())["config"]
    c_root, d_root = tmp / "C" / store, tmp / "D" / store
    for root in (c_root, d_root):
        shutil.copytree(b_root, root)
    time.sleep(3)  # a few slots pass since B's broker stopped
    start_phy = oracle("load", str(c_root), *map(str, geometry))["commitlog"]["maxPhyOffsetAfter"]
    now = int(time.time()) * 1000
    conf = str(c_root / "broker.conf")
    replay = check.mqtool(
        c_root, "delay", "replay", "--timer", "--execute", "--now", str(now), "--broker-config", conf
    )
    (check.OUT / f"timer-replay-{store}-nothing-due-mqtool.json").write_text(replay.stdout)
    if replay.returncode != 0:
        return [
            f"(f) mqtool refused (exit {replay.returncode}): {replay.stderr.strip()[-200:]}"
        ], "(f) refused"
    doc = json.loads(replay.stdout)
    problems = []
    wrote = [d for d in doc["deliveries"] if d["action"] in ("deliver", "roll")]
    if wrote:
        problems.append(
            f"(f) {len(wrote)} record(s) written with nothing due (slots {doc['readTimeStart']}..)"
        )
    c = oracle("timer-run", str(c_root), str(start_phy))
    d = oracle("timer-run", str(d_root), str(start_phy))
    for name, got in (("C", c), ("D", d)):
        (check.OUT / f"timer-replay-{store}-nothing-due-{name}.json").write_text(json.dumps(got, indent=1))
    precision = config["timerPrecisionMs"]
    read = now // precision * precision
    left = c["timercheckBefore"]["lastReadTimeMs"]
    if left != read:
        problems.append(f"(f) lastReadTimeMs after a replay with nothing due: expected {read}, got {left}")
    cutoff = min(c["timercheck"]["lastReadTimeMs"], d["timercheck"]["lastReadTimeMs"])
    got, want = deliveries(c["records"], cutoff), deliveries(d["records"], cutoff)
    problems += [
        f"(f) {k}: the broker delivered {got[k]} time(s) after mqtool's replay, {want[k]} without it"
        for k in sorted(set(got) | set(want))
        if got[k] != want[k]
    ]
    summary = (
        f"nothing due: mqtool wrote {len(wrote)} records and moved the read time from "
        f"{doc['readTimeFrom']} to {left}; then the broker delivered {sum(got.values())} (C) and "
        f"{sum(want.values())} (D) messages due before {cutoff}"
    )
    return problems, summary


def main(argv: list[str]) -> int:
    """`timer_replay_check.py [STORE ...]`: the named timer fixtures (default: all of STORES)."""
    check.OUT.mkdir(parents=True, exist_ok=True)
    failed = 0
    out = []
    for store in argv or STORES:
        with tempfile.TemporaryDirectory(prefix="oracle-timer-replay-") as tmp:
            try:
                ok, lines = judge_store(store, Path(tmp))
            except RuntimeError as e:
                ok, lines = False, [f"{store}: {e}"]
        failed += not ok
        lines[0] = f"{'SAME' if ok else 'DIFFERENT'}  {lines[0]}"
        shown = lines[:13] + (
            [f"  ... {len(lines) - 13} more in the summary file"] if len(lines) > 13 else []
        )
        print("\n".join(shown), flush=True)
        out += lines
    (check.OUT / "timer-replay-summary.txt").write_text("\n".join(out) + "\n")
    print(f"\n{failed} store(s) where mqtool's timer replay differs from the real TimerMessageStore")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
