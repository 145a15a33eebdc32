"""Message trace bodies: the text a client's AsyncTraceDispatcher writes into the trace topic
(`RMQ_SYS_TRACE_TOPIC`, a custom trace topic, or `rmq_sys_TRACE_DATA_<region>` on the cloud channel), read
exactly as `TraceDataEncoder.decoderFromTraceDataString` reads it and written byte for byte as
`TraceDataEncoder.encoderFromContextBean` writes it (client/src/main/java/org/apache/rocketmq/client/trace/,
rocketmq-all-5.3.3 and 4.9.8).

A body is UTF-8 text (5.3.3 `AsyncTraceDispatcher.java:363` encodes with UTF-8; 4.9.8 `:397` with the JVM's
default charset; both readers decode UTF-8, `TraceView.java:43`): records separated by U+0002
(`TraceConstants.FIELD_SPLITOR`), fields by U+0001 (`CONTENT_SPLITOR`), both split with Java's
`String.split`, which drops trailing empty strings. The first field names the type
(`TraceDataEncoder.java:47-148`, 5.3.3):

    Pub            type, timeStamp, regionId, groupName, topic, msgId, tags, keys, storeHost, bodyLength,
                   costTime, msgType (MessageType ordinal), [offsetMsgId], success, [clientHost]
                   (12 fields: no success; 13: success at 12; 14: offsetMsgId, success; 15+: + clientHost.
                   The encoder writes 14: it never writes clientHost)
    SubBefore      type, timeStamp, regionId, groupName, requestId, msgId, retryTimes, keys
    SubAfter       type, requestId, msgId, costTime, success, keys, [contextCode, [timeStamp, groupName]]
                   (the cloud channel's encoder leaves out timeStamp and groupName)
    EndTransaction type, timeStamp, regionId, groupName, topic, msgId, tags, keys, storeHost, msgType,
                   transactionId, transactionState (LocalTransactionState name), fromTransactionCheck
    Recall         type, timeStamp, regionId, groupName, topic, msgId, success (5.3.2+)

A record of any other type (an empty one too) is skipped; a record the Java decoder throws on (too few
fields, a number `Integer.parseInt`/`Long.parseLong` refuses, a MessageType ordinal or transaction state
outside the enum) makes the whole body unreadable there: `decode_body` raises FormatError naming the
record and its byte offset. Booleans are `Boolean.parseBoolean` ("true" in any case, else false). A field
the record's layout does not carry is None here (Java leaves the bean's default: success true, costTime 0,
contextCode 0, timeStamp the decoding time, requestId a new unique id, storeHost the decoding host).

4.9.8 differs: no Recall type (its records are skipped), MessageType has no `Order_Msg` (ordinal 4 throws),
and its SubAfter encoder on the cloud channel ends the record without U+0002 (the next record runs on).
A SubBefore/SubAfter context holds one bean per consumed message and is written as one record per bean;
decoding gives one context per record. The trace message's KEYS are every bean's msgId and keys
(`TraceTransferBean.transKey`, `trace_message_keys`), so the index finds trace records by the traced message's
id.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass, field, replace
from typing import Any

from formats.errors import FormatError
from formats.java.hash import java_hashmap_order

TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC"  # TopicValidator.RMQ_SYS_TRACE_TOPIC, the default trace topic
CLOUD_TRACE_TOPIC_PREFIX = "rmq_sys_TRACE_DATA_"  # TraceConstants.TRACE_TOPIC_PREFIX (+ regionId)
CONTENT_SPLITOR = "\x01"  # TraceConstants.CONTENT_SPLITOR: between fields
FIELD_SPLITOR = "\x02"  # TraceConstants.FIELD_SPLITOR: after each record
KEY_SEPARATOR = " "  # MessageConst.KEY_SEPARATOR

PUB, RECALL, SUB_BEFORE, SUB_AFTER, END_TRANSACTION = (
    "Pub",
    "Recall",
    "SubBefore",
    "SubAfter",
    "EndTransaction",
)
TRACE_TYPES = (PUB, RECALL, SUB_BEFORE, SUB_AFTER, END_TRANSACTION)  # TraceType, 5.3.3 order
MESSAGE_TYPES = ("Normal_Msg", "Trans_Msg_Half", "Trans_msg_Commit", "Delay_Msg", "Order_Msg")  # 5.3.3
MESSAGE_TYPES_49 = MESSAGE_TYPES[:4]  # 4.9.8's MessageType has no Order_Msg
TRANSACTION_STATES = ("COMMIT_MESSAGE", "ROLLBACK_MESSAGE", "UNKNOW")  # LocalTransactionState
VERSIONS = ("5.3.3", "4.9.8")
# ConsumeReturnType's names by ordinal: SubAfter's contextCode (ConsumeMessageTraceHookImpl.java:110)
CONSUME_RETURN_TYPES = ("SUCCESS", "TIME_OUT", "EXCEPTION", "RETURNNULL", "FAILED")

# the fewest fields each type's decoder reads without an ArrayIndexOutOfBoundsException
_MIN_FIELDS = {PUB: 12, SUB_BEFORE: 8, SUB_AFTER: 6, END_TRANSACTION: 13, RECALL: 7}


class TraceBodyError(FormatError):
    """A trace body the real decoder throws on."""


@dataclass(frozen=True)
class TraceBean:
    """`TraceBean`: one traced message. None = not carried by this record's layout."""

    topic: str | None = None
    msg_id: str | None = None
    offset_msg_id: str | None = None
    tags: str | None = None
    keys: str | None = None
    store_host: str | None = None
    client_host: str | None = None
    retry_times: int | None = None
    body_length: int | None = None
    msg_type: str | None = None  # a MessageType name
    transaction_id: str | None = None
    transaction_state: str | None = None  # a LocalTransactionState name
    from_transaction_check: bool | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "msgId": self.msg_id,
            "offsetMsgId": self.offset_msg_id,
            "tags": self.tags,
            "keys": self.keys,
            "storeHost": self.store_host,
            "clientHost": self.client_host,
            "retryTimes": self.retry_times,
            "bodyLength": self.body_length,
            "msgType": self.msg_type,
            "transactionId": self.transaction_id,
            "transactionState": self.transaction_state,
            "fromTransactionCheck": self.from_transaction_check,
        }


@dataclass(frozen=True)
class TraceContext:
    """`TraceContext`: one trace event (a send, a consume before/after, an end of transaction, a recall)
    with its beans. A decoded context has exactly one bean; None = not carried by the record."""

    trace_type: str
    time_stamp: int | None = None
    region_id: str | None = None
    group_name: str | None = None
    cost_time: int | None = None
    success: bool | None = None
    request_id: str | None = None
    context_code: int | None = None
    trace_beans: tuple[TraceBean, ...] = field(default_factory=tuple)

    @property
    def bean(self) -> TraceBean:
        """The first bean (the only one of a decoded context)."""
        return self.trace_beans[0] if self.trace_beans else TraceBean()

    @property
    def is_success(self) -> bool:
        """`isSuccess()`: the record's value, else the context's default (true)."""
        return True if self.success is None else self.success

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "traceType": self.trace_type,
            "timeStamp": self.time_stamp,
            "regionId": self.region_id,
            "groupName": self.group_name,
            "costTime": self.cost_time,
            "success": self.success,
            "requestId": self.request_id,
            "contextCode": self.context_code,
        }
        if len(self.trace_beans) == 1:
            doc.update(self.bean.to_json())
        else:
            doc["traceBeans"] = [b.to_json() for b in self.trace_beans]
        return doc


@dataclass(frozen=True)
class TraceRecord:
    """A decoded context and where its record starts in the body (byte offset, record index)."""

    context: TraceContext
    offset: int
    index: int


# --- Java's parsing rules --------------------------------------------------------------------------------


def java_split(text: str, sep: str) -> list[str]:
    """`String.split(sep)` for a one-character separator: trailing empty strings dropped (an all-empty
    result is an empty array), leading ones kept, no match gives the whole string."""
    parts = text.split(sep)
    if len(parts) == 1:
        return parts
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def _java_integer(text: str, bits: int) -> int | None:
    """`Integer.parseInt` / `Long.parseLong` (radix 10): an optional sign, then one or more chars for which
    `Character.digit(c, 10)` answers (Unicode decimal digits of the BMP: the parser reads UTF-16 chars);
    None where Java throws NumberFormatException."""
    digits = text[1:] if text[:1] in ("+", "-") else text
    if not digits or not all(c.isdecimal() and ord(c) < 0x10000 for c in digits):
        return None
    value = int(text)
    return value if -(2 ** (bits - 1)) <= value < 2 ** (bits - 1) else None


def java_parse_boolean(text: str) -> bool:
    """`Boolean.parseBoolean`: "true" in any case of ASCII letters, anything else false."""
    return len(text) == 4 and text.isascii() and text.lower() == "true"


# --- decoding ---------------------------------------------------------------------------------------------


class _Fields:
    """One record's fields with the numeric conversions the decoder applies, raising as Java throws."""

    def __init__(self, fields: list[str], where: str) -> None:
        self.fields = fields
        self.where = where

    def text(self, i: int) -> str:
        return self.fields[i]

    def number(self, i: int, name: str, bits: int) -> int:
        value = _java_integer(self.fields[i], bits)
        if value is None:
            kind = "an int" if bits == 32 else "a long"
            raise TraceBodyError(f"{self.where}: {name} {self.fields[i]!r} is not {kind}")
        return value

    def enum(self, i: int, name: str, values: tuple[str, ...]) -> str:
        ordinal = self.number(i, name, 32)
        if not 0 <= ordinal < len(values):
            raise TraceBodyError(
                f"{self.where}: {name} {ordinal} is not a MessageType ordinal (0..{len(values) - 1})"
            )
        return values[ordinal]


def _pub(f: _Fields, message_types: tuple[str, ...]) -> TraceContext:
    n = len(f.fields)
    offset_msg_id = client_host = None
    success = None
    if n == 13:
        success = java_parse_boolean(f.text(12))
    elif n >= 14:
        offset_msg_id, success = f.text(12), java_parse_boolean(f.text(13))
        if n >= 15:
            client_host = f.text(14)
    time_stamp = f.number(1, "timeStamp", 64)
    body_length = f.number(9, "bodyLength", 32)
    cost_time = f.number(10, "costTime", 32)
    bean = TraceBean(
        topic=f.text(4),
        msg_id=f.text(5),
        tags=f.text(6),
        keys=f.text(7),
        store_host=f.text(8),
        body_length=body_length,
        msg_type=f.enum(11, "msgType", message_types),
        offset_msg_id=offset_msg_id,
        client_host=client_host,
    )
    return TraceContext(PUB, time_stamp, f.text(2), f.text(3), cost_time, success, trace_beans=(bean,))


def _sub_before(f: _Fields) -> TraceContext:
    time_stamp = f.number(1, "timeStamp", 64)
    bean = TraceBean(msg_id=f.text(5), retry_times=f.number(6, "retryTimes", 32), keys=f.text(7))
    return TraceContext(
        SUB_BEFORE, time_stamp, f.text(2), f.text(3), request_id=f.text(4), trace_beans=(bean,)
    )


def _sub_after(f: _Fields) -> TraceContext:
    n = len(f.fields)
    bean = TraceBean(msg_id=f.text(2), keys=f.text(5))
    cost_time = f.number(3, "costTime", 32)
    context_code = f.number(6, "contextCode", 32) if n >= 7 else None
    time_stamp = group_name = None
    if n >= 9:
        time_stamp, group_name = f.number(7, "timeStamp", 64), f.text(8)
    return TraceContext(
        SUB_AFTER,
        time_stamp,
        None,
        group_name,
        cost_time,
        java_parse_boolean(f.text(4)),
        f.text(1),
        context_code,
        (bean,),
    )


def _end_transaction(f: _Fields, message_types: tuple[str, ...]) -> TraceContext:
    time_stamp = f.number(1, "timeStamp", 64)
    msg_type = f.enum(9, "msgType", message_types)
    state = f.text(11)
    if state not in TRANSACTION_STATES:
        raise TraceBodyError(f"{f.where}: transactionState {state!r} is not a LocalTransactionState")
    bean = TraceBean(
        topic=f.text(4),
        msg_id=f.text(5),
        tags=f.text(6),
        keys=f.text(7),
        store_host=f.text(8),
        msg_type=msg_type,
        transaction_id=f.text(10),
        transaction_state=state,
        from_transaction_check=java_parse_boolean(f.text(12)),
    )
    return TraceContext(END_TRANSACTION, time_stamp, f.text(2), f.text(3), trace_beans=(bean,))


def _recall(f: _Fields) -> TraceContext:
    time_stamp = f.number(1, "timeStamp", 64)
    bean = TraceBean(topic=f.text(4), msg_id=f.text(5))
    return TraceContext(
        RECALL, time_stamp, f.text(2), f.text(3), success=java_parse_boolean(f.text(6)), trace_beans=(bean,)
    )


def _java_utf8_replace(exc: UnicodeError) -> tuple[str, int]:
    """The JDK's `new String(bytes, UTF_8)` replaces an ill-formed sequence with one U+FFFD per maximal
    subpart, as Python does, except an encoded surrogate (ED A0..BF [80..BF]): Java reads it as a
    well-formed 3-byte sequence, finds a surrogate and writes one U+FFFD for all of it (or for the 2 bytes
    of a truncated one); Python, one per byte (checked on OpenJDK 17, tests/fuzz/trace_bodies.py)."""
    assert isinstance(exc, UnicodeDecodeError)
    data, start = exc.object, exc.start
    if data[start] == 0xED and start + 1 < len(data) and 0xA0 <= data[start + 1] <= 0xBF:
        third = start + 2 < len(data) and 0x80 <= data[start + 2] <= 0xBF
        return "\ufffd", start + (3 if third else 2)
    return "\ufffd", exc.end


codecs.register_error("mqtool-java-utf8", _java_utf8_replace)


def body_text(body: bytes) -> str:
    """The body as the reader turns it into a String (`new String(body, UTF_8)`: ill-formed bytes become
    U+FFFD as the JDK replaces them)."""
    return body.decode("utf-8", errors="mqtool-java-utf8")


def _record_starts(raw: bytes) -> list[int]:
    # U+0002 is one byte, and a malformed sequence never swallows it: record k starts after the k-th 0x02
    starts = [0]
    at = raw.find(2)
    while at >= 0:
        starts.append(at + 1)
        at = raw.find(2, at + 1)
    return starts


def decode_records(body: bytes | str, *, version: str = "5.3.3") -> list[TraceRecord]:
    """Every record of a trace body the decoder of `version` returns, with its byte offset; raises
    TraceBodyError (record index and byte offset) where `decoderFromTraceDataString` throws."""
    if version not in VERSIONS:
        raise ValueError(f"unknown trace version {version!r}")
    text = body if isinstance(body, str) else body_text(body)
    out: list[TraceRecord] = []
    if not text:
        return out
    message_types = MESSAGE_TYPES if version == "5.3.3" else MESSAGE_TYPES_49
    types = TRACE_TYPES if version == "5.3.3" else tuple(t for t in TRACE_TYPES if t != RECALL)
    starts = _record_starts(body if isinstance(body, bytes) else text.encode("utf-8", errors="surrogatepass"))
    for index, record in enumerate(java_split(text, FIELD_SPLITOR)):
        start = starts[index]
        fields = java_split(record, CONTENT_SPLITOR)
        if not fields:  # only U+0001s: split gives an empty array, and line[0] throws
            raise TraceBodyError(f"trace record {index} at byte {start}: nothing but field separators")
        kind = fields[0]
        if kind not in types:
            continue  # the decoder's if-chain matches no type: the record is skipped
        where = f"trace record {index} ({kind}) at byte {start}"
        if len(fields) < _MIN_FIELDS[kind]:
            raise TraceBodyError(f"{where}: {len(fields)} fields, the decoder reads {_MIN_FIELDS[kind]}")
        f = _Fields(fields, where)
        if kind == PUB:
            ctx = _pub(f, message_types)
        elif kind == SUB_BEFORE:
            ctx = _sub_before(f)
        elif kind == SUB_AFTER:
            ctx = _sub_after(f)
        elif kind == END_TRANSACTION:
            ctx = _end_transaction(f, message_types)
        else:
            ctx = _recall(f)
        out.append(TraceRecord(ctx, start, index))
    return out


def decode_body(body: bytes | str, *, version: str = "5.3.3") -> list[TraceContext]:
    """`TraceDataEncoder.decoderFromTraceDataString(new String(body, UTF_8))` of `version`."""
    return [r.context for r in decode_records(body, version=version)]


# --- encoding ---------------------------------------------------------------------------------------------


def _java_text(value: object) -> str:
    """What `StringBuilder.append` writes: null as "null", booleans as true/false."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _required(value: int | None, name: str, ctx: TraceContext) -> int:
    if value is None:
        raise FormatError(f"cannot encode a {ctx.trace_type} trace context without {name}")
    return value


def _ordinal(name: str | None, values: tuple[str, ...], what: str) -> int:
    if name not in values:
        raise FormatError(f"cannot encode {what} {name!r}: not one of {', '.join(values)}")
    return values.index(name)


def encode_context(ctx: TraceContext, *, cloud: bool = False, version: str = "5.3.3") -> str:
    """`encoderFromContextBean(ctx).getTransData()`: the record(s) of one context, each ending in U+0002
    (4.9.8's cloud SubAfter: without it). `cloud` is the AccessChannel CLOUD. A None string field is
    written as Java writes a null reference ("null"); a missing number or enum raises FormatError (Java
    has a primitive or throws a NullPointerException there)."""
    if version not in VERSIONS:
        raise ValueError(f"unknown trace version {version!r}")
    message_types = MESSAGE_TYPES if version == "5.3.3" else MESSAGE_TYPES_49
    kind = ctx.trace_type
    if not ctx.trace_beans and kind in (PUB, END_TRANSACTION, RECALL):
        raise FormatError(f"cannot encode a {kind} trace context without a bean")

    def record(*values: object) -> str:
        return CONTENT_SPLITOR.join(_java_text(v) for v in values) + FIELD_SPLITOR

    success = ctx.is_success
    cost = 0 if ctx.cost_time is None else ctx.cost_time
    if kind == PUB:
        b = ctx.bean
        return record(
            kind,
            _required(ctx.time_stamp, "timeStamp", ctx),
            ctx.region_id,
            ctx.group_name,
            b.topic,
            b.msg_id,
            b.tags,
            b.keys,
            b.store_host,
            _required(b.body_length, "bodyLength", ctx),
            cost,
            _ordinal(b.msg_type, message_types, "msgType"),
            b.offset_msg_id,
            success,
        )
    if kind == SUB_BEFORE:
        ts = ctx.time_stamp
        return "".join(
            record(
                kind,
                _required(ts, "timeStamp", ctx),
                ctx.region_id,
                ctx.group_name,
                ctx.request_id,
                b.msg_id,
                0 if b.retry_times is None else b.retry_times,
                b.keys,
            )
            for b in ctx.trace_beans
        )
    if kind == SUB_AFTER:
        code = 0 if ctx.context_code is None else ctx.context_code
        out = []
        for b in ctx.trace_beans:
            head = [kind, ctx.request_id, b.msg_id, cost, success, b.keys, code]
            text = CONTENT_SPLITOR.join(_java_text(v) for v in head) + CONTENT_SPLITOR
            if not cloud:
                text += _java_text(_required(ctx.time_stamp, "timeStamp", ctx)) + CONTENT_SPLITOR
                text += _java_text(ctx.group_name)
            if version == "5.3.3" or not cloud:
                text += FIELD_SPLITOR
            out.append(text)
        return "".join(out)
    if kind == END_TRANSACTION:
        b = ctx.bean
        if b.transaction_state not in TRANSACTION_STATES:
            raise FormatError(f"cannot encode transactionState {b.transaction_state!r}")
        return record(
            kind,
            _required(ctx.time_stamp, "timeStamp", ctx),
            ctx.region_id,
            ctx.group_name,
            b.topic,
            b.msg_id,
            b.tags,
            b.keys,
            b.store_host,
            _ordinal(b.msg_type, message_types, "msgType"),
            b.transaction_id,
            b.transaction_state,
            bool(b.from_transaction_check),
        )
    if kind == RECALL:
        if version == "4.9.8":
            raise FormatError("4.9.8 has no Recall trace type")
        b = ctx.bean
        return record(
            kind,
            _required(ctx.time_stamp, "timeStamp", ctx),
            ctx.region_id,
            ctx.group_name,
            b.topic,
            b.msg_id,
            success,
        )
    return ""  # the encoder's switch has no case for another type: an empty record


def encode_body(contexts: list[TraceContext], *, cloud: bool = False, version: str = "5.3.3") -> bytes:
    """One trace message's body as the dispatcher builds it (its contexts' records one after the other),
    in UTF-8 (lone surrogates as '?', as `String.getBytes(UTF_8)` writes them)."""
    text = "".join(encode_context(c, cloud=cloud, version=version) for c in contexts)
    return text.encode("utf-8", errors="replace")


def trace_message_keys(contexts: list[TraceContext]) -> str:
    """The KEYS of the trace message that carries `contexts` (one flush of the dispatcher into a fresh key
    set): each context's `transKey` HashSet (msgId, then its keys), added in that set's iteration order
    to the batch's HashSet, joined with a space (`Message.setKeys(Collection)`), 5.3.3
    `AsyncTraceDispatcher.java:337-339,365` and `TraceDataEncoder.java:247-253`."""
    merged: list[str | None] = []
    for ctx in contexts:
        inserted: list[str | None] = []
        for b in ctx.trace_beans:
            inserted.append(b.msg_id)  # a null msgId is a null element: hash 0, joined as "null"
            if b.keys:
                inserted.extend(java_split(b.keys, KEY_SEPARATOR))
        merged.extend(java_hashmap_order(inserted, exact=False))
    return KEY_SEPARATOR.join(_java_text(k) for k in java_hashmap_order(merged, exact=False))


def normalized(ctx: TraceContext, *, version: str = "5.3.3") -> list[TraceContext]:
    """The contexts `decode_body(encode_context(ctx))` gives back when no field holds a separator, each
    string is non-empty and no field is null: one per bean, fields outside the record's layout dropped."""
    out = []
    for b in ctx.trace_beans or (TraceBean(),):
        if ctx.trace_type == PUB:
            bean = replace(
                b,
                client_host=None,
                retry_times=None,
                transaction_id=None,
                transaction_state=None,
                from_transaction_check=None,
            )
            out.append(
                replace(
                    ctx,
                    success=ctx.is_success,
                    cost_time=ctx.cost_time or 0,
                    request_id=None,
                    context_code=None,
                    trace_beans=(bean,),
                )
            )
        elif ctx.trace_type == SUB_BEFORE:
            bean = TraceBean(msg_id=b.msg_id, retry_times=b.retry_times or 0, keys=b.keys)
            out.append(replace(ctx, cost_time=None, success=None, context_code=None, trace_beans=(bean,)))
        elif ctx.trace_type == SUB_AFTER:
            bean = TraceBean(msg_id=b.msg_id, keys=b.keys)
            out.append(
                replace(
                    ctx,
                    region_id=None,
                    success=ctx.is_success,
                    cost_time=ctx.cost_time or 0,
                    context_code=ctx.context_code or 0,
                    trace_beans=(bean,),
                )
            )
        elif ctx.trace_type == END_TRANSACTION:
            bean = replace(
                b,
                offset_msg_id=None,
                client_host=None,
                retry_times=None,
                body_length=None,
                from_transaction_check=bool(b.from_transaction_check),
            )
            out.append(
                replace(
                    ctx, cost_time=None, success=None, request_id=None, context_code=None, trace_beans=(bean,)
                )
            )
        elif ctx.trace_type == RECALL and version == "5.3.3":
            bean = TraceBean(topic=b.topic, msg_id=b.msg_id)
            out.append(
                replace(
                    ctx,
                    cost_time=None,
                    success=ctx.is_success,
                    request_id=None,
                    context_code=None,
                    trace_beans=(bean,),
                )
            )
    return out
