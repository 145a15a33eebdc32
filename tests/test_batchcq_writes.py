"""Writes that append and dispatch refuse BatchCQ topics: mqtool writes no BatchConsumeQueue units, and a
ConsumeQueue of a BatchCQ topic stops the real broker's load (`queueTypeShouldBe`). A delay message and a
half message whose real topic is a BatchCQ topic are built from records the real broker wrote (store-a),
appended to a copy of store-batchcq with mqtool's appender; `delay replay` and `txn commit` refuse them,
dry runs included, naming the topic and writing nothing. `delay replay --timer` is refused the same way
on a copy of a timer store whose topics.json makes the real topic BatchCQ."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from golden import copy_store, expect, snapshot, store_path
from golden import run_mqtool as mqtool

from formats.message.properties import decode_properties, encode_properties
from formats.names import SCHEDULE_TOPIC
from mqtool.delay.replay import execute_replay, plan_replay
from mqtool.delay.timer_replay import plan_timer_replay
from mqtool.transactions.end_transaction import plan_end, select_halves
from mqtool.transactions.listing import list_transactions
from store.appender import CommitLogAppender, NewMessage
from store.dispatch import BatchCQTopicError
from store.storedir import Store

LATE = 1_900_000_000_000  # everything is due
BATCH_TOPIC = "BatchTopicA"
HALF = "RMQ_SYS_TRANS_HALF_TOPIC"


def _reput(root: Path, topic: str, queue_id: int, source: int) -> None:
    """Append store-a's record at `source` again, to `topic`/`queue_id`, its real topic BatchTopicA."""
    with Store.open(store_path("store-a")) as st:
        m = st.commitlog.read_message_at(source)
    props = dict(decode_properties(m.properties_raw), REAL_TOPIC=BATCH_TOPIC, REAL_QID="0")
    with CommitLogAppender(root) as app:
        app.append(
            NewMessage(
                topic=topic,
                queue_id=queue_id,
                body=m.body,
                properties=encode_properties(props, trailing_separator=True),
                flag=m.flag,
                sys_flag=m.sys_flag,
                born_timestamp=m.born_timestamp,
                born_host=(m.born_host, m.born_port),
            )
        )


def _first_unit(name: str, topic: str) -> tuple[int, int]:
    """(queue id, phy offset) of the first unit of `topic` in golden store `name`."""
    queues = expect(name)["consumeQueues"]
    key = min(k for k in queues if k.rsplit("/", 1)[0] == topic)
    return int(key.rsplit("/", 1)[1]), queues[key]["units[queueOffset,phyOffset,size,tagsCode]"][0][1]


def test_appending_to_a_batchcq_topic_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    root = copy_store("store-batchcq", tmp_path / "s")
    before = snapshot(root)
    with pytest.raises(BatchCQTopicError, match=BATCH_TOPIC), CommitLogAppender(root) as app:
        app.append(NewMessage(topic=BATCH_TOPIC, body=b"x", properties={"UNIQ_KEY": "U1"}))
    assert snapshot(root) == before


def test_delay_replay_refuses_a_message_whose_real_topic_is_batchcq(tmp_path: Path) -> None:
    root = copy_store("store-batchcq", tmp_path / "s")
    queue_id, phy = _first_unit("store-a", SCHEDULE_TOPIC)
    _reput(root, SCHEDULE_TOPIC, queue_id, phy)
    before = snapshot(root)
    with Store.open(root) as st, pytest.raises(BatchCQTopicError, match=BATCH_TOPIC):
        execute_replay(st, plan_replay(st, now=LATE), execute=True)
    proc = mqtool("delay", "replay", "-s", str(root), "--now", str(LATE))  # the dry run
    assert proc.returncode == 1
    assert len(proc.stderr.strip().splitlines()) == 1 and BATCH_TOPIC in proc.stderr
    assert snapshot(root) == before


def test_txn_commit_refuses_a_half_whose_real_topic_is_batchcq(tmp_path: Path) -> None:
    root = copy_store("store-batchcq", tmp_path / "s")
    queue_id, phy = _first_unit("store-a", HALF)
    _reput(root, HALF, queue_id, phy)
    before = snapshot(root)
    with Store.open(root) as st:
        report = list_transactions(st, now=LATE)
        assert [t.real_topic for t in report.transactions] == [BATCH_TOPIC]
        with pytest.raises(BatchCQTopicError, match=BATCH_TOPIC):
            plan_end(st, report, select_halves(report, [0]), "commit")
    proc = mqtool("txn", "commit", "0", "-s", str(root), "--now", str(LATE))  # the dry run
    assert proc.returncode == 1
    assert len(proc.stderr.strip().splitlines()) == 1 and BATCH_TOPIC in proc.stderr
    assert snapshot(root) == before


def test_timer_replay_refuses_a_real_topic_that_is_batchcq(tmp_path: Path) -> None:
    name = "store-timer5"  # its wheel has due messages for TimerTopic
    root = copy_store(name, tmp_path / "s")
    for leftover in ("abort", "abort.bak"):
        (root / leftover).unlink(missing_ok=True)
    batch = json.loads((store_path("store-batchcq") / "config/topics.json").read_text())
    topics = root / "config/topics.json"
    config = json.loads(topics.read_text()) if topics.exists() else batch
    config["topicConfigTable"] = {
        **config["topicConfigTable"],
        "TimerTopic": dict(batch["topicConfigTable"][BATCH_TOPIC], topicName="TimerTopic"),
    }
    topics.write_text(json.dumps(config))
    before = snapshot(root)
    wheel = expect(name).get("recovered", {}).get("timerWheel") or expect(name)["timerWheel"]
    now = max(s["timeMs"] for s in wheel) + 1500  # past every slot of the wheel
    with Store.open(root) as st, pytest.raises(BatchCQTopicError, match="TimerTopic"):
        plan_timer_replay(st, now=now)
    proc = mqtool("delay", "replay", "--timer", "-s", str(root), "--now", str(now))
    assert proc.returncode == 1
    assert len(proc.stderr.strip().splitlines()) == 1 and "TimerTopic" in proc.stderr
    assert snapshot(root) == before
