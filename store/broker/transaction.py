"""The broker's transaction services as they touch the store: TransactionalMessageBridge and
TransactionalMessageServiceImpl's reading side (half records of RMQ_SYS_TRANS_HALF_TOPIC, op messages of
RMQ_SYS_TRANS_OP_HALF_TOPIC and their bodies: 4.9.x one offset per op message, 5.1+ comma batches), and
what EndTransactionProcessor writes (the commit copy of a half, and the op message that marks it done).
`mqtool.transactions` pairs, classifies, plans and executes with them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from formats.errors import FormatError, MqtoolError
from formats.java.props import java_parse_long
from formats.message.commitlog import Message, build_message, java_length, java_parse_int
from formats.message.properties import (
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_REAL_QUEUE_ID,
    PROPERTY_REAL_TOPIC,
    TIMER_PROPERTIES,
    encode_properties,
)
from formats.names import TRANS_OP_HALF_TOPIC
from formats.structs import TRANSACTION_COMMIT_TYPE, TRANSACTION_TYPE_MASK
from store.broker.messagerebuild import (
    MAX_TOPIC_LENGTH_V1,
    java_hashmap_order,
    read_message_or_none,
    rebuild_properties,
)
from store.storedir import Store

CHECK_MAX_TIME_TOPIC = "TRANS_CHECK_MAX_TIME_TOPIC"
REMOVE_TAG = "d"
OFFSET_SEPARATOR = ","
PROPERTY_PRODUCER_GROUP = "PGROUP"
PROPERTY_TRANSACTION_PREPARED = "TRAN_MSG"
PROPERTY_TRANSACTION_ID = "__transactionId__"
PROPERTY_CHECK_TIMES = "TRANSACTION_CHECK_TIMES"
PROPERTY_CHECK_IMMUNITY = "CHECK_IMMUNITY_TIME_IN_SECONDS"
PROPERTY_PREPARED_QUEUE_OFFSET = "TRAN_PREPARED_QUEUE_OFFSET"
TRANSACTION_TIMEOUT_MS = 6000  # BrokerConfig.transactionTimeOut
TRANSACTION_OP_MSG_MAX_SIZE = 4096  # BrokerConfig.transactionOpMsgMaxSize (5.1+)


class TransactionError(MqtoolError):
    """A transaction request that cannot be carried out (unknown half offset, conflicting end, ...)."""


@dataclass
class HalfRecord:
    """One record of the half queue (an original half or a copy the check service re-appended)."""

    queue_id: int
    queue_offset: int
    message: Message

    @property
    def check_times(self) -> int | None:
        value = self.message.properties.get(PROPERTY_CHECK_TIMES)
        return None if value is None else java_parse_int(value)

    @property
    def prepared_queue_offset(self) -> int | None:
        value = self.message.properties.get(PROPERTY_PREPARED_QUEUE_OFFSET)
        return None if value is None else java_parse_long(value)

    @property
    def is_copy(self) -> bool:
        """Re-appended by the check service (it always sets TRANSACTION_CHECK_TIMES first)."""
        props = self.message.properties
        return PROPERTY_CHECK_TIMES in props or PROPERTY_PREPARED_QUEUE_OFFSET in props

    @property
    def is_immunity_copy(self) -> bool:
        return PROPERTY_PREPARED_QUEUE_OFFSET in self.message.properties


@dataclass
class OpRecord:
    queue_offset: int
    phy_offset: int
    store_timestamp: int
    offsets: list[int]


@dataclass
class OpScan:
    """The op queue of one half queue: which half offsets each op names."""

    by_half_offset: dict[int, OpRecord] = field(default_factory=dict)
    ops: int = 0
    notes: list[str] = field(default_factory=list)


def parse_op_body(body: bytes) -> tuple[list[int], list[str]]:
    """Half queue offsets of an op body, both forms (`1234` and `1,2,3,`): split on `,`, empty parts
    ignored; parts that are not longs are reported (a 4.9.x broker reads `1,2,` as one bad number)."""
    text = body.decode("utf-8", "replace")
    offsets: list[int] = []
    bad: list[str] = []
    for part in text.split(OFFSET_SEPARATOR):
        if not part:
            continue
        value = java_parse_long(part)
        if value is None:
            bad.append(part)
        else:
            offsets.append(value)
    return offsets, bad


def scan_ops(store: Store, queue_id: int) -> OpScan:
    scan = OpScan()
    if queue_id not in store.consume_queues.queue_ids(TRANS_OP_HALF_TOPIC):
        return scan
    cq = store.consume_queue(TRANS_OP_HALF_TOPIC, queue_id)
    for q, phy, size, _tags in cq.units().tolist():
        msg = read_message_or_none(store, phy, size)
        if msg is None:
            scan.notes.append(f"op queue offset {q}: no message at phy {phy}")
            continue
        if msg.tags != REMOVE_TAG:
            continue
        scan.ops += 1
        offsets, bad = parse_op_body(msg.body)
        if bad:
            scan.notes.append(f"op queue offset {q}: body parts that are not offsets: {bad[:3]}")
        record = OpRecord(q, phy, msg.store_timestamp, offsets)
        for h in offsets:
            scan.by_half_offset.setdefault(h, record)
    return scan


def end_message_transaction(half: Message, major: int, *, store_timestamp: int = 0) -> Message:
    """`EndTransactionProcessor.endMessageTransaction` + commit: the record stored in the real queue.

    TOPIC/QUEUEID from REAL_TOPIC/REAL_QID; BODY, FLAG, born time and host, STOREHOST, RECONSUMETIMES
    copied; SYSFLAG = the half's with transaction type COMMIT; PREPARED TRANSACTION OFFSET = the half's
    commitlog offset; PROPERTIES = the half's whole map re-serialised before REAL_TOPIC, REAL_QID and
    TRAN_MSG leave the in-memory map. QUEUEOFFSET, PHYSICALOFFSET and STORETIMESTAMP are the append's.
    """
    props = half.properties
    topic = props.get(PROPERTY_REAL_TOPIC)
    qid_text = props.get(PROPERTY_REAL_QUEUE_ID)
    queue_id = None if qid_text is None else java_parse_int(qid_text)
    where = f"half message at phy {half.physical_offset}"
    if not topic:
        raise TransactionError(f"{where} has no REAL_TOPIC: the broker cannot commit it")
    if queue_id is None:
        raise TransactionError(f"{where} has REAL_QID {qid_text!r}: Integer.parseInt fails in the broker")
    if props.get(PROPERTY_PRODUCER_GROUP) is None:
        raise TransactionError(f"{where} has no PGROUP: checkPrepareMessage fails in the broker")
    delay = props.get(PROPERTY_DELAY_TIME_LEVEL)
    if (delay is not None and (java_parse_int(delay) or 0) > 0) or any(k in props for k in TIMER_PROPERTIES):
        raise TransactionError(
            f"{where} carries DELAY/TIMER_* properties: the broker's put path would schedule the commit "
            "copy instead of storing it; mqtool does not commit such halves offline"
        )
    if major < 5 and java_length(topic) > MAX_TOPIC_LENGTH_V1:
        raise TransactionError(
            f"{where}: a 4.9.x broker refuses its {java_length(topic)}-character real topic"
        )
    try:
        properties = rebuild_properties(half.properties_raw, major)
    except FormatError as exc:
        raise TransactionError(f"{where}: {exc.message}") from None
    return build_message(
        topic=topic,
        body=half.body,
        properties=properties,
        queue_id=queue_id,
        flag=half.flag,
        sys_flag=(half.sys_flag & ~TRANSACTION_TYPE_MASK) | TRANSACTION_COMMIT_TYPE,
        born_timestamp=half.born_timestamp,
        born_host=(half.born_host, half.born_port),
        store_timestamp=store_timestamp,
        store_host=(half.store_host, half.store_port),
        reconsume_times=half.reconsume_times,
        prepared_transaction_offset=half.physical_offset,
    )


def op_properties(major: int) -> bytes:
    """`new Message(opTopic, "d", body)`: TAGS=d and WAIT=true in the client HashMap's order (WAIT
    first), serialised before the broker adds UNIQ_KEY (so op messages are not indexed)."""
    props = {"TAGS": REMOVE_TAG, "WAIT": "true"}
    order = java_hashmap_order(props, 16)
    return encode_properties([(k, props[k]) for k in order], trailing_separator=major >= 5)


def op_bodies(offsets: list[int], major: int, max_size: int = TRANSACTION_OP_MSG_MAX_SIZE) -> list[bytes]:
    """Op message bodies for `offsets`: 4.9.x one `h` per message; 5.x `h,` entries batched as
    `getOpMessage` does (entries appended while the body is shorter than transactionOpMsgMaxSize)."""
    if major < 5:
        return [str(h).encode("ascii") for h in offsets]
    bodies: list[bytes] = []
    current = ""
    for h in offsets:
        if current and len(current) >= max_size:
            bodies.append(current.encode("ascii"))
            current = ""
        current += f"{h}{OFFSET_SEPARATOR}"
    if current:
        bodies.append(current.encode("ascii"))
    return bodies


def op_message(
    queue_id: int, body: bytes, major: int, broker_host: tuple[bytes, int], now: int, queue_offset: int = 0
) -> Message:
    """`TransactionalMessageBridge.makeOpMessageInner`: topic RMQ_SYS_TRANS_OP_HALF_TOPIC, the half's
    queue id, SYSFLAG 0, born/store host = the broker, born time = now, tag `d`."""
    return build_message(
        topic=TRANS_OP_HALF_TOPIC,
        body=body,
        properties=op_properties(major),
        queue_id=queue_id,
        queue_offset=queue_offset,
        born_timestamp=now,
        born_host=broker_host,
        store_timestamp=now,
        store_host=broker_host,
    )
