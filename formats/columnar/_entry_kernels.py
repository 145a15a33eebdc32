"""Numba kernels of the columnar decoder for DLedger data files (the API: formats/columnar/entries.py).

A DLedger data file (formats/dledger.py) is a run of entries, each a 48-byte header and one commitlog message
record, then a pad. Two kernels walk it as DLedger's recovery does (`DLedgerMmapFileStore.recover`: pos
field, size chain, consecutive indexes, non-decreasing terms, magic, a pad ends the file, size 0 the data):

* `entry_chain` reads the entry headers only: the recovery walk of `store.log.dledger` (where the data
  ends and why, each kept entry's pos/size/index/term for the index-unit comparison).
* `walk_entries` is `_columnar_kernels.walk` stepping over the entry headers: per kept entry it applies the
  broker's record check (`CommitLog.checkMessageAndReturnSize`, via `DLedgerCommitLog`'s at +48) to the
  message at pos + 48 and fills the same column arrays `walk` fills (physicalOffset = pos + 48), plus the
  entry's columns. Unlike the classic walk it goes on after a message the check rejects: DLedger keeps
  the entry (its recovery never looks at bodies); the walk ends where DLedger's does.

Kept apart from the classic kernels; it reuses their record check, interning, copy and read-ahead helpers.
Both entry points are compiled ahead of time with the others (`formats.columnar.kernels.SPECS`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from formats.columnar._columnar_kernels import _append, _grown, _grown_rows, _put_view
from formats.columnar._intern_kernels import _grown_table, _intern, _table_full
from formats.columnar._kernel_base import (
    BLANK,
    C32_BODY_LEN,
    C32_BODYCRC,
    C32_BORNHOST,
    C32_FLAG,
    C32_MAGIC,
    C32_QUEUEID,
    C32_RECONSUME,
    C32_STOREHOST,
    C32_SYSFLAG,
    C32_TOPIC,
    C32_TOTAL,
    C64_BODY_OFFSET,
    C64_BORN_KEY,
    C64_BORN_TS,
    C64_PHYS_FIELD,
    C64_PHYSICAL_OFFSET,
    C64_PREPARED,
    C64_QUEUE_OFFSET,
    C64_STORE_TS,
    END,
    N_SCRATCH,
    N_VAR,
    OK,
    S_BODY_LEN,
    S_BODY_POS,
    S_BODYCRC,
    S_BORNHOST_LEN,
    S_BORNHOST_POS,
    S_BORNTS,
    S_FLAG,
    S_KEYS_LEN,
    S_KEYS_POS,
    S_MAGIC,
    S_PHYS,
    S_PREPARED,
    S_PROPS_LEN,
    S_PROPS_POS,
    S_QUEUEID,
    S_QUEUEOFFSET,
    S_RECONSUME,
    S_STOREHOST_LEN,
    S_STOREHOST_POS,
    S_STORETS,
    S_SYSFLAG,
    S_TAGS_LEN,
    S_TAGS_POS,
    S_TOPIC_LEN,
    S_TOPIC_POS,
    S_TOTAL,
    S_UNIQ_LEN,
    S_UNIQ_POS,
    SPILLED,
    V_BODY,
    V_KEYS,
    V_PROPS,
    V_TAGS,
    V_UNIQ,
    VALID_TOPIC_BIT,
    _be32,
    _be64,
    _fetch_ahead,
    _hot,
    _le64,
    _touch_ahead,
    _utf8_ok,
    _wrap32,
)
from formats.columnar._record_kernels import check_record

# Entry statuses: why DLedger's recovery walk keeps an entry (E_OK) or stops at it; formats.columnar.entries
# ENTRY_STATUS_NAMES gives their names in this order (the keys of formats.dledger.ENTRY_REASONS).
E_OK = 0
E_PAD = 1
E_END = 2
E_SHORT = 3
E_POS = 4
E_BODY_SIZE = 5
E_PAST_END = 6
E_MAGIC = 7
E_INDEX = 8
E_TERM = 9
E_SMALL = 10

PAD_MAGIC = -1
BODY_OFFSET = 48
HEADER_SIZE = 44

# Entry scratch slots (filled by check_entry) and the rows of the entry column matrices.
X_SIZE = 0
X_MAGIC = 1
X_INDEX = 2
X_TERM = 3
X_POS = 4
X_BODY_SIZE = 5
N_X = 8
E64_POS = 0
E64_INDEX = 1
E64_TERM = 2
N_E64 = 3
E32_SIZE = 0
E32_MAGIC = 1
E32_BODY_SIZE = 2
E32_STATUS = 3
N_E32 = 4


@_hot
def check_entry(b, n, pos, base, prev_index, prev_term, x):
    """DLedger's recovery step at b[pos:] (n = file length): an entry status; the header's fields go into x
    (zeros where not read). Mirrors `formats.dledger.check_entry`, in DLedger's order of checks."""
    for k in range(N_X):
        x[k] = 0
    left = n - pos
    if left < 4:
        return E_SHORT
    magic = _be32(b, pos)
    x[X_MAGIC] = magic
    if magic == PAD_MAGIC:
        if left >= 8:
            x[X_SIZE] = _be32(b, pos + 4)
        return E_PAD
    if left < 8:
        return E_SHORT
    size = _be32(b, pos + 4)
    x[X_SIZE] = size
    if size == 0:
        return E_END
    if left < BODY_OFFSET:
        return E_SHORT
    x[X_INDEX] = _be64(b, pos + 8)
    x[X_TERM] = _be64(b, pos + 16)
    x[X_POS] = _be64(b, pos + 24)
    x[X_BODY_SIZE] = _be32(b, pos + 44)
    if x[X_POS] != base + pos:
        return E_POS
    if _wrap32(x[X_BODY_SIZE] + BODY_OFFSET) != size:
        return E_BODY_SIZE
    if size < 0 or pos + size > n:
        return E_PAST_END
    if magic != 1:
        return E_MAGIC
    if prev_index != -1 and x[X_INDEX] != prev_index + 1:
        return E_INDEX
    if x[X_TERM] < prev_term:
        return E_TERM
    if size <= HEADER_SIZE:
        return E_SMALL
    return E_OK


@njit(cache=True, nogil=True)
def entry_chain(b, base, start, prev_index, prev_term, pos_out, size_out, index_out, term_out, magic_out):
    """DLedger's recovery walk of one data file from the entry boundary `start`, headers only. Writes each
    kept entry's pos, size, index, term and magic into the outputs (capacity: file length / 49 + 1) and
    returns (entries kept, entry status of the stop, its position, the stop's size field)."""
    n = b.shape[0]
    x = np.zeros(N_X, dtype=np.int64)
    pos = start
    k = 0
    fetched = pos
    while True:
        fetched = _fetch_ahead(b, n, pos, fetched)
        st = check_entry(b, n, pos, base, prev_index, prev_term, x)
        if st != E_OK:
            return k, st, pos, x[X_SIZE]
        pos_out[k] = base + pos
        size_out[k] = x[X_SIZE]
        index_out[k] = x[X_INDEX]
        term_out[k] = x[X_TERM]
        magic_out[k] = x[X_MAGIC]
        k += 1
        prev_index = x[X_INDEX]
        prev_term = x[X_TERM]
        pos += x[X_SIZE]


# Walk state shared by walk_entries and _run_entries (an int64 array, so that _run_entries can resume).
W_POS = 0
W_ROWS = 1
W_AHEAD = 2
W_TOUCH = 3
W_DONE = 4
W_PREV_INDEX = 5
W_PREV_TERM = 6
W_NEED = 7  # + V_*: bytes the current row needs in each variable-length buffer
N_W = W_NEED + N_VAR


@_hot
def _run_entries(
    b, base, end, check_crc, accept_v2, with_body, crc_tab, crc_fn, digits, s, x, w,
    c64, c32, offs, status, valid, bad, used, pviews, e64, e32, d_keys, d_tags, d_uniq, d_body,
    t_slots, t_reps, t_count, h_slots, h_reps, h_count, g_slots, g_reps, g_count,
):  # fmt: skip
    """The entry loop of walk_entries (`_columnar_kernels._run`'s row filling, per entry). It never
    reallocates: when a row does not fit it saves its state in w and returns; walk_entries grows the
    arrays and calls again. w[W_DONE] = 1 once the walk has finished."""
    n = b.shape[0]
    pos = w[W_POS]
    r = w[W_ROWS]
    ahead = w[W_AHEAD]
    touch = w[W_TOUCH]
    fetched = pos
    while True:
        ahead, touch = _touch_ahead(b, n, pos, ahead, touch)
        fetched = _fetch_ahead(b, n, pos, fetched)
        if pos >= end:
            w[W_DONE] = 1
            break
        est = check_entry(b, n, pos, base, w[W_PREV_INDEX], w[W_PREV_TERM], x)
        if est == E_OK:
            st = check_record(b, n, pos + BODY_OFFSET, check_crc, accept_v2, crc_tab, crc_fn, digits, s)
        else:
            for k in range(N_SCRATCH):
                s[k] = 0
            s[S_KEYS_POS] = -1
            s[S_TAGS_POS] = -1
            s[S_UNIQ_POS] = -1
            s[S_TOTAL] = x[X_SIZE]
            st = BLANK if est == E_PAD else END
        ok = st == OK
        need_keys = s[S_KEYS_LEN] if ok and s[S_KEYS_POS] >= 0 else 0
        need_tags = s[S_TAGS_LEN] if ok and s[S_TAGS_POS] >= 0 else 0
        need_uniq = s[S_UNIQ_LEN] if ok and s[S_UNIQ_POS] >= 0 else 0
        need_body = max(s[S_BODY_LEN], 0) if ok and with_body else 0
        if (
            r >= status.shape[0]
            or r >= e64.shape[1]
            or _table_full(t_slots, t_reps, t_count, 1)
            or (h_count[2] == 0 and _table_full(h_slots, h_reps, h_count, 1))
            or _table_full(g_slots, g_reps, g_count, 1)
            or used[V_KEYS] + need_keys > d_keys.shape[0]
            or used[V_TAGS] + need_tags > d_tags.shape[0]
            or used[V_UNIQ] + need_uniq > d_uniq.shape[0]
            or used[V_BODY] + need_body > d_body.shape[0]
        ):
            w[W_NEED + V_KEYS] = need_keys
            w[W_NEED + V_TAGS] = need_tags
            w[W_NEED + V_UNIQ] = need_uniq
            w[W_NEED + V_BODY] = need_body
            break
        status[r] = st
        e64[E64_POS, r] = base + pos
        e64[E64_INDEX, r] = x[X_INDEX]
        e64[E64_TERM, r] = x[X_TERM]
        e32[E32_SIZE, r] = x[X_SIZE]
        e32[E32_MAGIC, r] = x[X_MAGIC]
        e32[E32_BODY_SIZE, r] = x[X_BODY_SIZE]
        e32[E32_STATUS, r] = est
        # a message row sits at pos + 48; the row that ends the walk at the entry's own position
        c64[C64_PHYSICAL_OFFSET, r] = base + pos + (BODY_OFFSET if est == E_OK else 0)
        c32[C32_TOTAL, r] = s[S_TOTAL]
        c32[C32_MAGIC, r] = s[S_MAGIC]
        c32[C32_BODYCRC, r] = s[S_BODYCRC]
        c32[C32_QUEUEID, r] = s[S_QUEUEID]
        c32[C32_FLAG, r] = s[S_FLAG]
        c64[C64_QUEUE_OFFSET, r] = s[S_QUEUEOFFSET]
        c64[C64_PHYS_FIELD, r] = s[S_PHYS]
        c32[C32_SYSFLAG, r] = s[S_SYSFLAG]
        c64[C64_BORN_TS, r] = s[S_BORNTS]
        c64[C64_STORE_TS, r] = s[S_STORETS]
        c32[C32_RECONSUME, r] = s[S_RECONSUME]
        c64[C64_PREPARED, r] = s[S_PREPARED]
        c64[C64_BODY_OFFSET, r] = s[S_BODY_POS]
        c32[C32_BODY_LEN, r] = max(s[S_BODY_LEN], 0) if ok else s[S_BODY_LEN]
        v = 0
        z = 0
        if ok:
            c32[C32_TOPIC, r] = _intern(b, s[S_TOPIC_POS], s[S_TOPIC_LEN], t_slots, t_reps, t_count)
            if h_count[2]:
                c32[C32_BORNHOST, r] = SPILLED
                c64[C64_BORN_KEY, r] = _le64(b, s[S_BORNHOST_POS]) if s[S_BORNHOST_LEN] == 8 else 0
            else:
                c32[C32_BORNHOST, r] = _intern(
                    b, s[S_BORNHOST_POS], s[S_BORNHOST_LEN], h_slots, h_reps, h_count
                )
            c32[C32_STOREHOST, r] = _intern(
                b, s[S_STOREHOST_POS], s[S_STOREHOST_LEN], g_slots, g_reps, g_count
            )
            v = VALID_TOPIC_BIT | (1 << V_PROPS)
            _put_view(pviews, r, b, s[S_PROPS_POS], s[S_PROPS_LEN])
            if s[S_KEYS_POS] >= 0:
                v |= 1 << V_KEYS
                _append(d_keys, used, V_KEYS, b, s[S_KEYS_POS], need_keys)
                if not _utf8_ok(b, s[S_KEYS_POS], need_keys):
                    z |= 1 << V_KEYS
            if s[S_TAGS_POS] >= 0:
                v |= 1 << V_TAGS
                _append(d_tags, used, V_TAGS, b, s[S_TAGS_POS], need_tags)
                if not _utf8_ok(b, s[S_TAGS_POS], need_tags):
                    z |= 1 << V_TAGS
            if s[S_UNIQ_POS] >= 0:
                v |= 1 << V_UNIQ
                _append(d_uniq, used, V_UNIQ, b, s[S_UNIQ_POS], need_uniq)
                if not _utf8_ok(b, s[S_UNIQ_POS], need_uniq):
                    z |= 1 << V_UNIQ
            if with_body:
                v |= 1 << V_BODY
                _append(d_body, used, V_BODY, b, s[S_BODY_POS], need_body)
        else:
            c32[C32_TOPIC, r] = 0
            c32[C32_BORNHOST, r] = 0
            c32[C32_STOREHOST, r] = 0
            _put_view(pviews, r, b, 0, 0)
        offs[V_KEYS, r + 1] = used[V_KEYS]
        offs[V_TAGS, r + 1] = used[V_TAGS]
        offs[V_UNIQ, r + 1] = used[V_UNIQ]
        if with_body:
            offs[V_BODY, r + 1] = used[V_BODY]
        valid[r] = v
        bad[r] = z
        r += 1
        if est != E_OK:
            w[W_DONE] = 1
            break
        w[W_PREV_INDEX] = x[X_INDEX]
        w[W_PREV_TERM] = x[X_TERM]
        pos += x[X_SIZE]
    w[W_POS] = pos
    w[W_ROWS] = r
    w[W_AHEAD] = ahead
    w[W_TOUCH] = touch


@njit(cache=True)
def _grown_entry_rows(e64, e32):
    cap = e64.shape[1]
    g64 = np.empty((e64.shape[0], 2 * cap), dtype=np.int64)
    g64[:, :cap] = e64
    g32 = np.empty((e32.shape[0], 2 * cap), dtype=np.int32)
    g32[:, :cap] = e32
    return g64, g32


@njit(cache=True, nogil=True)
def walk_entries(
    b, base, start, end, check_crc, accept_v2, with_body, host_spill_min, prev_index, prev_term,
    crc_tab, crc_fn, digits, c64, c32, offs, pviews, status, valid, bad, e64, e32,
    d_keys, d_tags, d_uniq, d_body,
):  # fmt: skip
    """Decode the entries starting in [start, end) of one DLedger data file's bytes b (uint8 array) from the
    entry boundary `start`: one row per kept entry (its message at pos + 48), then - when the walk ends
    before `end` - one row for the pad, the zeros or the entry DLedger's recovery stops at.
    `prev_index` / `prev_term`: the entry before `start` (-1, -1 at a file's first entry of the log).

    Outputs as `_columnar_kernels.walk` (same layout, grown when needed) plus e64 (entry pos, index, term)
    and e32 (entry size, magic, bodySize, entry status). Returns walk's tuple, then e64, e32, and the last
    kept entry's index and term."""
    s = np.zeros(N_SCRATCH, dtype=np.int64)
    x = np.zeros(N_X, dtype=np.int64)
    offs[:, 0] = 0
    used = np.zeros(N_VAR, dtype=np.int64)
    t_slots = np.full((64, 2), -1, dtype=np.int64)
    t_reps = np.empty((32, 3), dtype=np.int64)
    t_count = np.array([0, -1], dtype=np.int64)
    h_slots = np.full((64, 2), -1, dtype=np.int64)
    h_reps = np.empty((32, 3), dtype=np.int64)
    h_count = np.array([0, -1, 1 if host_spill_min <= 0 else 0], dtype=np.int64)
    g_slots = np.full((64, 2), -1, dtype=np.int64)
    g_reps = np.empty((32, 3), dtype=np.int64)
    g_count = np.array([0, -1], dtype=np.int64)
    w = np.zeros(N_W, dtype=np.int64)
    w[W_POS] = start
    w[W_AHEAD] = start
    w[W_PREV_INDEX] = prev_index
    w[W_PREV_TERM] = prev_term
    end = min(end, b.shape[0])
    while w[W_DONE] == 0:
        _run_entries(
            b, base, end, check_crc, accept_v2, with_body, crc_tab, crc_fn, digits, s, x, w,
            c64, c32, offs, status, valid, bad, used, pviews, e64, e32, d_keys, d_tags, d_uniq, d_body,
            t_slots, t_reps, t_count, h_slots, h_reps, h_count, g_slots, g_reps, g_count,
        )  # fmt: skip
        if w[W_DONE]:
            break
        if w[W_ROWS] >= status.shape[0]:
            c64, c32, offs, pviews, status, valid, bad = _grown_rows(
                c64, c32, offs, pviews, status, valid, bad
            )
        if w[W_ROWS] >= e64.shape[1]:
            e64, e32 = _grown_entry_rows(e64, e32)
        if _table_full(t_slots, t_reps, t_count, 1):
            t_slots, t_reps = _grown_table(t_slots, t_reps, t_count)
        if h_count[2] == 0 and _table_full(h_slots, h_reps, h_count, 1):
            if h_count[0] >= host_spill_min and 4 * h_count[0] > w[W_ROWS]:
                h_count[2] = 1
            else:
                h_slots, h_reps = _grown_table(h_slots, h_reps, h_count)
        if _table_full(g_slots, g_reps, g_count, 1):
            g_slots, g_reps = _grown_table(g_slots, g_reps, g_count)
        if used[V_KEYS] + w[W_NEED + V_KEYS] > d_keys.shape[0]:
            d_keys = _grown(d_keys, used[V_KEYS], w[W_NEED + V_KEYS])
        if used[V_TAGS] + w[W_NEED + V_TAGS] > d_tags.shape[0]:
            d_tags = _grown(d_tags, used[V_TAGS], w[W_NEED + V_TAGS])
        if used[V_UNIQ] + w[W_NEED + V_UNIQ] > d_uniq.shape[0]:
            d_uniq = _grown(d_uniq, used[V_UNIQ], w[W_NEED + V_UNIQ])
        if used[V_BODY] + w[W_NEED + V_BODY] > d_body.shape[0]:
            d_body = _grown(d_body, used[V_BODY], w[W_NEED + V_BODY])
    return (
        w[W_ROWS],
        c64,
        c32,
        offs,
        pviews,
        status,
        valid,
        bad,
        d_keys,
        d_tags,
        d_uniq,
        d_body,
        used,
        t_reps,
        t_count[0],
        h_reps,
        h_count[0],
        g_reps,
        g_count[0],
        w[W_TOUCH],
        h_count[2],
        e64,
        e32,
        w[W_PREV_INDEX],
        w[W_PREV_TERM],
    )
