"""Duplicate keys: UNIQ_KEYs (producer retries) and KEYS entries in more than one message of a topic.

Executors hash topic NUL key with FNV-1a 64 (`hash_strings`, vectorised over Arrow strings) and send each
split's distinct hashes as one array per hash bucket (`dup_uniq_rows`, `dup_key_rows`: DUP_UNIQ / DUP_KEY
partial rows); Spark groups the arrays by (store, kind, bucket) and `merge_duplicates` (a grouped Arrow
UDF, `duplicates_frame`) merges one bucket with numpy; the driver names the top groups by reading their
first record back from the commitlog and checking its key against the hash (`duplicates_section`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from mqtool.audit.schema import DUP_KEY, DUP_UNIQ, SplitTask, constant, partial_rows
from store.io.filereads import map_readonly
from store.io.remote import placeholder

if TYPE_CHECKING:
    from mqtool.audit.plan import StorePlan

# --- FNV-1a 64 over Arrow strings, vectorised ------------------------------------------------------

FNV_OFFSET = np.uint64(0xCBF29CE484222325)
FNV_PRIME = np.uint64(0x100000001B3)


def fnv1a64(data: bytes, h: int = int(FNV_OFFSET)) -> int:
    """FNV-1a 64 of `data` continuing from state `h` (the pure-Python reference of `hash_strings`)."""
    for byte in data:
        h = ((h ^ byte) * int(FNV_PRIME)) & 0xFFFFFFFFFFFFFFFF
    return h


def key_hash(topic: str, key: str) -> int:
    """The signed 64-bit hash the executors compute for (topic, key): FNV-1a 64 of topic NUL key."""
    h = fnv1a64(topic.encode("utf-8") + b"\x00" + key.encode("utf-8"))
    return h - (1 << 64) if h >= 1 << 63 else h


def hash_strings(arr: pa.Array, seed: np.ndarray | None = None) -> np.ndarray:
    """FNV-1a 64 (uint64) of every value of a non-null string array, each continuing from `seed[i]`.

    Strings are processed longest first, one byte position at a time over the rows still that long,
    so the cost is one vectorised step per byte of the longest string.
    """
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if arr.type == pa.large_string():
        arr = arr.cast(pa.string())
    n = len(arr)
    h = np.full(n, FNV_OFFSET, dtype=np.uint64) if seed is None else seed.astype(np.uint64, copy=True)
    if n == 0:
        return h
    bufs = arr.buffers()
    offsets = np.frombuffer(bufs[1], dtype=np.int32)[arr.offset : arr.offset + n + 1].astype(np.int64)
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    lengths = np.diff(offsets)
    order = np.argsort(-lengths, kind="stable")
    starts = offsets[:-1][order]
    sorted_len = lengths[order]
    hs = h[order]
    longest = int(sorted_len[0])
    active = np.searchsorted(-sorted_len, -np.arange(longest), side="left")
    with np.errstate(over="ignore"):
        for j in range(longest):
            m = int(active[j])
            hs[:m] ^= data[starts[:m] + j]
            hs[:m] *= FNV_PRIME
    h[order] = hs
    return h


def topic_seeds(dictionary: pa.Array) -> np.ndarray:
    """Per topic dictionary entry: the FNV state after `topic NUL`."""
    h = hash_strings(dictionary.fill_null(""))
    with np.errstate(over="ignore"):
        return (h ^ np.uint64(0)) * FNV_PRIME


# --- the split's hash arrays (executors) ---------------------------------------------------------

DUP_BUCKETS = 16  # rows per split and kind: the hashes' top 4 bits; Spark shuffles whole arrays by bucket


def group_hashes(h: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(hash, messages, first phy, last phy) per distinct hash, sorted by hash; a message counts once."""
    order = np.lexsort((p, h))
    h, p = h[order], p[order]
    distinct = np.ones(len(h), dtype=bool)
    distinct[1:] = (h[1:] != h[:-1]) | (p[1:] != p[:-1])
    h, p = h[distinct], p[distinct]
    starts = np.flatnonzero(np.r_[True, h[1:] != h[:-1]])
    ends = np.r_[starts[1:], len(h)]
    return h[starts], ends - starts, p[starts], p[ends - 1]


def _bucket_of(h: np.ndarray) -> np.ndarray:
    return (h.view(np.uint64) >> np.uint64(60)).astype(np.int64)


def _dup_row(task: SplitTask, kind: int, hashes: np.ndarray, phy: np.ndarray) -> pa.RecordBatch | None:
    if hashes.size == 0:
        return None
    h, counts, firsts, lasts = group_hashes(hashes.view(np.int64), phy.astype(np.int64))
    buckets = _bucket_of(h)
    order = np.argsort(buckets, kind="stable")
    present, sizes = np.unique(buckets, return_counts=True)
    offsets = np.r_[0, np.cumsum(sizes)].astype(np.int32)

    def lists(values: np.ndarray) -> pa.Array:
        return pa.ListArray.from_arrays(pa.array(offsets), pa.array(values[order].astype(np.int64)))

    count = len(present)
    return partial_rows(
        {
            "seq": constant(task.seq, count, pa.int32()),
            "store": constant(task.store, count, pa.int32()),
            "kind": constant(kind, count, pa.int32()),
            "key": pa.array(present),
            "n": pa.array(sizes),
            "hashes": lists(h),
            "counts": lists(counts),
            "firsts": lists(firsts),
            "lasts": lists(lasts),
        },
        count,
    )


def dup_uniq_rows(task: SplitTask, uniq: pa.Array, seeds: np.ndarray, phy: np.ndarray):
    present = np.flatnonzero(uniq.is_valid().to_numpy(zero_copy_only=False))
    if present.size == 0:
        return None
    values = uniq.take(pa.array(present)) if present.size < len(uniq) else uniq
    return _dup_row(task, DUP_UNIQ, hash_strings(values, seeds[present]), phy[present])


def dup_key_rows(task: SplitTask, keys: pa.Array, seeds: np.ndarray, phy: np.ndarray):
    """Every non-empty KEYS entry (split on spaces, as the index does) of every message."""
    if keys.null_count == len(keys):
        return None
    lists = pc.split_pattern(keys, " ")
    parents = pc.list_parent_indices(lists).to_numpy(zero_copy_only=False)
    flat = pc.list_flatten(lists)
    keep = np.flatnonzero(pc.binary_length(flat).to_numpy(zero_copy_only=False) > 0)
    if keep.size == 0:
        return None
    flat = flat.take(pa.array(keep))
    parents = parents[keep]
    return _dup_row(task, DUP_KEY, hash_strings(flat, seeds[parents]), phy[parents])


# --- merging one bucket (Spark) ------------------------------------------------------------------


def duplicates_merger(top: int):
    """The applyInArrow function (a plain closure: PySpark cannot infer the UDF type of a partial)."""

    def merge(table):
        return merge_duplicates(top, table)

    return merge


DUP_RESULT_DDL = (
    "store int, kind int, bucket bigint, h bigint, messages bigint, firstPhyOffset bigint, "
    "lastPhyOffset bigint, groups bigint, groupMessages bigint"
)


def merge_duplicates(top: int, table: pa.Table) -> pa.Table:
    """groupBy(store, kind, bucket).applyInArrow: merge the splits' hash arrays of one bucket; return the
    bucket's `top` most repeated hashes, each row carrying the bucket's totals (hashes in more than one
    message, and how many messages they are in)."""

    def flat(name: str) -> np.ndarray:
        return pc.list_flatten(table.column(name)).to_numpy()

    h, c, f, last = flat("hashes"), flat("counts"), flat("firsts"), flat("lasts")
    store, kind, bucket = (table.column(k)[0].as_py() for k in ("store", "kind", "key"))
    order = np.argsort(h, kind="stable")
    h, c, f, last = h[order], c[order], f[order], last[order]
    starts = np.flatnonzero(np.r_[True, h[1:] != h[:-1]]) if len(h) else np.zeros(0, np.int64)
    if len(starts):
        counts = np.add.reduceat(c, starts)
        firsts = np.minimum.reduceat(f, starts)
        lasts = np.maximum.reduceat(last, starts)
        hs = h[starts]
    else:
        counts = firsts = lasts = hs = np.zeros(0, np.int64)
    dup = np.flatnonzero(counts > 1)
    groups, messages = len(dup), int(counts[dup].sum())
    chosen = dup[np.lexsort((firsts[dup], -counts[dup]))[:top]]
    n = len(chosen)
    return pa.table(
        {
            "store": pa.array([store] * n, pa.int32()),
            "kind": pa.array([kind] * n, pa.int32()),
            "bucket": pa.array([bucket] * n, pa.int64()),
            "h": pa.array(hs[chosen], pa.int64()),
            "messages": pa.array(counts[chosen], pa.int64()),
            "firstPhyOffset": pa.array(firsts[chosen], pa.int64()),
            "lastPhyOffset": pa.array(lasts[chosen], pa.int64()),
            "groups": pa.array([groups] * n, pa.int64()),
            "groupMessages": pa.array([messages] * n, pa.int64()),
        }
    )


def duplicates_frame(spark, top: int):
    """Hashes in more than one message: the splits' arrays grouped by (store, kind, bucket) — Spark moves
    whole arrays, not one row per key — and merged by `merge_duplicates` (numpy), top `top` per bucket."""
    from pyspark.sql import functions as F  # noqa: N812

    frame = spark.table("audit_partials").where(F.col("kind").isin(DUP_UNIQ, DUP_KEY))
    frame = frame.select("store", "kind", "key", "hashes", "counts", "firsts", "lasts")
    return frame.groupBy("store", "kind", "key").applyInArrow(duplicates_merger(top), DUP_RESULT_DDL)


# --- the top groups, named (driver) ---------------------------------------------------------------


def _record_at(plan: StorePlan, phy: int) -> dict[str, Any] | None:
    """topic / uniqKey / keys of the record at a physical offset (the executors' decoder, for equal text)."""
    from formats.columnar.decoder import decode_range
    from mqtool.audit.executor.scan import close_map  # scan imports this module

    for f in plan.files:
        if f.start_offset <= phy < f.start_offset + f.size and (entry := placeholder(f.path)):
            from mqtool.audit.session.remote import (
                decode_split,  # a store read by URL: the record's bytes only
            )

            pos = phy - f.start_offset
            _, batch, _ = decode_split(entry[0], f.size, f.start_offset, pos, pos + 1, False)
            rows = batch.select(["topic", "uniqKey", "keys", "status"]).to_pylist()
            return rows[0] if rows and rows[0]["status"] == "ok" else None
        if f.start_offset <= phy < f.start_offset + f.size:
            buf = map_readonly(f.path)
            try:
                pos = phy - f.start_offset
                batch = decode_range(buf, f.start_offset, pos, pos + 1)
                rows = batch.select(["topic", "uniqKey", "keys", "status"]).to_pylist()
            finally:
                close_map(buf)
            return rows[0] if rows and rows[0]["status"] == "ok" else None
    return None


def duplicates_section(plans: list[StorePlan], rows: list[dict], top: int) -> list[dict]:
    """Per store and kind: how many keys occur in several messages, and the `top` ones, named."""
    out = []
    for plan in plans:
        for kind, by in ((DUP_UNIQ, "uniqKey"), (DUP_KEY, "key")):
            mine = [r for r in rows if r["store"] == plan.index and r["kind"] == kind]
            buckets = {r["bucket"]: (r["groups"], r["groupMessages"]) for r in mine}
            groups = sum(g for g, _ in buckets.values())
            messages = sum(m for _, m in buckets.values())
            best = sorted(mine, key=lambda r: (-r["messages"], r["firstPhyOffset"]))[:top]
            entry = {
                "store": plan.label,
                "by": by,
                "groups": groups,
                "messages": messages,
                "extraMessages": messages - groups,
                "top": [],
            }
            for r in best:
                record = _record_at(plan, r["firstPhyOffset"]) or {}
                topic = record.get("topic")
                key = None
                if topic is not None:
                    candidates = (
                        [record.get("uniqKey")] if by == "uniqKey" else (record.get("keys") or "").split(" ")
                    )
                    key = next((c for c in candidates if c and key_hash(topic, c) == r["h"]), None)
                entry["top"].append(
                    {
                        "topic": topic if key is not None else None,
                        "key": key,
                        "messages": r["messages"],
                        "firstPhyOffset": r["firstPhyOffset"],
                        "lastPhyOffset": r["lastPhyOffset"],
                    }
                )
            out.append(entry)
    return out
