"""fastjson dialect: golden config files round-trip byte for byte, fastjson's own output, precise errors."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from formats.config.fastjson import (
    JAVA_LONG_MAX,
    JAVA_LONG_MIN,
    MAX_DEPTH,
    dumps,
    dumps_compact,
    dumps_pretty,
    format_double,
    is_pretty,
    line_col,
    parse,
    quote,
)
from formats.errors import FormatError

DATA = Path(__file__).parent / "data"
# config/timercheck is the 5.x timer store's binary checkpoint (TimerCheckpoint), not a JSON file
CONFIG_FILES = sorted(p for p in DATA.glob("*/config/*") if p.is_file() and p.name != "timercheck")


def read(path: Path) -> str:
    return path.read_bytes().decode("utf-8")


def test_golden_config_files_exist() -> None:
    names = {p.name for p in CONFIG_FILES}
    assert {"consumerOffset.json.bak", "transactionMetrics", "messageRequestMode.json"} <= names


@pytest.mark.parametrize("path", CONFIG_FILES, ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_golden_file_round_trips_byte_for_byte(path: Path) -> None:
    text = read(path)
    value = parse(text, file=str(path))
    if is_pretty(text):
        assert dumps_pretty(value) == text
    else:
        # transactionMetrics: TransactionMetrics.persist() writes encode(false), i.e. compact JSON.
        assert dumps_compact(value) == text
    assert dumps(value, pretty=is_pretty(text)) == text


def test_bare_integer_keys_parse_as_int_and_quoted_keys_stay_str() -> None:
    value = parse(read(DATA / "store-a/config/consumerOffset.json"))
    queues = value["offsetTable"]["TopicTest@groupA"]
    assert all(type(k) is int for k in queues)
    assert all(type(v) is int for v in queues.values())
    # groupTopicMap values are Java Sets: written inline, parsed as tuples
    assert all(isinstance(v, tuple) for v in value["groupTopicMap"].values())
    assert parse('{"0":1}') == {"0": 1}
    assert parse("{0:1}") == {0: 1}
    assert dumps_pretty(parse('{"0":1}')) == '{\n\t"0":1\n}'
    assert dumps_pretty(parse("{0:1}")) == "{0:1\n}"


def test_compact_slave_style_input_parses() -> None:
    text = read(DATA / "store-a/config/transactionMetrics")
    value = parse(text)
    assert not is_pretty(text)
    assert set(value) == {"dataVersion", "transactionCount"}
    assert parse('{"offsetTable":{1:4,2:2}}') == {"offsetTable": {1: 4, 2: 2}}


# Output of the real fastjson 1.2.83 (compiled from its git tag), JSON.toJSONString(bean, true) and
# (bean, false), for a bean with an int[] (arr), doubles, an empty List/Map/Set, Map<Integer,Long> (im),
# Map<Long,Bean> (lm), List<Long>, Map<String,Map<Integer,Long>>, a string of special characters,
# List<Bean> and Set<Bean>.
FASTJSON_PRETTY = (
    '{\n\t"arr":[3,50,97],\n\t"d":1.5,\n\t"d2":1.0E10,\n\t"d3":1.0E-4,\n\t"emptyList":[],\n\t"emptyMap":{},'
    '\n\t"emptySet":[],\n\t"f":1.1,\n\t"im":{0:5,-1:12345678901\n\t},\n\t"lm":{7:{\n\t\t\t"expression":"*",'
    '\n\t\t\t"topic":"T"\n\t\t}\n\t},\n\t"longs":[\n\t\t1,\n\t\t2\n\t],\n\t"nested":{\n\t\t"k":{1:2\n\t\t},'
    '\n\t\t"e":{}\n\t},\n\t"s":"a\\"b\\\\c/d\\t\\n\\r\\b\\f\\u0001\\u0007\\u000B\\u001F\\u007F\\u0080\\u009F'
    '\xa0é中\\u2028\\u2029<>()😀",\n\t"subList":[\n\t\t{\n\t\t\t"expression":"*",\n\t\t\t"topic":"T"\n\t\t}'
    '\n\t],\n\t"subs":[{\n\t\t"expression":"*",\n\t\t"topic":"T"\n\t},{\n\t\t"expression":"*",\n\t\t"topic":"T"'
    "\n\t}]\n}"
)
FASTJSON_COMPACT = (
    '{"arr":[3,50,97],"d":1.5,"d2":1.0E10,"d3":1.0E-4,"emptyList":[],"emptyMap":{},"emptySet":[],"f":1.1,'
    '"im":{0:5,-1:12345678901},"lm":{7:{"expression":"*","topic":"T"}},"longs":[1,2],"nested":{"k":{1:2},'
    '"e":{}},"s":"a\\"b\\\\c/d\\t\\n\\r\\b\\f\\u0001\\u0007\\u000B\\u001F\\u007F\\u0080\\u009F\xa0é中\\u2028'
    '\\u2029<>()😀","subList":[{"expression":"*","topic":"T"}],"subs":[{"expression":"*","topic":"T"},'
    '{"expression":"*","topic":"T"}]}'
)


def test_real_fastjson_output_round_trips() -> None:
    value = parse(FASTJSON_PRETTY)
    assert dumps_pretty(value) == FASTJSON_PRETTY
    assert dumps_compact(value) == FASTJSON_COMPACT
    assert dumps_compact(parse(FASTJSON_COMPACT)) == FASTJSON_COMPACT
    assert value["longs"] == [1, 2] and value["arr"] == (3, 50, 97)
    assert value["subs"][0] == {"expression": "*", "topic": "T"}
    assert value["s"].startswith('a"b\\c/d\t\n\r\b\f\x01\x07\x0b\x1f\x7f\x80\x9f')


def test_string_escapes_and_doubles_as_fastjson_writes_them() -> None:
    value = parse(FASTJSON_PRETTY)
    assert quote(value["s"]) in FASTJSON_PRETTY
    assert format_double(value["d2"]) == "1.0E10"
    assert format_double(value["d3"]) == "1.0E-4"
    assert parse('"\\ud83d\\ude00\\u00e9\\/"') == "😀é/"


def test_duplicate_keys_last_wins_and_bom_is_skipped() -> None:
    assert parse('{"a":1,"a":2}') == {"a": 2}
    assert parse('\ufeff{"a":1}') == {"a": 1}


def test_positions_point_at_values() -> None:
    text = read(DATA / "store-a/config/consumerOffset.json")
    positions: dict = {}
    parse(text, positions=positions)
    offset = positions[("offsetTable", "TopicTest@groupA", 0)]
    assert text[offset : offset + 3] == "231"
    assert text[positions[("dataVersion",)]] == "{"


@pytest.mark.parametrize(
    ("text", "offset", "words"),
    [
        ("", 0, "empty document"),
        (" \n\t", 3, "empty document"),
        ('{"a":1', 6, "not closed"),
        ('{"offsetTable":{"t@g":{0:1', 26, "not closed"),
        ('{"a":1}x', 7, "after the end"),
        ('{"a":1} {}', 8, "after the end"),
        ('{"a":tru}', 5, "unexpected word 'tru'"),
        ('{"a":01}', 5, "leading zeros"),
        ('{"a":1.}', 5, "malformed number"),
        ('{"a":-}', 5, "malformed number"),
        ('{"a":9223372036854775808}', 5, "overflows Java long"),
        ('{"a":-9223372036854775809}', 5, "overflows Java long"),
        ("{1.5:2}", 1, "must be an integer"),
        ("{99999999999999999999:2}", 1, "overflows Java long"),
        ("{a:1}", 1, "expected a quoted or integer object key"),
        ('{"a" 1}', 5, "expected ':'"),
        ('{"a":1 "b":2}', 7, "expected ',' or '}'"),
        ('{"a":1,}', 7, "trailing comma"),
        ("[1,]", 3, "trailing comma"),
        ("[1 2]", 3, "expected ',' or ']'"),
        ('{"a":"\\x"}', 6, "invalid escape"),
        ('{"a":"\\u12"}', 6, "four hex digits"),
        ('{"a":"abc', 9, "string opened at line 1, column 6 is not closed"),
        ('{"a":1e999}', 5, "range of a Java double"),
        ('{\n\t"a":@\n}', 7, "line 2, column 6"),
        ("'a'", 0, "expected a value"),
    ],
)
def test_errors_carry_offset_and_line_column(text: str, offset: int, words: str) -> None:
    with pytest.raises(FormatError) as info:
        parse(text, file="x.json")
    err = info.value
    assert err.offset == offset
    assert err.file == "x.json"
    assert words in err.message
    line, col = line_col(text, offset)
    assert f"line {line}, column {col}" in err.message


def test_java_long_bounds_are_accepted() -> None:
    assert parse(f"[{JAVA_LONG_MIN},{JAVA_LONG_MAX}]") == (JAVA_LONG_MIN, JAVA_LONG_MAX)
    with pytest.raises(FormatError, match="overflows Java long"):
        dumps({"a": JAVA_LONG_MAX + 1})


def test_nesting_is_bounded() -> None:
    ok = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    parse(ok)
    with pytest.raises(FormatError, match=f"deeper than {MAX_DEPTH}") as info:
        parse("[" * 100_000)
    assert info.value.offset == MAX_DEPTH
    with pytest.raises(FormatError, match="deeper"):
        parse('{"a":' * (MAX_DEPTH + 1) + "1" + "}" * (MAX_DEPTH + 1))


def test_writer_rejects_what_fastjson_cannot_write() -> None:
    with pytest.raises(FormatError):
        dumps({"a": math.nan})
    with pytest.raises(FormatError):
        dumps({1.5: 1})
    with pytest.raises(FormatError):
        dumps({"a": object()})


# ---------------------------------------------------------------------------------------------------
# Property tests

_keys = st.one_of(st.text(max_size=8), st.integers(JAVA_LONG_MIN, JAVA_LONG_MAX))
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(JAVA_LONG_MIN, JAVA_LONG_MAX),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
)
_values = st.recursive(
    _scalars,
    lambda children: st.one_of(
        st.dictionaries(_keys, children, max_size=4),
        st.lists(children, max_size=4),
        st.lists(children, max_size=4).map(tuple),
    ),
    max_leaves=25,
)


def _normalised(value: object, compact: bool) -> object:
    """What a parse gives back: empty arrays as [], and every array inline in compact output."""
    if isinstance(value, dict):
        return {k: _normalised(v, compact) for k, v in value.items()}
    if isinstance(value, list | tuple):
        items = [_normalised(v, compact) for v in value]
        if not items:
            return []
        return tuple(items) if compact or isinstance(value, tuple) else items
    return value


def _same(a: object, b: object) -> bool:
    """Equality that also tells -0.0 from 0.0 and list from tuple."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        assert isinstance(b, dict)
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        assert isinstance(b, list | tuple)
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return a == b and math.copysign(1, a) == math.copysign(1, b)  # type: ignore[arg-type]
    return a == b


@settings(max_examples=300, deadline=None)
@given(_values)
def test_random_values_round_trip(value: object) -> None:
    for pretty in (True, False):
        text = dumps(value, pretty=pretty)
        back = parse(text)
        assert _same(back, _normalised(value, compact=not pretty))
        assert dumps(back, pretty=pretty) == text


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from('{}[]:,"\\ \n\t-0123456789.eE+tfalsenulu@abc\x01é'), max_size=40))
def test_random_garbage_raises_only_format_error(text: str) -> None:
    try:
        parse(text)
    except FormatError as err:
        assert err.offset is not None and 0 <= err.offset <= len(text)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_mutated_golden_files_raise_only_format_error(data: st.DataObject) -> None:
    text = read(data.draw(st.sampled_from(CONFIG_FILES)))
    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, min(len(text), start + 8)))
    text = text[:start] + data.draw(st.text(max_size=4)) + text[end:]
    try:
        parse(text)
    except FormatError as err:
        assert err.offset is not None and 0 <= err.offset <= len(text)
