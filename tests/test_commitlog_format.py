"""CommitLog record codec: vectors from the real 5.3.3 encoder, the broker's checks, properties, compression,
fuzzing."""

from __future__ import annotations

import contextlib
import random
import sys
from functools import cache

import pytest
from construct import ConstructError
from golden import STORES, store_path
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from formats.errors import FormatError
from formats.java.hash import java_string_hash
from formats.message.commitlog import (
    DEFAULT_DELAY_LEVELS_MS,
    BadRecord,
    Blank,
    Corrupt,
    EndOfData,
    Message,
    Torn,
    _parse_message,
    build_message,
    crc32_masked,
    decode_head,
    decode_record,
    encode_message,
    java_parse_int,
    message_length,
    parse_delay_levels,
    read_prelude,
)
from formats.message.compression import (
    BodyNotDecoded,
    compress_body,
    compression_sys_flag,
    compression_type,
    decompress_body,
)
from formats.message.msgid import parse_host
from formats.message.properties import (
    crc32_property_trailer,
    crc32_property_value,
    decode_properties,
    encode_properties,
    parse_crc32_property,
    split_crc32_trailer,
)
from formats.names import SCHEDULE_TOPIC
from formats.structs import MAGIC_V1, MAGIC_V2, TRANSACTION_ROLLBACK_TYPE, MessageRecord, RecordPrelude
from store.log.commitlog import CommitLog


def unhex(text: str) -> bytes:
    return bytes.fromhex("".join(text.split()))


# --- vectors from the real encoder (MessageDecoder.encode)
# ---------------------------------------------------------------------

V1_IPV4 = unhex("""
000000c0 daa320a7 69c865ed 00000001 00000000 00000000 00000005 00000000
00000000 00000000 0000018b cfe56800 c0a8000a 0000d431 0000018b cfe5687b
c0a80001 00002a9f 00000000 00000000 00000000 0000000e 48656c6c 6f20526f
636b6574 4d510954 6f706963 54657374 004e4b45 5953014f 72646572 49443138
38025441 47530154 61674102 554e4951 5f4b4559 01374630 30303030 31303030
34313842 34414143 32303841 30433530 30303030 30025741 49540174 72756502
""")
V1_IPV6 = unhex("""
000000d8 daa320a7 69c865ed 00000001 00000000 00000000 00000005 00000000
000000dc 00000030 0000018b cfe56800 fe800000 00000000 00000000 00000001
0000d431 0000018b cfe5687b 20010db8 00000000 00000000 00000010 00002a9f
00000000 00000000 00000000 0000000e 48656c6c 6f20526f 636b6574 4d510954
6f706963 54657374 004e4b45 5953014f 72646572 49443138 38025441 47530154
61674102 554e4951 5f4b4559 01374630 30303030 31303030 34313842 34414143
32303841 30433530 30303030 30025741 49540174 72756502
""")
VECTOR_PROPS = [
    ("KEYS", "OrderID188"),
    ("TAGS", "TagA"),
    ("UNIQ_KEY", "7F000001000418B4AAC208A0C5000000"),
    ("WAIT", "true"),
]


def vector_message(**overrides) -> Message:
    fields = dict(
        topic="TopicTest",
        body=b"Hello RocketMQ",
        properties=VECTOR_PROPS,
        queue_id=1,
        queue_offset=5,
        born_timestamp=1700000000000,
        born_host=parse_host("192.168.0.10:54321"),
        store_timestamp=1700000000123,
        store_host=parse_host("192.168.0.1:10911"),
    )
    fields.update(overrides)
    return build_message(**fields)


def test_vector_v1_ipv4():
    assert crc32_masked(b"Hello RocketMQ") == 1774740973
    m = vector_message()
    assert encode_message(m) == V1_IPV4
    r = decode_record(V1_IPV4, 0, 0)
    assert r == m
    assert r.total_size == 192 and r.body_crc == 1774740973 and r.magic_code == MAGIC_V1
    assert r.offset_msg_id == "C0A8000100002A9F0000000000000000"
    assert r.born_host_str == "192.168.0.10:54321" and r.store_host_str == "192.168.0.1:10911"
    assert r.properties == dict(VECTOR_PROPS)
    assert list(r.properties) == [k for k, _ in VECTOR_PROPS]
    assert r.tags_code() == java_string_hash("TagA") == 2598919
    assert r.index_keys() == ["7F000001000418B4AAC208A0C5000000", "OrderID188"]


def test_vector_property_crc():
    m = vector_message(physical_offset=1073741824, append_prop_crc=True)
    data = encode_message(m)
    expected = bytearray(V1_IPV4)
    expected[0:4] = (212).to_bytes(4, "big")
    expected[28:36] = unhex("00000000 40000000")
    props_len_at = 192 - 2 - len(encode_properties(VECTOR_PROPS))
    expected[props_len_at : props_len_at + 2] = unhex("0062")
    expected += unhex("5f5f4352 43333223 01303531 36393032 36363102")
    assert data == bytes(expected)
    assert crc32_masked(data[:-20]) == 1662096150
    assert data[-20:] == b"__CRC32#\x010516902661\x02"
    for force in (False, True):
        assert decode_record(data, 0, 1073741824, force_verify_prop_crc=force) == m
    # forced verification rejects a record without the property or with a wrong one
    plain = decode_record(V1_IPV4, 0, 0, force_verify_prop_crc=True)
    assert isinstance(plain, BadRecord) and "__CRC32#" in plain.reason
    bad = bytearray(data)
    bad[-2] = ord("9") if bad[-2] != ord("9") else ord("8")
    r = decode_record(bytes(bad), 0, 1073741824, force_verify_prop_crc=True)
    assert isinstance(r, BadRecord) and "property CRC" in r.reason
    assert isinstance(decode_record(bytes(bad), 0, 1073741824), Message)  # not verified by default


def test_vector_ipv6():
    m = vector_message(
        physical_offset=220,
        born_host=parse_host("[fe80::1]:54321"),
        store_host=parse_host("[2001:db8::10]:10911"),
    )
    assert m.sys_flag == 0x30
    assert encode_message(m) == V1_IPV6
    r = decode_record(V1_IPV6, 0, 220)
    assert r == m and r.total_size == 216
    assert r.offset_msg_id == "20010DB800000000000000000000001000002A9F00000000000000DC"
    assert r.born_host_str == "[fe80::1]:54321" and r.store_host_str == "[2001:db8::10]:10911"
    assert r.sys_flag_names == ["BORNHOST_V6", "STOREHOST_V6"]


def test_vector_v2():
    topic = "%RETRY%" + "G" * 123
    m = vector_message(topic=topic, body=b"", properties={}, queue_offset=0)
    data = encode_message(m)
    assert len(data) == 222 and m.total_size == 222
    assert data[4:8] == unhex("daa320ab") and m.magic_code == MAGIC_V2 and m.is_v2
    assert data[84:88] == unhex("00000000")
    assert data[88:90] == unhex("0082") and data[90:220] == topic.encode()
    assert data[220:222] == unhex("0000")
    assert data[8:12] == bytes(4)  # empty body: CRC 0
    assert decode_record(data, 0, 0) == m
    r = decode_record(data, 0, 0, accept_v2=False)  # a 4.9.x broker
    assert isinstance(r, Corrupt) and "4.9" in r.reason
    # 127 characters still make a V1 record; a V1 record cannot hold a longer topic
    assert vector_message(topic="T" * 127).magic_code == MAGIC_V1
    with pytest.raises(FormatError):
        encode_message(vector_message(topic="T" * 128, magic_code=MAGIC_V1))


# --- the broker's check (CommitLog.checkMessageAndReturnSize)
# -----------------------------------------------------------


def test_zeros_and_end_of_file():
    assert isinstance(decode_record(bytes(64), 0, 0), EndOfData)
    assert isinstance(decode_record(bytes(64), 60, 0), EndOfData)
    r = decode_record(V1_IPV4, 192, 1000)
    assert isinstance(r, EndOfData) and r.physical_offset == 1192 and "without a BLANK" in r.reason
    r = decode_record(V1_IPV4 + b"\x01\x02", 192, 0)
    assert isinstance(r, Corrupt) and r.total_size is None


def test_blank_records():
    blank = (40).to_bytes(4, "big") + unhex("cbd43194") + bytes(32)
    assert decode_record(blank, 0, 0) == Blank(0, 40)
    short = (16).to_bytes(4, "big") + unhex("cbd43194") + bytes(32)
    r = decode_record(short, 0, 0)
    assert isinstance(r, Blank) and r.problems
    past = (400).to_bytes(4, "big") + unhex("cbd43194") + bytes(32)
    assert isinstance(decode_record(past, 0, 0), Corrupt)  # 5.3.3 checks the size first
    assert decode_record(blank, 0, 0).to_json()["kind"] == "blank"
    # Java computes `remaining < totalSize - 4` in int arithmetic: MIN_VALUE - 4 wraps to a huge size
    wrapped = (-(2**31)).to_bytes(4, "big", signed=True) + unhex("cbd43194") + bytes(32)
    assert isinstance(decode_record(wrapped, 0, 0), Corrupt)
    negative = (-5).to_bytes(4, "big", signed=True) + unhex("cbd43194") + bytes(32)
    assert isinstance(decode_record(negative, 0, 0), Blank)


def test_illegal_magic():
    r = decode_record(unhex("000000c0 12345678") + bytes(300), 0, 0)
    assert isinstance(r, Corrupt) and "illegal magic code 0x12345678" in r.reason
    # a prefix of a message magic followed by zeros: a write torn after 6 bytes
    r = decode_record(V1_IPV4[:6] + bytes(300), 0, 0)
    assert isinstance(r, Torn) and r.written == 6
    r = decode_record(V1_IPV4[:4] + bytes(300), 0, 0)
    assert isinstance(r, Torn) and r.written == 4


def test_torn_and_corrupt_records():
    r = decode_record(V1_IPV4[:150], 0, 0)
    assert isinstance(r, Torn) and r.total_size == 192 and r.available == 150 and r.written == 150
    torn = V1_IPV4[:95] + bytes(200)  # cut inside the body (bytes 88-101)
    r = decode_record(torn, 0, 0)
    assert isinstance(r, Torn) and r.written == 95 and "CRC" in r.reason
    assert r.header["queueOffset"] == 5 and r.header["storeTimestamp"] == 1700000000123
    r = decode_record(torn, 0, 0, check_crc=False)
    assert isinstance(r, Torn) and "TOTALSIZE" in r.reason
    # a tear inside PROPERTIES leaves the lengths and the body intact: the broker accepts it
    assert isinstance(decode_record(V1_IPV4[:150] + bytes(100), 0, 0), Message)
    # damaged body followed by more data: corrupt, not torn
    flipped = bytearray(V1_IPV4 + V1_IPV4)
    flipped[90] ^= 1
    r = decode_record(bytes(flipped), 0, 0)
    assert isinstance(r, Corrupt) and "CRC" in r.reason
    assert isinstance(decode_record(bytes(flipped), 0, 0, check_crc=False), Message)
    assert r.to_json()["kind"] == "corrupt"
    with pytest.raises(FormatError, match="corrupt record"):
        raise r.to_error()


@pytest.mark.parametrize(
    "total, reason",
    [(200, "TOTALSIZE 200 != 192"), (180, "PROPERTIES"), (5, "too small"), (-3, "too small")],
)
def test_totalsize_mismatch(total, reason):
    data = bytearray(V1_IPV4 + V1_IPV4)
    data[0:4] = total.to_bytes(4, "big", signed=True)
    r = decode_record(bytes(data), 0, 0)
    assert isinstance(r, Corrupt) and reason in r.reason


def test_negative_lengths_read_as_zero_like_the_broker():
    """checkMessageAndReturnSize skips a negative BODYLENGTH/PROPERTIESLENGTH and its length formula
    counts it as 0: such a record passes when TOTALSIZE matches that."""
    data = bytearray(encode_message(vector_message(body=b"", properties={})))
    data[84:88] = (-7).to_bytes(4, "big", signed=True)
    data[-2:] = (-3).to_bytes(2, "big", signed=True)
    r = decode_record(bytes(data), 0, 0)
    assert isinstance(r, Message) and r.body == b"" and r.properties_raw == b""
    assert r.problems == (
        "BODYLENGTH -7 read as 0, as the broker does",
        "PROPERTIESLENGTH -3 read as 0, as the broker does",
    )
    assert r.total_size == 100 and r.topic == "TopicTest"


def test_negative_lengths_are_corrupt():
    data = bytearray(V1_IPV4 + V1_IPV4)
    data[84:88] = (-1).to_bytes(4, "big", signed=True)
    r = decode_record(bytes(data), 0, 0)
    assert isinstance(r, Corrupt) and "BODY" in r.reason
    data = bytearray(V1_IPV4 + V1_IPV4)
    data[102] = 0xF0  # TOPICLENGTH of a V1 record is a signed byte
    assert isinstance(decode_record(bytes(data), 0, 0), Corrupt)


def test_physical_offset_mismatch_is_a_problem():
    r = decode_record(V1_IPV4, 0, 100)
    assert isinstance(r, Message) and r.physical_offset == 0
    assert r.problems == ("PHYSICALOFFSET field 0 != position 100",)


def schedule_message(delay: str, store_ts: int = 1_000_000) -> bytes:
    raw = f"DELAY\x01{delay}\x02TAGS\x01TagA\x02".encode()
    return encode_message(vector_message(topic=SCHEDULE_TOPIC, properties=raw, store_timestamp=store_ts))


@pytest.mark.parametrize(
    "delay, code",
    [
        ("1", 1_000_000 + 1000),
        ("+3", 1_000_000 + 10_000),
        ("18", 1_000_000 + 7_200_000),
        ("99", 1_000_000 + 7_200_000),  # clamped to the max level
        ("0", 2598919),  # level <= 0 keeps the TAGS hash
        ("-2", 2598919),
    ],
)
def test_schedule_tags_code(delay, code):
    r = decode_record(schedule_message(delay), 0, 0)
    assert isinstance(r, Message)
    assert r.tags_code() == code
    assert r.tags_code(parse_delay_levels("2s")) == (2598919 if code == 2598919 else 1_000_000 + 2000)


def test_schedule_tags_code_wraps_like_a_java_long():
    """storeTimestamp + delay in Java long arithmetic: a corrupt store time near 2^63 wraps (it was an
    int the rebuild could not pack into a ConsumeQueue unit)."""
    r = decode_record(schedule_message("1", store_ts=2**63 - 500), 0, 0)
    assert isinstance(r, Message)
    assert r.tags_code() == -(2**63) + 500
    assert r.tags_code((2**63 - 1,)) == -501  # 2^64 - 501


@pytest.mark.parametrize("delay", ["abc", "1.5", " 1", "2147483648", ""])
def test_schedule_bad_delay_fails_the_check(delay):
    data = schedule_message(delay) + bytes(16)
    r = decode_record(data, 0, 0)
    if delay == "":  # an empty value is not a property at all
        assert isinstance(r, Message) and r.tags_code() == 2598919
    else:
        assert isinstance(r, BadRecord) and "DELAY" in r.reason


def test_java_parse_int():
    assert [java_parse_int(t) for t in ("1", "+1", "-1", "007", "\u0663", "2147483647")] == [
        1,
        1,
        -1,
        7,
        3,
        2147483647,
    ]
    for bad in ("", "+", "-", " 1", "1 ", "1_0", "0x1", "2147483648", "1.0", "\U0001d7ce"):
        assert java_parse_int(bad) is None, bad


def test_delay_levels():
    assert DEFAULT_DELAY_LEVELS_MS[0] == 1000 and DEFAULT_DELAY_LEVELS_MS[-1] == 7_200_000
    assert len(DEFAULT_DELAY_LEVELS_MS) == 18
    assert parse_delay_levels("1s 2m 3h 1d") == (1000, 120_000, 10_800_000, 86_400_000)
    with pytest.raises(FormatError):
        parse_delay_levels("1s 5x")
    with pytest.raises(FormatError):
        parse_delay_levels("\u00b2s")


def test_index_keys_and_flags():
    m = vector_message(properties={"UNIQ_KEY": "U", "KEYS": "a  b c "})
    assert m.index_keys() == ["U", "a", "b", "c"]
    rollback = vector_message(properties={"UNIQ_KEY": "U", "KEYS": "a"}, sys_flag=TRANSACTION_ROLLBACK_TYPE)
    assert rollback.index_keys() == [] and rollback.transaction_type == "ROLLBACK"
    assert vector_message(properties={"KEYS": "k"}).index_keys() == ["k"]
    z = vector_message(sys_flag=0x301 | 0x8)
    assert z.compression == "zlib" and z.transaction_type == "COMMIT"
    assert z.sys_flag_names == ["COMPRESSED", "COMMIT", "ZLIB"]


# --- properties (MessageDecoder, the 5.2+ property CRC)
# ----------------------------------------------------------------


def test_decode_properties_rules():
    assert decode_properties(b"UNIQ_KEY\x01AAA\x02UNIQ_KEY\x01BBB\x02") == {"UNIQ_KEY": "BBB"}
    assert decode_properties(b"a\x01b\x02c\x01d") == {"a": "b", "c": "d"}  # no trailing \x02
    assert decode_properties(b"\x01x\x02k\x01\x02ab\x02k\x01v\x01w\x02") == {"k": "v\x01w"}
    assert decode_properties(b"a\x01b\x02\x02\x02x\x01y") == {"a": "b", "x": "y"}
    assert decode_properties(b"k\x01\xff\xfe\x02") == {"k": "\ufffd\ufffd"}
    assert decode_properties(b"") == {}
    d = decode_properties(b"z\x011\x02a\x012\x02z\x013\x02")
    assert list(d.items()) == [("z", "3"), ("a", "2")]  # first position, last value


def java_reader(text: str) -> dict[str, str]:
    """A line-by-line port of MessageDecoder.string2messageProperties (indexes, not split)."""
    out: dict[str, str] = {}
    index, n = 0, len(text)
    while index < n:
        new_index = text.find("\x02", index)
        if new_index < 0:
            new_index = n
        if new_index - index >= 3:
            kv = text.find("\x01", index)
            if index < kv < new_index - 1:
                out[text[index:kv]] = text[kv + 1 : new_index]
        index = new_index + 1
    return out


@given(st.text(alphabet=st.sampled_from("ab\x01\x02\u00e9\U0001f600"), max_size=40))
def test_decode_properties_matches_java_reader(text):
    assert decode_properties(text.encode("utf-8")) == java_reader(text)


keys_st = st.text(st.characters(blacklist_characters="\x01\x02", blacklist_categories=("Cs",)), min_size=1)
values_st = st.text(st.characters(blacklist_characters="\x02", blacklist_categories=("Cs",)), min_size=1)


@given(st.dictionaries(keys_st, values_st, max_size=8), st.booleans())
def test_properties_round_trip(props, trailing):
    raw = encode_properties(props, trailing_separator=trailing)
    assert decode_properties(raw) == props
    assert raw.endswith(b"\x02") == (trailing and bool(props))


def test_encode_properties_refuses_unreadable():
    for bad in ({"": "v"}, {"k": ""}, {"a\x01": "v"}, {"k": "v\x02"}, {"k": "\ud800"}):
        with pytest.raises(FormatError):
            encode_properties(bad)
    assert encode_properties([("a", "1"), ("b", "2")], trailing_separator=False) == b"a\x011\x02b\x012"


@pytest.mark.parametrize("store", STORES)
def test_golden_properties_reencode(store):
    """Each stored PROPERTIES text is re-encoded from its own pairs (5.x trailing \\x02, 4.9 not)."""
    trailing = set()
    for m in golden_messages(store):
        raw = m.properties_raw
        pairs = [tuple(p.split("\x01", 1)) for p in raw.decode().split("\x02") if p]
        assert encode_properties(pairs, trailing_separator=raw.endswith(b"\x02")) == raw
        trailing.add(raw.endswith(b"\x02"))
    assert trailing == ({False} if store == "store-49a" else {True})


def test_property_crc_helpers():
    assert crc32_property_value(1662096150) == "0516902661"
    assert crc32_property_value(123) == "3210000000"
    assert crc32_property_value(0) == "0000000000"
    assert parse_crc32_property("0516902661") == 1662096150
    assert parse_crc32_property("3210000000") == 123
    assert crc32_property_trailer(1662096150) == b"__CRC32#\x010516902661\x02"
    with pytest.raises(FormatError):
        parse_crc32_property("12a")
    with pytest.raises(FormatError):
        crc32_property_value(-1)
    assert split_crc32_trailer(b"a\x01b\x02" + crc32_property_trailer(77)) == (b"a\x01b\x02", 77)
    assert split_crc32_trailer(b"a\x01b\x02") == (b"a\x01b\x02", None)


@given(st.integers(0, 0x7FFFFFFF))
def test_property_crc_round_trip(crc):
    assert parse_crc32_property(crc32_property_value(crc)) == crc
    assert split_crc32_trailer(crc32_property_trailer(crc)) == (b"", crc)


# --- compression (sysFlag compression bits, Compressor)
# ----------------------------------------------------------------------


@cache
def golden_messages(store: str) -> tuple[Message, ...]:
    with CommitLog.open(store_path(store)) as cl:
        return tuple(cl.iter_messages())


def test_golden_compressed_bodies():
    seen = {}
    for store in STORES:
        for m in golden_messages(store):
            if m.compression:
                seen[(store, m.sys_flag)] = m.decompressed_body()
            else:
                assert m.decompressed_body() == m.body
    assert {k[1] for k in seen} == {0x1, 0x101, 0x201, 0x301}  # old zlib, lz4, zstd, zlib
    # the same text was sent through every codec
    assert len(set(seen.values())) == 1
    assert next(iter(seen.values())).startswith(b"compressible text line 0\n")


def test_compression_type():
    assert compression_type(0) is None and compression_type(0x300) is None
    assert [compression_type(f) for f in (0x1, 0x101, 0x201, 0x301, 0x501)] == [
        "zlib",
        "lz4",
        "zstd",
        "zlib",
        "unknown(5)",
    ]
    assert compression_sys_flag("zlib") == 0x301 and compression_sys_flag("lz4") == 0x101
    with pytest.raises(BodyNotDecoded, match="unknown"):
        decompress_body(b"xx", 0x501)


@pytest.mark.parametrize("kind", ["zlib", "lz4", "zstd"])
def test_codecs_round_trip_and_damage(kind):
    text = b"hello " * 500
    flag = compression_sys_flag(kind)
    packed = compress_body(text, kind)
    assert decompress_body(packed, flag) == text
    if kind == "zlib":
        assert packed[:2] == b"\x78\x5e"  # level 5, as DeflaterOutputStream writes
    with pytest.raises(BodyNotDecoded, match=f"compressed \\({kind}\\), not decoded"):
        decompress_body(packed[: len(packed) // 2], flag)
    with pytest.raises(BodyNotDecoded, match=f"compressed \\({kind}\\), not decoded"):
        decompress_body(b"garbage, not a stream at all", flag)
    with pytest.raises(BodyNotDecoded, match="larger than"):
        decompress_body(packed, flag, max_size=100)


@pytest.mark.parametrize("kind, module", [("lz4", "lz4.frame"), ("zstd", "zstandard")])
def test_missing_codec_module(monkeypatch, kind, module):
    packed = compress_body(b"abc" * 100, kind)
    monkeypatch.setitem(sys.modules, module, None)  # makes `import module` fail
    with pytest.raises(BodyNotDecoded, match=f"compressed \\({kind}\\), not decoded"):
        decompress_body(packed, compression_sys_flag(kind))


@given(st.binary(max_size=200), st.sampled_from([0x1, 0x101, 0x201, 0x301]))
@settings(max_examples=200)
def test_decompress_garbage_raises_only_ours(data, flag):
    with contextlib.suppress(BodyNotDecoded):
        decompress_body(data, flag, max_size=1 << 16)


# --- property tests: round trip, fuzzing --------------------------------------------------------------

ipv4 = st.binary(min_size=4, max_size=4)
ipv6 = st.binary(min_size=16, max_size=16)
hosts = st.tuples(st.one_of(ipv4, ipv6), st.integers(0, 65535))
int32 = st.integers(-(2**31), 2**31 - 1)
int64 = st.integers(-(2**63), 2**63 - 1)
# V1 holds at most 127 topic bytes: unicode topics stay short (the broker only sees ASCII topics)
topics = st.one_of(
    st.text(st.sampled_from("abcXYZ019%_-|"), min_size=1, max_size=250),
    st.text(min_size=1, max_size=30),
)


@st.composite
def messages(draw):
    topic = draw(topics)
    return build_message(
        topic=topic,
        body=draw(st.binary(max_size=300)),
        properties=draw(st.dictionaries(keys_st, values_st, max_size=5)),
        queue_id=draw(int32),
        flag=draw(int32),
        queue_offset=draw(int64),
        physical_offset=draw(st.integers(0, 2**62)),
        sys_flag=draw(int32),
        born_timestamp=draw(int64),
        born_host=draw(hosts),
        store_timestamp=draw(int64),
        store_host=draw(hosts),
        reconsume_times=draw(int32),
        prepared_transaction_offset=draw(int64),
        trailing_separator=draw(st.booleans()),
        append_prop_crc=draw(st.booleans()),
    )


@given(messages())
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
def test_message_round_trip(m):
    if m.topic == SCHEDULE_TOPIC:
        return
    data = encode_message(m)
    assert len(data) == m.total_size
    assert m.total_size == message_length(
        m.sys_flag, len(m.body), len(m.topic.encode()), len(m.properties_raw), m.magic_code
    )
    assert m.magic_code == (MAGIC_V2 if len(m.topic.encode("utf-16-le")) > 254 else MAGIC_V1)
    has_crc = split_crc32_trailer(m.properties_raw)[1] is not None
    r = decode_record(data, 0, m.physical_offset, force_verify_prop_crc=has_crc)
    assert r == m
    assert encode_message(r) == data
    j = r.to_json()
    assert j["offsetMsgId"] == m.offset_msg_id and j["bodyLength"] == len(m.body)


@given(st.binary(max_size=400), st.data())
@settings(max_examples=500)
def test_arbitrary_bytes_never_raise(data, draw):
    pos = draw.draw(st.integers(0, len(data)))
    for force in (False, True):
        r = decode_record(data, pos, 1 << 30, force_verify_prop_crc=force)
        assert isinstance(r, Message | Blank | EndOfData | BadRecord)
        r.to_json()
    if len(data) >= 8:
        c = RecordPrelude.parse(data[:8])
        assert read_prelude(data, 0) == (c.totalSize, c.magicCode)
    decode_head(data)


@cache
def golden_samples() -> tuple[bytes, ...]:
    """Raw bytes of a spread of golden records (V1, V2, IPv6, compressed, the 100 KiB one...)."""
    samples = []
    for store in STORES:
        with CommitLog.open(store_path(store)) as cl:
            msgs = golden_messages(store)
            picks = [m for m in msgs if m.sys_flag or m.is_v2 or m.total_size > 50_000] + list(msgs[::400])
            samples += [cl.read_raw(m.physical_offset, m.total_size) for m in picks]
    return tuple(samples)


@given(st.data())
@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
def test_damaged_golden_records(data):
    raw = data.draw(st.sampled_from(golden_samples()))
    buf = bytearray(raw)
    how = data.draw(st.sampled_from(["flip", "truncate", "zero_tail", "overwrite"]))
    rnd = random.Random(data.draw(st.integers(0, 2**32)))
    if how == "flip":
        for _ in range(data.draw(st.integers(1, 4))):
            buf[rnd.randrange(len(buf))] ^= 1 << rnd.randrange(8)
    elif how == "truncate":
        del buf[rnd.randrange(len(buf)) :]
    elif how == "zero_tail":
        cut = rnd.randrange(len(buf))
        buf[cut:] = bytes(len(buf) - cut)
    else:
        at = rnd.randrange(len(buf))
        buf[at : at + 4] = rnd.randbytes(4)
    tail = data.draw(st.sampled_from([b"", bytes(16), raw]))
    full = bytes(buf) + tail
    r = decode_record(full, 0, 0, check_crc=data.draw(st.booleans()))
    assert isinstance(r, Message | Blank | EndOfData | BadRecord)
    if isinstance(r, Message) and not any("read as 0" in p for p in r.problems):
        assert encode_message(r, recompute=False) == full[: r.total_size]
    if how == "zero_tail" and isinstance(r, BadRecord) and tail != raw:
        assert isinstance(r, Torn)


def fields(c) -> dict | None:
    return None if c is None else {k: v for k, v in c.items() if not k.startswith("_")}


def parse_or_none(parse, rec: bytes):
    try:
        return fields(parse(rec))
    except ConstructError:
        return None


def assert_fast_parse_agrees(rec: bytes) -> None:
    """construct's compiled parser (the fast path) answers exactly as the declared MessageRecord."""
    assert parse_or_none(_parse_message, rec) == parse_or_none(MessageRecord.parse, rec)


@given(st.data())
@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
def test_fast_parser_agrees_with_construct(data):
    raw = bytearray(data.draw(st.sampled_from(golden_samples())))
    # damage a length field or the tail: the places the compiled parser does not check
    body_len_at = 84 + (12 if raw[39] & 0x10 else 0) + (12 if raw[39] & 0x20 else 0)
    at = data.draw(st.sampled_from([body_len_at, len(raw) - 2 - data.draw(st.integers(0, 40)), 0, 40]))
    at = max(0, min(at, len(raw) - 1))
    raw[at : at + 4] = data.draw(st.binary(min_size=4, max_size=4))
    cut = data.draw(st.integers(0, len(raw)))
    rec = bytes(raw[:cut]) + data.draw(st.binary(max_size=8))
    assert_fast_parse_agrees(rec)
    assert_fast_parse_agrees(bytes(raw))


@given(st.binary(max_size=300))
def test_fast_parser_agrees_on_arbitrary_bytes(rec):
    assert_fast_parse_agrees(V1_IPV4[:84] + rec)
    assert_fast_parse_agrees(rec)


@pytest.mark.parametrize("value", [-1, 200, -30000, 77])
def test_fast_parser_rechecks_properties_length(value):
    data = bytearray(V1_IPV4)
    data[112:114] = value.to_bytes(2, "big", signed=True)  # PROPERTIESLENGTH of the vector
    assert_fast_parse_agrees(bytes(data))
    assert isinstance(decode_record(bytes(data) + bytes(8), 0, 0), Corrupt)


def test_invalid_utf8_topic_and_properties_round_trip():
    m = vector_message()
    data = bytearray(encode_message(m))
    data[103 + 8] = 0xFF  # a byte of the topic "TopicTest" (TOPIC starts at 103)
    data[-2] = 0xFE  # a byte of the last property value
    r = decode_record(bytes(data), 0, 0)
    assert isinstance(r, Message)
    assert r.topic == "TopicTes\ufffd" and r.topic_raw == b"TopicTes\xff"
    assert r.properties["WAIT"] == "tru\ufffd"
    assert len(r.problems) == 2 and all("UTF-8" in p for p in r.problems)
    assert encode_message(r) == bytes(data)
