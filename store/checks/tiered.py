"""Checks of a tiered tree against its metadata (`verify --tiered`), as the 5.3.3 plugin loads and reads it.

The plugin sees a segment only through config/tieredStoreMetadata.json (`FlatAppendFile.recover`), takes
each segment's committed size from there except the last one's, which it takes from the file
(`recoverFileSize`), and reads a range of a file by the segment whose base offset is the largest not above
it (`FlatAppendFile.readAsync`). So:

- `tiered_layout` (error): a tree mqtool cannot place or does not read (another provider, no cluster or
  broker directory to match): named, nothing of it checked.
- `tiered_metadata` (error): no usable metadata file while the tree holds segment files (the broker
  recovers no flat file and serves none of them, apache/rocketmq #7345), or a metadata file it cannot
  decode; loaded from `.bak` is a warning.
- `tiered_segment_missing` (error): a listed segment without its file (the POSIX provider recreates it
  empty on start; reads in it fail).
- `tiered_segment_size` (error): a segment file of another size than the metadata's committed size (the
  last segment: only a file shorter than the metadata says is a problem, a warning; the broker takes the
  file's size). A longer file than the metadata says holds bytes the broker does not read.
- `tiered_segment_gap` (error): a segment whose base offset is not where the previous one ends (the
  broker's reads at the boundary come back short or from the wrong segment).
- `tiered_segment_unlisted` (warning): a file in a queue's COMMIT_LOG / CONSUME_QUEUE / INDEX directory
  that the metadata does not list (invisible to the broker), or whose name offset2FileName never writes.
- `tiered_cq_unit` (error): a tiered ConsumeQueue unit whose message would lie outside the queue's tiered
  COMMIT_LOG [min, commit offset), or of size <= 0; with `deep`, one whose message does not decode or
  carries another QUEUEOFFSET.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from formats.consumequeue import units_view
from formats.errors import MqtoolError
from formats.tiered import SegmentType, queue_path, segment_base_offset, segment_file_name
from store.checks.problems import ProblemList
from store.io.filereads import read_range
from store.storedir import Store
from store.tiered.flatfile import TieredQueue


def tree_path(tree: Path, path: Path) -> str:
    """How problems name a file of the tiered tree: `tiered/<path in the tree>`."""
    try:
        return str(Path("tiered") / path.relative_to(tree))
    except ValueError:
        return str(path)


def _segment_files(broker_dir: Path) -> dict[Path, None]:
    """Every file under <broker>/<topic>/<queue>/<TYPE>/."""
    found: dict[Path, None] = {}
    for kind in SegmentType:
        for f in sorted(broker_dir.glob(f"*/*/{kind.name}/*")):
            if f.is_file():
                found[f] = None
    return found


def _check_chain(tree: Path, segments, problems: ProblemList) -> None:
    for i, seg in enumerate(segments):
        where = tree_path(tree, seg.path)
        last = i == len(segments) - 1
        name = f"{seg.meta.type.name} segment {seg.base_offset} of {seg.meta.path}"
        if seg.file_size is None:
            problems.add("tiered_segment_missing", where, None, f"{name} is in the metadata, its file is not")
        elif not last and seg.file_size != seg.meta.size:
            detail = f"{name}: file of {seg.file_size} bytes, the metadata says {seg.meta.size} committed"
            problems.add("tiered_segment_size", where, None, detail)
        elif last and seg.file_size < seg.meta.size:
            detail = (
                f"{name} (the last): file of {seg.file_size} bytes, the metadata says {seg.meta.size}; "
                "the broker takes the file's size"
            )
            problems.add("tiered_segment_size", where, None, detail, severity="warning")
        if i and seg.base_offset != segments[i - 1].commit_offset:
            prev = segments[i - 1]
            detail = f"{name}: the previous segment ({prev.base_offset}) ends at {prev.commit_offset}"
            problems.add("tiered_segment_gap", where, None, detail)


def _check_units(tree: Path, queue: TieredQueue, problems: ProblemList, deep: bool) -> int:
    log = queue.commit_log
    lo, hi = log.min_offset, log.commit_offset
    checked = 0
    for seg in queue.consume_queue.segments:
        if seg.file_size is None or seg.commit_position <= 0:
            continue
        data = read_range(seg.path, 0, seg.commit_position - seg.commit_position % 20)
        units = units_view(data, str(seg.path))
        phy, size = units["phyOffset"].astype(np.int64), units["size"].astype(np.int64)
        bad = np.flatnonzero((size <= 0) | (phy < lo) | (phy + size > hi))
        for i in bad[:100].tolist():
            detail = (
                f"queue offset {(seg.base_offset // 20) + i}: unit ({int(phy[i])}, {int(size[i])}) lies "
                f"outside the tiered COMMIT_LOG [{lo}, {hi})"
            )
            problems.add("tiered_cq_unit", tree_path(tree, seg.path), i * 20, detail)
        checked += len(units)
        if deep:
            first = seg.base_offset // 20
            skip = set(bad.tolist())
            for i in range(len(units)):
                if i in skip or first + i < queue.min_offset:
                    continue
                try:
                    queue.message(first + i)
                except MqtoolError as exc:
                    problems.add(
                        "tiered_cq_unit",
                        tree_path(tree, seg.path),
                        i * 20,
                        f"queue offset {first + i}: {exc}",
                    )
    return checked


def check_tiered(store: Store, problems: ProblemList, deep: bool = False) -> dict[str, Any] | None:
    """The checks above; the summary for verify's report, None without a tiered tree."""
    try:
        tiered = store.tiered
    except MqtoolError as exc:
        problems.add("tiered_layout", exc.file, None, exc.message)
        return {"layout": exc.message}
    if tiered is None:
        return None
    settings = tiered.settings
    tree = settings.root
    try:
        loaded = tiered.loaded
    except MqtoolError as exc:
        problems.add("tiered_metadata", str(tiered.metadata_file.path), exc.offset, exc.message)
        return {"tree": str(tree), "metadata": "unreadable"}
    on_disk = _segment_files(settings.broker_dir)
    meta_file = str(Path("config") / tiered.metadata_file.path.name)
    if loaded.source == "none" and on_disk:
        count = len(on_disk)
        detail = (
            f"{loaded.reason}: the broker sees none of the {count} segment files under {settings.broker_dir}"
        )
        problems.add("tiered_metadata", meta_file, None, detail)
    elif loaded.source == "bak":
        problems.add("tiered_metadata", meta_file, None, loaded.reason, severity="warning")
    listed: set[Path] = set()
    units = 0
    for topic, queue_id in tiered.queues():
        queue = tiered.queue(topic, queue_id)
        for appended in (queue.commit_log, queue.consume_queue):
            _check_chain(tree, appended.segments, problems)
            listed.update(s.path for s in appended.segments)
        units += _check_units(tree, queue, problems, deep)
    index = tiered.segments(SegmentType.INDEX, queue_path(settings.broker, "rmq_sys_INDEX", 0))
    _check_chain(tree, index, problems)
    listed.update(s.path for s in index)
    for f in on_disk:
        if f in listed:
            continue
        base = segment_base_offset(f.name)
        why = "not in the metadata: the broker does not read it"
        if base is None:
            why = "a name offset2FileName never writes, and " + why
        elif segment_file_name(base) != f.name:
            why = "a misnamed segment, and " + why
        problems.add("tiered_segment_unlisted", tree_path(tree, f), None, why)
    return {
        **settings.as_dict(),
        "metadataLoadedFrom": loaded.source,
        "queues": len(tiered.queues()),
        "segmentFiles": len(on_disk),
        "cqUnits": units,
    }
