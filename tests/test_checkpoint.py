"""StoreCheckpoint: the golden checkpoint files decode to what the Java class reads, and round-trip."""

from __future__ import annotations

import pytest
from golden import STORES, expect, store_path
from hypothesis import given
from hypothesis import strategies as st

from formats.checkpoint import CHECKPOINT_FILE_SIZE, StoreCheckpoint, decode_checkpoint, encode_checkpoint
from formats.errors import FormatError

int64 = st.integers(-(2**63), 2**63 - 1)


@pytest.mark.parametrize("store", STORES)
def test_golden_checkpoint_fields(store: str) -> None:
    want = expect(store)["checkpoint"]
    data = (store_path(store) / "checkpoint").read_bytes()
    assert len(data) == want["fileSize"]
    cp = decode_checkpoint(data, "checkpoint")
    assert cp.physic_msg_timestamp == want["physicMsgTimestamp"]
    assert cp.logics_msg_timestamp == want["logicsMsgTimestamp"]
    assert cp.index_msg_timestamp == want["indexMsgTimestamp"]
    assert cp.min_timestamp == want["minTimestamp"]
    assert cp.min_timestamp_index == want["minTimestampIndex"]
    if "masterFlushedOffset" in want:
        assert cp.master_flushed_offset == want["masterFlushedOffset"]
        assert cp.confirm_phy_offset == want["confirmPhyOffset"]
    else:  # 4.9.8 writes nothing after byte 24
        assert data[24:] == bytes(CHECKPOINT_FILE_SIZE - 24)
    assert encode_checkpoint(cp) == data


def test_min_timestamp_never_negative() -> None:
    assert StoreCheckpoint(1000, 2000, 0).min_timestamp == 0
    assert StoreCheckpoint(10_000, 5_000, 100).min_timestamp == 2_000
    assert StoreCheckpoint(10_000, 5_000, 100).min_timestamp_index == 100


@given(int64, int64, int64, int64, int64)
def test_round_trip(physic: int, logics: int, index: int, flushed: int, confirm: int) -> None:
    cp = StoreCheckpoint(physic, logics, index, flushed, confirm)
    data = encode_checkpoint(cp)
    assert len(data) == CHECKPOINT_FILE_SIZE
    assert decode_checkpoint(data) == cp


# 40 random field bytes and a random start of the tail (generating 4096 random bytes is too slow)
pages = st.tuples(st.binary(min_size=40, max_size=40), st.binary(max_size=256)).map(
    lambda t: t[0] + t[1].ljust(CHECKPOINT_FILE_SIZE - 40, b"\0")
)


@given(pages)
def test_any_page_decodes_and_reencodes(data: bytes) -> None:
    assert encode_checkpoint(decode_checkpoint(data)) == data


@given(st.binary(max_size=5000).filter(lambda b: len(b) != CHECKPOINT_FILE_SIZE))
def test_wrong_size_is_a_format_error(data: bytes) -> None:
    with pytest.raises(FormatError):
        decode_checkpoint(data, "checkpoint")
