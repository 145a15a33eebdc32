"""`mqtool trace` and `mqtool dump trace` on the two-broker trace fixture (tests/data/store-trace-a and -b,
written by the real 5.3.3 broker, store and client trace code: oracle `trace-store`): every traced message's
timeline over both stores holds what really happened to it (expect.json `history`), and every trace record the
real decoder read from the trace messages (`traceMessages`); plus POP facts on store-pop."""

from __future__ import annotations

import base64
import json
import os

import pytest

from formats.trace import decode_body, encode_body
from mqtool.trace.fleet import TraceQuery, expand_locations, inline_runner, trace
from mqtool.trace.records import trace_rows
from store.storedir import Store
from tests.golden import GOLDEN, run_mqtool

STORES = {"broker-a": GOLDEN / "store-trace-a", "broker-b": GOLDEN / "store-trace-b"}
EXPECT = json.loads((STORES["broker-a"] / "expect.json").read_text())
HISTORY = {h["name"]: h for h in EXPECT["history"]}
LABELS = {name: str(path) for name, path in STORES.items()}


def _trace(msg_id=None, **kw):
    query = TraceQuery([STORES["broker-a"], STORES["broker-b"]], msg_id=msg_id, **kw)
    report = trace(query, inline_runner)
    assert not report.failed
    return report


def _by_name(name: str):
    report = _trace(HISTORY[name]["uniqKey"])
    assert [m.msg_id for m in report.messages] == [HISTORY[name]["uniqKey"]]
    return report.messages[0]


def _records(m) -> set[tuple[str, str, int, int]]:
    return {(r.store, r.topic, r.queue_id, r.physical_offset) for r in m.records}


def _true_records(h: dict) -> set[tuple[str, str, int, int]]:
    """Every record the scenario put for the message: the send, each copy, the commit copy."""
    out = set()
    for e in h["events"]:
        store = LABELS.get(e.get("broker"))
        if e["event"] in ("sent", "sendBack", "dlq", "delivered"):
            out.add((store, e["topic"], e["queueId"], e["physicalOffset"]))
        elif e["event"] == "committed":
            out.add((store, "TraceTopic", 0, e["commitPhysicalOffset"]))
        elif e["event"] == "recalled":  # the tombstone RecallMessageProcessor put, as the real store reads it
            stored = json.loads((STORES[e["broker"]] / "expect.json").read_text())["messages"]
            for r in stored:
                if r.get("properties", {}).get("TIMER_DEL_UNIQKEY", "").endswith("+" + h["uniqKey"]):
                    out.add((store, r["topic"], r["queueId"], r["physicalOffset"]))
    return out


def _true_traces(uniq: str) -> list[tuple[str, int, str, str | None]]:
    """(store, trace message phy, type, group) of every record the real decoder read about `uniq`."""
    out = []
    for t in EXPECT["traceMessages"]:
        for c in t["decoded"]:
            if c["traceBeans"][0]["msgId"] == uniq:
                out.append((LABELS[t["broker"]], t["physicalOffset"], c["traceType"], c["groupName"]))
    return sorted(out)


@pytest.mark.parametrize("name", list(HISTORY))
def test_each_message_has_its_whole_history_across_both_stores(name: str) -> None:
    h = HISTORY[name]
    m = _by_name(name)
    assert _records(m) == _true_records(h)
    got = sorted((t.store, t.physical_offset, t.context.trace_type, t.context.group_name) for t in m.traces)
    assert got == _true_traces(h["uniqKey"])
    # each group that consumed it: its offset passed the record it consumed (the last attempt counts)
    final: dict[str, dict] = {}
    for e in h["events"]:
        if e["event"] == "consumed":
            final[e["group"]] = e
    groups = {g.group: g for g in m.groups}
    for group, e in final.items():
        assert groups[group].consumed_by_offset, group
        traced = [x for x in h["events"] if x["event"] == "consumed" and x["group"] == group and x["traced"]]
        assert groups[group].sub_after_ok + groups[group].sub_after_failed == len(traced)
        assert groups[group].sub_after_failed == sum(not x["success"] for x in traced)
        if not e["traced"]:
            assert f"{group}: consumed by offset, no SubAfter trace" in m.gaps
    times = [e.time for e in m.events if e.time is not None]
    assert times == sorted(times)
    assert m.topic == "TraceTopic"
    assert m.producer_group == (h["producerGroup"] if h["traced"] else None)  # only a Pub record names it


def test_retries_and_the_dead_letter_copy() -> None:
    m = _by_name("retried-to-dlq")
    g = {g.group: g for g in m.groups}["GID_retry"]
    assert (g.dead_lettered, g.retries, g.sub_after_failed, g.state) == (
        True,
        2,
        3,
        "dead-lettered after 2 retries",
    )
    delays = [r for r in m.records if r.role == "delay"]
    assert [(r.delay_level, r.state) for r in delays] == [(3, "delivered"), (1, "delivered")]
    dlq = [r for r in m.records if r.role == "dlq"]
    assert len(dlq) == 1 and dlq[0].origin_message_id == HISTORY["retried-to-dlq"]["events"][0]["offsetMsgId"]
    once = {g.group: g for g in _by_name("retried-once").groups}["GID_retry"]
    assert (once.retries, once.sub_after_failed, once.sub_after_ok, once.state) == (
        1,
        1,
        1,
        "consumed after 1 retry",
    )


def test_transaction_recall_and_delay_states() -> None:
    tx = _by_name("transaction-committed")
    assert [(r.role, r.state) for r in tx.records] == [("half", "committed"), ("commit", None)]
    assert [t.context.trace_type for t in tx.traces if t.context.group_name == "PG_tx"] == [
        "Pub",
        "EndTransaction",
    ]
    recalled = _by_name("timer-recalled")
    assert [(r.role, r.state) for r in recalled.records] == [("timer", "recalled"), ("recall", "waiting")]
    assert recalled.groups == [] and "Recall" in [t.context.trace_type for t in recalled.traces]
    delayed = _by_name("delay-level-2")
    assert [(r.role, r.delay_level, r.state) for r in delayed.records] == [
        ("delay", 2, "delivered"),
        ("delivered", None, None),
    ]


def test_gaps_are_named() -> None:
    untraced = _by_name("untraced-producer")
    assert any(g.startswith("no Pub trace record") for g in untraced.gaps)
    pending = _by_name("not-consumed-by-traced-groups")
    ok = {g.group: g for g in pending.groups}.get("GID_ok")
    assert ok is None or not ok.consumed_by_offset
    assert not any("SubAfter" in g for g in pending.gaps if g.startswith("GID_ok"))
    # one store only: the Pub record of a broker-b message sits on broker-a
    only_b = trace(
        TraceQuery([STORES["broker-b"]], msg_id=HISTORY["retried-to-dlq"]["uniqKey"]), inline_runner
    )
    assert any(g.startswith("no Pub trace record") for g in only_b.messages[0].gaps)
    only_a = trace(
        TraceQuery([STORES["broker-a"]], msg_id=HISTORY["retried-to-dlq"]["uniqKey"]), inline_runner
    )
    assert any("none of the stores read holds that record" in g for g in only_a.messages[0].gaps)


def test_no_trace_records_is_named() -> None:
    other = json.loads((GOLDEN / "store-a" / "expect.json").read_text())["messages"]
    uniq = next(m["uniqKey"] for m in other if m.get("uniqKey"))
    report = trace(TraceQuery([GOLDEN / "store-a"], msg_id=uniq), inline_runner)
    assert (
        report.messages[0].records
        and "no trace records (gRPC client or trace disabled)" in report.messages[0].gaps
    )


def test_found_by_offset_msg_id_and_by_key() -> None:
    h = HISTORY["retried-once"]
    by_offset = _trace(h["events"][0]["offsetMsgId"])
    assert h["uniqKey"] in [m.msg_id for m in by_offset.messages]
    timeline = next(m for m in by_offset.messages if m.msg_id == h["uniqKey"])
    assert _records(timeline) == _true_records(h)
    by_key = trace(
        TraceQuery([STORES["broker-a"], STORES["broker-b"]], key="order-2", topic="TraceTopic"), inline_runner
    )
    assert [m.msg_id for m in by_key.messages] == [HISTORY["retried-to-dlq"]["uniqKey"]]
    assert len(by_key.messages[0].traces) == len(_true_traces(HISTORY["retried-to-dlq"]["uniqKey"]))


def test_dump_trace_reads_every_record_as_the_real_decoder_and_the_body_encodes_back() -> None:
    for broker, path in STORES.items():
        with Store.open(path) as st:
            rows = list(trace_rows(st))
        truth = [t for t in EXPECT["traceMessages"] if t["broker"] == broker]
        assert len({r.physical_offset for r in rows}) == len(truth)
        for t in truth:
            mine = [r for r in rows if r.physical_offset == t["physicalOffset"]]
            assert [r.context.trace_type for r in mine] == [c["traceType"] for c in t["decoded"]]
            for r, c in zip(mine, t["decoded"], strict=True):
                assert r.context.bean.msg_id == c["traceBeans"][0]["msgId"]
                assert r.context.group_name == c["groupName"] or r.context.group_name is None
                assert r.client_host == t["bornHost"]
            body = base64.b64decode(t["body"])
            assert encode_body(decode_body(body)) == body
        with Store.open(path) as st:
            subs = list(trace_rows(st, types=["SubAfter"], group="GID_retry"))
        assert subs and all(
            r.context.trace_type == "SubAfter" and r.context.group_name == "GID_retry" for r in subs
        )


def test_pop_checkpoints_and_revived_copies_on_store_pop() -> None:
    messages = json.loads((GOLDEN / "store-pop" / "expect.json").read_text())["messages"]
    # GID_BATCH popped PopTopicA/1 offsets 0..4, acked 0, 2, 4: offset 1 was revived into the V1 retry topic
    uniq = next(
        m["uniqKey"]
        for m in messages
        if m["topic"] == "PopTopicA" and m["queueId"] == 1 and m["queueOffset"] == 1
    )
    m = trace(TraceQuery([GOLDEN / "store-pop"], msg_id=uniq), inline_runner).messages[0]
    stored = next(r for r in m.records if r.role == "stored")
    assert ("GID_BATCH", "revived") in [(p["group"], p["state"]) for p in stored.pop]
    retry = [r for r in m.records if r.role == "pop-retry"]
    assert [r.topic for r in retry] == ["%RETRY%GID_BATCH_PopTopicA"]
    assert {g.group: g for g in m.groups}["GID_BATCH"].retries == 1


def test_a_directory_of_stores_and_a_store_that_cannot_be_read(tmp_path) -> None:
    fleet = tmp_path / "fleet"
    fleet.mkdir()
    for name, path in STORES.items():
        os.symlink(path, fleet / name)
    assert [p.name for p in expand_locations([fleet])] == ["broker-a", "broker-b"]
    (tmp_path / "empty").mkdir()
    uniq = HISTORY["consumed"]["uniqKey"]
    proc = run_mqtool("trace", uniq, "-s", str(fleet), "-s", str(tmp_path / "empty"), "-f", "json")
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    assert [s["ok"] for s in doc["stores"]] == [True, True, False]
    assert "not a RocketMQ store" in doc["stores"][2]["error"]
    assert doc["messages"][0]["msgId"] == uniq and len(doc["messages"][0]["traces"]) == len(
        _true_traces(uniq)
    )


def test_cli_timeline_json_and_html(tmp_path) -> None:
    uniq = HISTORY["retried-to-dlq"]["uniqKey"]
    page = tmp_path / "trace.html"
    proc = run_mqtool(
        "trace",
        uniq,
        "-s",
        str(STORES["broker-a"]),
        "-s",
        str(STORES["broker-b"]),
        "--tz",
        "UTC",
        "-f",
        "plain",
        "--html",
        str(page),
    )
    assert proc.returncode == 0, proc.stderr
    assert "dead-lettered into %DLQ%GID_retry/0" in proc.stdout and "SubAfter: GID_retry" in proc.stdout
    text = page.read_text()
    assert text.startswith("<!DOCTYPE html>") and "<svg" in text and "http" not in text.split("<body>")[1]
    assert "dead-lettered after 2 retries" in text
    proc = run_mqtool("dump", "trace", "-s", str(STORES["broker-a"]), "--type", "Pub", "-f", "jsonl")
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert rows and {r["traceType"] for r in rows} == {"Pub"}
    bad = run_mqtool("trace", "-s", str(STORES["broker-a"]), "--key", "order-1")
    assert bad.returncode == 1 and "--key needs --topic" in bad.stderr


def test_spark_tasks_give_the_same_report(spark) -> None:
    """One Spark task per store (the shared local session: `spark_runner` takes the active one)."""
    from mqtool.trace.spark import spark_runner

    uniq = HISTORY["retried-to-dlq"]["uniqKey"]
    query = TraceQuery([STORES["broker-a"], STORES["broker-b"]], msg_id=uniq, now=1)
    with spark_runner() as runner:
        on_spark = trace(query, runner).to_json()
    again = TraceQuery([STORES["broker-a"], STORES["broker-b"]], msg_id=uniq, now=1)
    local = trace(again, inline_runner).to_json()
    for doc in (on_spark, local):
        for s in doc["stores"]:
            s["seconds"] = 0
    assert on_spark == local and len(on_spark["messages"][0]["events"]) == 15
    # query key --spark: the same per-store answers
    from mqtool.trace.keys import query_key_stores

    both = [STORES["broker-a"], STORES["broker-b"]]
    with spark_runner() as runner:
        keyed = query_key_stores(both, "TraceTopic", "order-2", begin=0, end=2**63 - 1, runner=runner)
    assert [[m.uniq_key for m in r.messages] for r in keyed] == [[], [uniq]]


def test_query_key_over_several_stores() -> None:
    both = ["-s", str(STORES["broker-a"]), "-s", str(STORES["broker-b"])]
    proc = run_mqtool("query", "key", "TraceTopic", "order-2", *both, "-f", "json")
    assert proc.returncode == 0, proc.stderr
    docs = json.loads(proc.stdout)
    assert [(d["store"], d["uniqKey"]) for d in docs] == [
        (LABELS["broker-b"], HISTORY["retried-to-dlq"]["uniqKey"])
    ]
    assert docs[0]["consumedBy"] == {"GID_notrace": True, "GID_ok": True, "GID_retry": True}
    refused = run_mqtool("query", "key", "TraceTopic", "order-2", *both, "--scan")
    assert refused.returncode == 1 and "read one store" in refused.stderr


# --- the audit's trace section -----------------------------------------------------------------------------


def _true_trace_counts() -> dict[tuple[str, str, str], tuple[int, int, list[int]]]:
    """(store, type, group) -> (records, failed, costs) from what the real decoder read (expect.json)."""
    out: dict[tuple[str, str, str], tuple[int, int, list[int]]] = {}
    for t in EXPECT["traceMessages"]:
        for c in t["decoded"]:
            key = (t["broker"], c["traceType"], c["groupName"])
            records, failed, costs = out.get(key, (0, 0, []))
            has_cost = c["traceType"] in ("Pub", "SubAfter")
            out[key] = (
                records + 1,
                failed + (has_cost and not c["success"]),
                costs + [c["costTime"]] * has_cost,
            )
    return out


def test_audit_trace_rows_count_records_failures_and_cost_percentiles() -> None:
    import numpy as np

    from mqtool.audit.sections.trace_stats import trace_rows

    stores = [(name, Store.open(path)) for name, path in STORES.items()]
    rows, notes = trace_rows(stores)
    assert notes == []
    got: dict[tuple[str, str, str], list[dict]] = {}
    for r in rows:
        got.setdefault((r["store"], r["traceType"], r["group"]), []).append(r)
    truth = _true_trace_counts()
    assert set(got) == set(truth)
    for key, (records, failed, costs) in truth.items():
        assert sum(r["records"] for r in got[key]) == records, key
        assert sum(r["failed"] for r in got[key]) == failed, key
        if len(got[key]) == 1 and costs:
            r = got[key][0]
            assert [r["costP50"], r["costP90"], r["costP99"], r["costMax"]] == [
                *np.percentile(costs, [50, 90, 99], method="inverted_cdf").astype(int).tolist(),
                max(costs),
            ]
    # consume records take the topic of their msgId's Pub record on the other broker; the untraced
    # producer's message has none anywhere
    untraced = HISTORY["untraced-producer"]["uniqKey"]
    unknown = sum(r["records"] for r in rows if r["topic"] is None)
    assert unknown == len([x for x in _true_traces(untraced)])


def test_the_audit_has_the_trace_section(spark, tmp_path) -> None:
    from mqtool.audit.plan import AuditOptions
    from mqtool.audit.run import run_audit
    from mqtool.audit.sections.trace_stats import trace_rows

    out = tmp_path / "audit"
    stores = [str(STORES["broker-a"]), str(STORES["broker-b"])]
    doc = run_audit(AuditOptions(stores=stores, output=out, checks=False), spark=spark).document
    expected, _ = trace_rows([(s, Store.open(s)) for s in stores])
    assert doc["trace"] == expected and expected
    import pyarrow.parquet as pq

    assert pq.read_table(out / "trace.parquet").num_rows == len(expected)
    assert "Message trace" in (out / "report.html").read_text()
