"""`store.ha.epochcache` against the real 5.3.3 EpochFileCache (tests/data/epochs: files it wrote, and the
truncation point its findConsistentPoint gives for each slave/master pair)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from formats.epoch import EpochFileIOError, decode_epoch_file
from formats.errors import FormatError
from store.ha.epochcache import consistent_point, load_epochs

CASES = Path(__file__).parent / "data" / "epochs"
EXPECT = json.loads((CASES / "expect.json").read_text())


@pytest.mark.parametrize("name", sorted(EXPECT))
def test_entries_and_the_consistent_point_are_the_real_ones(name: str) -> None:
    want = EXPECT[name]
    slave = load_epochs(CASES / "cases" / name / "slave", want["slaveMaxPhyOffset"])
    master = load_epochs(CASES / "cases" / name / "master", want["masterMaxPhyOffset"])
    for got, key in ((slave, "slave[epoch,start,end]"), (master, "master[epoch,start,end]")):
        rows = [[e.epoch, e.start_offset, end] for e, end in zip(got.entries, got.ends, strict=True)]
        assert rows == want[key]
    assert consistent_point(slave, master) == want["consistentPoint"]


def test_the_damaged_file_falls_back_to_its_bak() -> None:
    slave = CASES / "cases" / "crc-damaged-read-bak" / "slave"
    with pytest.raises(EpochFileIOError, match="CRC"):
        decode_epoch_file((slave / "epochFileCheckpoint").read_text())
    assert load_epochs(slave, 2500).source == "bak"


@pytest.mark.parametrize("text", ["", "x\n0\n", "1\n0\n1-x\n"])
def test_what_fails_the_brokers_start(text: str) -> None:
    with pytest.raises(FormatError):
        decode_epoch_file(text)
