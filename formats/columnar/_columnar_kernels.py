"""Numba kernels of the columnar CommitLog decoder; the public API is formats/columnar/decoder.py.

Imported lazily (importing numba costs ~0.4 s). Every kernel is a module-level `@njit(cache=True)`
function, so compiled machine code is kept on disk and reused by later processes.

`walk` is one pass over a commitlog byte range: it applies the broker's record check
(`CommitLog.checkMessageAndReturnSize`) at each record boundary, writes the fixed fields
into column arrays, interns topics and hosts into small hash tables (the dictionaries are built on the
Python side from the representatives' byte spans), finds the KEYS/TAGS/UNIQ_KEY values by scanning the
properties bytes with the broker's parsing rules (`MessageDecoder.string2messageProperties`), copies those
values into Arrow-style
offsets + data buffers and writes Arrow binary_view entries that point at the properties in place.

Speed notes (1 GiB store, ~800-byte records): the hot loop reads fields with unaligned-load intrinsics
and scans properties eight bytes per step; hot kernels are compiled without NRT reference counting
(`_nrt=False`) and never reallocate inside the loop (`_run` returns to `walk` to grow arrays), because
numba refcounts every array argument and rebound array variable on each iteration otherwise.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from formats.columnar._intern_kernels import (
    _grown_table,
    _intern,
    _table_full,
)
from formats.columnar._kernel_base import (
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
    _fetch_ahead,
    _hot,
    _le64,
    _memcpy,
    _touch_ahead,
    _utf8_ok,
)
from formats.columnar._record_kernels import (
    _is_boundary,
    check_record,
    find_boundary,
)


@njit(cache=True)
def _grown(dst, used, need):
    """dst with room for `need` more bytes after its first `used`, by doubling."""
    grown = np.empty(max(2 * dst.shape[0], used + need), dtype=np.uint8)
    grown[:used] = dst[:used]
    return grown


@njit(cache=True)
def _grown_rows(c64, c32, offs, pviews, status, valid, bad):
    cap = status.shape[0]
    new = 2 * cap
    gpviews = np.empty((new, 16), dtype=np.uint8)
    gpviews[:cap] = pviews
    g64 = np.empty((c64.shape[0], new), dtype=np.int64)
    g64[:, :cap] = c64
    g32 = np.empty((c32.shape[0], new), dtype=np.int32)
    g32[:, :cap] = c32
    goffs = np.empty((offs.shape[0], new + 1), dtype=np.int32)
    goffs[:, : cap + 1] = offs
    gstatus = np.empty(new, dtype=np.int8)
    gstatus[:cap] = status
    gvalid = np.empty(new, dtype=np.uint8)
    gvalid[:cap] = valid
    gbad = np.empty(new, dtype=np.uint8)
    gbad[:cap] = bad
    return g64, g32, goffs, gpviews, gstatus, gvalid, gbad


# Walk state shared by walk and _run (an int64 array, so that _run can stop and resume).
W_POS = 0
W_ROWS = 1
W_AHEAD = 2
W_TOUCH = 3
W_DONE = 4
W_NEED = 5  # + V_*: bytes the current row needs in each variable-length buffer
N_W = W_NEED + N_VAR


@_hot
def _put_view(views, r, b, p, n):
    """Row r of an Arrow binary_view column over b: int32 length, then the bytes inline (n <= 12) or a
    4-byte prefix, buffer index 0 and the int32 offset into b."""
    for j in range(4):
        views[r, j] = (n >> (8 * j)) & 0xFF
    if n <= 12:
        for j in range(12):
            views[r, 4 + j] = b[p + j] if j < n else 0
    else:
        for j in range(4):
            views[r, 4 + j] = b[p + j]
            views[r, 8 + j] = 0
            views[r, 12 + j] = (p >> (8 * j)) & 0xFF


@_hot
def _append(dst, used, k, b, p, n):
    _memcpy(dst, used[k], b, p, n)
    used[k] += n


@_hot
def _run(
    b,
    base,
    end,
    check_crc,
    accept_v2,
    with_body,
    crc_tab,
    crc_fn,
    digits,
    s,
    w,
    c64,
    c32,
    offs,
    status,
    valid,
    bad,
    used,
    pviews,
    d_keys,
    d_tags,
    d_uniq,
    d_body,
    t_slots,
    t_reps,
    t_count,
    h_slots,
    h_reps,
    h_count,
    g_slots,
    g_reps,
    g_count,
):
    """The record loop of walk. It never reallocates (rebinding arrays inside a hot loop makes numba
    refcount them on every iteration): when a row does not fit it saves its state in w and returns, walk
    grows the arrays and calls again. w[W_DONE] = 1 once the walk has finished."""
    n = b.shape[0]
    pos = w[W_POS]
    r = w[W_ROWS]
    ahead = w[W_AHEAD]
    touch = w[W_TOUCH]
    fetched = pos
    while True:
        ahead, touch = _touch_ahead(b, n, pos, ahead, touch)
        fetched = _fetch_ahead(b, n, pos, fetched)
        st = check_record(b, n, pos, check_crc, accept_v2, crc_tab, crc_fn, digits, s)
        if pos >= end and _is_boundary(st, s, base, pos, n):
            w[W_DONE] = 1
            break
        ok = st == OK
        need_keys = s[S_KEYS_LEN] if ok and s[S_KEYS_POS] >= 0 else 0
        need_tags = s[S_TAGS_LEN] if ok and s[S_TAGS_POS] >= 0 else 0
        need_uniq = s[S_UNIQ_LEN] if ok and s[S_UNIQ_POS] >= 0 else 0
        need_body = max(s[S_BODY_LEN], 0) if ok and with_body else 0
        if (
            r >= status.shape[0]
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
        c64[C64_PHYSICAL_OFFSET, r] = base + pos
        # check_record zeroes the scratch, so fields it did not reach are written as 0.
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
        # a negative BODYLENGTH of an accepted record is read as no body, as the broker reads it
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
        if not ok:
            w[W_DONE] = 1
            break
        pos += s[S_TOTAL]
    w[W_POS] = pos
    w[W_ROWS] = r
    w[W_AHEAD] = ahead
    w[W_TOUCH] = touch


@njit(cache=True, nogil=True)
def walk(
    b,
    base,
    start,
    end,
    check_crc,
    accept_v2,
    resync,
    with_body,
    host_spill_min,
    crc_tab,
    crc_fn,
    digits,
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
):
    """Decode the records starting in [start, end) of one commitlog file's bytes b (uint8 array).

    Starts at `start` (or, with resync, at the first boundary found at/after it), stops after the first
    record the broker rejects (that record gets a row with its status) or after a blank record. At the
    first position at/after `end` the walk hands over to the next range: it stops there if that position
    is one the next range's resync will find, and otherwise emits rows until it reaches such a position
    or a rejected record, so that splits of a file never lose or duplicate a row.

    The output arrays come from the caller (who may reuse them; fresh memory is slow to touch), row
    capacity = status.shape[0]; they are grown when needed. Column matrices are (columns, capacity),
    pviews (capacity, 16). Returns (nrows, c64, c32, offs, pviews, status, valid, bad, d_keys, d_tags,
    d_uniq, d_body, used, topic reps, topic count, born host reps, count, store host reps, count, touch);
    rows [0, nrows) are filled. `valid` bit k (k < N_VAR) marks a non-null variable column,
    VALID_TOPIC_BIT the topic and hosts; `bad` bit k marks a string value that is not well-formed UTF-8
    (the caller re-decodes those)."""
    n = b.shape[0]
    s = np.zeros(N_SCRATCH, dtype=np.int64)
    end = min(end, n)
    pos = start
    if resync:
        pos = find_boundary(b, base, start, end, check_crc, accept_v2, crc_tab, crc_fn, digits, s)
    offs[:, 0] = 0
    used = np.zeros(N_VAR, dtype=np.int64)
    t_slots = np.full((64, 2), -1, dtype=np.int64)
    t_reps = np.empty((32, 3), dtype=np.int64)
    t_count = np.array([0, -1], dtype=np.int64)
    h_slots = np.full((64, 2), -1, dtype=np.int64)
    h_reps = np.empty((32, 3), dtype=np.int64)
    h_count = np.array([0, -1, 1 if host_spill_min <= 0 else 0], dtype=np.int64)  # values, last, spilled
    g_slots = np.full((64, 2), -1, dtype=np.int64)
    g_reps = np.empty((32, 3), dtype=np.int64)
    g_count = np.array([0, -1], dtype=np.int64)
    w = np.zeros(N_W, dtype=np.int64)
    w[W_POS] = pos
    w[W_AHEAD] = pos
    w[W_DONE] = 1 if pos < 0 else 0
    while w[W_DONE] == 0:
        _run(
            b,
            base,
            end,
            check_crc,
            accept_v2,
            with_body,
            crc_tab,
            crc_fn,
            digits,
            s,
            w,
            c64,
            c32,
            offs,
            status,
            valid,
            bad,
            used,
            pviews,
            d_keys,
            d_tags,
            d_uniq,
            d_body,
            t_slots,
            t_reps,
            t_count,
            h_slots,
            h_reps,
            h_count,
            g_slots,
            g_reps,
            g_count,
        )
        if w[W_DONE]:
            break
        if w[W_ROWS] >= status.shape[0]:
            c64, c32, offs, pviews, status, valid, bad = _grown_rows(
                c64, c32, offs, pviews, status, valid, bad
            )
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
    )


@njit(cache=True, nogil=True)
def walk_stop(b, start, check_crc, accept_v2, crc_tab, crc_fn, digits, ring):
    """(status, position) of the record that ends a walk of one file from `start` - the broker's check on
    each record in turn, an accepted one moving on by its TOTALSIZE - and how many records it accepted;
    the positions of the last len(ring) accepted ones are left in `ring`, cyclically (record i at
    i % len(ring)). No columns are built: where only the end matters (a recovery's walk)."""
    s = np.zeros(N_SCRATCH, dtype=np.int64)
    n = b.shape[0]
    k = ring.shape[0]
    pos = start
    count = 0
    fetched = pos
    while True:
        fetched = _fetch_ahead(b, n, pos, fetched)
        st = check_record(b, n, pos, check_crc, accept_v2, crc_tab, crc_fn, digits, s)
        if st != OK:
            return st, pos, count
        ring[count % k] = pos
        count += 1
        pos += s[S_TOTAL]
