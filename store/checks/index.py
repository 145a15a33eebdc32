"""IndexFile checks: headers, slots and chains, entry targets, key coverage (--deep)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from store.checks.problems import WARNING, ProblemList, fmt
from store.checks.records import RecordIndex, index_key_hashes


@dataclass
class IndexFileFacts:
    """The reachable entries of one index file, for the coverage check."""

    name: str
    begin_phy: int
    end_phy: int
    entries: int
    phy: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # per entry
    key_hash: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    reachable: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    record_row: np.ndarray | None = None  # RecordIndex row of each entry's phy, -1 (check_index_targets)


def check_index_file(
    header: Any,
    slots: np.ndarray,
    entries: np.ndarray,
    problems: ProblemList,
    *,
    file: str,
    hash_slot_num: int,
    index_num: int,
) -> IndexFileFacts:
    """Header, slot table and chains of one index file, and which entries a lookup reaches.

    `header` has the IndexHeader fields (begin_timestamp, end_timestamp, begin_phy_offset, end_phy_offset,
    hash_slot_count, index_count); `slots` is the big-endian int32 slot view, `entries` the
    `INDEX_ENTRY_DTYPE` view of entries 1 .. indexCount-1. A lookup of hash h starts at slot h % S and
    follows prevIndex while 0 < prev <= indexCount and prev != pos, stopping at a negative time diff
    (`IndexService.queryOffset`, `IndexFile.selectPhyOffset`); an entry is reachable when the walk of its own
    key's slot visits it.
    """
    count = header.index_count if header.index_count > 0 else 1
    slot_pos0 = 40
    entry_pos0 = 40 + hash_slot_num * 4

    def entry_at(pos: np.ndarray) -> np.ndarray:
        return entry_pos0 + np.asarray(pos, dtype=np.int64) * 20

    if header.index_count > index_num:
        problems.add(
            "index_header", file, 36, f"indexCount {header.index_count} exceeds maxIndexNum {index_num}"
        )
        count = index_num
    n = count - 1
    kh = entries["keyHash"].astype(np.int64)[:n]
    prev = entries["prevIndex"].astype(np.int64)[:n]
    td = entries["timeDiff"].astype(np.int64)[:n]
    phy = entries["phyOffset"].astype(np.int64)[:n]
    pos = np.arange(1, n + 1, dtype=np.int64)
    facts = IndexFileFacts(file, header.begin_phy_offset, header.end_phy_offset, n)

    # header
    used_slots = int(np.count_nonzero(slots))
    if used_slots != header.hash_slot_count:
        problems.add(
            "index_header",
            file,
            32,
            f"hashSlotCount {header.hash_slot_count} but {used_slots} slots are in use",
            WARNING,
        )
    if header.begin_timestamp > header.end_timestamp:
        problems.add(
            "index_header",
            file,
            0,
            f"beginTimestamp {header.begin_timestamp} is after endTimestamp {header.end_timestamp}",
        )
    if n:
        if header.begin_phy_offset != phy[0]:
            problems.add(
                "index_header",
                file,
                16,
                f"beginPhyOffset {header.begin_phy_offset} is not the first entry's phy {int(phy[0])}",
            )
        if header.end_phy_offset != phy[-1]:
            problems.add(
                "index_header",
                file,
                24,
                f"endPhyOffset {header.end_phy_offset} is not the last entry's phy {int(phy[-1])}",
            )
        back = np.flatnonzero(np.diff(phy) < 0) + 1
        if len(back):
            problems.add_many(
                "index_header",
                file,
                entry_at(pos[back]) + 4,
                fmt("entry ", pos[back], " points to phy ", phy[back], ", before the previous entry's"),
                WARNING,
            )

    # chains: putKey leaves each slot pointing at its newest entry and each entry's prevIndex at the
    # previous entry of its slot. Without broken links or branches the entries form disjoint chains;
    # when every chain's top is its slot's value and no other slot is in use, each used slot holds
    # exactly one chain through all of its entries (no slot-sized arrays needed on this path).
    bad_entry = (kh < 0) | (prev < 0) | (prev >= pos)
    slot = np.where(kh >= 0, kh % hash_slot_num, 0)
    link = np.flatnonzero((prev > 0) & ~bad_entry)
    bad_entry[link[slot[prev[link] - 1] != slot[link]]] = True
    linked = (prev > 0) & ~bad_entry
    indegree = np.bincount(prev[linked], minlength=count)
    branched = np.flatnonzero(indegree > 1)
    tops = np.flatnonzero(indegree[1:] == 0) + 1
    tops = tops[~bad_entry[tops - 1]]
    head_ok = slots[slot[tops - 1]].astype(np.int64) == tops
    structure_ok = (
        not bad_entry.any() and not len(branched) and bool(head_ok.all()) and used_slots == len(tops)
    )
    if not structure_ok:
        sv = slots.astype(np.int64)
        good = ~bad_entry
        newest = np.zeros(hash_slot_num, dtype=np.int64)
        if good.any():
            np.maximum.at(newest, slot[good], pos[good])
        bottoms = np.bincount(slot[good & (prev == 0)], minlength=hash_slot_num)
        present = np.bincount(slot[good], minlength=hash_slot_num) > 0
        bad_slot = (sv != newest) | (sv < 0) | (sv >= count)
        many = np.flatnonzero(present & (bottoms != 1))
        e = np.flatnonzero(bad_entry)
        if len(e):
            problems.add_many(
                "index_chain",
                file,
                entry_at(pos[e]),
                fmt(
                    "entry ",
                    pos[e],
                    " (keyHash ",
                    kh[e],
                    ", prevIndex ",
                    prev[e],
                    ") is not a link of its hash slot's chain",
                ),
            )
        if len(branched):
            problems.add_many(
                "index_chain",
                file,
                entry_at(branched),
                fmt("entry ", branched, " is the prevIndex of several entries"),
            )
        if len(many):
            problems.add_many(
                "index_chain",
                file,
                slot_pos0 + many * 4,
                fmt("hash slot ", many, " has ", bottoms[many], " chain ends instead of one"),
            )
        bad = np.flatnonzero(bad_slot)
        if len(bad):
            problems.add_many(
                "index_chain",
                file,
                slot_pos0 + bad * 4,
                fmt("hash slot ", bad, " holds ", sv[bad], ", but its newest entry is ", newest[bad]),
            )
    neg = np.flatnonzero(td < 0)
    if len(neg):
        problems.add_many(
            "index_chain",
            file,
            entry_at(pos[neg]) + 12,
            fmt("entry ", pos[neg], " has a negative timeDiff ", td[neg], "; lookups stop there"),
        )
    if structure_ok:
        reachable = np.ones(n, dtype=bool)
        if len(neg):
            stop = np.zeros(hash_slot_num, dtype=np.int64)
            np.maximum.at(stop, slot[neg], pos[neg])
            reachable = pos > stop[slot]
    else:
        reachable = _chase(slots.astype(np.int64), kh, prev, td, count, hash_slot_num)
    lost = np.flatnonzero(~reachable)
    if len(lost):
        problems.add(
            "index_unreachable",
            file,
            int(entry_at(pos[lost[0]])),
            f"{len(lost)} of {n} entries are not reachable from their hash slot (first: entry "
            f"{int(pos[lost[0]])}, phy {int(phy[lost[0]])})",
        )
    facts.phy, facts.key_hash, facts.reachable = phy, kh, reachable
    return facts


def _chase(
    sv: np.ndarray, kh: np.ndarray, prev: np.ndarray, td: np.ndarray, count: int, s: int
) -> np.ndarray:
    """Reachability by walking every slot's chain as `selectPhyOffset` does (all chains at once; the last
    few long chains element by element). A prevIndex that does not go down ends a walk."""
    n = len(kh)
    reach = np.zeros(n, dtype=bool)
    slot_ids = np.flatnonzero((sv > 0) & (sv < count))
    cur = sv[slot_ids]
    while len(cur) > 16:
        e = cur - 1
        alive = td[e] >= 0
        cur, slot_ids, e = cur[alive], slot_ids[alive], e[alive]
        reach[e[kh[e] % s == slot_ids]] = True
        nxt = prev[e]
        go = (nxt > 0) & (nxt < cur)
        cur, slot_ids = nxt[go], slot_ids[go]
    for p, sid in zip(cur.tolist(), slot_ids.tolist(), strict=True):
        while True:
            e = p - 1
            if td[e] < 0:
                break
            if kh[e] >= 0 and kh[e] % s == sid:
                reach[e] = True
            q = int(prev[e])
            if not 0 < q < p:
                break
            p = q
    return reach


def check_index_targets(
    facts: IndexFileFacts,
    records: RecordIndex,
    problems: ProblemList,
    *,
    hash_slot_num: int,
    commitlog_min: int,
    valid_end: int,
) -> None:
    """Where one file's entries point (after `check_index_file`): records deleted by retention (info),
    past the valid end (warning), or inside the live commitlog but not at a record start (error).
    Fills `facts.record_row` for the coverage check."""
    phy = facts.phy
    pos0 = 40 + hash_slot_num * 4
    expired = phy < commitlog_min
    beyond = phy >= valid_end
    if expired.any():
        e = np.flatnonzero(expired)
        problems.add(
            "index_expired_entries",
            facts.name,
            pos0 + int(e[0] + 1) * 20,
            f"{len(e)} entries point into deleted commitlog files (phy < {commitlog_min})",
        )
    if beyond.any():
        e = np.flatnonzero(beyond)
        problems.add(
            "index_beyond_end",
            facts.name,
            pos0 + int(e[0] + 1) * 20,
            f"{len(e)} entries point at or after the commitlog's valid end {valid_end} (first phy "
            f"{int(phy[e[0]])})",
        )
    # entries of one message's keys share its phy: look each run up once
    change = np.empty(len(phy), dtype=bool)
    change[:1] = True
    np.not_equal(phy[1:], phy[:-1], out=change[1:])
    ri_u, found_u = records.find(phy[change])
    group = np.cumsum(change) - 1
    ri, found = ri_u[group], found_u[group]
    facts.record_row = np.where(found, ri, -1)
    bad = np.flatnonzero(~found & ~expired & ~beyond)
    if len(bad):
        problems.add(
            "index_points_nowhere",
            facts.name,
            pos0 + int(bad[0] + 1) * 20,
            f"{len(bad)} entries point inside the commitlog where no accepted record starts (first: entry "
            f"{int(bad[0]) + 1}, phy {int(phy[bad[0]])})",
        )


def index_coverage(files: Sequence[IndexFileFacts]) -> tuple[int, int] | None:
    """[first file's beginPhyOffset, last file's endPhyOffset] of the files holding entries."""
    used = [f for f in files if f.entries > 0]
    if not used:
        return None
    return used[0].begin_phy, used[-1].end_phy


@dataclass
class ReachableKeys:
    """(phy, keyHash) of every entry a lookup reaches, over all index files, sorted by phy, and the
    index's coverage: `check_index_coverage`'s input, cut by physical range (the audit's executors)."""

    coverage: tuple[int, int] | None
    phy: np.ndarray
    key_hash: np.ndarray

    @classmethod
    def of(cls, files: Sequence[IndexFileFacts]) -> ReachableKeys:
        phy = np.concatenate([f.phy[f.reachable] for f in files] or [np.zeros(0, np.int64)])
        key_hash = np.concatenate([f.key_hash[f.reachable] for f in files] or [np.zeros(0, np.int64)])
        order = np.argsort(phy, kind="stable")
        return cls(index_coverage(files), phy[order], key_hash[order].astype(np.int32))

    def facts_in(self, lo: int, hi: int) -> list[IndexFileFacts]:
        """The entries pointing into [lo, hi) as one file's facts with the whole index's coverage."""
        if self.coverage is None:
            return []
        i, j = np.searchsorted(self.phy, [lo, hi])
        return [
            IndexFileFacts(
                "reachable entries",
                *self.coverage,
                entries=max(1, len(self.phy)),
                phy=self.phy[i:j],
                key_hash=self.key_hash[i:j].astype(np.int64),
                reachable=np.ones(j - i, dtype=bool),
            )
        ]


# check_index_coverage's rows whose detail starts with a record count (summed over the audit's ranges)
COUNTED_KINDS = ("not_indexed", "index_behind")


def merge_counted(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows of a `COUNTED_KINDS` kind found range by range, as verify reports them for the whole store:
    one row per store and kind, at the first place, with the counts summed. Other rows pass as they are."""
    out = [r for r in rows if r["kind"] not in COUNTED_KINDS]
    merged: dict[tuple[Any, str], dict[str, Any]] = {}
    counted = [r for r in rows if r["kind"] in COUNTED_KINDS]
    for row in sorted(counted, key=lambda r: (r["file"] or "", r["offset"] or 0)):
        key = (row["store"], row["kind"])
        if key not in merged:
            merged[key] = dict(row)
            continue
        first = merged[key]
        count, rest = first["detail"].split(" ", 1)
        first["detail"] = f"{int(count) + int(row['detail'].split(' ', 1)[0])} {rest}"
    return out + list(merged.values())


def check_index_coverage(
    records: RecordIndex,
    files: Sequence[IndexFileFacts],
    problems: ProblemList,
    *,
    cq_horizon: int | None = None,
    rows: np.ndarray | None = None,
) -> int:
    """Every index key of every message inside the index's coverage is reachable (--deep).

    Records before the first file's beginPhyOffset (their index files were deleted with old commitlog
    files) are `not_indexed` (info); records with keys after the last file's endPhyOffset are not indexed
    yet (`index_behind` when the ConsumeQueues already cover them, else part of the undispatched tail).
    Returns how many keys were checked."""
    coverage = index_coverage(files)
    key_rows, key_hash = index_key_hashes(records, rows)
    if len(key_rows) == 0:
        return 0
    key_phy = records.phy[key_rows]
    if coverage is None:
        lo, hi = (int(key_phy.max()) + 1,) * 2
    else:
        lo, hi = coverage
    before = key_phy < lo
    after = key_phy > hi
    if before.any():
        r = key_rows[before]
        files_, positions = records.locate(records.phy[r[:1]])
        problems.add(
            "not_indexed",
            files_[0].as_py(),
            int(positions[0]),
            f"{len(np.unique(r))} records with keys before the first index file's beginPhyOffset {lo} "
            "(their index files were deleted with old commitlog files)",
        )
    if after.any():
        r = np.unique(key_rows[after])
        lagging = r[records.phy[r] < cq_horizon] if cq_horizon is not None else r[:0]
        if len(lagging):
            files_, positions = records.locate(records.phy[lagging[:1]])
            problems.add(
                "index_behind",
                files_[0].as_py(),
                int(positions[0]),
                f"{len(lagging)} records with keys are in the ConsumeQueues but after the index's end "
                f"(endPhyOffset {hi}); a re-dispatch would index them",
            )
    judge = ~before & ~after
    kr, kh, kp = key_rows[judge], key_hash[judge], key_phy[judge]
    if len(kr) == 0:
        return 0
    reach_key = np.concatenate([_reachable_keys(f, records) for f in files] or [np.zeros(0, np.int64)])
    want = kr << 31 | kh
    if len(want) == len(reach_key) and np.array_equal(want, reach_key):
        return len(want)
    ok = np.isin(want, reach_key)
    lost = np.flatnonzero(~ok)
    if len(lost):
        r = kr[lost]
        files_, positions = records.locate(kp[lost])
        problems.add_many(
            "index_key_unreachable",
            files_,
            positions,
            fmt(
                "record at phy ",
                kp[lost],
                ": index key hash ",
                kh[lost],
                " of topic ",
                pa.array(records.topics or [""]).take(pa.array(records.topic[r])),
                " is not reachable through the index",
            ),
        )
    return len(want)


def _reachable_keys(facts: IndexFileFacts, records: RecordIndex) -> np.ndarray:
    """row << 31 | keyHash of the reachable entries that point at a record start."""
    rows = facts.record_row
    if rows is None:
        ri, found = records.find(facts.phy)
        rows = np.where(found, ri, -1)
    keep = facts.reachable & (rows >= 0)
    return rows[keep] << 31 | facts.key_hash[keep]


def check_index_headers_order(files: Sequence[IndexFileFacts], problems: ProblemList) -> None:
    """Consecutive files cover increasing physical ranges."""
    used = [f for f in files if f.entries > 0]
    for a, b in zip(used, used[1:], strict=False):
        if b.begin_phy < a.end_phy:
            problems.add(
                "index_header",
                b.name,
                16,
                f"beginPhyOffset {b.begin_phy} is before the previous file's endPhyOffset {a.end_phy}",
                WARNING,
            )
