"""Every registered fast twin reads the same values as its construct declaration (formats.twins)."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from construct import Container
from hypothesis import given, settings
from hypothesis import strategies as st

from formats.twins import TWIN_MODULES, registered

TWINS = registered()


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
    assert len(TWIN_MODULES) == 6


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
