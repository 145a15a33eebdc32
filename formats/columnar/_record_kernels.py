"""The broker's record check as numba kernels: `check_record` (`CommitLog.checkMessageAndReturnSize`,
properties parsed as `MessageDecoder.string2messageProperties` does) and finding a record boundary in
the middle of a byte range (`find_boundary`), and the recovery's walk of a size chain (`walk_chain`). See
formats/columnar/_columnar_kernels.py."""

from __future__ import annotations

import numpy as np
from numba import njit

from formats.columnar._kernel_base import (
    _HIGHS,
    _ONES,
    BAD_MAGIC,
    BAD_PROPERTY,
    BLANK,
    BLANK_MAGIC,
    CRC_MISMATCH,
    END,
    MAGIC_V1,
    MAGIC_V2,
    N_SCRATCH,
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
    S_STAGE,
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
    SCHEDULE_TOPIC,
    SIZE_MISMATCH,
    TRUNCATED,
    _be16,
    _be32,
    _be64,
    _fetch_ahead,
    _find2,
    _hot,
    _java_parse_int_ok,
    _le64,
    _starts_with,
    _touch_ahead,
    _wrap32,
    _zlib_crc32,
    crc32,
)


@_hot
def _scan_properties(b, p, n, sched, s, digits):
    """Find KEYS/TAGS/UNIQ_KEY values (last occurrence wins, as `string2messageProperties` fills its HashMap);
    False on a bad DELAY.

    The broker splits the UTF-8-decoded text at \\x02 and takes, per part, the text before the first
    \\x01 as the key (non-empty) and the rest as the value (non-empty). Those separators are ASCII, so
    splitting the bytes gives the same parts; a part matches key K exactly when it starts with K\\x01.
    """
    e = p + n
    i = p
    dpos = -1
    dlen = 0
    while i < e:
        j = _find2(b, i, e)
        ln = j - i
        if ln > 5:
            c = b[i]
            if c == 75:  # K
                if b[i + 1] == 69 and b[i + 2] == 89 and b[i + 3] == 83 and b[i + 4] == 1:
                    s[S_KEYS_POS] = i + 5
                    s[S_KEYS_LEN] = ln - 5
            elif c == 84:  # T
                if b[i + 1] == 65 and b[i + 2] == 71 and b[i + 3] == 83 and b[i + 4] == 1:
                    s[S_TAGS_POS] = i + 5
                    s[S_TAGS_LEN] = ln - 5
            elif c == 85:  # U
                if (
                    ln > 9
                    and b[i + 1] == 78
                    and b[i + 2] == 73
                    and b[i + 3] == 81
                    and b[i + 4] == 95
                    and b[i + 5] == 75
                    and b[i + 6] == 69
                    and b[i + 7] == 89
                    and b[i + 8] == 1
                ):
                    s[S_UNIQ_POS] = i + 9
                    s[S_UNIQ_LEN] = ln - 9
            elif (
                c == 68  # D
                and sched
                and ln > 6
                and b[i + 1] == 69
                and b[i + 2] == 76
                and b[i + 3] == 65
                and b[i + 4] == 89
                and b[i + 5] == 1
            ):
                dpos = i + 6
                dlen = ln - 6
        i = j + 1
    if dpos >= 0:
        # CommitLog parses DELAY of SCHEDULE_TOPIC_XXXX records with Integer.parseInt; an exception
        # there fails the record.
        return _java_parse_int_ok(b, dpos, dlen, digits)
    return True


@_hot
def check_record(b, n, pos, check_crc, accept_v2, crc_tab, crc_fn, digits, s):
    """The broker's verdict on the record at b[pos:] (n = buffer length); fields go into scratch s.

    Mirrors 5.3.3 `CommitLog.checkMessageAndReturnSize` step by step; every Java exception (buffer
    underflow, negative or oversized lengths) is a failure, labelled TRUNCATED when a read runs past
    the buffer and SIZE_MISMATCH for inconsistent lengths.
    """
    for k in range(N_SCRATCH):
        s[k] = 0
    s[S_KEYS_POS] = -1
    s[S_TAGS_POS] = -1
    s[S_UNIQ_POS] = -1
    rem = n - pos
    if rem < 8:
        # The broker never leaves fewer than 8 bytes after a record: zeros here are the end of data.
        zero = True
        for k in range(rem):
            if b[pos + k] != 0:
                zero = False
        if rem >= 4:
            s[S_TOTAL] = _be32(b, pos)
        return END if zero else TRUNCATED
    total = _be32(b, pos)
    s[S_TOTAL] = total
    if rem - 4 < _wrap32(total - 4):
        return TRUNCATED
    magic = _be32(b, pos + 4)
    s[S_MAGIC] = magic
    if magic == MAGIC_V1:
        tls = 1
    elif magic == MAGIC_V2 and accept_v2:
        tls = 2
    elif magic == BLANK_MAGIC:
        return BLANK
    elif magic == 0 and total == 0:
        return END
    else:
        return BAD_MAGIC
    if total < 0:
        return SIZE_MISMATCH
    if pos + 48 > n:
        return TRUNCATED
    sysflag = _be32(b, pos + 36)
    bl = 20 if sysflag & 0x10 else 8
    sl = 20 if sysflag & 0x20 else 8
    if bl > total or sl > total:
        return SIZE_MISMATCH
    p = pos + 48 + bl + 8 + sl + 16
    if p > n:
        return TRUNCATED
    s[S_BODYCRC] = _be32(b, pos + 8)
    s[S_QUEUEID] = _be32(b, pos + 12)
    s[S_FLAG] = _be32(b, pos + 16)
    s[S_QUEUEOFFSET] = _be64(b, pos + 20)
    s[S_PHYS] = _be64(b, pos + 28)
    s[S_SYSFLAG] = sysflag
    s[S_BORNTS] = _be64(b, pos + 40)
    s[S_BORNHOST_POS] = pos + 48
    s[S_BORNHOST_LEN] = bl
    q = pos + 48 + bl
    s[S_STORETS] = _be64(b, q)
    s[S_STOREHOST_POS] = q + 8
    s[S_STOREHOST_LEN] = sl
    q += 8 + sl
    s[S_RECONSUME] = _be32(b, q)
    s[S_PREPARED] = _be64(b, q + 4)
    body_len = _be32(b, q + 12)
    s[S_BODY_LEN] = body_len
    s[S_BODY_POS] = p
    s[S_STAGE] = 1
    if body_len > 0:
        if body_len > total:
            return SIZE_MISMATCH
        if p + body_len > n:
            return TRUNCATED
        if check_crc:
            crc = _zlib_crc32(crc_fn, b, p, body_len) if crc_fn else crc32(b, p, body_len, crc_tab)
            crc &= 0x7FFFFFFF
            if crc != s[S_BODYCRC]:
                return CRC_MISMATCH
        p += body_len
    if p + tls > n:
        return TRUNCATED
    if tls == 1:
        topic_len = np.int64(b[p])
        if topic_len >= 128:
            topic_len -= 256
    else:
        topic_len = _be16(b, p)
    p += tls
    if topic_len < 0 or topic_len > total:
        return SIZE_MISMATCH
    if p + topic_len > n:
        return TRUNCATED
    s[S_TOPIC_POS] = p
    s[S_TOPIC_LEN] = topic_len
    p += topic_len
    s[S_STAGE] = 2
    if p + 2 > n:
        return TRUNCATED
    props_len = _be16(b, p)
    p += 2
    s[S_PROPS_POS] = p
    if props_len > 0:
        if props_len > total:
            return SIZE_MISMATCH
        if p + props_len > n:
            return TRUNCATED
        s[S_PROPS_LEN] = props_len
        sched = topic_len == SCHEDULE_TOPIC.shape[0] and _starts_with(
            b, s[S_TOPIC_POS], s[S_TOPIC_POS] + topic_len, SCHEDULE_TOPIC
        )
        if not _scan_properties(b, p, props_len, sched, s, digits):
            return BAD_PROPERTY
    s[S_STAGE] = 3
    read_len = _wrap32(74 + bl + sl + max(body_len, 0) + tls + topic_len + max(props_len, 0))
    if total != read_len:
        return SIZE_MISMATCH
    return OK


@_hot
def _is_boundary(st, s, base, pos, n):
    """Resync predicate: an accepted record whose own PHYSICALOFFSET is its position, or a clean blank."""
    if st == OK:
        return s[S_PHYS] == base + pos
    if st == BLANK:
        return s[S_TOTAL] == n - pos
    return False


@_hot
def _boundary_at(b, base, p, n, check_crc, accept_v2, crc_tab, crc_fn, digits, s):
    """The resync predicate at p (p + 8 <= n), with cheap byte tests first."""
    c = b[p + 4]
    if c == 0xDA:
        if not (
            b[p + 5] == 0xA3
            and b[p + 6] == 0x20
            and (b[p + 7] == 0xA7 or b[p + 7] == 0xAB)
            and p + 36 <= n
            and _be64(b, p + 28) == base + p
        ):
            return False
    elif not (
        c == 0xCB and b[p + 5] == 0xD4 and b[p + 6] == 0x31 and b[p + 7] == 0x94 and _be32(b, p) == n - p
    ):
        return False
    st = check_record(b, n, p, check_crc, accept_v2, crc_tab, crc_fn, digits, s)
    return _is_boundary(st, s, base, p, n)


_DAS = -0x2525252525252526  # 0xDADADADADADADADA as int64
_CBS = -0x3434343434343435  # 0xCBCBCBCBCBCBCBCB


@_hot
def find_boundary(b, base, start, end, check_crc, accept_v2, crc_tab, crc_fn, digits, s):
    """First position p in [start, end) satisfying the resync predicate, or -1.

    Scans the magic code's first byte (0xDA message, 0xCB blank) eight positions per step, so that
    zero-filled tails are skipped quickly."""
    n = b.shape[0]
    lim = min(end, n - 7)
    p = max(start, 0)
    while p + 12 <= lim + 4:
        w = _le64(b, p + 4)
        x = w ^ _DAS
        y = w ^ _CBS
        if (((x - _ONES) & ~x) | ((y - _ONES) & ~y)) & _HIGHS:
            for q in range(p, p + 8):
                if _boundary_at(b, base, q, n, check_crc, accept_v2, crc_tab, crc_fn, digits, s):
                    return q
        p += 8
    while p < lim:
        if _boundary_at(b, base, p, n, check_crc, accept_v2, crc_tab, crc_fn, digits, s):
            return p
        p += 1
    return -1


HANDOVER = -1  # walk_chain's status when it reached the range's end where the next range takes over


@njit(cache=True, nogil=True)
def walk_chain(b, base, start, end, resync, check_crc, accept_v2, crc_tab, crc_fn, digits):
    """The size chain of b (a commitlog file whose first byte has physical offset base) with the broker's
    check, as recovery walks it, over the records that start in [start, end): from `start` (a record
    boundary), or with resync from the first boundary at or after it (`find_boundary`). Returns (status,
    position, position of the last accepted record or -1, touch): the status and position of the first
    record not accepted, or HANDOVER and the first position at or after `end` that the next range's
    resync starts from (the split rule of the columnar walk); HANDOVER at `end` when no record starts in
    the range. Reads ahead of the walk (a touch per page) so page faults leave its path."""
    n = b.shape[0]
    s = np.zeros(N_SCRATCH, dtype=np.int64)
    pos = start
    if resync:
        pos = find_boundary(b, base, start, min(end, n), check_crc, accept_v2, crc_tab, crc_fn, digits, s)
        if pos < 0:
            return HANDOVER, end, -1, 0
    last = -1
    ahead = pos
    touch = 0
    fetched = pos
    while True:
        ahead, touch = _touch_ahead(b, n, pos, ahead, touch)
        fetched = _fetch_ahead(b, n, pos, fetched)
        st = check_record(b, n, pos, check_crc, accept_v2, crc_tab, crc_fn, digits, s)
        if pos >= end and _is_boundary(st, s, base, pos, n):
            return HANDOVER, pos, last, touch
        if st != OK:
            return st, pos, last, touch
        last = pos
        pos += s[S_TOTAL]
