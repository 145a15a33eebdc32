"""Message ids (MessageDecoder.createMessageId, MessageClientIDSetter) against the golden expect.json:
offsetMsgId both ways, UNIQ_KEY parts."""

from __future__ import annotations

import contextlib
import ipaddress
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest
from golden import STORES, expect
from hypothesis import given
from hypothesis import strategies as st

from formats.errors import FormatError
from formats.message.msgid import (
    UniqKeyInfo,
    create_offset_msg_id,
    decode_offset_msg_id,
    decode_uniq_key,
    host_str,
    looks_like_offset_msg_id,
    parse_host,
)


def java_host(text: str) -> tuple[ipaddress._BaseAddress, int]:
    """expect.json prints IPv6 hosts in Java's long form without brackets: 2001:db8:0:0:0:0:0:a:10911."""
    host, _, port = text.rpartition(":")
    return ipaddress.ip_address(host), int(port)


@pytest.mark.parametrize("store", STORES)
def test_msg_id_decode(store):
    cases = expect(store)["msgIdDecode"]
    assert any(len(c["msgId"]) == 56 for c in cases)
    for case in cases:
        decoded = decode_offset_msg_id(case["msgId"])
        assert (ipaddress.ip_address(decoded.address), decoded.port) == java_host(case["address"])
        assert decoded.offset == case["offset"]
        assert java_host(case["address"]) == (
            ipaddress.ip_address(parse_host(decoded.host)[0]),
            parse_host(decoded.host)[1],
        )
        assert create_offset_msg_id(decoded.address, decoded.port, decoded.offset) == case["msgId"]
        assert decode_offset_msg_id(case["msgId"].lower()) == decoded


@pytest.mark.parametrize("store", STORES)
def test_every_offset_msg_id(store):
    for m in expect(store)["messages"]:
        if m["kind"] != "MESSAGE":
            continue
        address, port = parse_host(_bracketed(m["storeHost"]))
        assert create_offset_msg_id(address, port, m["physicalOffset"]) == m["offsetMsgId"]
        assert decode_offset_msg_id(m["offsetMsgId"]) == (address, port, m["physicalOffset"])
        assert looks_like_offset_msg_id(m["offsetMsgId"])


def _bracketed(java: str) -> str:
    ip, port = java_host(java)
    return host_str(ip.packed, port)


def test_hosts():
    assert host_str(bytes([192, 168, 0, 1]), 10911) == "192.168.0.1:10911"
    v6 = ipaddress.ip_address("2001:db8::a").packed
    assert host_str(v6, 10911) == "[2001:db8::a]:10911"
    assert parse_host("[2001:db8::a]:10911") == (v6, 10911)
    assert parse_host("2001:db8:0:0:0:0:0:a:10911") == (v6, 10911)  # Java's form
    assert parse_host("192.168.0.1:10911") == (bytes([192, 168, 0, 1]), 10911)
    for bad in ("192.168.0.1", "host:1", "[::1]10", "1.2.3.4:99999", "1.2.3.4:-1", "1.2.3.4:"):
        with pytest.raises(FormatError):
            parse_host(bad)
    with pytest.raises(FormatError):
        host_str(b"\x01\x02", 1)


def test_offset_msg_id_vectors():
    addr = bytes([192, 168, 0, 1])
    assert create_offset_msg_id(addr, 10911, 1073741824) == "C0A8000100002A9F0000000040000000"
    v6 = ipaddress.ip_address("2001:db8::10").packed
    assert create_offset_msg_id(v6, 10911, 220) == "20010DB800000000000000000000001000002A9F00000000000000DC"


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "C0A80001",
        "C0A8000100002A9F000000004000000",
        "C0A8000100002A9F00000000400000000",
        "G" * 32,
        "x" * 56,
    ],
)
def test_offset_msg_id_strict(bad):
    with pytest.raises(FormatError):
        decode_offset_msg_id(bad)
    assert not looks_like_offset_msg_id(bad)


@given(
    st.one_of(st.binary(min_size=4, max_size=4), st.binary(min_size=16, max_size=16)),
    st.integers(0, 65535),
    st.integers(0, 2**63 - 1),
)
def test_offset_msg_id_round_trip(address, port, offset):
    msg_id = create_offset_msg_id(address, port, offset)
    assert len(msg_id) == (32 if len(address) == 4 else 56) and msg_id == msg_id.upper()
    assert decode_offset_msg_id(msg_id) == (address, port, offset)


@given(st.text(max_size=60))
def test_decode_arbitrary_ids(text):
    for decode in (decode_offset_msg_id, decode_uniq_key):
        with contextlib.suppress(FormatError):
            decode(text)


# --- UNIQ_KEY -----------------------------------------------------------------------------------------


def make_uniq_key(ip: bytes, pid: int, loader: int, span: int, counter: int) -> str:
    raw = (
        ip
        + pid.to_bytes(2, "big")
        + loader.to_bytes(4, "big", signed=True)
        + span.to_bytes(4, "big")
        + counter.to_bytes(2, "big")
    )
    return raw.hex().upper()


def test_uniq_key_parts():
    info = decode_uniq_key("7F000001000418B4AAC208A0C5000000")
    assert info.ip == "127.0.0.1" and info.pid == 4
    assert info.class_loader_hash == 0x18B4AAC2
    assert info.time_span_ms == 0x08A0C500 and info.counter == 0
    big = decode_uniq_key(make_uniq_key(bytes(4), 0xFFFF, -5, 0xFFFFFFF0, 0xFFFE))
    assert (big.pid, big.class_loader_hash, big.time_span_ms, big.counter) == (0xFFFF, -5, 0xFFFFFFF0, 0xFFFE)


@pytest.mark.parametrize("store", STORES)
def test_golden_uniq_keys(store):
    """One producer JVM (IPv6 fd00::2, UTC) generated the keys; its counter grows by one per key and
    the time in each key lies shortly before the record's store time."""
    per_jvm: dict[tuple, list] = {}
    close = 0
    messages = [m for m in expect(store)["messages"] if m["kind"] == "MESSAGE" and m["uniqKey"]]
    for m in messages:
        info = decode_uniq_key(m["uniqKey"])
        assert len(m["uniqKey"]) == 56 and info.ip == "fd00::2"
        per_jvm.setdefault((info.ip, info.pid, info.class_loader_hash), []).append(info)
        born = info.nearly_time(m["storeTimestamp"] + 60_000, UTC)
        # delivered delay copies and retries keep the original key: up to 10 s (level 3) older
        assert 0 <= m["storeTimestamp"] - born <= 15_000
        close += m["storeTimestamp"] - born < 1000
    assert close > 0.99 * len(messages)
    assert len(per_jvm) == 1


def test_nearly_time():
    tz = ZoneInfo("Asia/Shanghai")
    month_start = int(datetime(2026, 11, 1, tzinfo=tz).timestamp() * 1000)
    now = month_start + 20 * 86_400_000
    info = UniqKeyInfo(bytes(4), 1, 2, 5 * 86_400_000, 3)
    assert info.nearly_time(now, tz) == month_start + 5 * 86_400_000
    # a span reaching past now belongs to the previous month
    late = UniqKeyInfo(bytes(4), 1, 2, 25 * 86_400_000, 3)
    oct_start = int(datetime(2026, 10, 1, tzinfo=tz).timestamp() * 1000)
    assert late.nearly_time(now, tz) == oct_start + 25 * 86_400_000
    # January looks back to December of the year before
    jan = int(datetime(2027, 1, 2, tzinfo=UTC).timestamp() * 1000)
    dec = int(datetime(2026, 12, 1, tzinfo=UTC).timestamp() * 1000)
    assert late.nearly_time(jan, UTC) == dec + 25 * 86_400_000
    # the same instant in another zone has another month start
    key = decode_uniq_key(make_uniq_key(bytes(4), 1, 2, 1000, 0))
    assert key.nearly_time(now, UTC) - key.nearly_time(now, tz) == 8 * 3_600_000
