"""`make oracle-check`: every `--execute` command of mqtool on a copy of each golden store, each result
judged by RocketMQ 5.3.3's own store code (`tests/oracle/run.sh load`), and a 4.9 store by 4.9.8's as well
when that oracle is built (`make oracle-build-49`): it must load, recover without
truncating, walk without CRC errors, hold ConsumeQueue units equal to what the dispatcher computes (before
and after the real recovery), find every index key, and its managers must read back the config files as
mqtool reads them.

Each offset an `offsets reset --execute` wrote is also judged against what the real classes compute for
the same request (`run.sh queue-offsets`: the real DefaultMessageStore's getMinOffsetInQueue,
getMaxOffsetInQueue and getOffsetInQueueByTime with the request's BoundaryType, on the queue the broker
opens for the topic - a BatchConsumeQueue for a BatchCQ topic), not against mqtool: earliest is the real
min, latest the real max, a time (`--to-time`, `--by-duration`: the time the plan searched,
`targetTimestamp`) the real search's answer, `--shift-by N` the committed offset the real manager loaded
before plus N; each clamped into the real [min, max] (and not below 0) as the planner documents. A 4.9
store is judged by the 4.9.8 answers when that oracle is built (mqtool plans it with 4.9's search).
store-batchcq, which `load` cannot open (its queues need topics.json's queue types), runs the offset
commands only and is judged by `queue-offsets` alone: it must load, and the real manager must read the
offsets mqtool reads and expects.

`offsets clone` and `offsets prune` are judged as the other writes: the store loads, and the real
manager reads the offsets mqtool reads. So are the topic and group edits (`topic update|delete`, `group
update|delete`); their files are compared byte for byte with the real managers' by tests/test_configedit.py.
After `topic delete T` the store is judged as the broker's deleteTopics leaves one: T's records stay in the
log and its queues are gone, so T's units, and only those, are missing (`deleted_topic_only`).

`dlq resend` is also judged by what a consumer receives (`check_dlq_pull`, on store-trace-b and store-dlq,
whose dead letters the real retry path wrote): after `--execute` the real store, pulled by the real
getMessage from the group's committed offsets (`run.sh group-pull`), hands the group exactly the resent
messages, once, and a second run adds nothing.

Then timer_replay_check.py on the timer fixtures among them (`delay replay --timer` against the real
TimerMessageStore), and tiered_rebuild_cases.judge() (`tiered rebuild-metadata --execute` on store-tiered
copies whose metadata was lost, judged by what the real TieredMessageStore serves). Needs `make
oracle-build`; never run by the test suite. Writes build/oracle/check/."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data"
OUT = REPO / "build" / "oracle" / "check"
MQTOOL = REPO / ".venv" / "bin" / "mqtool"
LOAD = REPO / "tests" / "oracle" / "run.sh"
# the DLedger fixtures (store.tar.gz): the appending commands refuse on them; the config writes and rebuilds
# are judged by the oracle's DLedger load
DLEDGER = ("store-dledger", "store-dledger-mixed", "store-dledger-multipath", "store-dledger-49")
STORES = (
    "store-a",
    "store-49a",
    "store-c",
    "store-timer5",
    "store-timer-states",
    "store-lmq",
    "store-batchcq",
    *DLEDGER,
)
# each store's topic and consumer group for the commands (store-lmq has no TopicTest nor groupA)
TOPICS = {
    "store-timer5": "TimerTopic",
    "store-timer-states": "TimerTopic",
    "store-c": "OrderTopic",
    "store-lmq": "TopicA",
    "store-batchcq": "BatchTopicA",
    **{name: "TopicA" for name in DLEDGER},
}
GROUPS = {"store-lmq": "GID_plain", "store-batchcq": "GID_batch", **{name: "GID_dledger" for name in DLEDGER}}
NEW_GROUP_STORES = ("store-timer5", "store-timer-states", "store-c", "store-batchcq")
OFFSETS_ONLY = ("store-batchcq",)  # `load` cannot open it: judged by `queue-offsets` alone
DLQ_STORES = ("store-a", "store-49a", "store-c")  # with a %DLQ%groupA record: `dlq resend` runs on them
CACHE = Path(os.environ.get("MQTOOL_ORACLE_CACHE", Path.home() / ".cache" / "mqtool-oracle"))


def oracles(store: str) -> list[str]:
    """The broker versions that judge a store: 5.3.3 always (a 4.9 store must survive an upgrade), and
    the 4.9.8 code for a store 4.9.8 wrote, when that oracle is built."""
    built49 = (CACHE / "build" / "4.9.8" / "classpath").exists()
    return ["4.9.8", "5.3.3"] if store.endswith(("49a", "-49")) and built49 else ["5.3.3"]


def commands(store: str, mid_time: int) -> list[tuple[str, list[str], dict | None]]:
    """The write commands, in the order they run on one copy of the store, each with the request an
    `offsets reset` makes (judged against the real classes' answers), None for the other commands."""
    topic, group = TOPICS.get(store, "TopicTest"), GROUPS.get(store, "groupA")
    new_group = ["--allow-new-group"] if store in NEW_GROUP_STORES else []
    reset = ["offsets", "reset", "--group", group, "--topic", topic]
    lmq = (
        [
            (
                "offsets reset LMQ --to-earliest",
                ["offsets", "reset", "--group", "%LMQ%GID_room0", "--topic", "%LMQ%hot", "--to-earliest"],
                {"kind": "earliest"},
            )
        ]
        if store == "store-lmq"
        else []
    )
    offsets = [
        *lmq,
        ("offsets reset --to-earliest", [*reset, "--to-earliest", *new_group], {"kind": "earliest"}),
        # the max of each queue over this copy (just reset to the earliest) and the store as committed
        ("offsets merge", ["offsets", "merge", ROOT, REPLICA, "--into", ROOT], None),
        ("offsets reset --shift-by 7", [*reset, "--shift-by", "7", *new_group], {"kind": "shift", "by": 7}),
        (
            "offsets reset --by-duration 1d",
            [
                "offsets",
                "reset",
                "--group",
                "groupC",
                "--topic",
                topic,
                "--by-duration",
                "1d",
                "--allow-new-group",
            ],
            {"kind": "time", "boundary": "lower"},
        ),
        (
            "offsets reset --to-time mid",
            [*reset, "--to-time", str(mid_time), *new_group],
            {"kind": "time", "boundary": "lower", "at": mid_time},
        ),
        (
            "offsets reset --to-time mid upper",
            [*reset, "--to-time", str(mid_time), "--boundary", "upper", *new_group],
            {"kind": "time", "boundary": "upper", "at": mid_time},
        ),
        ("offsets reset --to-latest", [*reset, "--to-latest", *new_group], {"kind": "latest"}),
        # a group the store's subscriptionGroup.json does not hold: the prune after it removes its rows
        (
            "offsets clone to GID_clone",
            ["offsets", "clone", "--from-group", group, "--to-group", "GID_clone", "--allow-new-group"],
            None,
        ),
        ("offsets prune", ["offsets", "prune"], None),
    ]
    if store in OFFSETS_ONLY:
        return offsets
    return [
        *offsets,
        (
            "consume-mode set POP",
            [
                "consume-mode",
                "set",
                "--topic",
                topic,
                "--group",
                group,
                "--mode",
                "POP",
                "--pop-share-queue-num",
                "4",
            ],
            None,
        ),
        (
            "consume-mode set PULL",
            ["consume-mode", "set", "--topic", topic, "--group", group, "--mode", "PULL"],
            None,
        ),
        # topic and group edits (mqtool.configedit): a new topic and group, a topic's write queues lowered,
        # and both deleted again (the topic's offsets and consume queues with it)
        (
            "topic update CheckTopic",
            ["topic", "update", "CheckTopic", "--read-queues", "2", "--write-queues", "2"],
            None,
        ),
        ("topic update --write-queues 1", ["topic", "update", topic, "--write-queues", "1"], None),
        ("group update GID_check", ["group", "update", "GID_check", "--retry-max-times", "3"], None),
        ("group delete GID_check", ["group", "delete", "GID_check", "--clean-offset"], None),
        ("topic delete CheckTopic", ["topic", "delete", "CheckTopic"], None),
        ("delay replay", ["delay", "replay", "--now", "2100-01-01T00:00:00Z"], None),
        *(
            [("dlq resend --to retry", ["dlq", "resend", "--group", group], None)]
            if store in DLQ_STORES
            else []
        ),
        ("txn resolve --policy commit", ["txn", "resolve", "--policy", "commit"], None),
        ("txn resolve --policy rollback", ["txn", "resolve", "--policy", "rollback"], None),
        ("rebuild cq", ["rebuild", "cq"], None),
        ("rebuild cq --prune-orphans", ["rebuild", "cq", "--prune-orphans"], None),
        ("rebuild index", ["rebuild", "index"], None),
        ("rebuild all", ["rebuild", "all"], None),
        *([(FROM_SCRATCH, ["rebuild", "all"], None)] if store in DLEDGER else []),
        # last: the store's own topic deleted (its offsets and consume queues go; its records stay in the log)
        (f"topic delete {topic}", ["topic", "delete", topic], None),
    ]


# `offsets merge`'s stores: the copy being judged, and another copy of the store as committed
ROOT, REPLICA = "{root}", "{replica}"

# a rebuild after consumequeue/ and index/ are removed: every unit and key from the DLedger entries
FROM_SCRATCH = "rebuild all (no queues, no index)"


def mid_store_time(root: Path) -> int:
    """A time among the store's messages (halfway between its first and last store time), to reset to."""
    info = json.loads(mqtool(root, "info").stdout)["commitlog"]
    return (info["firstStoreTimestamp"] + info["lastStoreTimestamp"]) // 2


def mqtool(root: Path, *args: str) -> subprocess.CompletedProcess:
    conf = root / "broker.conf"  # the DLedger fixtures' settings (a multi-path data directory among them)
    extra = ["--broker-config", str(conf)] if conf.exists() else []
    return subprocess.run(
        [str(MQTOOL), "--store", str(root), *extra, "--format", "json", *args], capture_output=True, text=True
    )


def copy_golden(store: str, dest: Path) -> Path:
    """A copy of a golden store at dest/<store> (a store.tar.gz unpacked, holes kept)."""
    archive = DATA / store / "store.tar.gz"
    if archive.exists():
        import tarfile

        with tarfile.open(archive) as tar:
            tar.extractall(dest, filter="data")
    else:
        shutil.copytree(DATA / store, dest / store)
    return dest / store


def geometry_of(store: str) -> tuple[int, int]:
    expected = json.loads((DATA / store / "expect.json").read_text())
    settings = expected.get("geometry") or expected["config"]
    return settings["maxHashSlotNum"], settings["maxIndexNum"]


def mqtool_config(root: Path) -> dict:
    """The config files as mqtool reads them, in the shapes `load` prints."""
    offsets = {}
    for row in json.loads(mqtool(root, "offsets", "show", "--system").stdout or "[]"):
        if row.get("consumerOffset") is not None:
            offsets.setdefault(f"{row['topic']}@{row['group']}", {})[str(row["queueId"])] = row[
                "consumerOffset"
            ]
    modes = {}
    shown = mqtool(root, "consume-mode", "show")
    for row in json.loads(shown.stdout or "[]") if shown.returncode == 0 else []:
        if row.get("source") == "file":
            modes[f"{row['topic']}@{row['group']}"] = {
                "mode": row["mode"],
                "popShareQueueNum": row["popShareQueueNum"],
            }
    delay = {}
    stats = mqtool(root, "delay", "stats")
    for row in json.loads(stats.stdout or "{}").get("levels", []) if stats.returncode == 0 else []:
        delay[str(row["level"])] = row["delayOffset"]
    return {"consumerOffset": offsets, "messageRequestMode": modes, "delayOffset": delay}


def broker_offsets(cfg: dict) -> tuple[str, dict]:
    """The offsets the broker's manager loads, as `load` prints them: on an LMQ store the
    LmqConsumerOffsetManager's (its offsetTable, and each lmqOffsetTable key as queue 0, as its
    queryOffset answers), else the ConsumerOffsetManager's."""
    lmq = cfg.get("lmqConsumerOffset")
    if lmq is None:
        return "consumerOffset.json", cfg["consumerOffset"]
    table = {**lmq["offsetTable"], **{k: {"0": v} for k, v in lmq["lmqOffsetTable"].items()}}
    return "lmqConsumerOffset.json", {**lmq, "offsetTable": table}


def deleted_topic_only(cq: dict, deleted: tuple[str, int] | None) -> bool:
    """After `topic delete T` the broker's store lacks T's queues while the log keeps T's records (what
    deleteTopics leaves): the judge's only mismatches are then T's units, every one missing (none differing,
    none extra), as many as the queues held before (`deleted`: T and the units the store had before)."""
    if deleted is None or cq["differing"] or cq["extra"]:
        return False
    topic, units_before = deleted
    live = cq["units"] - cq["belowCommitLogMin"]  # units into deleted commitlog files: the broker drops them
    return cq["missing"] == units_before - live and all(s.startswith(topic + "/") for s in cq["samples"])


def judge(
    root: Path,
    geometry: tuple[int, int],
    label: str,
    torn_before: bool = False,
    version: str = "5.3.3",
    deleted: tuple[str, int] | None = None,
) -> tuple[bool, list[str], dict]:
    """`torn_before`: the store already had a torn tail the broker ignores (store-c after its recovery);
    `deleted`: a topic just deleted and the store's units before (`deleted_topic_only`)."""
    run = subprocess.run(
        [str(LOAD), "load", str(root), *map(str, geometry)],
        capture_output=True,
        text=True,
        env={**os.environ, "ORACLE_VERSION": version},
    )
    try:
        got = json.loads(run.stdout)
    except json.JSONDecodeError:
        return False, [f"load failed: {run.stderr.strip().splitlines()[-1:]}"], {}
    problems = []
    if not got["loaded"]:
        problems.append("did not load")
    if got["commitlog"]["validRecordsCut"]:
        problems.append(f"recovery cut valid records at {got['commitlog']['maxPhyOffsetAfter']}")
    elif got["commitlog"]["truncated"] and not torn_before:
        problems.append(f"recovery truncated at {got['commitlog']['truncatedAt']}")
    if got["crcErrors"]:
        problems.append(f"{got['crcErrors']} CRC errors")
    for when in ("beforeLoad", "afterLoad"):
        cq = got["consumeQueues"][when]
        if cq["mismatches"] and not deleted_topic_only(cq, deleted):
            problems.append(f"ConsumeQueue {when}: {cq['mismatches']} mismatches {cq['samples'][:2]}")
    if got["index"]["notFound"]:
        problems.append(f"{got['index']['notFound']} index keys not found {got['index']['samples'][:2]}")
    ours = mqtool_config(root)
    cfg = got["config"]
    offsets_file, offsets = broker_offsets(cfg)
    if offsets["offsetTable"] != ours["consumerOffset"]:
        problems.append(f"{offsets_file}: the broker's manager reads other offsets than mqtool")
    modes = cfg.get("messageRequestMode", {"source": "none in 4.9", "table": {}})
    if offsets["source"] == "bak" or modes["source"] == "bak":
        problems.append("a config file was read from its .bak")
    if modes["table"] != ours["messageRequestMode"]:
        problems.append("messageRequestMode.json: the broker's manager reads other modes than mqtool")
    real_delay = {k: v for k, v in cfg["delayOffset"].get("offsetTable", {}).items()}
    if any(ours["delayOffset"].get(k) != v for k, v in real_delay.items()):
        problems.append("delayOffset.json: the broker reads other progress than mqtool")
    (OUT / f"{label}{'' if version == '5.3.3' else '-' + version}.json").write_text(run.stdout)
    return not problems, problems, got


def value_oracle(store: str) -> str:
    """The broker version whose answers judge the offsets mqtool planned for `store` (its own: mqtool plans
    a 4.9 store with 4.9's search)."""
    return oracles(store)[0]


def queue_offsets(root: Path, geometry: tuple[int, int], specs: list[str], version: str, label: str) -> dict:
    """`run.sh queue-offsets`: the real store's answers for queues `specs` (TOPIC/QID and @TIME)."""
    run = subprocess.run(
        [str(LOAD), "queue-offsets", str(root), *map(str, geometry), *specs],
        capture_output=True,
        text=True,
        env={**os.environ, "ORACLE_VERSION": version},
    )
    (OUT / f"{label}-queue-offsets.json").write_text(run.stdout)
    try:
        return json.loads(run.stdout)
    except json.JSONDecodeError:
        raise RuntimeError(f"queue-offsets failed: {run.stderr.strip().splitlines()[-1:]}") from None


def expected_offset(request: dict, before: int | None, real: dict, when: int | None) -> int | None:
    """The offset the request asks for, from the real queue's answers; None: no row expected (a shift
    without a committed offset)."""
    low, high = real["minOffset"], real["maxOffset"]
    kind = request["kind"]
    if kind == "earliest":
        want = low
    elif kind == "latest":
        want = high
    elif kind == "shift":
        if before is None:
            return None
        want = before + request["by"]
    else:
        lower, upper = real["byTime[lower,upper]"][str(when)]
        want = lower if request["boundary"] == "lower" else upper
    return min(max(want, low, 0), high)


def judge_values(
    store: str,
    root: Path,
    geometry: tuple[int, int],
    label: str,
    request: dict,
    planned: list[dict],
    before: dict,
) -> tuple[list[str], dict, int]:
    """Each offset of `planned` (mqtool's JSON rows) as the real manager now loads it, against the real
    classes' answer for the request. Returns the problems, the `queue-offsets` answer and how many offsets
    were judged."""
    specs = sorted({f"{r['topic']}/{r['queueId']}" for r in planned})
    times = sorted({t for t in [request.get("at"), *(r.get("targetTimestamp") for r in planned)] if t})
    got = queue_offsets(root, geometry, specs + [f"@{t}" for t in times], value_oracle(store), label)
    problems = [] if got.get("loaded") else ["queue-offsets: the store did not load"]
    _, after = broker_offsets(got.get("config", {}))
    table = after.get("offsetTable", {})
    judged = 0
    for r in planned:
        key, q = f"{r['topic']}@{r['group']}", str(r["queueId"])
        real = got["queues"][f"{r['topic']}/{r['queueId']}"]
        when = request.get("at") or r.get("targetTimestamp")  # --by-duration: the time the plan searched
        if request["kind"] == "time" and (when is None or r.get("targetTimestamp", when) != when):
            searched = r.get("targetTimestamp")
            problems.append(
                f"{key} queue {q}: "
                + (
                    "the plan does not say which time it searched"
                    if when is None
                    else f"the plan searched {searched}, not {when}"
                )
            )
            continue
        want = expected_offset(request, before.get(key, {}).get(q), real, when)
        written = table.get(key, {}).get(q)
        judged += 1
        if written != want:
            problems.append(
                f"{key} queue {q}: the broker loads {written}, the real {real['type']} answers {want} "
                f"(min {real['minOffset']}, max {real['maxOffset']})"
            )
    if not planned and request["kind"] != "shift":
        problems.append("the plan has no row")
    return problems, got, judged


def judge_offsets_only(root: Path, geometry: tuple[int, int], label: str) -> tuple[bool, list[str], dict]:
    """A store `load` cannot open (store-batchcq): it must load with `queue-offsets`, no config from a
    `.bak`, and the real manager must read the offsets mqtool reads."""
    got = queue_offsets(root, geometry, [], "5.3.3", label)
    problems = [] if got.get("loaded") else ["did not load"]
    offsets_file, offsets = broker_offsets(got["config"])
    if offsets["source"] == "bak":
        problems.append("a config file was read from its .bak")
    if offsets["offsetTable"] != mqtool_config(root)["consumerOffset"]:
        problems.append(f"{offsets_file}: the broker's manager reads other offsets than mqtool")
    return not problems, problems, got


def judge_all(
    store: str,
    root: Path,
    geometry: tuple[int, int],
    label: str,
    torn_before: bool = False,
    deleted: tuple[str, int] | None = None,
) -> tuple[bool, list[str], dict]:
    """`judge` by every oracle of the store; problems carry the version when there are several."""
    results = [(v, *judge(root, geometry, label, torn_before, v, deleted)) for v in oracles(store)]
    several = len(results) > 1
    problems = [f"{v}: {p}" if several else p for v, _, ps, _ in results for p in ps]
    return all(ok for _, ok, _, _ in results), problems, results[-1][3]


def judge_step(
    store: str,
    root: Path,
    geometry: tuple[int, int],
    label: str,
    torn: bool = False,
    deleted: tuple[str, int] | None = None,
) -> tuple[bool, list[str], dict]:
    """`judge_all`, or for a store `load` cannot open `judge_offsets_only`."""
    if store in OFFSETS_ONLY:
        return judge_offsets_only(root, geometry, label)
    return judge_all(store, root, geometry, label, torn, deleted)


# the stores whose dead letters the real retry path wrote, and the group `check_dlq_pull` resends for
DLQ_PULL = {"store-trace-b": "GID_retry", "store-dlq": "GID_dlq"}


def group_pull(root: Path, group: str, *topics: str) -> dict:
    """`run.sh group-pull`: what a push consumer of `group` receives (the real store's getMessage from the
    real ConsumerOffsetManager's committed offsets; %RETRY%group and `topics`)."""
    run = subprocess.run([str(LOAD), "group-pull", str(root), group, *topics], capture_output=True, text=True)
    try:
        return json.loads(run.stdout)
    except json.JSONDecodeError:
        return {"loaded": False, "error": (run.stderr.strip().splitlines() or ["?"])[-1]}


def check_dlq_pull(store: str) -> tuple[int, list[str]]:
    """`dlq resend --execute` twice on copies of `store` (DLQ_PULL), per target: the store loads clean, and
    the group receives exactly the resent dead letters (their UNIQ_KEY, ORIGIN_MESSAGE_ID, the original topic
    after the client's retry-topic reset, the reconsume times the plan wrote), once; the second run
    resends nothing and the group receives nothing more."""
    failed, lines = 0, []
    group = DLQ_PULL[store]
    geometry = geometry_of(store)
    for target in ("retry", "origin"):
        name = f"dlq resend --to {target} (pull)"
        with tempfile.TemporaryDirectory(prefix="oracle-dlq-") as tmp:
            root = copy_golden(store, Path(tmp))
            origin_topics = sorted({r["originTopic"] for r in json.loads(mqtool(root, "dlq", "list").stdout)})
            before = group_pull(root, group, *origin_topics)
            # store-dlq as committed: the deleted topic's record has no ConsumeQueue unit (deleteTopics),
            # which `load` reports; only what the resend adds counts
            _, as_committed, _ = judge(root, geometry, f"{store}-dlq-{target}-as-committed")
            first = mqtool(root, "dlq", "resend", "--group", group, "--to", target, "--execute")
            second = mqtool(root, "dlq", "resend", "--group", group, "--to", target, "--execute")
            problems = []
            if first.returncode or second.returncode:
                problems.append(f"exit {first.returncode}/{second.returncode}: {first.stderr.strip()[-150:]}")
            else:
                plan1, plan2 = json.loads(first.stdout), json.loads(second.stdout)
                resent = [m for m in plan1["messages"] if m["action"] == "resend"]
                if not resent:
                    problems.append("the first run resent nothing")
                if any(m["action"] == "resend" for m in plan2["messages"]) or plan2["executed"]:
                    problems.append("the second run resent again")
                ok, load_problems, _ = judge(root, geometry, f"{store}-dlq-{target}")
                problems += [p for p in load_problems if p not in as_committed]
                after = group_pull(root, group, *origin_topics)
                new = [p for p in after.get("pulled", []) if p not in before.get("pulled", [])]
                got = sorted(
                    (
                        p["queueTopic"],
                        p["queueId"],
                        p["queueOffset"],
                        p["uniqKey"],
                        p["originMessageId"],
                        p["topic"],
                        p["reconsumeTimes"],
                    )
                    for p in new
                )
                want = sorted(
                    (
                        m["topic"],
                        m["queueId"],
                        m["newQueueOffset"],
                        m["uniqKey"],
                        m["record"]["properties"]["ORIGIN_MESSAGE_ID"],
                        m["originTopic"],
                        m["reconsumeTimes"],
                    )
                    for m in resent
                )
                if not after.get("loaded"):
                    problems.append(f"group-pull did not load: {after.get('error')}")
                elif got != want:
                    problems.append(f"the group received {got}, not the resent {want}")
            failed += bool(problems)
            status = (
                "FAILED: " + "; ".join(problems)
                if problems
                else (f"clean: the group receives exactly the {len(want)} resent message(s), once")
            )
            lines.append(f"{store:13} {name:32} {status}")
    return failed, lines


def main(argv: list[str]) -> int:
    """`check.py [STORE ...]`: the named golden stores (default: all of STORES)."""
    OUT.mkdir(parents=True, exist_ok=True)
    lines = []
    failed = 0
    judged_values = 0
    for store in [s for s in argv if s not in DLQ_PULL] if argv else STORES:
        geometry = geometry_of(store)
        offsets_only = store in OFFSETS_ONLY
        with tempfile.TemporaryDirectory(prefix="oracle-check-") as tmp:
            root = copy_golden(store, Path(tmp))
            ok, problems, got = judge_step(store, root, geometry, f"{store}-00-as-committed")
            lines.append(
                f"{store:13} {'(as committed)':32} {'clean' if ok else 'NOT CLEAN: ' + '; '.join(problems)}"
            )
            torn = bool(got and got.get("commitlog", {}).get("truncated"))
            if (root / "abort").exists():  # a crashed store: let the real broker recover it first
                subprocess.run(
                    [str(LOAD), "recover", str(root), *map(str, geometry)], check=True, capture_output=True
                )
                ok, problems, got = judge_step(store, root, geometry, f"{store}-00-recovered", torn)
                status = "clean" if ok else "NOT CLEAN: " + "; ".join(problems)
                lines.append(f"{store:13} {'(after the real recovery)':32} {status}")
            real_offsets = broker_offsets(got.get("config", {}))[1].get("offsetTable", {}) if got else {}
            for i, (name, args, request) in enumerate(commands(store, mid_store_time(root)), 1):
                if name == FROM_SCRATCH:
                    shutil.rmtree(root / "consumequeue")
                    shutil.rmtree(root / "index")
                if REPLICA in args and not (Path(tmp) / "replica").exists():
                    copy_golden(store, Path(tmp) / "replica")
                replica = Path(tmp) / "replica" / store
                args = [a.replace(ROOT, str(root)).replace(REPLICA, str(replica)) for a in args]
                units_before = (got or {}).get("consumeQueues", {}).get("afterLoad", {}).get("units")
                deleted = (
                    (args[2], units_before) if args[:2] == ["topic", "delete"] and units_before else None
                )
                res = mqtool(root, *args, "--execute")
                if res.returncode != 0:
                    why = (res.stderr.strip().splitlines() or ["?"])[-1][:150]
                    lines.append(f"{store:13} {name:32} refused (exit {res.returncode}): {why}")
                    continue
                label = f"{store}-{i:02d}"
                ok, problems, got = judge_step(store, root, geometry, label, torn, deleted)
                values = ""
                if request is not None:
                    value_problems, answers, n = judge_values(
                        store, root, geometry, label, request, json.loads(res.stdout), real_offsets
                    )
                    judged_values += n
                    problems += value_problems
                    ok = ok and not value_problems
                    values = f", {n} offsets as the real {value_oracle(store)} classes answer"
                    got = got or answers
                real_offsets = broker_offsets(got.get("config", {}))[1].get("offsetTable", {})
                units = got.get("consumeQueues", {}).get("afterLoad", {}).get("units")
                judges = " (4.9.8 and 5.3.3)" if len(oracles(store)) > 1 and not offsets_only else ""
                summary = (
                    (
                        f"clean{judges}: {got['messages']} records, {units} CQ units,"
                        f" {got['index']['keysChecked']} index keys{values}"
                        if not offsets_only
                        else f"loads{values}"
                    )
                    if ok
                    else "FAILED: " + "; ".join(problems)
                )
                failed += not ok
                lines.append(f"{store:13} {name:32} {summary}")
            print("\n".join(line for line in lines if line.startswith(store)), flush=True)
    for store in [s for s in argv if s in DLQ_PULL] if argv else DLQ_PULL:
        dlq_failed, dlq_lines = check_dlq_pull(store)
        failed += dlq_failed
        lines += dlq_lines
        print("\n".join(dlq_lines), flush=True)
    (OUT / "summary.txt").write_text("\n".join(lines) + "\n")
    print(f"\n{failed} executed command(s) left a store the real broker code does not read back cleanly")
    print(f"{judged_values} written offsets judged against the real classes' answers")
    import timer_replay_check  # imports this module back, so only here

    timer = [s for s in argv or timer_replay_check.STORES if s in timer_replay_check.STORES]
    replay_failed = timer_replay_check.main(timer) if timer else 0
    import tiered_rebuild_cases  # `tiered rebuild-metadata --execute`, judged by the real plugin's reads

    replay_failed += tiered_rebuild_cases.judge() if not argv or "store-tiered" in argv else 0
    return 1 if failed or replay_failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
