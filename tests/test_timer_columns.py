"""The columnar timer states (store.timer_columns, what `delay list --timer` and `delay stats` use) equal
the per-message reference (store.timer_messages) on the real broker's timer stores and on generated
ones; the property columns equal the broker's property reader."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from formats.columnar.properties import plain_longs, property_strings
from formats.indexfile import IndexGeometry
from formats.message.properties import decode_properties
from formats.names import TIMER_TOPIC
from formats.structs import TIMER_LOG_UNIT_SIZE, TimerCheckpoint
from formats.timer import timer_log_unit_dtype
from mqtool.delay.timer import TimerRow, list_timer_messages, timer_summary
from store.appender import CommitLogAppender, NewMessage
from store.broker.messagerebuild import read_message_or_none
from store.log.scan import records_at
from store.storedir import Store
from store.timer.columns import timer_columns
from store.timer.messages import STATES, timer_messages
from store.timer.timerstore import TimerStore
from tests.golden import GOLDEN, expect

NOWS = (0, 2_000, 1795664876000, 1795664876000 + 7_200_000, 10**13)


def _reference(store: Store, now: int) -> list[TimerRow]:
    return [TimerRow.of(m) for m in timer_messages(store, TimerStore.open(store), now=now)]


def _columnar(store: Store, now: int) -> list[TimerRow]:
    c = timer_columns(store, TimerStore.open(store), now=now)
    assert [STATES[s] for s in c.state] == [r.state for r in _reference(store, now)]
    return TimerRow.rows_of(c, np.arange(len(c)))


def test_the_real_timer_stores() -> None:
    for name in ("store-timer-states", "store-timer5", "store-timer-crash"):
        with Store.open(GOLDEN / name) as store:
            for now in (*NOWS, expect(name)["timercheck"]["lastReadTimeMs"]):
                rows = _reference(store, now)
                assert _columnar(store, now) == rows
                assert list_timer_messages(store, now=now, only="due") == [r for r in rows if r.due]
                pending = [r for r in rows if r.state in ("waiting", "not-enqueued") and not r.due]
                pending = [r for r in pending if r.delete_marker is None]
                assert list_timer_messages(store, now=now, only="pending") == pending
    with Store.open(GOLDEN / "store-timer-states") as store:
        states = {r.state for r in _reference(store, 0)}
        summary = timer_summary(store, now=NOWS[3])
    assert {"delivered", "recalled", "rolled", "waiting", "not-enqueued", "recall"} <= states
    assert summary is not None and summary.due == summary.backlog["overdue"] > 0


# --- generated stores ---------------------------------------------------------------------------------

DELIVER = st.sampled_from([None, "1000", "2500", "5000", "-0", "+7", "x", "3000000000", "9" * 19, "٣"])
REAL_QID = st.sampled_from([None, "0", "1", "-1", "007", "99999999999", "q"])
ROLLS = st.sampled_from([None, "0", "-0", "2", "-3", "x", "²"])
UNIQ = st.sampled_from([None, "U1", "U2", "U3"])
TOPIC = st.sampled_from([None, "TopicA", "TopicB"])
DELETE = st.sampled_from([None, None, None, "TopicA+U1", "TopicB+U2"])
SLOT = st.sampled_from([1000, 2000, 3000])
MAGIC = st.sampled_from([1, 1, 3, 5, 7])

timer_message = st.fixed_dictionaries(
    {
        "TIMER_OUT_MS": DELIVER,
        "UNIQ_KEY": UNIQ,
        "KEYS": st.sampled_from([None, "k1", "k é"]),
        "REAL_TOPIC": TOPIC,
        "REAL_QID": REAL_QID,
        "TIMER_ROLL_TIMES": ROLLS,
        "TIMER_DEL_UNIQKEY": DELETE,
    }
)
copy = st.fixed_dictionaries(
    {
        "topic": st.sampled_from(["TopicA", "TopicB"]),
        "queue": st.integers(0, 1),
        "UNIQ_KEY": UNIQ,
        "TIMER_DEQUEUE_MS": st.sampled_from([None, "1"]),
    }  # fmt: skip
)
action = st.one_of(st.tuples(st.just("timer"), timer_message), st.tuples(st.just("copy"), copy))


def _props(values: dict) -> list[tuple[str, str]]:
    return [(k, v) for k, v in values.items() if k not in ("topic", "queue") and v is not None]


def _build(root: Path, actions: list, units: list, check: dict | None, index: bool) -> None:
    clock = iter(range(1_700_000_000_000, 1_800_000_000_000))
    with CommitLogAppender(
        root, version=5, now=lambda: next(clock), file_size=1 << 20, index_geometry=IndexGeometry(64, 400)
    ) as app:
        placed = []
        for kind, values in actions:
            if kind == "timer":
                placed.append(app.append(NewMessage(TIMER_TOPIC, b"t", _props(values))))
            else:
                app.append(NewMessage(values["topic"], b"c", _props(values), queue_id=values["queue"]))
    if not index:
        shutil.rmtree(root / "index", ignore_errors=True)
    log = np.zeros(len(units), timer_log_unit_dtype())
    for k, (message, slot, magic) in enumerate(units):
        r = placed[message % len(placed)] if placed else None
        log[k] = (TIMER_LOG_UNIT_SIZE, -1, magic, 0, slot, r.physical_offset if r else 0, 1, 0, 0)
    (root / "timerlog").mkdir()
    (root / "timerlog" / f"{0:020d}").write_bytes(log.tobytes())
    if check is not None:
        (root / "config").mkdir(exist_ok=True)
        (root / "config" / "timercheck").write_bytes(TimerCheckpoint.build(check))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    actions=st.lists(action, min_size=1, max_size=12),
    units=st.lists(st.tuples(st.integers(0, 11), SLOT, MAGIC), max_size=14),
    read=st.sampled_from([None, 0, 1500, 2500, 4000]),
    queue_offsets=st.tuples(st.integers(0, 12), st.integers(0, 12)),
    index=st.booleans(),
    now=st.sampled_from([0, 2000, 10**13]),
)
def test_generated_stores(tmp_path_factory, actions, units, read, queue_offsets, index, now) -> None:
    root = tmp_path_factory.mktemp("timer")
    check = None
    if read is not None:
        last, master = queue_offsets
        check = {"lastReadTimeMs": read, "lastTimerLogFlushPos": 0, "lastTimerQueueOffset": last,
                 "masterTimerQueueOffset": master, "dataVersionStateVersion": 0,
                 "dataVersionTimestamp": 0, "dataVersionCounter": 0}  # fmt: skip
    _build(root, actions, units, check, index)
    with Store.open(root) as store:
        assert _columnar(store, now) == _reference(store, now)
    shutil.rmtree(root)


@settings(max_examples=60, deadline=None)
@given(
    picks=st.lists(st.tuples(st.integers(0, 60), st.integers(-3, 40)), min_size=1, max_size=30),
    chunk=st.sampled_from([1, 500, 4096, 64 << 20]),
    sized=st.booleans(),
)
def test_records_at_reads_as_read_message_or_none(picks, chunk, sized) -> None:
    """Record starts, positions inside records and past the data, with and without their sizes."""
    exp = expect("store-timer-states")
    starts = [(m["physicalOffset"], m["totalSize"]) for m in exp["messages"]]
    phys = [starts[i % len(starts)][0] + (d if d > 30 else 0) * 7 for i, d in picks]
    sizes = [starts[i % len(starts)][1] + (1 if d < 0 else 0) for i, d in picks]
    with Store.open(GOLDEN / "store-timer-states") as store:
        got = records_at(store.commitlog, np.array(phys), np.array(sizes) if sized else None,
                         ("REAL_TOPIC",), chunk_bytes=chunk)  # fmt: skip
        for k, phy in enumerate(phys):
            msg = read_message_or_none(store, phy, sizes[k] if sized else None)
            assert bool(got.found[k]) == (msg is not None)
            if msg is not None:
                assert got.uniq_key[k].as_py() == msg.uniq_key and got.keys[k].as_py() == msg.keys
                assert got.topic[k].as_py() == msg.topic
                assert got.properties["REAL_TOPIC"][k].as_py() == msg.properties.get("REAL_TOPIC")
                assert got.store_timestamp[k] == msg.store_timestamp


# --- property columns ---------------------------------------------------------------------------------

NAMES = ("TIMER_OUT_MS", "UNIQ_KEY", "K", "KEYS")
part = st.one_of(
    st.sampled_from([b"TIMER_OUT_MS\x011000", b"UNIQ_KEY\x01u", b"K\x01v", b"KEYS\x01a b", b"KEYS\x01",
                     b"\x01x", b"KEYS", b"TIMER_OUT_MS\x01\x01", b"K\x01\xff\xfe", b"UNIQ_KEY\x01\xc3\xa9"]),
    st.binary(max_size=8),
)  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(parts=st.lists(st.lists(part, max_size=6).map(b"\x02".join), min_size=1, max_size=5))
def test_property_strings_read_as_the_broker(parts: list[bytes]) -> None:
    buf = np.frombuffer(b"".join(parts) + b"\0", np.uint8)
    lens = np.array([len(p) for p in parts], np.int64)
    starts = np.concatenate([[0], np.cumsum(lens)[:-1]]).astype(np.int64)
    got = property_strings(buf, starts, lens, NAMES)
    for r, raw in enumerate(parts):
        props = decode_properties(raw)
        assert [got[name][r].as_py() for name in NAMES] == [props.get(name) for name in NAMES]


@settings(deadline=None)
@given(st.lists(st.one_of(st.none(), st.text(alphabet="-+0123456789x٣", max_size=21))))
def test_plain_longs(values: list[str | None]) -> None:
    from formats.columnar.decoder import _strings

    numbers, plain = plain_longs(_strings(values))
    for v, number, is_plain in zip(values, numbers.tolist(), plain.tolist(), strict=True):
        simple = v is not None and v.removeprefix("-").isascii() and v.removeprefix("-").isdigit()
        fits = simple and len(v.removeprefix("-")) <= 18
        assert is_plain == (0 if not fits else 2 if v.startswith("-") else 1)
        if is_plain:
            assert number == int(v)
