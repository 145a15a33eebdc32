"""BatchConsumeQueue checks (BatchCQ topics): units against the records they point at, base offsets.

Inputs: one queue's units (`store.queue.batchconsumequeue.native_bcq_dtype`), the `RecordIndex`, and per unit
what the dispatch takes from its record (`store.rebuild.batchcq.batch_fields`: INNER_BASE and INNER_NUM
when both are set, else the record's queue offset and 1; -2 where the broker's check refuses them, -1
where the record was not read), its INNER_NUM and the number of messages in its inner-batch body (-1
when absent, not an inner batch or unreadable).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from formats.structs import INNER_BATCH_FLAG
from store.checks.problems import ProblemList
from store.checks.records import RecordIndex


def _locators(units: np.ndarray, topic: str, queue_id: int, file_size: int) -> tuple[Any, Any]:
    """A unit's (file, offset in it) and its description, for the problem rows."""
    where = f"{topic}/{queue_id}"
    prefix = f"batchconsumequeue/{where}/"

    def locate(i: int) -> tuple[str, int]:
        position = int(units["position"][i])
        start = position // file_size * file_size
        return f"{prefix}{start:020d}", position - start

    def base_detail(i: int) -> str:
        u = units[i]
        return f"{where}: unit at base offset {int(u['msgBaseOffset'])} (phy {int(u['phyOffset'])})"

    return locate, base_detail


def check_batch_offset_gaps(
    units: np.ndarray, problems: ProblemList, *, topic: str, queue_id: int, file_size: int
) -> None:
    """Base offsets follow each other: each unit of the queue starts where the one before ends."""
    if len(units) < 2:
        return
    locate, base_detail = _locators(units, topic, queue_id, file_size)
    ends = units["msgBaseOffset"][:-1].astype(np.int64) + units["batchSize"][:-1].astype(np.int64)
    for j in np.flatnonzero(units["msgBaseOffset"][1:] != ends).tolist():
        problems.add(
            "bcq_offset_gap",
            *locate(j + 1),
            f"{base_detail(j + 1)}: the unit before ends at queue offset {int(ends[j])}",
        )


def check_batch_consume_queue(
    units: np.ndarray,
    records: RecordIndex,
    problems: ProblemList,
    *,
    topic: str,
    queue_id: int,
    want_base: np.ndarray,
    want_batch: np.ndarray,
    inner_num: np.ndarray,
    body_count: np.ndarray,
    file_size: int,
    commitlog_min: int,
    valid_end: int,
    offset_gaps: bool = True,
) -> np.ndarray:
    """Problems of one BatchCQ queue; returns the record rows its units hit. With `offset_gaps=False`
    the base offsets are not compared unit to unit (`units` is part of a queue: the audit's executors)."""
    where = f"{topic}/{queue_id}"
    locate, base_detail = _locators(units, topic, queue_id, file_size)

    phy = units["phyOffset"].astype(np.int64)
    expired = phy < commitlog_min
    past = phy >= valid_end
    for i in np.flatnonzero(past).tolist():
        problems.add(
            "bcq_points_outside", *locate(i), f"{base_detail(i)} points past the valid end {valid_end}"
        )
    live = np.flatnonzero(~expired & ~past)
    idx, found = records.find(phy[live])
    for i in live[~found].tolist():
        problems.add("bcq_not_record_start", *locate(i), f"{base_detail(i)}: no record starts there")
    hit_units, rows = live[found], idx[found]
    for i, r in zip(hit_units.tolist(), rows.tolist(), strict=True):
        u = units[i]
        wrong = []
        if records.topics[records.topic[r]] != topic or int(records.queue_id[r]) != queue_id:
            wrong.append(f"record is {records.topics[records.topic[r]]}/{int(records.queue_id[r])}")
        if int(u["size"]) != int(records.size[r]):
            wrong.append(f"size {int(u['size'])} != record's {int(records.size[r])}")
        if int(u["storeTime"]) != int(records.store_ts[r]):
            wrong.append(f"store time {int(u['storeTime'])} != record's {int(records.store_ts[r])}")
        if int(u["tagsCode"]) != int(records.tags_code[r]):
            wrong.append(f"tags code {int(u['tagsCode'])} != record's {int(records.tags_code[r])}")
        if want_base[i] == -2:
            wrong.append("the broker's check refuses the record's INNER_BASE/INNER_NUM (not numbers)")
        elif want_base[i] >= -1 and want_batch[i] != -1:
            if int(u["msgBaseOffset"]) != int(want_base[i]):
                wrong.append(
                    f"base offset {int(u['msgBaseOffset'])} != {int(want_base[i])} the dispatch takes"
                )
            if int(u["batchSize"]) != int(want_batch[i]):
                wrong.append(f"batch size {int(u['batchSize'])} != {int(want_batch[i])} the dispatch takes")
        if wrong:
            problems.add("bcq_unit_mismatch", *locate(i), f"{base_detail(i)}: " + "; ".join(wrong))
        inner = int(records.sys_flag[r]) & INNER_BATCH_FLAG != 0
        if inner and inner_num[i] >= 0 and body_count[i] != inner_num[i]:
            counted = "unreadable" if body_count[i] < 0 else f"holds {int(body_count[i])} messages"
            problems.add(
                "bcq_inner_num",
                *locate(i),
                f"{base_detail(i)}: INNER_NUM is {int(inner_num[i])} but the inner-batch body {counted}",
            )
    if offset_gaps:
        check_batch_offset_gaps(units, problems, topic=topic, queue_id=queue_id, file_size=file_size)
    if expired.any():
        problems.add(
            "cq_expired_units",
            *locate(int(np.flatnonzero(expired)[0])),
            f"{where}: {int(expired.sum())} BatchCQ unit(s) point below the commitlog's min offset "
            f"{commitlog_min} (deleted by retention)",
        )
    return rows


__all__ = ["check_batch_consume_queue", "check_batch_offset_gaps"]
