"""`verify --tiered`: the tiered tree the real 5.3.3 plugin wrote is clean against its metadata, and each kind
of damage to it is named (store.checks.tiered)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from golden import run_mqtool

from mqtool.verify import verify_store
from store.storedir import Store

FIXTURE = Path(__file__).parent / "data" / "store-tiered"
QUEUE = "212d6b50_DefaultCluster/broker-a/TieredTopicA/0"


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    shutil.copytree(FIXTURE / "store", tmp_path / "store")
    shutil.copytree(FIXTURE / "tiered", tmp_path / "tiered")
    return tmp_path


def _tiered_problems(root: Path, deep: bool = False) -> tuple[dict, list[tuple[str, str, str, str]]]:
    st = Store.open(root / "store")
    st.tiered_path = root / "tiered"
    report = verify_store(st, deep=deep)
    rows = report.problem_rows()
    found = [
        (r["kind"], r["severity"], r["file"], r["detail"]) for r in rows if r["kind"].startswith("tiered")
    ]
    return report.summary["tiered"], found


def _segments(root: Path, kind: str) -> list[Path]:
    return sorted((root / "tiered" / QUEUE / kind).iterdir(), key=lambda p: int(p.name[-20:]))


def test_the_real_tree_is_clean(copy: Path) -> None:
    summary, rows = _tiered_problems(copy, deep=True)
    assert rows == []
    assert summary["queues"] == 3 and summary["segmentFiles"] == 27 and summary["cqUnits"] == 180


def test_verify_passes_with_the_tree_and_names_the_part_without_it(copy: Path) -> None:
    """Given the tree, verify reads what the broker's plugin serves: no layout_unsupported error; without
    it, the tiered part of the store is named as not read (the older segments are not seen)."""
    with_tree = run_mqtool(
        "verify", "-s", str(copy / "store"), "--tiered", str(copy / "tiered"), "-f", "json"
    )
    without = run_mqtool("verify", "-s", str(copy / "store"), "-f", "json")
    kinds = [
        {p["kind"] for p in json.loads(r.stdout)["problems"] if p["severity"] == "error"}
        for r in (with_tree, without)
    ]
    assert "layout_unsupported" not in kinds[0] and "layout_unsupported" in kinds[1]
    assert with_tree.returncode == (1 if kinds[0] else 0)


def test_a_missing_segment(copy: Path) -> None:
    victim = _segments(copy, "COMMIT_LOG")[1]
    victim.unlink()
    _, rows = _tiered_problems(copy, deep=True)
    assert [(r[0], r[1]) for r in rows if victim.name in r[2]] == [("tiered_segment_missing", "error")]
    assert any(r[0] == "tiered_cq_unit" for r in rows)  # --deep: its messages no longer read


def test_a_resized_segment_and_an_unlisted_one(copy: Path) -> None:
    first = _segments(copy, "CONSUME_QUEUE")[0]
    with open(first, "ab") as fh:
        fh.write(b"\0" * 20)
    stray = first.parent / ("0" * 28)  # a name offset2FileName never writes
    stray.write_bytes(b"\0" * 20)
    _, rows = _tiered_problems(copy)
    assert [(r[0], r[1]) for r in rows if first.name in r[2]] == [("tiered_segment_size", "error")]
    assert [(r[0], r[1]) for r in rows if stray.name in r[2]] == [("tiered_segment_unlisted", "warning")]


def test_a_gap_between_segments(copy: Path) -> None:
    meta = copy / "store" / "config" / "tieredStoreMetadata.json"
    text = meta.read_text()
    # the first COMMIT_LOG segment of TieredTopicA/0 said 100 bytes shorter than it is: a gap after it
    size = _segments(copy, "COMMIT_LOG")[0].stat().st_size
    entry = (
        '"path":"broker-a/TieredTopicA/0",\n\t\t\t\t"type":0,\n\t\t\t\t"baseOffset":0,\n\t\t\t\t"status":0,\n'
    )
    marker = entry + f'\t\t\t\t"size":{size},'
    assert text.count(marker) == 1
    meta.write_text(text.replace(marker, entry + f'\t\t\t\t"size":{size - 100},'))
    _, rows = _tiered_problems(copy)
    assert sorted((r[0], r[1]) for r in rows) == [
        ("tiered_segment_gap", "error"),
        ("tiered_segment_size", "error"),
    ]


def test_a_cq_unit_past_the_tiered_log(copy: Path) -> None:
    cq = _segments(copy, "CONSUME_QUEUE")[0]
    data = bytearray(cq.read_bytes())
    data[0:8] = (10**9).to_bytes(8, "big")
    cq.write_bytes(bytes(data))
    _, rows = _tiered_problems(copy)
    assert [(r[0], r[2]) for r in rows] == [("tiered_cq_unit", f"tiered/{QUEUE}/CONSUME_QUEUE/{cq.name}")]
    assert "queue offset 0" in rows[0][3]


def test_the_metadata_lost(copy: Path) -> None:
    for name in ("tieredStoreMetadata.json", "tieredStoreMetadata.json.bak"):
        (copy / "store" / "config" / name).unlink()
    summary, rows = _tiered_problems(copy)
    assert summary["metadataLoadedFrom"] == "none"
    assert rows[0][0] == "tiered_metadata" and "none of the 27 segment files" in rows[0][3]
    assert sum(r[0] == "tiered_segment_unlisted" for r in rows) == 27


def test_a_provider_mqtool_does_not_read_is_named(copy: Path) -> None:
    conf = copy / "broker.conf"
    conf.write_text(f"tieredStoreFilePath={copy / 'tiered'}\ntieredBackendServiceProvider=x.OssFileSegment\n")
    out = run_mqtool("--broker-config", str(conf), "verify", "-s", str(copy / "store"), "-f", "json")
    rows = [p for p in json.loads(out.stdout)["problems"] if p["kind"] == "tiered_layout"]
    assert len(rows) == 1 and "mqtool reads only the POSIX provider" in rows[0]["detail"]
