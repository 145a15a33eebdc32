"""The columnar revive readers against their references: `formats.pop.columns.parse_bodies` against
`PopCheckPoint.parse` / `AckMsg.parse` (the bodies the real 5.3.3 classes wrote, tests/data/pop-bodies.json,
and bodies drawn by hypothesis: as `toJSONString` writes them and mutated so the kernel must hand them to
the reference), and `store.pop.columns.pop_columns` against `store.pop.revive.pop_state` on
tests/data/store-pop and on a copy of it with more revive records, garbage among them."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from formats.pop.bodies import AckMsg, PopCheckPoint
from formats.pop.columns import ACK, BATCH_ACK, CK, _reference, parse_bodies
from mqtool.pop import summarize
from store.appender import CommitLogAppender, NewMessage
from store.pop.columns import PopColumns, pop_columns
from store.pop.revive import pop_state
from store.storedir import Store

DATA = Path(__file__).parent / "data"
VECTORS = json.loads((DATA / "pop-bodies.json").read_text(encoding="utf-8"))["bodies"]
KIND = {"ck": CK, "ack": ACK, "bAck": BATCH_ACK}
REVIVE_TOPIC = "rmq_sys_REVIVE_LOG_DefaultCluster"


def _parsed(bodies: list[bytes], kinds: list[int]):
    return parse_bodies(pa.array(bodies, pa.binary()), np.array(kinds, np.int8))


def test_the_real_bodies_read_as_the_reference_reads_them() -> None:
    bodies = [v["body"].encode("utf-8") for v in VECTORS]
    kinds = [KIND[v["kind"]] for v in VECTORS]
    got = _parsed(bodies, kinds)
    expected = [_reference(b, k) for b, k in zip(bodies, kinds, strict=True)]
    assert [got.parsed(i) for i in range(len(bodies))] == expected
    # the broker's own form in ASCII takes the kernel; the others (escapes, non-ASCII, long names) the
    # reference
    canonical = [
        i
        for i, v in enumerate(VECTORS)
        if v["body"].isascii() and "\\" not in v["body"] and v["body"].startswith(('{"bm"', '{"ao"'))
    ]
    assert len(canonical) > 100 and got.fast[canonical].all()
    assert not got.fast[[i for i, v in enumerate(VECTORS) if "ackOffset" in v["body"]]].any()


_TEXT = st.text(alphabet=st.characters(codec="utf-8"), max_size=8)
_LONG = st.integers(-(2**63), 2**63 - 1)
_SMALL = st.integers(-(10**18), 10**18)
_INT = st.integers(-(2**31), 2**31 - 1)
CHECKPOINTS = st.builds(
    PopCheckPoint,
    start_offset=st.one_of(_SMALL, _LONG),
    pop_time=_SMALL,
    invisible_time=_SMALL,
    bit_map=_INT,
    num=st.integers(-128, 127),
    queue_id=_INT,
    topic=st.one_of(st.none(), _TEXT),
    cid=st.one_of(st.none(), _TEXT),
    revive_offset=_SMALL,
    queue_offset_diff=st.one_of(st.none(), st.lists(_INT, max_size=6)),
    broker_name=st.one_of(st.none(), _TEXT),
    re_put_times=st.one_of(st.none(), _TEXT),
)
ACKS = st.builds(
    AckMsg,
    ack_offset=st.one_of(_SMALL, _LONG),
    start_offset=_SMALL,
    consumer_group=st.one_of(st.none(), _TEXT),
    topic=st.one_of(st.none(), _TEXT),
    queue_id=_INT,
    pop_time=_SMALL,
    broker_name=st.one_of(st.none(), _TEXT),
    ack_offset_list=st.one_of(st.none(), st.lists(st.one_of(_SMALL, _LONG), max_size=5)),
)


def _mutate(body: bytes, how: int, rng: random.Random) -> bytes:
    """Forms a real parser reads but the kernel must refuse, and forms nobody reads."""
    text = body.decode("utf-8")
    if how == 1:  # whitespace after a comma or colon
        return text.replace(",", ", ", 1).replace(":", " : ", 1).encode()
    if how == 2:  # keys out of order
        doc = json.loads(text)
        items = list(doc.items())
        rng.shuffle(items)
        return json.dumps(dict(items), separators=(",", ":")).encode()
    if how == 3:  # an escape in a string
        return text.replace('":"', '":"\\u0041', 1).encode()
    if how == 4:  # a null value, a long name, a wider number, a leading zero
        return rng.choice(
            [text.replace('"t":', '"t":null,"x":', 1), text.replace('"ao":', '"ackOffset":', 1),
             text.replace('"so":', '"so":9', 1), text.replace('"q":', '"q":0', 1),
             text.replace('"n":', '"n":4', 1)]
        ).encode()  # fmt: skip
    if how == 5:  # cut or garbled
        cut = rng.randrange(len(body))
        return body[:cut] + rng.choice([b"", b"}", b"\xff", b",}", b"]"]) + body[cut + 1 :]
    return body


@settings(max_examples=120, deadline=None)
@given(
    items=st.lists(
        st.tuples(st.one_of(CHECKPOINTS, ACKS), st.integers(0, 5), st.randoms(use_true_random=False)),
        min_size=1,
        max_size=12,
    )
)
def test_drawn_bodies_read_as_the_reference_reads_them(items) -> None:
    bodies, kinds = [], []
    for obj, how, rng in items:
        kind = CK if isinstance(obj, PopCheckPoint) else BATCH_ACK if obj.ack_offset_list is not None else ACK
        bodies.append(_mutate(obj.to_body(), how, rng))
        kinds.append(kind)
    got = _parsed(bodies, kinds)
    expected = [_reference(b, k) for b, k in zip(bodies, kinds, strict=True)]
    assert [got.parsed(i) for i in range(len(bodies))] == expected
    for i, (obj, how, _) in enumerate(items):
        plain = all(32 <= c < 127 and c != 92 for c in obj.to_body())  # printable ASCII, no escape
        if how == 0 and plain and got.ok[i]:
            assert got.fast[i], obj.to_body()  # what the broker writes takes the kernel


def _summaries(root: Path, now: int) -> tuple[dict, dict, PopColumns, PopColumns]:
    with Store.open(root) as st:
        fast = pop_columns(st, now=now)
        ref = PopColumns.of_state(pop_state(st, now=now))
    return summarize(fast).to_json(), summarize(ref).to_json(), fast, ref


def _same(fast: PopColumns, ref: PopColumns) -> None:
    assert fast.group == ref.group and fast.notes == ref.notes and fast.queues == ref.queues
    assert fast.topic == ref.topic and fast.held() == ref.held() and fast.groups() == ref.groups()
    for name in ("revive_queue", "queue_id", "messages", "acked", "revived"):
        assert getattr(fast, name).tolist() == getattr(ref, name).tolist(), name
    assert [int(t) for t in fast.revive_time] == [int(t) for t in ref.revive_time]


@pytest.mark.parametrize("now", [0, 1795676523000, 1795676566200, 1895676566200])
def test_store_pop_columns_equal_pop_state(now: int) -> None:
    fast, ref, cols, ref_cols = _summaries(DATA / "store-pop", now)
    assert fast == ref
    _same(cols, ref_cols)
    assert len(cols.group) > 5 and cols.acked.sum() > 0 and cols.revived.any()


def _record(rng: random.Random, cps: list[PopCheckPoint]) -> tuple[str | None, bytes]:
    """A revive record: mostly a checkpoint or an ack of one, sometimes garbage."""
    roll = rng.random()
    if roll < 0.35 or not cps:
        num = rng.randint(-2, 40)
        diffs = rng.choice([None, [], sorted(rng.sample(range(50), rng.randint(1, 12)))])
        ck = PopCheckPoint(
            rng.randint(0, 90), 1795676519000 + rng.randint(0, 90000), rng.choice([3000, 60000]),
            rng.choice([0, 0, 5, -1]), num, rng.randint(0, 2), rng.choice(["PopTopicA", "PopTopicB", None]),
            rng.choice(["GID_X", "GID_Y", "GID_Z"]), 0, diffs, rng.choice(["broker-a", None, " "]),
        )  # fmt: skip
        cps.append(ck)
        return "ck", ck.to_body()
    ck = rng.choice(cps)
    offsets = [o + rng.choice([0, 0, 0, 1, 100]) for o in ck.ack_offsets()] or [ck.start_offset]
    broker = rng.choice([ck.broker_name, None, ""])
    if roll < 0.85:
        ack = AckMsg(rng.choice(offsets), ck.start_offset, ck.cid, ck.topic, ck.queue_id, ck.pop_time, broker)
        return "ack", ack.to_body()
    if roll < 0.93:
        ack = AckMsg(-1, ck.start_offset, ck.cid, ck.topic, ck.queue_id, ck.pop_time, broker, offsets[:5])
        return "bAck", ack.to_body()
    return rng.choice(
        [("ck", b"{garbage"), ("ack", b'{"ao":"x"}'), ("xx", b"{}"), (None, b"{}"),
         ("bAck", b'{"aol":[1,"a"]}'), ("ck", b'{"bm":99999999999,"n":1}'),
         ("ck", b'{ "c" : "GID_X" , "t":"PopTopicA","n":3}')]
    )  # fmt: skip


def test_more_records_and_garbage_equal_pop_state(tmp_path: Path) -> None:
    root = tmp_path / "store-pop"
    shutil.copytree(DATA / "store-pop", root)
    rng = random.Random(16)
    cps: list[PopCheckPoint] = []
    with CommitLogAppender(root, version=5) as app:
        for i in range(600):
            tag, body = _record(rng, cps)
            props = [("TAGS", tag)] if tag is not None else []
            props += [("UNIQ_KEY", f"u{i}"), ("TIMER_OUT_MS", "1795676519000")]
            app.append(NewMessage(REVIVE_TOPIC, body, props, queue_id=rng.randrange(8)))
    for now in (0, 1795676560000, 1795676600000):
        fast, ref, cols, ref_cols = _summaries(root, now)
        assert fast == ref
        _same(cols, ref_cols)
    assert any("unreadable" in n for n in cols.notes) and any(
        "not in its checkpoint" in n for n in cols.notes
    )
