"""The simulated broker of `mqtool sample create`: every record appended through `CommitLogAppender` (and
dispatched like the broker does), the put hook's delay transformation and ScheduleMessageService's delivery,
consumer send-back into retry and DLQ topics, half messages and EndTransactionProcessor's commit copies and
op messages; `run` drives the whole traffic on the simulated clock."""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from formats.indexfile import IndexGeometry
from formats.message.commitlog import DEFAULT_DELAY_LEVELS_MS
from formats.names import SCHEDULE_TOPIC
from mqtool.sample.options import (
    DLQ_A,
    HALF_TOPIC,
    OP_TOPIC,
    PRODUCER_GROUP,
    RETRY_A,
    STORE_HOST,
    SampleOptions,
)
from mqtool.sample.producers import _ProducerTraffic, _Stored
from store.appender import CommitLogAppender, NewMessage

DELAY_LEVELS_USED = (1, 1, 2, 2, 3, 4, 5, 16, 18)
MAX_RECONSUME = 16
DELAY_MS = DEFAULT_DELAY_LEVELS_MS  # the broker's default messageDelayLevel


class _SampleWriter(_ProducerTraffic):
    """The broker the producers send to: appends their messages and the records it writes itself."""

    def __init__(self, opts: SampleOptions, root: Path, progress: Callable[[int], None] | None) -> None:
        super().__init__(opts)
        self.progress = progress
        self.appender = CommitLogAppender(
            root,
            file_size=opts.file_size,
            store_host=STORE_HOST,
            now=lambda: self.clock,
            version=opts.version,
            cq_file_size=opts.cq_file_size,
            index_geometry=IndexGeometry(opts.hash_slot_num, opts.index_num),
            zone=opts.zone,
            copy_on_write_index=False,
        )
        self.appender.keep_results = False
        self.records_by_topic: dict[str, int] = {}
        self.schedule: list[tuple[int, int, int, _Stored]] = []  # (deliver time, seq, level, record)
        self.schedule_seq = 0
        self.delay_next: dict[int, int] = {}  # level -> next undelivered queue offset
        self.delay_used: set[int] = set()
        self.delivered_levels: set[int] = set()
        self.recent: deque[_Stored] = deque(maxlen=256)
        self.transactions: list[tuple[int, int, str, _Stored]] = []  # (resolve time, seq, decision, half)
        self.tx_seq = 0
        self.halves: list[tuple[int, str]] = []  # (half queue offset, final state)
        self.op_batch: list[int] = []
        self.op_batch_since = 0
        self.ops = 0
        self.first_store_time = 0

    def put(
        self,
        rec: _Stored,
        topic: str | None = None,
        queue_id: int | None = None,
        keep: bool = False,
        **kw: Any,
    ) -> _Stored | None:
        """Append `rec` (to `topic`/`queue_id` if given); with `keep`, return what later records copy."""
        topic = topic or rec.topic
        queue_id = rec.queue_id if queue_id is None else queue_id
        if rec.props_raw is None:
            raw, raw_map = self.encode(rec.props), rec.props
        else:
            raw, raw_map = rec.props_raw, rec.raw_map
        result = self.appender.append(
            NewMessage(
                topic,
                rec.body,
                raw,
                queue_id=queue_id,
                sys_flag=rec.sys_flag,
                born_timestamp=rec.born_timestamp,
                born_host=rec.born_host,
                reconsume_times=rec.reconsume_times,
                properties_map=raw_map,
                **kw,
            )
        )
        if not self.first_store_time:
            self.first_store_time = result.store_timestamp
        counts = self.records_by_topic
        counts[topic] = counts.get(topic, 0) + 1
        if not keep:
            return None
        return _Stored(
            topic,
            queue_id,
            rec.body,
            rec.props,
            raw,
            rec.sys_flag,
            rec.born_timestamp,
            rec.born_host,
            rec.reconsume_times,
            result.msg_id,
            result.physical_offset,
            result.queue_offset,
            raw_map,
        )

    # --- the broker's own records ----------------------------------------------------------------

    def schedule_put(self, rec: _Stored, level: int, real_topic: str, real_qid: int) -> None:
        """The put hook's delay transformation: park the message in SCHEDULE_TOPIC_XXXX."""
        level = min(level, len(DELAY_MS))
        props = dict(rec.props)
        props["DELAY"] = str(level)
        props.setdefault("WAIT", "true")
        props["REAL_TOPIC"] = real_topic
        props["REAL_QID"] = str(real_qid)
        rec = _Stored(SCHEDULE_TOPIC, level - 1, rec.body, props, None, rec.sys_flag, rec.born_timestamp,
                      rec.born_host, rec.reconsume_times)  # fmt: skip
        stored = self.put(rec, keep=True)
        assert stored is not None
        self.delay_used.add(level)
        self.delay_next.setdefault(level, stored.queue_offset)
        self.schedule_seq += 1
        heapq.heappush(self.schedule, (self.clock + DELAY_MS[level - 1], self.schedule_seq, level, stored))

    def deliver_due(self) -> None:
        """ScheduleMessageService: deliver every parked message whose time has come (`messageTimeUp`)."""
        while self.schedule and self.schedule[0][0] <= self.clock:
            _, _, level, rec = heapq.heappop(self.schedule)
            real_topic = rec.props["REAL_TOPIC"]
            real_qid = int(rec.props["REAL_QID"])
            copy = self.put(rec, real_topic, real_qid, keep=real_topic == RETRY_A)
            self.delay_next[level] = rec.queue_offset + 1
            self.delivered_levels.add(level)
            if copy is not None:
                self.recent.append(copy)
            self.tick()

    def send_back(self, source: _Stored, dlq: bool) -> None:
        """`consumerSendMsgBack` of groupA: a retry through the schedule topic, or a dead letter."""
        props = dict(source.props)
        props.setdefault("RETRY_TOPIC", source.topic)
        props["WAIT"] = "false"
        props["DELAY"] = "0" if dlq else str(min(3 + source.reconsume_times, len(DELAY_MS)))
        props.setdefault("ORIGIN_MESSAGE_ID", source.msg_id)
        rec = _Stored(RETRY_A, 0, source.body, props, None, source.sys_flag, source.born_timestamp,
                      source.born_host, source.reconsume_times + 1)  # fmt: skip
        if dlq:
            self.put(rec, DLQ_A, 0)
        else:
            self.schedule_put(rec, int(props["DELAY"]), RETRY_A, 0)

    def half_message(self, topic: str, queue_id: int) -> None:
        rec = self.client_message(topic, queue_id, {"TRAN_MSG": "true", "PGROUP": PRODUCER_GROUP})
        if topic == "OrderTopic":
            queue_id = self.order_queue(rec)
        rec.props["TAGS"] = rec.props.get("TAGS", "tx")
        if self.v5:
            rec.props["__transactionId__"] = rec.props["UNIQ_KEY"]
        rec.props["WAIT"] = "true"
        rec.props["REAL_TOPIC"] = topic
        rec.props["REAL_QID"] = str(queue_id)
        rec.topic, rec.queue_id, rec.props_raw = HALF_TOPIC, 0, None  # the bridge rebuilds the string
        half = self.put(rec, keep=True)
        assert half is not None
        x = self.random()
        decision = "commit" if x < 0.5 else "rollback" if x < 0.75 else "pending"
        self.tx_seq += 1
        resolve_at = self.clock + 50 + self.below(2951)
        self.halves.append((half.queue_offset, decision))
        if decision != "pending":
            heapq.heappush(self.transactions, (resolve_at, self.tx_seq, decision, half))

    def resolve_due(self, final: bool = False) -> None:
        """EndTransactionProcessor: commit copies, and the op messages that mark halves done."""
        while self.transactions and (final or self.transactions[0][0] <= self.clock):
            _, _, decision, half = heapq.heappop(self.transactions)
            if decision == "commit":
                copy = _Stored(half.topic, 0, half.body, half.props, half.props_raw, half.sys_flag | 0x8,
                               half.born_timestamp, half.born_host, 0)  # fmt: skip
                self.put(copy, half.props["REAL_TOPIC"], int(half.props["REAL_QID"]),
                         prepared_transaction_offset=half.physical_offset)  # fmt: skip
                self.tick()
            if self.v5:
                if not self.op_batch:
                    self.op_batch_since = self.clock
                self.op_batch.append(half.queue_offset)
            else:
                self.op_message(str(half.queue_offset))
        if (
            self.v5
            and self.op_batch
            and (final or len(self.op_batch) >= 8 or self.clock - self.op_batch_since >= 3000)
        ):
            self.op_message("".join(f"{h}," for h in self.op_batch))
            self.op_batch = []

    def op_message(self, body: str) -> None:
        raw = b"WAIT\x01true\x02TAGS\x01d\x02" if self.v5 else b"WAIT\x01true\x02TAGS\x01d"
        rec = _Stored(
            OP_TOPIC,
            0,
            body.encode("ascii"),
            {"WAIT": "true", "TAGS": "d"},
            raw,
            0,
            self.clock,
            STORE_HOST,
            0,
        )
        self.put(rec)
        self.ops += 1
        self.tick()

    # --- the run ---------------------------------------------------------------------------------

    def run(self) -> None:
        r, below = self.random, self.below
        done_since_report = 0
        for _ in range(self.opts.messages):
            if self.schedule and self.schedule[0][0] <= self.clock:
                self.deliver_due()
            if self.transactions and self.transactions[0][0] <= self.clock or self.op_batch:
                self.resolve_due()
            self.tick()
            x = r()
            if x < 0.70:
                stored = self.put(self.client_message("TopicTest", below(4)), keep=x < 0.05)
                if stored is not None:
                    self.recent.append(stored)
            elif x < 0.85:
                msg = self.client_message("OrderTopic", 0)
                msg.queue_id = self.order_queue(msg)
                self.put(msg)
            elif x < 0.89:
                level = DELAY_LEVELS_USED[below(len(DELAY_LEVELS_USED))]
                msg = self.client_message("TopicTest", below(4))
                self.schedule_put(msg, level, "TopicTest", msg.queue_id)
            elif x < 0.92:
                self.half_message("TopicTest" if r() < 0.7 else "OrderTopic", below(2))
            elif x < 0.97 and self.recent:
                source = self.recent[below(len(self.recent))]
                self.send_back(source, dlq=source.reconsume_times >= MAX_RECONSUME)
            elif x < 0.975 and self.recent:
                source = self.recent[below(len(self.recent))]
                exhausted = _Stored(**{**_fields(source), "reconsume_times": MAX_RECONSUME})
                self.send_back(exhausted, dlq=True)
            else:
                self.put(self.client_message("TopicTest", below(4)))
            done_since_report += 1
            if self.progress is not None and done_since_report >= 10_000:
                self.progress(done_since_report)
                done_since_report = 0
        self.deliver_due()
        self.resolve_due(final=True)
        if self.progress is not None and done_since_report:
            self.progress(done_since_report)


def _fields(rec: _Stored) -> dict[str, Any]:
    return {name: getattr(rec, name) for name in _Stored.__slots__}
