"""`mqtool dlq resend` and `dlq export` on dead letters the real code wrote.

store-trace-b: the `retried-to-dlq` message of GID_retry went through the real retry path (the send-back's
put through the real HookUtils into SCHEDULE_TOPIC_XXXX, the real ScheduleMessageService delivering each copy
into %RETRY%GID_retry, then %DLQ%GID_retry): its first delivered retry copy (expect.json `delivered` event
after the `sendBack` with reconsumeTimes 1) is what the broker writes for a first failure, the record
`--to retry` must rebuild. store-a / store-49a: a %DLQ%groupA record the real 5.3.3 / 4.9.8 put stored.
What the real broker makes of the results (loads clean, a consumer of the group pulls exactly the resent
messages once) is judged by tests/oracle/check.py (`check_dlq_pull`, `run.sh group-pull`).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from golden import copy_store, expect, run_mqtool, snapshot, store_path

from formats.errors import MqtoolError
from mqtool.dlq.export import export_dead_letters
from mqtool.dlq.listing import list_dlq
from mqtool.dlq.resend import execute_resend, plan_resend
from mqtool.dlq.selection import DlqSelector
from mqtool.outputs import OutputRefused
from store.broker.messagerebuild import read_message_or_none
from store.storedir import Store

GROUP = "GID_retry"


def dead_letter_history() -> dict[str, dict]:
    """The events of the message the real retry path killed, by kind (the first of each)."""
    [entry] = [h for h in expect("store-trace-b")["history"] if any(e["event"] == "dlq" for e in h["events"])]
    out: dict[str, dict] = {"uniqKey": entry["uniqKey"]}
    for e in entry["events"]:
        out.setdefault(e["event"], e)
    return out


@pytest.fixture
def trace_b(tmp_path: Path) -> Path:
    return copy_store("store-trace-b", tmp_path / "store")


def test_retry_record_is_the_brokers_first_retry_copy() -> None:
    """--to retry plans, byte for byte but for position and store time, the %RETRY% copy the real send-back
    and ScheduleMessageService wrote after the message's first failure."""
    h = dead_letter_history()
    assert h["sendBack"]["reconsumeTimes"] == 1 and h["sendBack"]["delayLevel"] == 3
    with Store.open(store_path("store-trace-b")) as st:
        plan = plan_resend(st, GROUP, DlqSelector())
        real = read_message_or_none(st, h["delivered"]["physicalOffset"], None)
    [item] = plan.resends
    assert item.action == "resend", item.reason
    rec = item.record
    assert (real.topic, real.queue_id) == (h["delivered"]["topic"], h["delivered"]["queueId"])
    for name in (
        "topic",
        "queue_id",
        "properties_raw",
        "body",
        "flag",
        "sys_flag",
        "born_timestamp",
        "born_host",
        "born_port",
        "store_host",
        "store_port",
        "reconsume_times",
        "prepared_transaction_offset",
        "total_size",
        "body_crc",
    ):
        assert getattr(rec, name) == getattr(real, name), name
    # planned after the queue's last record
    assert rec.queue_offset == h["delivered"]["queueOffset"] + 2


def test_origin_record_goes_back_to_the_first_copys_queue() -> None:
    h = dead_letter_history()
    with Store.open(store_path("store-trace-b")) as st:
        plan = plan_resend(st, GROUP, DlqSelector(), "origin")
        dlq = read_message_or_none(st, h["dlq"]["physicalOffset"], None)
    [item] = plan.resends
    rec = item.record
    assert (rec.topic, rec.queue_id) == (h["sent"]["topic"], h["sent"]["queueId"])
    assert rec.reconsume_times == 0 and rec.body == dlq.body and rec.born_timestamp == dlq.born_timestamp
    assert rec.properties == dlq.properties  # the DLQ copy's map (ORIGIN_MESSAGE_ID, RETRY_TOPIC kept)
    assert rec.properties["ORIGIN_MESSAGE_ID"] == h["sent"]["offsetMsgId"]
    assert any("every consumer group" in n for n in plan.notes)


@pytest.mark.parametrize("target", ["retry", "origin"])
def test_execute_appends_once_and_a_second_run_skips(trace_b: Path, target: str) -> None:
    with Store.open(trace_b) as st:
        plan = plan_resend(st, GROUP, DlqSelector(), target)
        result = execute_resend(st, plan, True)
    assert result.executed and len(result.written) == 1
    written = result.written[0]
    with Store.open(trace_b) as st:
        back = read_message_or_none(st, written.physical_offset, None)
        cq = st.consume_queue(written.topic, written.queue_id)
        assert cq.max_offset == written.queue_offset + 1
        assert cq.unit(written.queue_offset).phy_offset == written.physical_offset
        assert back.properties_raw == plan.resends[0].record.properties_raw
        again = plan_resend(st, GROUP, DlqSelector(), target)
        other = plan_resend(st, GROUP, DlqSelector(), "origin" if target == "retry" else "retry")
    for p in (again, other):  # resent either way: neither target resends it again
        [item] = p.resends
        assert item.action == "skip" and item.found.physical_offset == written.physical_offset, item.reason
        assert "already resent" in item.reason
    before = snapshot(trace_b)
    with Store.open(trace_b) as st:
        assert not execute_resend(st, again, True).executed
    assert snapshot(trace_b) == before


def test_dry_run_writes_nothing(trace_b: Path) -> None:
    before = snapshot(trace_b)
    with Store.open(trace_b) as st:
        plan = plan_resend(st, GROUP, DlqSelector())
        assert not execute_resend(st, plan, False).executed
    assert snapshot(trace_b) == before


def _drop_config_entry(root: Path, name: str, table: str, key: str) -> None:
    """What `mqadmin deleteSubGroup` / `deleteTopic` leave: the entry gone from the config file (and .bak)."""
    for path in (root / "config" / name, root / "config" / f"{name}.bak"):
        if path.exists():
            doc = json.loads(path.read_text())
            doc[table].pop(key, None)
            path.write_text(json.dumps(doc))


def test_deleted_group_is_refused(trace_b: Path) -> None:
    _drop_config_entry(trace_b, "subscriptionGroup.json", "subscriptionGroupTable", GROUP)
    with Store.open(trace_b) as st:
        [item] = plan_resend(st, GROUP, DlqSelector()).resends
        assert item.action == "refuse" and "deleted" in item.reason and item.record is None
        # the original topic still takes it
        assert plan_resend(st, GROUP, DlqSelector(), "origin").resends[0].action == "resend"


def test_deleted_topic_is_refused_for_origin_only(trace_b: Path) -> None:
    _drop_config_entry(trace_b, "topics.json", "topicConfigTable", "TraceTopic")
    with Store.open(trace_b) as st:
        [item] = plan_resend(st, GROUP, DlqSelector(), "origin").resends
        assert item.action == "refuse" and "TraceTopic is not in topics.json (deleted)" in item.reason
        assert plan_resend(st, GROUP, DlqSelector()).resends[0].action == "resend"


@pytest.mark.parametrize("name", ["store-a", "store-49a"])
def test_real_put_dead_letters(name: str) -> None:
    """store-a / store-49a: retry rebuilt with the store's broker rules; origin refused (the original is
    not in the store: ORIGIN_MESSAGE_ID names no record here)."""
    with Store.open(store_path(name)) as st:
        [row] = list_dlq(st).rows
        plan = plan_resend(st, "groupA", DlqSelector())
        [item] = plan.resends
        assert item.action == "resend"
        trailing = item.record.properties_raw.endswith(b"\x02")
        assert trailing == (plan.broker.major >= 5) == (name == "store-a")
        assert item.record.properties["REAL_TOPIC"] == "%RETRY%groupA"
        assert item.record.properties["ORIGIN_MESSAGE_ID"] == row.origin_message_id
        [refused] = plan_resend(st, "groupA", DlqSelector(), "origin").resends
        assert refused.action == "refuse" and "queue is unknown" in refused.reason


def test_selectors() -> None:
    h = dead_letter_history()
    with Store.open(store_path("store-trace-b")) as st:
        [row] = list_dlq(st).rows

        def picked(**kw) -> int:
            return len(plan_resend(st, GROUP, DlqSelector(**kw)).resends)

        for ident in (h["uniqKey"], row.offset_msg_id.lower(), h["sent"]["offsetMsgId"]):
            assert picked(msg_ids=(ident,)) == 1
        assert picked(msg_ids=("00" * 16,)) == 0
        assert picked(key="vip") == 1 and picked(key="order-2") == 1 and picked(key="order") == 0
        assert picked(origin_topic="TraceTopic") == 1 and picked(origin_topic="Other") == 0
        died = row.store_timestamp
        assert picked(begin=died, end=died) == 1 and picked(begin=died + 1) == 0
        assert picked(key="vip", origin_topic="Other") == 0  # ANDed
        nothing = plan_resend(st, "groupA", DlqSelector())
        assert nothing.resends == [] and "no dead-letter queue" in nothing.notes[0]


def test_two_dead_letters_of_one_message_resend_the_later_only(trace_b: Path) -> None:
    """The same message dead twice (resent, died again): only the later dead letter is resent."""
    with Store.open(trace_b) as st:
        [row] = list_dlq(st).rows
        dlq = read_message_or_none(st, row.physical_offset, None)
        from store.broker.messagerebuild import store_writer

        store_writer(st).append([dlq])  # a second copy of the dead letter, as a second death stores it
    with Store.open(trace_b) as st:
        plan = plan_resend(st, GROUP, DlqSelector())
    first, second = plan.resends
    assert (first.action, second.action) == ("skip", "resend")
    assert "later dead letter" in first.reason


def test_cli_resend_twice(trace_b: Path) -> None:
    root = str(trace_b)
    dry = run_mqtool("--store", root, "dlq", "resend", "-g", GROUP)
    assert dry.returncode == 0 and "would be resent" in dry.stdout, dry.stderr
    first = json.loads(
        run_mqtool("--store", root, "-f", "json", "dlq", "resend", "-g", GROUP, "--execute").stdout
    )
    assert first["executed"] and first["counts"] == {"resend": 1, "skip": 0, "refuse": 0}
    assert first["messages"][0]["newPhyOffset"] is not None
    second = json.loads(
        run_mqtool("--store", root, "-f", "json", "dlq", "resend", "-g", GROUP, "--execute").stdout
    )
    assert not second["executed"] and second["counts"] == {"resend": 0, "skip": 1, "refuse": 0}
    bad = run_mqtool("--store", root, "dlq", "resend", "-g", GROUP, "--to", "elsewhere")
    assert bad.returncode != 0 and "Traceback" not in bad.stderr and bad.stderr.strip().count("\n") == 0
    both = run_mqtool("--store", root, "dlq", "resend", "-g", GROUP, "--execute", "--dry-run")
    assert both.returncode == 2


# --- export --------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_export_rows_are_the_listing(tmp_path: Path, fmt: str) -> None:
    out = tmp_path / f"dead.{fmt}"
    with Store.open(store_path("store-trace-b")) as st:
        [row] = list_dlq(st).rows
        dlq = read_message_or_none(st, row.physical_offset, None)
        summary = export_dead_letters(st, out, with_body=True)
    assert summary.messages == 1 and summary.format == fmt
    want = row.to_json()
    if fmt == "jsonl":
        [got] = [json.loads(line) for line in out.read_text().splitlines()]
        import base64

        assert base64.b64decode(got.pop("body")) == dlq.body
        assert got.pop("properties") == dlq.properties
        assert got == want
    elif fmt == "csv":
        import csv

        [got] = list(csv.DictReader(out.open()))
        assert json.loads(got["properties"]) == dlq.properties
        assert {k: got[k] for k in want} == {k: "" if v is None else str(v) for k, v in want.items()}
    else:
        [got] = pq.read_table(out).to_pylist()
        assert got.pop("body") == dlq.body and dict(got.pop("properties")) == dlq.properties
        assert got == want


def test_export_output_checks(tmp_path: Path) -> None:
    with Store.open(store_path("store-trace-b")) as st:
        with pytest.raises(OutputRefused, match="inside the store"):
            export_dead_letters(st, store_path("store-trace-b") / "dead.jsonl")
        foreign = tmp_path / "notes.csv"
        foreign.write_text("mine\n")
        with pytest.raises(OutputRefused, match="not a dlq export file"):
            export_dead_letters(st, foreign)
        assert foreign.read_text() == "mine\n"
        for fmt in ("csv", "jsonl", "parquet"):  # its own files are replaced
            out = tmp_path / f"again.{fmt}"
            export_dead_letters(st, out)
            export_dead_letters(st, out, selector=DlqSelector(key="nope"))
        assert (tmp_path / "again.jsonl").read_text() == ""
        assert pq.read_table(tmp_path / "again.parquet").num_rows == 0


def test_export_cli(tmp_path: Path) -> None:
    out = tmp_path / "x.parquet"
    done = run_mqtool(
        "--store",
        str(store_path("store-trace-b")),
        "-f",
        "json",
        "dlq",
        "export",
        "-o",
        str(out),
        "--key",
        "vip",
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["messages"] == 1 and pq.read_table(out).num_rows == 1
    bad = run_mqtool(
        "--store", str(store_path("store-trace-b")), "dlq", "export", "-o", str(out), "--file-format", "xml"
    )
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    shutil.rmtree(tmp_path)


def test_a_later_messages_own_retries_do_not_mark_an_earlier_dead_letter(trace_b: Path) -> None:
    """Message B's retry copy stored after message A died, then B dies: both are resent (B's own retry
    copy is older than B's dead letter; only a copy after a dead letter counts as its resend)."""
    from formats.message.properties import encode_properties
    from store.broker.messagerebuild import copied_record, store_writer

    h = dead_letter_history()

    def as_message_b(msg):
        props = {
            **msg.properties,
            "UNIQ_KEY": "B" * 32,
            "ORIGIN_MESSAGE_ID": "C0A8000B00002A9F00000000000000B0",
        }
        return copied_record(msg, topic=msg.topic, queue_id=msg.queue_id, properties=encode_properties(props))

    with Store.open(trace_b) as st:
        retry = read_message_or_none(st, h["delivered"]["physicalOffset"], None)
        dlq = read_message_or_none(st, h["dlq"]["physicalOffset"], None)
        store_writer(st).append([as_message_b(retry), as_message_b(dlq)])
    with Store.open(trace_b) as st:
        plan = plan_resend(st, GROUP, DlqSelector())
    assert [(r.row.uniq_key, r.action) for r in plan.resends] == [
        (h["uniqKey"], "resend"),
        ("B" * 32, "resend"),
    ]


def test_layouts_and_states_the_write_refuses(trace_b: Path, tmp_path: Path) -> None:
    """Fail closed: a DLedger store is refused before any plan; `abort` (an unclean stop) before any byte."""
    import tarfile

    with tarfile.open(store_path("store-dledger") / "store.tar.gz") as tar:
        tar.extractall(tmp_path / "dl", filter="data")
    with Store.open(tmp_path / "dl" / "store-dledger") as st, pytest.raises(MqtoolError, match="DLedger"):
        plan_resend(st, GROUP, DlqSelector())
    (trace_b / "abort").touch()
    before = snapshot(trace_b)
    with Store.open(trace_b) as st:
        plan = plan_resend(st, GROUP, DlqSelector())
        with pytest.raises(MqtoolError, match="abort"):
            execute_resend(st, plan, True)
    assert snapshot(trace_b) == before


# --- store-dlq: dead letters of the real consumerSendMsgBack, a deleted group and a deleted topic -----------


def dlq_fixture_history() -> dict[str, dict]:
    return {h["name"]: h for h in expect("store-dlq")["history"]}


def test_store_dlq_retry_records_are_the_brokers_retry_copies() -> None:
    """Each planned %RETRY%GID_dlq record equals the first retry copy the real send-back and
    ScheduleMessageService wrote for that message, but for DELAY: the harness's listener asked delay level
    1, the plan writes 3 (the level of a first failure with none asked: 3 + reconsumeTimes 0)."""
    history = dlq_fixture_history()
    with Store.open(store_path("store-dlq")) as st:
        plan = plan_resend(st, "GID_dlq", DlqSelector())
        assert {r.row.uniq_key: r.action for r in plan.resends} == {
            history[n]["uniqKey"]: "resend" for n in ("order-1", "order-2", "legacy-1")
        }
        for item in plan.resends:
            [name] = [n for n, h in history.items() if h["uniqKey"] == item.row.uniq_key]
            first = next(e for e in history[name]["events"] if e["event"] == "delivered")
            assert first["reconsumeTimes"] == 1
            real = read_message_or_none(st, first["physicalOffset"], None)
            rec = item.record
            assert real.properties["DELAY"] == "1" and rec.properties["DELAY"] == "3"
            assert rec.properties_raw == real.properties_raw.replace(b"DELAY\x011\x02", b"DELAY\x013\x02")
            for field_ in ("topic", "queue_id", "body", "flag", "sys_flag", "born_timestamp", "born_host"):
                assert getattr(rec, field_) == getattr(real, field_), field_
            assert (rec.store_host, rec.reconsume_times) == (real.store_host, real.reconsume_times)


def test_store_dlq_deleted_group_and_topic() -> None:
    history = dlq_fixture_history()
    with Store.open(store_path("store-dlq")) as st:
        [gone] = plan_resend(st, "GID_gone", DlqSelector()).resends
        assert (
            gone.action == "refuse" and "GID_gone is not in subscriptionGroup.json (deleted)" in gone.reason
        )
        origin = {r.row.uniq_key: r for r in plan_resend(st, "GID_dlq", DlqSelector(), "origin").resends}
    legacy = origin[history["legacy-1"]["uniqKey"]]
    assert legacy.action == "refuse" and "LegacyTopic is not in topics.json (deleted)" in legacy.reason
    for name in ("order-1", "order-2"):
        sent = history[name]["events"][0]
        item = origin[history[name]["uniqKey"]]
        assert item.action == "resend" and (item.record.topic, item.record.queue_id) == (
            sent["topic"],
            sent["queueId"],
        )
        assert item.record.properties["ORIGIN_MESSAGE_ID"] == sent["offsetMsgId"]


def test_store_dlq_resend_by_key_then_all(tmp_path: Path) -> None:
    """Resend one message by key, then all: the second run resends only the other two."""
    root = copy_store("store-dlq", tmp_path / "s")
    with Store.open(root) as st:
        first = plan_resend(st, "GID_dlq", DlqSelector(key="order-2"))
        assert [r.row.keys for r in first.to_resend] == ["order-2"]
        execute_resend(st, first, True)
    with Store.open(root) as st:
        rest = plan_resend(st, "GID_dlq", DlqSelector())
    assert sorted((r.row.keys, r.action) for r in rest.resends) == [
        ("legacy-1", "resend"),
        ("order-1 vip", "resend"),
        ("order-2", "skip"),
    ]


def test_a_crc_broker_drops_the_copys_trailer(trace_b: Path) -> None:
    """A broker with enabledAppendPropCRC deletes a message's `__CRC32#` property before each put and
    appends its own (CommitLog.java:930-933): the resent record carries one trailer, its own. The dead
    letter with a trailer is made here by mqtool's appender (no real-code fixture has one)."""
    from formats.message.properties import split_crc32_trailer
    from store.appender import CommitLogAppender, NewMessage
    from store.config.brokerconf import BrokerConfig

    crc = BrokerConfig(enabledAppendPropCRC=True)
    with Store.open(trace_b) as st:
        [row] = list_dlq(st).rows
        dlq = read_message_or_none(st, row.physical_offset, None)
    with CommitLogAppender(trace_b, broker_config=crc) as app:
        app.append(
            NewMessage(
                topic=dlq.topic,
                body=dlq.body,
                properties=dlq.properties_raw,
                born_timestamp=dlq.born_timestamp,
                born_host=(dlq.born_host, dlq.born_port),
                reconsume_times=dlq.reconsume_times,
            )
        )
    with Store.open(trace_b, crc) as st:
        plan = plan_resend(st, GROUP, DlqSelector())
        [first, second] = plan.resends  # the same message twice: the later one is resent
        assert first.action == "skip" and second.action == "resend"
        assert "__CRC32#" in read_message_or_none(st, second.row.physical_offset, None).properties
        assert "__CRC32#" not in second.record.properties
        [written] = execute_resend(st, plan, True).written
    with Store.open(trace_b, crc) as st:
        raw = read_message_or_none(st, written.physical_offset, None).properties_raw
    body, value = split_crc32_trailer(raw)
    assert value is not None and b"__CRC32#" not in body


@pytest.mark.parametrize("name", ["store-a", "store-49a"])
def test_real_put_stores_resend_once(tmp_path: Path, name: str) -> None:
    """On a 4.9 store too (its last property has no separator after it), the resent copy is recognised."""
    root = copy_store(name, tmp_path / "s")
    with Store.open(root) as st:
        assert len(execute_resend(st, plan_resend(st, "groupA", DlqSelector()), True).written) == 1
    with Store.open(root) as st:
        [again] = plan_resend(st, "groupA", DlqSelector()).resends
    assert again.action == "skip" and "already resent" in again.reason
