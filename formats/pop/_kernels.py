"""The revive bodies' canonical form, read by a numba kernel (see formats/pop/columns.py): `{"key":value,...}`
with the kind's keys in its order, each at most once, no whitespace; numbers an optional '-' and digits
without a leading zero (within a long; at most 10 and within range: an int), strings of
printable ASCII without quote or backslash, lists of such numbers. Anything else is refused (the row
goes to the reference parser)."""

from __future__ import annotations

from numba import njit

from formats.columnar._kernel_base import _hot
from formats.pop._value_types import IGNORED_LONG, INT, INT_LIST, INT_MAX, INT_MIN, LONG, TEXT


@_hot
def _number(b, p, e, max_digits):
    """(value, end) of the number at b[p:e], end -1 when it is not one of at most max_digits digits
    within a Java long (accumulated negative: -2**63 has no positive twin)."""
    neg = False
    if p < e and b[p] == 45:  # '-'
        neg = True
        p += 1
    if p >= e or b[p] < 48 or b[p] > 57:
        return 0, -1
    if b[p] == 48 and p + 1 < e and 48 <= b[p + 1] <= 57:
        return 0, -1  # a leading zero
    v = 0
    digits = 0
    while p < e and 48 <= b[p] <= 57:
        d = b[p] - 48
        if v < -922337203685477580 or (v == -922337203685477580 and d > 8):
            return 0, -1  # below Long.MIN_VALUE
        v = v * 10 - d
        digits += 1
        p += 1
        if digits > max_digits:
            return 0, -1
    if not neg:
        if v == -9223372036854775807 - 1:
            return 0, -1  # above Long.MAX_VALUE
        v = -v
    return v, p


@njit(cache=True, nogil=True)
def parse(b, offsets, keys, key_offsets, key_types, ok, nums, tpos, tlen, lstart, llen, values):
    """For each body b[offsets[r]:offsets[r + 1]] in canonical form: ok[r] 1, numbers
    into nums[slot, r] (slot = key index; 0 when absent), strings' positions into tpos/tlen[slot, r]
    (-1 absent), the list's items into values (from lstart[r], llen[r] of them; -1 absent). The keys
    are keys[key_offsets[k]:key_offsets[k + 1]] in their order, with their types in key_types."""
    n = offsets.shape[0] - 1
    nkeys = key_types.shape[0]
    out = 0
    for r in range(n):
        p = offsets[r]
        e = offsets[r + 1]
        lstart[r] = out
        llen[r] = -1
        good = e - p >= 2 and b[p] == 123 and b[e - 1] == 125 and b[p + 1] != 125  # '{' '}', not "{}"
        p += 1
        k = 0
        while good:
            if b[p] != 34:  # '"'
                good = False
                break
            q = p + 1
            while q < e and b[q] != 34:
                q += 1
            # the next key in order with this name
            found = -1
            while k < nkeys:
                ks = key_offsets[k]
                kl = key_offsets[k + 1] - ks
                if kl == q - p - 1:
                    same = True
                    for j in range(kl):
                        if b[p + 1 + j] != keys[ks + j]:
                            same = False
                            break
                    if same:
                        found = k
                        break
                k += 1
            if found < 0 or q + 1 >= e or b[q + 1] != 58:  # ':'
                good = False
                break
            p = q + 2
            t = key_types[found]
            if t in (LONG, INT, IGNORED_LONG):
                v, p = _number(b, p, e, 10 if t == INT else 19)
                if p < 0 or (t == INT and (v < INT_MIN or v > INT_MAX)):
                    good = False
                    break
                if t != IGNORED_LONG:
                    nums[found, r] = v
            elif t == TEXT:
                if b[p] != 34:
                    good = False
                    break
                q = p + 1
                while q < e and 32 <= b[q] <= 126 and b[q] != 34 and b[q] != 92:
                    q += 1
                if q >= e or b[q] != 34:
                    good = False
                    break
                tpos[found, r] = p + 1
                tlen[found, r] = q - p - 1
                p = q + 1
            else:  # a list
                if b[p] != 91:  # '['
                    good = False
                    break
                p += 1
                count = 0
                if b[p] != 93:  # ']'
                    while True:
                        v, p = _number(b, p, e, 10 if t == INT_LIST else 19)
                        if p >= 0 and t == INT_LIST and (v < INT_MIN or v > INT_MAX):
                            p = -1  # out of an int: not canonical (the reference refuses it)
                        if p < 0:
                            break
                        values[out + count] = v
                        count += 1
                        if b[p] != 44:  # ','
                            break
                        p += 1
                    if p < 0 or b[p] != 93:
                        good = False
                        break
                p += 1
                lstart[r] = out
                llen[r] = count
                out += count
            k = found + 1
            if b[p] == 125:  # '}': the last byte (checked above)
                good = p == e - 1
                break
            if b[p] != 44:
                good = False
                break
            p += 1
        if not good:
            for s in range(nkeys):
                nums[s, r] = 0
                tpos[s, r] = -1
                tlen[s, r] = -1
            out = lstart[r]
            llen[r] = -1
        ok[r] = good
