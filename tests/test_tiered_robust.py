"""Damaged tiered trees and metadata files (copies of the real plugin's fixture): every --tiered read command
ends with exit 0, or exit 1 and one error line naming a file - never a traceback or a hang (the fuzz
harness's judge)."""

from __future__ import annotations

import os
import random
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.fuzz.harness import Outcome, Verdict, judge, run_cli

FIXTURE = Path(__file__).parent / "data" / "store-tiered"
CLUSTER = "212d6b50_DefaultCluster/broker-a"
META = "store/config/tieredStoreMetadata.json"


def _files(root: Path, part: str) -> list[Path]:
    return sorted(p for p in (root / "tiered" / CLUSTER).rglob("*") if p.is_file() and f"/{part}/" in str(p))


def _truncate(root: Path, part: str, rnd: random.Random) -> None:
    files = _files(root, part)
    for f in rnd.sample(files, min(3, len(files))):
        size = f.stat().st_size
        os.truncate(f, rnd.randrange(0, max(size, 1)))


def _garble(root: Path, part: str, rnd: random.Random) -> None:
    files = _files(root, part)
    for f in rnd.sample(files, min(3, len(files))):
        data = bytearray(f.read_bytes())
        for _ in range(8):
            at = rnd.randrange(len(data))
            data[at] = rnd.randrange(256)
        f.write_bytes(bytes(data))


def _cq_units(root: Path, rnd: random.Random) -> None:
    f = _files(root, "CONSUME_QUEUE")[0]
    data = bytearray(f.read_bytes())
    data[0:8] = (-5).to_bytes(8, "big", signed=True)  # a negative offset
    data[28:32] = (-1).to_bytes(4, "big", signed=True)  # a negative size
    data[40:48] = (2**62).to_bytes(8, "big")  # far past the log
    f.write_bytes(bytes(data))


def _metadata(edit):
    def damage(root: Path, rnd: random.Random) -> None:
        for name in (META, META + ".bak"):
            p = root / name
            p.write_text(edit(p.read_text()))

    return damage


DAMAGES = {
    "truncated commit log": lambda r, rnd: _truncate(r, "COMMIT_LOG", rnd),
    "truncated consume queue": lambda r, rnd: _truncate(r, "CONSUME_QUEUE", rnd),
    "truncated index": lambda r, rnd: _truncate(r, "INDEX", rnd),
    "garbled commit log": lambda r, rnd: _garble(r, "COMMIT_LOG", rnd),
    "garbled index": lambda r, rnd: _garble(r, "INDEX", rnd),
    "bad units": _cq_units,
    "segments gone": lambda r, rnd: shutil.rmtree(r / "tiered" / CLUSTER / "TieredTopicA"),
    "metadata not json": _metadata(lambda t: t[: len(t) // 2]),
    "metadata huge size": _metadata(lambda t: t.replace('"size":', '"size":9', 3)),
    "metadata negative offsets": _metadata(lambda t: t.replace('"baseOffset":', '"baseOffset":-', 5)),
    "metadata path elsewhere": _metadata(
        lambda t: t.replace('"path":"broker-a/TieredTopicB/0"', '"path":"../../x"', 1)
    ),
    "metadata wrong types": _metadata(lambda t: t.replace('"topicId":1', '"topicId":"one"', 1)),
    # found by the long fuzz run: no COMMIT_LOG segment listed at all, and the error named no file
    "metadata lists no commit log": _metadata(lambda t: t.replace('"commitLogFileSegmentTable"', '"zz"', 1)),
}

COMMANDS = [
    ["info"],
    ["query", "offset", "TieredTopicA", "0", "0", "-n", "50"],
    ["query", "offset", "TieredTopicB", "0", "3"],
    ["query", "time", "TieredTopicA", "-b", "0", "-e", "now", "--max", "0"],
    ["query", "key", "TieredTopicA", "shared-0"],
    ["query", "id", "A08158AD978659080000000000000000", "--topic", "TieredTopicB"],
    ["dump", "cq", "TieredTopicA", "1"],
    ["verify", "--deep"],
    ["export", "--crc"],  # to a directory beside the copy (judged_runs)
]


def judged_runs(
    root: Path, fmt: Callable[[], str] = lambda: "json"
) -> Iterator[tuple[list[str], Outcome, Verdict]]:
    """Every command of COMMANDS on the (damaged) fixture copy at `root`, with a broker.conf beside it,
    each judged by the fuzz harness's `judge`."""
    conf = root / "broker.conf"
    conf.write_text("brokerName=broker-a\ntieredStoreIndexFileMaxHashSlotNum=64\n")
    for argv in COMMANDS:
        if argv[0] == "export":
            argv = [*argv, "-o", str(root.parent / f"{root.name}-export"), "--force"]
        full = [
            "--broker-config",
            str(conf),
            *argv,
            "-s",
            str(root / "store"),
            "--tiered",
            str(root / "tiered"),
        ]
        name = "verify" if argv[0] == "verify" else " ".join(argv[:2])
        outcome = run_cli([*full, "-f", fmt()], timeout=60, name=name)
        yield argv, outcome, judge(outcome, str(root))


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_damaged_tiered_trees_end_cleanly(tmp_path: Path, damage: str) -> None:
    root = tmp_path / "copy"
    shutil.copytree(FIXTURE, root)
    (root / "expect.json").unlink()
    DAMAGES[damage](root, random.Random(damage))
    failures = [
        (argv, verdict.failure, outcome.stderr[-600:], outcome.trace[-1500:])
        for argv, outcome, verdict in judged_runs(root)
        if verdict.failure
    ]
    assert not failures, failures


def test_an_unreadable_tiered_message_is_a_note_of_query_key(tmp_path: Path) -> None:
    root = tmp_path / "copy"
    shutil.copytree(FIXTURE, root)
    _garble(root, "COMMIT_LOG", random.Random("garbled commit log"))
    conf = root / "broker.conf"
    conf.write_text("brokerName=broker-a\ntieredStoreIndexFileMaxHashSlotNum=64\n")
    argv = [
        "--broker-config",
        str(conf),
        "query",
        "key",
        "TieredTopicA",
        "shared-0",
        "-s",
        str(root / "store"),
    ]
    outcome = run_cli([*argv, "--tiered", str(root / "tiered"), "-f", "json"], timeout=60, name="query key")
    assert outcome.code == 0 and "mqtool: note: tiered store: " in outcome.stderr
    assert "tiered/" + CLUSTER in outcome.stderr  # the segment file is named
