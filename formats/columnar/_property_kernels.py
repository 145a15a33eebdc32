"""Named property values of many records at once, as numba kernels: where each wanted key's value sits
in each record's PROPERTIES (`find_values`), the values gathered into one Arrow string buffer
(`gather`), and plain decimal values read as numbers (`plain_longs`). See formats/columnar/properties.py."""

from __future__ import annotations

import numpy as np
from numba import njit

from formats.columnar._kernel_base import _find2, _hot, _utf8_ok

PLAIN_DIGITS_MAX = 18  # digits a plain value may have: its value fits an int64 without overflow checks


@_hot
def _key_is(b, i, e, names, at, ln):
    """b[i:e] (one part, before its \\x02) starts with the name names[at:at+ln] and \\x01."""
    if e - i <= ln + 1 or b[i + ln] != 1:  # the value after \x01 must not be empty
        return False
    for k in range(ln):  # noqa: SIM110 - numba has no all(generator)
        if b[i + k] != names[at + k]:
            return False
    return True


@njit(cache=True, nogil=True)
def find_values(b, starts, lens, names, name_offsets, out_pos, out_len):
    """For each record r (PROPERTIES at b[starts[r]:starts[r] + lens[r]]) and wanted key k (bytes
    names[name_offsets[k]:name_offsets[k + 1]]): the value's position and length in out_pos[k, r],
    out_len[k, r], -1 when absent.

    Rules of `MessageDecoder.string2messageProperties`: parts split at \\x02; a part's key is the text
    before its first \\x01 (kept when neither the key nor the value is empty); the last duplicate wins.
    The separators are ASCII, so splitting bytes gives the parts the broker's decoded text gives.
    """
    keys = name_offsets.shape[0] - 1
    for r in range(starts.shape[0]):
        for k in range(keys):
            out_pos[k, r] = -1
            out_len[k, r] = -1
        i = starts[r]
        e = i + lens[r]
        while i < e:
            j = _find2(b, i, e)
            for k in range(keys):
                at = name_offsets[k]
                ln = name_offsets[k + 1] - at
                if _key_is(b, i, j, names, at, ln):
                    out_pos[k, r] = i + ln + 1
                    out_len[k, r] = j - i - ln - 1
            i = j + 1


@njit(cache=True, nogil=True)
def gather(b, pos, lens, offsets, data):
    """Values b[pos[r]:pos[r] + lens[r]] one after the other into data (Arrow string offsets in
    offsets, absent values (len -1) empty); returns the rows that are not well-formed UTF-8."""
    w = 0
    bad = []
    for r in range(pos.shape[0]):
        offsets[r] = w
        n = lens[r]
        if n > 0:
            p = pos[r]
            data[w : w + n] = b[p : p + n]
            w += n
            if not _utf8_ok(b, p, n):
                bad.append(r)
    offsets[pos.shape[0]] = w
    return np.array(bad, dtype=np.int64)


@njit(cache=True, nogil=True)
def plain_longs(b, pos, lens, values, plain):
    """Values that are an optional '-' and 1 to 18 ASCII digits, as numbers (plain[r] = 1, or 2 with
    the '-'); other values (plain[r] = 0) are left to the caller's own rules."""
    for r in range(pos.shape[0]):
        values[r] = 0
        plain[r] = 0
        n = lens[r]
        if n <= 0:
            continue
        p = pos[r]
        e = p + n
        neg = b[p] == 45
        if neg:
            p += 1
        if e - p < 1 or e - p > PLAIN_DIGITS_MAX:
            continue
        v = np.int64(0)
        ok = True
        while p < e:
            d = np.int64(b[p]) - 48
            if d < 0 or d > 9:
                ok = False
                break
            v = v * 10 + d
            p += 1
        if ok:
            values[r] = -v if neg else v
            plain[r] = 2 if neg else 1
