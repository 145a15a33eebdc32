"""`mqtool sample create`: a realistic broker store, written through the store's own write path.

Every record goes through `store.appender.CommitLogAppender` and is dispatched by `store.dispatch`
exactly as a broker would (ConsumeQueues, index, checkpoint); config files are written with
`formats.configs` models through `store.config` in fastjson's layout. What the store holds, for a
simulated broker `broker-a` (cluster DefaultCluster, 192.168.0.10:10911) and three producers (`producers`
changes how many connections send, 0 = a new connection per message):

* ordinary traffic on `TopicTest` (4 queues) and `OrderTopic` (2 queues, ordered: the queue follows
  the order key), with 0-2 KEYS, TAGS TagA..TagE (or none), user properties, 200-1000 byte bodies,
  about 4% zlib-compressed (SYSFLAG 0x301 on 5.x, 0x1 on 4.x), UNIQ_KEYs as `MessageClientIDSetter`
  makes them (ip + pid + class-loader hash + ms since the month start (UTC) + counter), and property
  order as the broker's `HashMap` iterates (capacity 128 on 5.x, 16 on 4.x; 4.x without the trailing
  \\x02 and without WAIT on plain messages);
* delay messages in `SCHEDULE_TOPIC_XXXX` (queue = level - 1, REAL_TOPIC/REAL_QID/DELAY, tags code =
  delivery time), delivered when the simulated clock reaches their time like `ScheduleMessageService`
  does (the copy keeps the stored properties), with the progress in delayOffset.json;
* transactions: half messages in `RMQ_SYS_TRANS_HALF_TOPIC` (TRAN_MSG, PGROUP, REAL_*, 5.x
  `__transactionId__`), later committed (copy in the real topic, SYSFLAG 0x8, preparedTransactionOffset
  = the half's offset), rolled back or left pending; op messages in `RMQ_SYS_TRANS_OP_HALF_TOPIC` (tag
  `d`; 5.x batches "h1,h2,...,", 4.x one offset per op);
* consumer send-back of groupA: retries through the schedule topic into `%RETRY%groupA`
  (reconsumeTimes + 1, RETRY_TOPIC, ORIGIN_MESSAGE_ID = offsetMsgId, WAIT=false) and dead letters in
  `%DLQ%groupA` (DELAY=0);
* config: topics.json (with the broker's built-in topics), subscriptionGroup.json (built-in groups,
  groupA, groupB), consumerOffset.json (groupA at half of every queue's max, groupB at the max of
  TopicTest, the retry topic, CID_RMQ_SYS_TRANS progress), delayOffset.json, 5.x messageRequestMode.json;
  `lock` ("lock"), 5.x `abort.bak` (empty), no `abort`.

The output is a function of the options: the clock is simulated from `start_time` and every choice
comes from `random.Random(seed)`. Only the index file names depend on the time zone (they are the
simulated creation time in the broker's zone, local unless given). The store is built beside the
target directory and renamed into place at the end, so DIR either does not exist or is complete.
"""

from __future__ import annotations

import heapq
import os
import random
import shutil
import time
import zlib
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import Any

from formats.configs import (
    ConsumerOffsetTable,
    DataVersion,
    DelayOffsetTable,
    MessageRequestModeTable,
    SubscriptionGroupConfig,
    SubscriptionGroupTable,
    TopicConfig,
    TopicConfigTable,
    java_hash_order,
)
from formats.errors import MqtoolError
from formats.indexfile import IndexGeometry
from formats.names import INIT_SUBSCRIPTION_GROUPS, SCHEDULE_TOPIC
from store.appender import CommitLogAppender, NewMessage
from store.config import ConfigFile
from store.filewrites import TMP_PREFIX, fsync_dir
from store.indexwriter import list_index_files

DEFAULT_MESSAGES = 10_000
DEFAULT_SEED = 20240601
DEFAULT_START_TIME = 1_717_200_000_000  # 2024-06-01T00:00:00Z
DEFAULT_FILE_SIZE = 1024 * 1024
SAMPLE_CQ_FILE_SIZE = 6000  # 300 units: several files per busy queue
DEFAULT_HASH_SLOT_NUM = 4096
DEFAULT_INDEX_NUM = 16_000
DEFAULT_PRODUCERS = 3
CLIENT_MACHINES = 64  # where producers that connect per message run (--producers 0)

BROKER_NAME = "broker-a"
CLUSTER = "DefaultCluster"
STORE_HOST = (bytes([192, 168, 0, 10]), 10911)
HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"
OP_TOPIC = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
TRANS_GROUP = "CID_RMQ_SYS_TRANS"
GROUP_A, GROUP_B = "groupA", "groupB"
RETRY_A, DLQ_A = "%RETRY%groupA", "%DLQ%groupA"
PRODUCER_GROUP = "txProducerGroup"
TAGS = ("TagA", "TagB", "TagC", "TagD", "TagE")
REGIONS = ("cn-hangzhou", "eu-central-1", "us-west-2")
DELAY_LEVELS_USED = (1, 1, 2, 2, 3, 4, 5, 16, 18)
MAX_RECONSUME = 16
DELAY_MS = (1000, 5000, 10000, 30000, 60000, 120000, 180000, 240000, 300000, 360000, 420000, 480000,
            540000, 600000, 1200000, 1800000, 3600000, 7200000)  # fmt: skip

SYSTEM_TOPICS_5 = (
    (SCHEDULE_TOPIC, 18, 6, False),
    ("SELF_TEST_TOPIC", 1, 6, False),
    ("rmq_sys_wheel_timer", 1, 6, False),
    (CLUSTER, 16, 7, False),
    (f"{CLUSTER}_REPLY_TOPIC", 1, 6, False),
    (f"rmq_sys_REVIVE_LOG_{CLUSTER}", 8, 6, False),
    (HALF_TOPIC, 1, 6, False),
    (f"rmq_sys_SYNC_BROKER_MEMBER_{BROKER_NAME}", 1, 1, False),
    (BROKER_NAME, 1, 7, False),
    (OP_TOPIC, 1, 6, False),
    ("TBW102", 8, 7, False),
    ("BenchmarkTest", 1024, 6, False),
    ("OFFSET_MOVED_EVENT", 1, 6, False),
)
SYSTEM_TOPICS_4 = tuple(t for t in SYSTEM_TOPICS_5 if not t[0].startswith("rmq_sys_"))
SYSTEM_GROUPS = INIT_SUBSCRIPTION_GROUPS


class SampleError(MqtoolError):
    """The sample store cannot be created as asked."""


@dataclass
class SampleOptions:
    """How `create_sample` builds a store (defaults: a small store like the golden ones)."""

    directory: Path
    messages: int = DEFAULT_MESSAGES
    seed: int = DEFAULT_SEED
    file_size: int = DEFAULT_FILE_SIZE
    cq_file_size: int = SAMPLE_CQ_FILE_SIZE
    hash_slot_num: int = DEFAULT_HASH_SLOT_NUM
    index_num: int = DEFAULT_INDEX_NUM
    version: int = 5
    start_time: int = DEFAULT_START_TIME
    zone: tzinfo | None = None
    # producer connections the messages come from (born hosts); 0 = a new connection per message, as
    # producers created per request (scripts, serverless functions) connect from a new ephemeral port
    producers: int = DEFAULT_PRODUCERS


@dataclass
class SampleSummary:
    """What was created."""

    directory: Path
    version: int
    produced: int
    records: int
    records_by_topic: dict[str, int]
    commitlog_files: int
    commitlog_bytes: int
    queues: int
    index_files: int
    first_store_time: int
    last_store_time: int
    seconds: float
    broker_conf: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "directory": str(self.directory),
            "brokerVersion": self.version,
            "producedMessages": self.produced,
            "records": self.records,
            "recordsByTopic": self.records_by_topic,
            "commitlogFiles": self.commitlog_files,
            "commitlogBytes": self.commitlog_bytes,
            "consumeQueues": self.queues,
            "indexFiles": self.index_files,
            "firstStoreTime": self.first_store_time,
            "lastStoreTime": self.last_store_time,
            "seconds": round(self.seconds, 3),
            "brokerConf": self.broker_conf,
        }


# --- producers and their message ids ---------------------------------------------------------------


class _Producer:
    """A client JVM: born host and the fixed part of its UNIQ_KEYs (`MessageClientIDSetter`)."""

    def __init__(self, rng: random.Random, index: int) -> None:
        address = bytes([192, 168, (101 + index) >> 8, (101 + index) & 0xFF])  # 192.168.0.101, .102, ...
        self.host = (address, 50000 + rng.randrange(10000))
        pid = rng.randrange(1, 1 << 16)
        classloader = rng.getrandbits(32)
        self.fix = (self.host[0] + pid.to_bytes(2, "big") + classloader.to_bytes(4, "big")).hex().upper()
        self.counter = rng.randrange(1 << 16)
        self.month_start = 0
        self.next_month = 0

    def uniq_key(self, now: int) -> str:
        if now >= self.next_month:
            dt = datetime.fromtimestamp(now / 1000, UTC)
            start = dt.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
            nxt = start.replace(year=start.year + (start.month == 12), month=start.month % 12 + 1)
            self.month_start = int(start.timestamp() * 1000)
            self.next_month = int(nxt.timestamp() * 1000)
        self.counter = (self.counter + 1) & 0xFFFF
        return f"{self.fix}{(now - self.month_start) & 0xFFFFFFFF:08X}{self.counter:04X}"


@dataclass(slots=True)
class _Stored:
    """What later records (delivery, commit, send-back) copy from a stored one."""

    topic: str
    queue_id: int
    body: bytes
    props: dict[str, str]
    props_raw: bytes | None
    sys_flag: int
    born_timestamp: int
    born_host: tuple[bytes, int]
    reconsume_times: int
    msg_id: str = ""
    physical_offset: int = 0
    queue_offset: int = 0
    raw_map: dict[str, str] | None = None  # decode_properties(props_raw) when props_raw is given


# --- the generator ---------------------------------------------------------------------------------


class _SampleWriter:
    def __init__(self, opts: SampleOptions, root: Path, progress: Callable[[int], None] | None) -> None:
        self.opts = opts
        self.v5 = opts.version >= 5
        self.rng = random.Random(opts.seed)
        self.clock = opts.start_time
        self.progress = progress
        rng = self.rng
        self.random = rng.random
        self.pool = bytes(97 + b % 26 for b in rng.randbytes(1 << 20))
        if opts.producers < 0:
            raise SampleError(f"--producers must be 0 or more, not {opts.producers}")
        self.producers = [_Producer(rng, i) for i in range(opts.producers or DEFAULT_PRODUCERS)]
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
        self.capacity = 128 if self.v5 else 16
        self._orders: dict[tuple[str, ...], list[str]] = {}
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
        self.order_seq = 0

    # --- helpers -------------------------------------------------------------------------------

    def ordered(self, props: dict[str, str]) -> list[tuple[str, str]]:
        """The pairs in the broker's HashMap iteration order."""
        keys = tuple(props)
        order = self._orders.get(keys)
        if order is None:
            order = java_hash_order(keys, self.capacity)
            self._orders[keys] = order
        return [(k, props[k]) for k in order]

    def encode(self, props: dict[str, str]) -> bytes:
        pairs = self.ordered(props)
        text = "\x02".join(f"{k}\x01{v}" for k, v in pairs)
        if pairs and self.v5:
            text += "\x02"
        return text.encode("utf-8")

    def tick(self) -> None:
        self.clock += 1 + self.below(9)

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

    def order_queue(self, rec: _Stored) -> int:
        """The queue an ordered producer's selector picks: by the order key (any queue without one)."""
        keys = rec.props.get("KEYS")
        return int(keys.split(" ")[0][6:]) % 2 if keys else self.below(2)

    def below(self, n: int) -> int:
        """A random int in [0, n) (cheaper than Random.randrange, and as deterministic)."""
        return int(self.random() * n)

    def body(self) -> tuple[bytes, int]:
        n = 200 + self.below(801)
        o = self.below(len(self.pool) - n)
        body = self.pool[o : o + n]
        if self.random() < 0.04:
            return zlib.compress(body, 5), (0x301 if self.v5 else 0x1)
        return body, 0

    def client_message(self, topic: str, queue_id: int, extra: dict[str, str] | None = None) -> _Stored:
        """A producer's message as the broker stores it (UNIQ_KEY, CLUSTER, KEYS, TAGS, user props)."""
        r, below = self.random, self.below
        producer = self.producers[below(len(self.producers))]
        born = self.clock - 1 - below(5)
        props: dict[str, str] = {"UNIQ_KEY": producer.uniq_key(born), "CLUSTER": CLUSTER}
        x = r()
        half = max(1, self.opts.messages // 2)
        if x < 0.45:
            props["KEYS"] = f"order-{below(half)}"
        elif x < 0.65:
            props["KEYS"] = f"order-{below(half)} user-{below(1000)}"
        if r() < 0.8:
            props["TAGS"] = TAGS[below(len(TAGS))]
        if r() < 0.25:
            self.order_seq += 1
            props["seq"] = str(self.order_seq)
        if r() < 0.1:
            props["region"] = REGIONS[below(len(REGIONS))]
        if extra:
            props.update(extra)
        props["WAIT"] = "true"
        # 4.9.x SendMessageProcessor drops WAIT from the stored string of a plain message (the map keeps
        # it, so every string the broker rebuilds later has it again)
        raw = raw_map = None
        if not self.v5:
            raw_map = {k: v for k, v in props.items() if k != "WAIT"}
            raw = self.encode(raw_map)
        body, flag = self.body()
        host = producer.host if self.opts.producers else self.new_connection()
        return _Stored(topic, queue_id, body, props, raw, flag, born, host, 0, raw_map=raw_map)

    def new_connection(self) -> tuple[bytes, int]:
        """The born host of a producer that connects for this message alone: one of the client machines
        and a new ephemeral port (Linux's default range 32768-60999): the ports differ, the addresses
        repeat, as when scripts or functions on a few machines create a producer per request."""
        return bytes([10, 20, 0, 1 + self.below(CLIENT_MACHINES)]), 32768 + self.below(28232)

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


# --- config files ----------------------------------------------------------------------------------


def _write_configs(w: _SampleWriter, root: Path) -> None:
    v5, ts = w.v5, w.opts.start_time
    appender = w.appender

    def dv(counter: int) -> DataVersion:
        return DataVersion(counter=counter, timestamp=ts, state_version=0 if v5 else None)

    topics = TopicConfigTable(data_version=dv(5))
    own = [
        ("TopicTest", 4, 6, False),
        ("OrderTopic", 2, 6, True),
        (RETRY_A, 1, 6, False),
        (DLQ_A, 1, 6, False),
    ]
    system = SYSTEM_TOPICS_5 if v5 else (*SYSTEM_TOPICS_4, (HALF_TOPIC, 1, 6, False), (OP_TOPIC, 1, 6, False))
    for name, queues, perm, order in [system[0], *own, *system[1:]]:
        topics.topic_config_table[name] = TopicConfig.new(name, queues, perm=perm, order=order, v5=v5)
    ConfigFile(root, "topics.json").save(topics, pretty=True)

    groups = SubscriptionGroupTable(data_version=dv(3), forbidden_table={} if v5 else None)
    for name in (*SYSTEM_GROUPS, GROUP_B, GROUP_A):
        config = SubscriptionGroupConfig.new(name, v5=v5)
        if name == GROUP_B:
            config.retry_max_times = 5
            if v5:
                config.consume_message_orderly = True
        groups.subscription_group_table[name] = config
    ConfigFile(root, "subscriptionGroup.json").save(groups, pretty=True)

    def max_offset(topic: str, queue_id: int) -> int:
        return appender.next_queue_offset(topic, queue_id)

    offsets: dict[str, dict[int, int]] = {
        f"OrderTopic@{GROUP_A}": {q: max_offset("OrderTopic", q) // 2 for q in range(2)},
        f"TopicTest@{GROUP_B}": {q: max_offset("TopicTest", q) for q in range(4)},
        f"TopicTest@{GROUP_A}": {q: max_offset("TopicTest", q) // 2 for q in range(4)},
        f"{RETRY_A}@{GROUP_A}": {0: max_offset(RETRY_A, 0) // 2},
    }
    first_pending = next((h for h, state in w.halves if state == "pending"), max_offset(HALF_TOPIC, 0))
    if w.halves:
        offsets[f"{HALF_TOPIC}@{TRANS_GROUP}"] = {0: first_pending}
        offsets[f"{OP_TOPIC}@{TRANS_GROUP}"] = {0: max_offset(OP_TOPIC, 0)}
    table = ConsumerOffsetTable(
        offset_table={k: offsets[k] for k in java_hash_order(offsets, 512)},
        data_version=dv(0) if v5 else None,
        with_group_topic_map=v5,
    )
    ConfigFile(root, "consumerOffset.json").save(table, pretty=True)

    levels = sorted(w.delay_used if v5 else w.delivered_levels)
    delay = DelayOffsetTable(
        offset_table={level: w.delay_next.get(level, 0) for level in levels},
        data_version=dv(1) if v5 else None,
    )
    ConfigFile(root, "delayOffset.json").save(delay, pretty=True)

    if v5:
        modes = MessageRequestModeTable()
        modes.set_mode("TopicTest", GROUP_B, "POP", 8)
        modes.set_mode("OrderTopic", GROUP_A, "PULL", 0)
        ConfigFile(root, "messageRequestMode.json").save(modes, pretty=True)


# --- entry point -----------------------------------------------------------------------------------


def create_sample(opts: SampleOptions, progress: Callable[[int], None] | None = None) -> SampleSummary:
    """Build the store in a directory beside `opts.directory`, then rename it into place."""
    target = opts.directory
    if opts.messages < 0:
        raise SampleError("--messages must be >= 0")
    if opts.version not in (4, 5):
        raise SampleError(f"--version must be 4 or 5, not {opts.version}")
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise SampleError("exists and is not an empty directory; choose a new one", str(target))
    parent = target.parent
    parent.mkdir(parents=True, exist_ok=True)
    staging = parent / f"{TMP_PREFIX}{os.getpid()}-{target.name}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    started = time.monotonic()
    try:
        (staging / "lock").write_bytes(b"lock")
        if opts.version >= 5:
            (staging / "abort.bak").write_bytes(b"")
        writer = _SampleWriter(opts, staging, progress)
        writer.run()
        writer.appender.close()
        _write_configs(writer, staging)
        fsync_dir(staging)
        if target.exists():
            target.rmdir()
        os.rename(staging, target)
        fsync_dir(parent)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    commitlog = sorted((target / "commitlog").iterdir())
    queues = sum(1 for t in (target / "consumequeue").iterdir() for _ in t.iterdir())
    return SampleSummary(
        directory=target,
        version=opts.version,
        produced=opts.messages,
        records=writer.appender.appended,
        records_by_topic=dict(sorted(writer.records_by_topic.items())),
        commitlog_files=len(commitlog),
        commitlog_bytes=writer.appender.position,
        queues=queues,
        index_files=len(list_index_files(target / "index")),
        first_store_time=writer.first_store_time,
        last_store_time=writer.appender.last_store_timestamp,
        seconds=time.monotonic() - started,
        broker_conf={
            "storePathRootDir": str(target),
            "mappedFileSizeCommitLog": opts.file_size,
            "mappedFileSizeConsumeQueue": opts.cq_file_size,
            "maxHashSlotNum": opts.hash_slot_num,
            "maxIndexNum": opts.index_num,
        },
    )


__all__ = [
    "DEFAULT_START_TIME",
    "SampleError",
    "SampleOptions",
    "SampleSummary",
    "create_sample",
]
