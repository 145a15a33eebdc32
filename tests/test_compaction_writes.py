"""Writes that would append a record to a compaction topic refuse in one line (issue 31).

A record reaches compaction/ only when the broker's reput dispatches it (CommitLogDispatcherCompaction ->
CompactionStore.doDispatch, 5.3.3 CompactionService.java:46-70); one mqtool appended and dispatched itself
would sit in the ConsumeQueue, which no consumer of a compaction topic is served. So every write refuses on
a store with a compaction topic (`store.kind`). A delay message and a half message whose real topic is
CompactTopicA (records the real broker wrote in store-a, appended to a copy of store-compaction) are refused
by `delay replay` and `txn commit`, dry run and --execute, and nothing is written."""

from __future__ import annotations

from pathlib import Path

import pytest
from golden import copy_store, expect, snapshot, store_path
from golden import run_mqtool as mqtool

from formats.message.properties import decode_properties, encode_properties
from formats.names import SCHEDULE_TOPIC
from store.appender import CommitLogAppender, NewMessage
from store.storedir import Store

LATE = 1_900_000_000_000  # everything is due
TOPIC = "CompactTopicA"
HALF = "RMQ_SYS_TRANS_HALF_TOPIC"


def _reput(root: Path, topic: str, queue_id: int, source: int) -> None:
    """Append store-a's record at `source` again, to `topic`/`queue_id`, its real topic CompactTopicA."""
    with Store.open(store_path("store-a")) as st:
        m = st.commitlog.read_message_at(source)
    props = dict(decode_properties(m.properties_raw), REAL_TOPIC=TOPIC, REAL_QID="0")
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


def _first_unit(topic: str) -> tuple[int, int]:
    queues = expect("store-a")["consumeQueues"]
    key = min(k for k in queues if k.rsplit("/", 1)[0] == topic)
    return int(key.rsplit("/", 1)[1]), queues[key]["units[queueOffset,phyOffset,size,tagsCode]"][0][1]


@pytest.mark.parametrize(
    ("source", "argv"),
    [
        (SCHEDULE_TOPIC, ["delay", "replay"]),
        (SCHEDULE_TOPIC, ["delay", "replay", "--execute"]),
        (HALF, ["txn", "commit", "0"]),
        (HALF, ["txn", "commit", "0", "--execute"]),
        (HALF, ["txn", "resolve", "--policy", "commit", "--execute"]),
    ],
)
def test_a_write_whose_target_is_a_compaction_topic_refuses(
    tmp_path: Path, source: str, argv: list[str]
) -> None:
    root = copy_store("store-compaction", tmp_path / "s")
    queue_id, phy = _first_unit(source)
    _reput(root, source, queue_id, phy)
    with Store.open(root) as st:  # the record is there, and its target is a compaction topic
        assert st.compaction.is_compaction_topic(TOPIC)
    before = snapshot(root)
    proc = mqtool(*argv, "-s", str(root), "--now", str(LATE))
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mqtool: error:")
    assert "compaction topic" in lines[0] and TOPIC in lines[0] and "Traceback" not in proc.stderr
    assert snapshot(root) == before


def test_the_real_broker_never_serves_a_record_mqtool_appended_to_a_compaction_topic(tmp_path: Path) -> None:
    """Why the writes refuse, judged by the real start (damaged.json's `appended-by-mqtool`, from
    tests/oracle/compaction_damaged.py): after mqtool's appender and dispatch put a record on CompactTopicA/0,
    its ConsumeQueue grows by one and the compacted queue a consumer is served does not."""
    import json

    import tests.oracle.compaction_damaged as damaged

    real = json.loads((store_path("store-compaction") / "damaged.json").read_text())["appended-by-mqtool"]
    before = expect("store-compaction")["compactionQueues"]["CompactTopicA/0"]
    assert real["loaded"]
    assert real["consumeQueueMax"]["CompactTopicA/0"] == before["consumeQueueMaxOffset"] + 1
    assert real["minMax"]["CompactTopicA/0"] == [before["minOffset"], before["maxOffset"]]
    root = copy_store("store-compaction", tmp_path / "s")
    damaged.DAMAGES["appended-by-mqtool"][1](root)
    with Store.open(root) as st:  # mqtool reads the copy as the real broker served it
        log = st.compaction.log("CompactTopicA", 0)
        assert [log.min_offset, log.max_offset] == real["minMax"]["CompactTopicA/0"]
        assert st.consume_queue("CompactTopicA", 0).max_offset == real["consumeQueueMax"]["CompactTopicA/0"]
