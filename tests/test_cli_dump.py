"""`mqtool info` and `mqtool dump ...` end to end (the console command) against the golden stores."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from golden import expect, run_mqtool, store_path

STORES = ("store-a", "store-c", "store-49a")


def mqtool(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = run_mqtool(*args, MQTOOL_STORE="/nonexistent-default-store")
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


@pytest.fixture(scope="module", params=STORES)
def info(request) -> tuple[str, dict]:
    name = request.param
    proc = mqtool("--store", str(store_path(name)), "info", "--format", "json")
    return name, json.loads(proc.stdout)


def test_info_queues_match_the_broker(info) -> None:
    name, doc = info
    queues = {(q["topic"], q["queueId"]): q for q in doc["queues"]}
    exp = expect(name)
    if name == "store-c":
        # The files as written; recovery later re-dispatches two final appends (see store-c README).
        live = exp["asWritten"]["liveStoreAtKill"]
        assert doc["commitlog"]["end"]["kind"] == "torn"
        assert doc["commitlog"]["end"]["physicalOffset"] == exp["asWritten"]["tornRecordOffset"]
        assert doc["dispatch"]["undispatchedBytes"] > 0
        assert doc["broker"]["abortFile"] is True
        assert live  # the recorded live view exists; queue details are checked in test_consumequeue
        return
    assert set(queues) == {(q["topic"], q["queueId"]) for q in exp["consumeQueues"].values()}
    for q in exp["consumeQueues"].values():
        got = queues[(q["topic"], q["queueId"])]
        assert (got["minOffset"], got["maxOffset"]) == (q["minOffset"], q["maxOffset"])
    assert doc["commitlog"]["minOffset"] == exp["minPhyOffset"]
    assert doc["commitlog"]["maxOffset"] == exp["maxPhyOffset"]
    assert doc["dispatch"]["undispatchedBytes"] == 0


def test_info_index_and_checkpoint(info) -> None:
    name, doc = info
    exp = expect(name)
    headers = [{k: v for k, v in h.items() if k != "fileSize"} for h in exp["indexFiles"]]
    assert doc["index"]["files"] == headers
    for key, value in exp["checkpoint"].items():
        if key in doc["checkpoint"]:
            assert doc["checkpoint"][key] == value, key


@pytest.mark.parametrize("name", STORES)
def test_dump_commitlog_jsonl_matches_every_record(name: str) -> None:
    proc = mqtool("--store", str(store_path(name)), "dump", "commitlog", "--format", "jsonl", "--body")
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    records = [r for r in expect(name)["messages"]]
    *listed, stop = rows
    assert len(listed) == len([r for r in records if r["kind"] in ("MESSAGE", "BLANK")])
    for got, exp in zip(listed, records, strict=False):
        assert got["physicalOffset"] == exp["physicalOffset"]
        if exp["kind"] == "BLANK":
            assert got["kind"] == "blank"
            continue
        for key in ("topic", "queueId", "queueOffset", "storeTimestamp", "sysFlag", "bodyCRC", "offsetMsgId"):
            assert got[key] == exp[key], key
        assert got["properties"] == exp["properties"]
        assert got["body"] == exp["bodyBase64"]
        assert got["uniqKey"] == exp["uniqKey"]
    if name == "store-c":
        assert stop["kind"] == "torn" and stop["physicalOffset"] == records[-1]["physicalOffset"]
    else:
        assert stop["kind"] == "end"


def test_dump_commitlog_from_offset_count_and_topic() -> None:
    store = str(store_path("store-a"))
    messages = [m for m in expect("store-a")["messages"] if m["kind"] == "MESSAGE"]
    start = messages[10]["physicalOffset"]
    proc = mqtool("--store", store, "dump", "commitlog", "--from-offset", str(start), "-n", "3", "-f", "json")
    assert [r["physicalOffset"] for r in json.loads(proc.stdout)] == [
        m["physicalOffset"] for m in messages[10:13]
    ]
    proc = mqtool("--store", store, "dump", "commitlog", "--topic", "%DLQ%groupA", "-f", "json")
    rows = [r for r in json.loads(proc.stdout) if r["kind"] == "message"]
    assert [r["physicalOffset"] for r in rows] == [
        m["physicalOffset"] for m in messages if m["topic"] == "%DLQ%groupA"
    ]


@pytest.mark.parametrize("name", ("store-a", "store-49a"))
def test_dump_cq_matches_every_unit(name: str) -> None:
    for key, q in list(expect(name)["consumeQueues"].items())[:6]:
        proc = mqtool(
            "--store", str(store_path(name)), "dump", "cq", q["topic"], str(q["queueId"]), "-f", "json"
        )
        doc = json.loads(proc.stdout)
        units = [[u["queueOffset"], u["phyOffset"], u["size"], u["tagsCode"]] for u in doc]
        assert units == q["units[queueOffset,phyOffset,size,tagsCode]"], key


def test_dump_config_consumer_offsets() -> None:
    proc = mqtool("--store", str(store_path("store-a")), "dump", "config", "consumerOffset", "-f", "csv")
    lines = proc.stdout.splitlines()
    assert lines[0] == "topic,group,queueId,offset"
    assert "TopicTest,groupA,0,231" in lines


def _config_copy(tmp_path, name: str, text: str, bak: str | None = None):
    import shutil

    root = tmp_path / "store"
    shutil.copytree(store_path("store-a"), root)
    (root / "config" / name).write_text(text)
    if bak is not None:
        (root / "config" / f"{name}.bak").write_text(bak)
    return root


@pytest.mark.parametrize("fmt", ["csv", "plain"])
def test_dump_config_damaged_entries_are_shown_not_crashed_on(tmp_path, fmt: str) -> None:
    """Found by the fuzz: a consumerOffset.json entry that is not an object made `dump config` guess
    delayOffset.json and crash on int('Topic@group'); a topic entry that is not an object crashed dict().
    (`--bak` reads the .bak as it is; the main file would fall back to the .bak, as the broker does.)"""
    text = '{"offsetTable":{"TopicTest@groupA":null,"TopicTest@groupB":{0:5,1:7}}}'
    root = _config_copy(tmp_path, "consumerOffset.json", "{}", bak=text)
    proc = mqtool("--store", str(root), "dump", "config", "consumerOffset", "--bak", "-f", fmt)
    assert "groupB" in proc.stdout and "groupA" in proc.stdout
    if fmt == "csv":
        assert proc.stdout.splitlines()[1:] == [
            "TopicTest,groupA,,",
            "TopicTest,groupB,0,5",
            "TopicTest,groupB,1,7",
        ]
    topics = '{"topicConfigTable":{"T":7,"U":{"topicName":"U"}}}'
    root = _config_copy(tmp_path / "t", "topics.json", "{}", bak=topics)
    proc = mqtool("--store", str(root), "dump", "config", "topics", "--bak", "-f", fmt)
    assert "U" in proc.stdout and "T" in proc.stdout


@pytest.mark.parametrize("args", [("dump", "config", "consumerOffset"), ("offsets", "show")])
def test_a_lone_surrogate_in_a_name_is_written_escaped(tmp_path, args: tuple[str, ...]) -> None:
    """Found by the fuzz: a "\\ud800" escape in a JSON string decodes to a lone surrogate, which stdout's
    UTF-8 cannot encode; the output carries the escape instead (and stays valid JSON)."""
    text = '{"offsetTable":{"TopicTest@group\\ud800":{0:5}}}'
    root = _config_copy(tmp_path, "consumerOffset.json", text, bak=text)
    proc = mqtool("--store", str(root), *args, "-f", "json")
    assert "group\\ud800" in proc.stdout
    assert "group\ud800" in json.dumps(json.loads(proc.stdout), ensure_ascii=False)


def test_dump_config_without_a_table_names_the_file(tmp_path) -> None:
    root = _config_copy(tmp_path, "topics.json", " \n", bak="null")
    proc = mqtool("--store", str(root), "dump", "config", "topics", "--bak", "-f", "csv", check=False)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr  # a format it cannot give: a usage error
    assert "topics.json" in lines[0] and "no tabular form" in lines[0]


def test_table_output_names_the_zone() -> None:
    proc = mqtool("--store", str(store_path("store-a")), "--tz", "Asia/Shanghai", "dump", "checkpoint")
    assert "Asia/Shanghai" in proc.stdout


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("--store", "/nonexistent/store", "info"), "no such store directory"),
        (("--store", "{golden}/README.md", "info"), "not a directory"),
        (("--store", "{golden}/commitlog", "info"), "not a RocketMQ store"),
        (("--store", "{golden}", "dump", "cq", "NoSuchTopic", "0"), "no ConsumeQueue"),
        (("--store", "{golden}", "dump", "cq", "TopicTest", "9"), "has no queue 9"),
        (("--store", "{golden}", "dump", "commitlog", "--from-offset", "5"), "not a record boundary"),
        (
            ("--store", "{golden}", "dump", "commitlog", "--from-offset", "99999999999"),
            "outside the commitlog",
        ),
        (("--store", "{golden}", "dump", "index", "nope"), "no index file"),
        (("--store", "{golden}", "dump", "config", "nope"), "no nope"),
        (("--store", "{golden}", "--format", "xml", "info"), "unknown --format"),
        (("--store", "{golden}", "--tz", "Mars/Base", "info"), "unknown time zone"),
    ],
)
def test_bad_input_gives_one_line_and_nonzero_exit(args: tuple[str, ...], needle: str) -> None:
    golden = str(store_path("store-a"))
    proc = mqtool(*(a.replace("{golden}", golden) for a in args), check=False)
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("part", ["commitlog", "consumequeue", "batchconsumequeue", "index", "config"])
def test_a_dangling_link_to_a_store_directory_is_one_line(tmp_path: Path, part: str) -> None:
    """An unmounted disk behind a symbolic link is not an empty commitlog (nor queues, index, config): the
    broker would load it as empty and its recovery would then drop the consume queues."""
    golden = store_path("store-a")
    root = tmp_path / "store"
    root.mkdir()
    for entry in golden.iterdir():
        (root / entry.name).symlink_to(entry)
    dangling = root / part
    dangling.unlink(missing_ok=True)
    dangling.symlink_to(tmp_path / "unmounted" / part)
    proc = mqtool("--store", str(root), "info", check=False)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode != 0 and len(lines) == 1, proc.stderr
    assert str(dangling) in lines[0] and "does not exist" in lines[0] and "Traceback" not in proc.stderr
    dangling.unlink()  # a missing directory stays what the broker makes of it: an empty part
    assert mqtool("--store", str(root), "info", check=False).returncode == 0


def test_version_alone() -> None:
    from mqtool import __version__

    assert mqtool("--version").stdout == f"mqtool {__version__}\n"


# --- the 5.x timer wheel (stores the real TimerMessageStore wrote) ------------------------------

TIMER_STORES = ("store-timer5", "store-timer-states")


@pytest.mark.parametrize("name", TIMER_STORES)
def test_dump_timerlog_is_every_unit_the_real_timerlog_reads(name: str) -> None:
    units = json.loads(
        mqtool("--store", str(store_path(name)), "dump", "timerlog", "--format", "json").stdout
    )
    want = expect(name)["timerLog"]
    assert [{k: u[k] for k in w if k in u} for u, w in zip(units, want, strict=True)] == [
        {k: w[k] for k in w if k in u} for u, w in zip(units, want, strict=True)
    ]
    tail = mqtool("--store", str(store_path(name)), "dump", "timerlog", "--from-position", "52", "-n", "2",
                  "--format", "jsonl").stdout.splitlines()  # fmt: skip
    assert [json.loads(line)["position"] for line in tail] == [u["position"] for u in want[1:3]]


@pytest.mark.parametrize("name", TIMER_STORES)
def test_dump_timerwheel_and_timercheck(name: str) -> None:
    root = str(store_path(name))
    slots = json.loads(mqtool("--store", root, "dump", "timerwheel", "--format", "json").stdout)
    want = expect(name)["timerWheel"]
    assert [
        (s["index"], s["timeMs"], s["firstPos"], s["lastPos"], s["num"], s["chainLength"]) for s in slots
    ] == [(w["index"], w["timeMs"], w["firstPos"], w["lastPos"], w["num"], len(w["chain"])) for w in want]
    check = json.loads(mqtool("--store", root, "dump", "timercheck", "--format", "json").stdout)
    assert check == expect(name)["timercheck"]
    table = mqtool("--store", root, "dump", "timerwheel", "--format", "plain").stdout
    assert f"precision {expect(name)['config']['timerPrecisionMs']} ms" in table


def test_dump_timer_files_of_a_4x_store_is_one_line() -> None:
    for what in ("timerlog", "timerwheel", "timercheck"):
        proc = mqtool("--store", str(store_path("store-49a")), "dump", what, check=False)
        assert proc.returncode == 1 and len(proc.stderr.strip().splitlines()) == 1
        assert "not a 5.x timer store" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("name", TIMER_STORES)
def test_info_shows_the_timer_wheel(name: str) -> None:
    doc = json.loads(mqtool("--store", str(store_path(name)), "info", "--format", "json").stdout)
    timer, exp = doc["timer"], expect(name)
    assert timer["units"] == len(exp["timerLog"]) and timer["slots"] == len(exp["timerWheel"])
    assert timer["logEnd"] == exp["timercheck"]["lastTimerLogFlushPos"]
    assert timer["lastReadTimeMs"] == exp["timercheck"]["lastReadTimeMs"]
    assert timer["enqueuePosition"] == exp["timercheck"]["lastTimerQueueOffset"]
    to_read = [s for s in exp["timerWheel"] if s["timeMs"] >= exp["timercheck"]["lastReadTimeMs"]]
    assert timer["slotsToRead"] == len(to_read)
    assert (
        sum(m.get("topic") == "rmq_sys_wheel_timer" for m in exp["messages"]) == timer["timerTopicMessages"]
    )
    assert (
        "Timer wheel (TimerMessageStore)"
        in mqtool("--store", str(store_path(name)), "info", "--format", "plain").stdout
    )


def test_info_of_a_4x_store_has_no_timer_section() -> None:
    doc = json.loads(mqtool("--store", str(store_path("store-49a")), "info", "--format", "json").stdout)
    assert doc["timer"] is None
