"""Every registered fast twin reads the same values as its construct declaration (formats.twins)."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from construct import Container
from hypothesis import given, settings
from hypothesis import strategies as st

from formats.twins import TWIN_MODULES, registered, registered_parsers

TWINS = registered()
PARSERS = registered_parsers()


def _leaves(value) -> list:
    """The parsed fields in declaration order, nested containers (hosts) flattened."""
    if isinstance(value, Container):
        return [leaf for key, v in value.items() if not key.startswith("_") for leaf in _leaves(v)]
    return [value]


def test_registry_covers_every_twin_module():
    names = {t.name for t in TWINS}
    assert {"RecordPrelude", "ConsumeQueueUnit", "IndexEntry", "IndexSlot", "IndexHeader"} <= names
    assert {"ConsumeQueueUnit (numpy)", "IndexEntry (numpy)"} <= names
    assert {"TimerLogUnit (numpy)", "TimerWheelSlot (numpy)"} <= names
    assert sum(name.startswith("MessageRecord head") for name in names) == 4  # both host kinds, both hosts
    assert {"BatchConsumeQueueUnit", "BatchConsumeQueueUnit (numpy)"} <= names
    assert len(TWIN_MODULES) == 8  # + formats.batchconsumequeue, formats.pop_columns, formats.dledger
    assert {"DLedgerEntryHeader", "DLedgerIndexUnit", "DLedgerIndexUnit (numpy)"} <= names
    assert {"PopCheckPoint body", "AckMsg body", "BatchAckMsg body"} <= {p.name for p in PARSERS}


def test_a_wrong_twin_is_caught():
    """The comparison below sees a signedness slip: an unsigned twin of IndexSlot disagrees on 0xFF.."""
    slot = next(t for t in TWINS if t.name == "IndexSlot")
    raw = b"\xff\xff\xff\xfe"
    assert struct.Struct(">I").unpack(raw)[0] != _leaves(slot.declaration.parse(raw))[0]
    assert slot.fast.unpack(raw)[0] == _leaves(slot.declaration.parse(raw))[0] == -2


@pytest.mark.parametrize("twin", TWINS, ids=[t.name for t in TWINS])
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_twin_matches_its_declaration(twin, data):
    raw = data.draw(st.binary(min_size=twin.size, max_size=twin.size))
    expected = _leaves(twin.declaration.parse(raw))
    if isinstance(twin.fast, struct.Struct):
        assert twin.fast.size == twin.size
        assert list(twin.fast.unpack(raw)) == expected
        assert twin.fast.pack(*expected) == twin.declaration.build(twin.declaration.parse(raw)) == raw
    else:
        dtype = twin.fast()
        assert dtype.itemsize == twin.size
        row = np.frombuffer(raw, dtype=dtype)[0]
        assert [row[name].item() for name in dtype.names] == expected


# bodies near the form the broker writes: a JSON object of the revive bodies' keys with int, string, list
# and null values, or any bytes
_KEYS = ["ao", "aol", "bm", "bn", "c", "d", "it", "n", "pt", "q", "reviveTime", "ro", "rp", "so", "t"]
_VALUE = st.one_of(
    st.integers(-(2**64), 2**64).map(str),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=6).map(lambda t: '"' + t.replace('"', "") + '"'),
    st.lists(st.integers(-(2**33), 2**33), max_size=4).map(lambda v: "[" + ",".join(map(str, v)) + "]"),
    st.sampled_from(["null", "true", '"1"', "1.5", "[]", "{}"]),
)
_BODY = st.one_of(
    st.dictionaries(st.sampled_from(_KEYS), _VALUE, max_size=9).map(
        lambda d: ("{" + ",".join(f'"{k}":{v}' for k, v in sorted(d.items())) + "}").encode()
    ),
    st.binary(max_size=40),
)


@pytest.mark.parametrize("parser", PARSERS, ids=[p.name for p in PARSERS])
@settings(max_examples=150, deadline=None)
@given(body=_BODY)
def test_parser_twin_matches_its_reference(parser, body):
    assert parser.fast(body) == parser.reference(body)


@pytest.mark.parametrize("parser", PARSERS, ids=[p.name for p in PARSERS])
@pytest.mark.parametrize(
    "body",
    [b'{"d":[2147483648]}', b'{"d":[1,-2147483649]}', b'{"d":[-2147483648,2147483647]}', b'{"d":[]}'],
)
def test_parser_twin_agrees_on_int_list_bounds(parser, body):
    """An int list item past a Java int (hypothesis found the kernel taking it as an empty list)."""
    assert parser.fast(body) == parser.reference(body)
