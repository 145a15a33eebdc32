"""The `mqtool query ...` and `mqtool offsets show` commands, run as the installed console script."""

from __future__ import annotations

import base64
import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mqtool.offsets import progress
from mqtool.query.key import query_by_key
from mqtool.query.queue import query_by_time
from store.storedir import Store
from tests.golden import expect, store_path

MQTOOL = Path(sys.executable).parent / "mqtool"


def run(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "MQTOOL_DEBUG"}
    env["COLUMNS"] = "200"
    done = subprocess.run([str(MQTOOL), *args], capture_output=True, text=True, env=env, timeout=120)
    if check:
        assert done.returncode == 0, done.stderr
    return done


def one_line_error(done: subprocess.CompletedProcess) -> str:
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("mqtool: error: ")
    return lines[0]


A = ["--store", str(store_path("store-a"))]
C = ["--store", str(store_path("store-c"))]


def test_query_key_json_matches_the_library():
    done = run(*A, "--format", "json", "query", "key", "TopicTest", "Aa")
    doc = json.loads(done.stdout)
    assert isinstance(doc, list)
    with Store.open(store_path("store-a")) as st:
        want = query_by_key(st, "TopicTest", "Aa")
    assert [m["physicalOffset"] for m in doc] == [m.physical_offset for m in want.messages]
    for name in ("physicalOffset", "queueId", "queueOffset", "storeTimestamp", "keys", "uniqKey", "body"):
        assert name in doc[0]
    assert doc[0]["consumedBy"] == {"groupA": True, "groupB": True}
    assert "1 hash collision dropped" in done.stderr


def test_query_key_no_cap_and_broker_note():
    done = run(*A, "-f", "json", "query", "key", "TopicTest", "shared-key")
    assert len(json.loads(done.stdout)) > 64
    assert "at most 64" in done.stderr
    capped = run(*A, "-f", "json", "query", "key", "TopicTest", "shared-key", "--max", "3")
    assert len(json.loads(capped.stdout)) == 3


def test_query_key_csv_has_a_header():
    done = run(*A, "--format", "csv", "query", "key", "TopicTest", "order-123")
    rows = list(csv.DictReader(io.StringIO(done.stdout)))
    assert rows and {"physicalOffset", "topic", "keys", "uniqKey"} <= set(rows[0])
    empty = run(*A, "--format", "csv", "query", "key", "TopicTest", "no-such-key")
    assert empty.stdout.splitlines()[0].startswith("physicalOffset,")


def test_query_key_table_and_zone():
    done = run(
        *A,
        "--tz",
        "UTC",
        "query",
        "key",
        "TopicTest",
        "single-key-1",
        "--begin",
        "2026-01-01",
        "--end",
        "now",
    )
    assert "storeTime (UTC)" in done.stdout
    assert "hello rocketmq" in done.stdout
    assert "times read in zone UTC" in done.stderr


def test_query_key_scan_on_store_c():
    final = expect("store-c")["crash"]["finalAppends"][1]
    blind = run(*C, "-f", "json", "query", "key", "OrderTopic", "final-key-1")
    assert json.loads(blind.stdout) == []
    assert "--scan" in blind.stderr
    found = run(*C, "-f", "json", "query", "key", "OrderTopic", "final-key-1", "--scan")
    assert [m["physicalOffset"] for m in json.loads(found.stdout)] == [final["wroteOffset"]]
    assert "scanned the commitlog" in found.stderr


def test_query_id_both_kinds():
    entry = expect("store-a")["msgIdDecode"][1]
    done = run(*A, "-f", "json", "query", "id", entry["msgId"])
    doc = json.loads(done.stdout)
    assert [m["physicalOffset"] for m in doc] == [entry["offset"]]
    uniq = doc[0]["uniqKey"]
    by_uniq = json.loads(run(*A, "-f", "json", "query", "id", uniq).stdout)
    assert entry["offset"] in [m["physicalOffset"] for m in by_uniq]


def test_query_offset_and_time():
    cq = expect("store-a")["consumeQueues"]["TopicTest/2"]
    units = cq["units[queueOffset,phyOffset,size,tagsCode]"]
    done = run(*A, "-f", "json", "query", "offset", "TopicTest", "2", str(units[5][0]), "--count", "3")
    assert [m["physicalOffset"] for m in json.loads(done.stdout)] == [u[1] for u in units[5:8]]
    times = sorted(
        m["storeTimestamp"] for m in expect("store-a")["messages"] if m.get("topic") == "TopicTest"
    )
    begin, end = str(times[100]), str(times[200])
    page = run(*A, "-f", "json", "query", "time", "TopicTest", "--begin", begin, "--end", end, "--max", "10")
    assert len(json.loads(page.stdout)) == 10
    assert "--skip 10" in page.stderr
    everything = run(*A, "-f", "json", "query", "time", "TopicTest", "-b", begin, "-e", end, "--max", "0")
    with Store.open(store_path("store-a")) as st:
        want = query_by_time(st, "TopicTest", begin=int(begin), end=int(end))
    assert [m["physicalOffset"] for m in json.loads(everything.stdout)] == [
        m.physical_offset for m in want.messages
    ]


def test_export(tmp_path):
    out = tmp_path / "export"
    run(*A, "-f", "json", "query", "key", "TopicTest", "order-123", "--export", str(out))
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest and all((out / m["file"]).is_file() for m in manifest)


def test_body_limit():
    done = run(*A, "-f", "json", "query", "key", "TopicTest", "big-body", "--body-limit", "10")
    (doc,) = json.loads(done.stdout)
    assert doc["bodyTruncated"]
    assert doc["bodyLength"] > 10


def test_offsets_show_json_matches_the_library():
    done = run(*C, "-f", "json", "offsets", "show")
    doc = json.loads(done.stdout)
    with Store.open(store_path("store-c")) as st:
        want = progress.consumer_progress(st)
    assert doc == [r.to_json() for r in want.rows]
    row = next(r for r in doc if r["group"] == "groupB" and r["queueId"] == 0)
    assert row["state"] == "behind-min"
    table = run(*C, "offsets", "show", "--group", "groupB")
    assert "behind-min (291 deleted unconsumed)" in table.stdout
    assert "Totals per group" in table.stdout
    rows = list(csv.DictReader(io.StringIO(run(*C, "-f", "csv", "offsets", "show").stdout)))
    assert {"group", "topic", "queueId", "consumerOffset", "lag"} <= set(rows[0])


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["query", "id", "not-an-id"], "not a message id"),
        (["query", "id", "ABC"], "not a message id"),
        (["query", "key", "NoSuchTopic", "k"], "unknown topic"),
        (["query", "id", "FD" * 16, "--topic", "NoSuchTopic"], "unknown topic"),
        (["query", "offset", "NoSuchTopic", "0", "0"], "unknown topic"),
        (["query", "offset", "TopicTest", "0", "999999"], "maxOffset"),
        (["query", "time", "TopicTest", "--begin", "yesterday-ish", "--end", "now"], "bad time"),
        (["query", "key", "TopicTest", "k", "--begin", "2026-13-45"], "bad time"),
        (["--tz", "Mars/Base", "query", "key", "TopicTest", "k"], "unknown time zone"),
        (["offsets", "show", "--group", "nope"], "unknown consumer group"),
        (["offsets", "show", "--topic", "NoSuchTopic"], "unknown topic"),
        (["query", "key", "TopicTest", "k", "--scan-from", "1"], "record boundary"),
    ],
)
def test_errors_are_one_line(args, fragment):
    line = one_line_error(run(*A, *args, check=False))
    assert fragment in line


def test_export_into_the_store_is_refused():
    line = one_line_error(
        run(
            *A,
            "query",
            "key",
            "TopicTest",
            "order-123",
            "--export",
            str(store_path("store-a") / "x"),
            check=False,
        )
    )
    assert "is inside the store" in line
    assert not (store_path("store-a") / "x").exists()


def on_terminal(*args: str) -> str:
    """stdout of the CLI when it is a terminal (a pty), as a person at a shell sees it."""
    import pty

    master, slave = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k != "MQTOOL_DEBUG"}
    env["COLUMNS"] = "200"
    proc = subprocess.Popen(
        [str(MQTOOL), "--tz", "UTC", *args], stdout=slave, stderr=subprocess.PIPE, env=env
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    assert proc.wait(timeout=120) == 0, proc.stderr.read()
    return b"".join(chunks).decode("utf-8").replace("\r\n", "\n")


def _record_fields(text: str) -> dict[str, str]:
    """'Label | value' lines of a record view; a nested line ('  KEY | value') is keyed '  KEY'."""
    fields = {}
    for line in text.splitlines():
        label, sep, value = line.partition(" | ")
        if sep and not line.startswith("-[") and label.strip():
            fields[label.rstrip()] = value.strip()
    return fields


def test_one_message_on_a_terminal_shows_every_field_a_line():
    msg = next(m for m in expect("store-a")["messages"] if m.get("topic") == "%DLQ%groupA")
    text = on_terminal(*A, "query", "id", msg["offsetMsgId"])
    assert "-[ RECORD 1 ]" in text
    fields = _record_fields(text)
    # mqadmin queryMsgById's fields, each on its own line, in its order
    record = text.split("-[ RECORD 1 ]", 1)[1].splitlines()[1:]
    labels = [line.split(" | ")[0].rstrip() for line in record if line and not line.startswith(" ")]
    assert labels[:8] == ["OffsetID", "MsgId (UNIQ_KEY)", "Topic", "Tags", "Keys", "Queue ID", "Queue Offset",
                          "CommitLog Offset"]  # fmt: skip
    assert fields["OffsetID"] == msg["offsetMsgId"]
    assert fields["CommitLog Offset"] == str(msg["physicalOffset"])
    assert fields["Reconsume Times"] == str(msg["reconsumeTimes"])
    assert fields["Born Host"] == msg["bornHost"] and fields["Store Host"] == msg["storeHost"]
    for key, value in msg["properties"].items():  # ORIGIN_MESSAGE_ID, RETRY_TOPIC, ... each on its own line
        assert fields[f"  {key}"] == value
    assert fields["  groupA"].startswith(f"dead letter copy of {msg['properties']['ORIGIN_MESSAGE_ID']}")
    assert fields["Body"] == base64.b64decode(msg["bodyBase64"]).decode()


def test_several_messages_or_an_asked_format_keep_the_table_and_record_is_a_format():
    several = on_terminal(*A, "query", "key", "TopicTest", "order-548")
    assert "-[ RECORD" not in several and "phyOffset" in several
    msg = expect("store-a")["msgIdDecode"][1]
    asked = on_terminal(*A, "--format", "table", "query", "id", msg["msgId"])
    assert "-[ RECORD" not in asked and "phyOffset" in asked
    piped = run(*A, "query", "id", msg["msgId"])  # not a terminal: plain, as before
    assert "-[ RECORD" not in piped.stdout and "phyOffset" in piped.stdout
    records = run(*A, "--format", "record", "query", "key", "TopicTest", "order-548").stdout
    assert "-[ RECORD 1 ]" in records and "-[ RECORD 2 ]" in records
    assert records.count("\nConsumed ") == 2
    assert "consumed: offset" in records  # each group's reason, in full
