"""The walk's dictionaries as numba kernels: interning topics and hosts into small open-addressing hash
tables (FNV-1a + fmix64), growing them, UTF-8 validation, the born-host dictionary of a spilled walk
(`spilled_host_dictionary`) and the hosts' text (`host_texts`, both address families). See
formats/columnar/_columnar_kernels.py."""

from __future__ import annotations

import numpy as np
from numba import njit

from formats.columnar._kernel_base import (
    _FMIX1,
    _FMIX2,
    _FNV_OFFSET,
    _FNV_PRIME,
    _LOW31,
    BORNHOST_AT,
    _hot,
    _le64,
    _memcpy,
    _prefetch,
)


@_hot
def _mix64(h):
    """MurmurHash3's fmix64 of an int64 (a bijection: every output bit depends on every input bit)."""
    h = (h ^ ((h >> 33) & _LOW31)) * _FMIX1
    h = (h ^ ((h >> 33) & _LOW31)) * _FMIX2
    return h ^ ((h >> 33) & _LOW31)


@_hot
def _hash(b, p, n):
    """64-bit hash of b[p:p+n], eight bytes per step (FNV-style multiply-xor), then fmix64.

    A multiply only carries bits upwards, so without the finalizer the low bits that pick a table slot
    ignore the high bytes of each word: every born host of one IP (its port sits in the high half of the
    8-byte host) landed in one slot, and linear probing made the table quadratic in distinct hosts.
    fmix64 makes every output bit depend on every input bit.
    """
    h = np.int64(_FNV_OFFSET) ^ n
    i = p
    e = p + n
    while i + 8 <= e:
        h = (h ^ _le64(b, i)) * _FNV_PRIME
        i += 8
    while i < e:
        h = (h ^ np.int64(b[i])) * _FNV_PRIME
        i += 1
    return _mix64(h)


@_hot
def _same(b, p, q, n):
    """b[p:p+n] == b[q:q+n]."""
    i = 0
    while i + 8 <= n:
        if _le64(b, p + i) != _le64(b, q + i):
            return False
        i += 8
    while i < n:
        if b[p + i] != b[q + i]:
            return False
        i += 1
    return True


@_hot
def _lookup(b, p, n, h, slots, reps):
    """Index of b[p:p+n] (hash h) in an open-addressing table, or -(free slot + 1) when absent.

    slots: (power of two, 2) int64 rows (representative index, -1 = empty; hash); reps: (cap, 3) int64
    rows (offset, length, hash) of the distinct values, which stay spans of b. The hash sits beside the
    index so that a probe reads one cache line: a store with a born host per message misses on almost
    every lookup, and a miss then touches neither reps nor the bytes of an earlier record.
    """
    mask = slots.shape[0] - 1
    i = h & mask
    while True:
        k = slots[i, 0]
        if k < 0:
            return -(i + 1)
        if slots[i, 1] == h and reps[k, 1] == n and _same(b, reps[k, 0], p, n):
            return k
        i = (i + 1) & mask


@_hot
def _insert(p, n, h, slot, slots, reps, count):
    """Add a value at the free slot _lookup found; the caller made sure the tables have room."""
    k = count[0]
    reps[k, 0] = p
    reps[k, 1] = n
    reps[k, 2] = h
    slots[slot, 0] = k
    slots[slot, 1] = h
    count[0] = k + 1
    return k


@_hot
def _intern(b, p, n, slots, reps, count):
    """Index of b[p:p+n] in the table, added when new. count = [distinct values, last index]; the last
    value is tried first, since neighbouring records mostly share store host and often topic."""
    k = count[1]
    if k >= 0 and reps[k, 1] == n and _same(b, reps[k, 0], p, n):
        return k
    h = _hash(b, p, n)
    k = _lookup(b, p, n, h, slots, reps)
    if k < 0:
        k = _insert(p, n, h, -k - 1, slots, reps, count)
    count[1] = k
    return k


@_hot
def _table_full(slots, reps, count, extra):
    return count[0] + extra > reps.shape[0] or 2 * (count[0] + extra) > slots.shape[0]


@njit(cache=True)
def _grown_table(slots, reps, count):
    """(slots, reps) with twice the room, rehashed."""
    k = count[0]
    grown = np.empty((2 * reps.shape[0], 3), dtype=np.int64)
    grown[:k] = reps[:k]
    slots = np.full((2 * slots.shape[0], 2), -1, dtype=np.int64)
    mask = slots.shape[0] - 1
    for r in range(k):
        h = grown[r, 2]
        i = h & mask
        while slots[i, 0] >= 0:
            i = (i + 1) & mask
        slots[i, 0] = r
        slots[i, 1] = h
    return slots, grown


def _decimal_table(count: int) -> np.ndarray:
    """Row v: the decimal digits of v (ASCII, zero-padded to the right), then their number."""
    width = len(str(count - 1))
    table = np.zeros((count, width + 1), dtype=np.uint8)
    for v in range(count):
        text = str(v).encode()
        table[v, : len(text)] = np.frombuffer(text, dtype=np.uint8)
        table[v, width] = len(text)
    return table


# A host per message means a text per message: table look-ups instead of a division per digit (a constant
# array in the compiled code).
_OCTETS = _decimal_table(256)
_PAIRS = np.array([[48 + v // 10, 48 + v % 10] for v in range(100)], dtype=np.uint8)  # "00" .. "99"
# a spilled walk's IPv4 texts are copied four bytes at a time (one load and store each): "v." of every
# octet v, zero-padded to 4 bytes, and its length; "0000" .. "9999"
_DOTTED = np.frombuffer(b"".join(f"{v}.".encode().ljust(4, b"\0") for v in range(256)), dtype=np.uint8)
_DOTTED_LEN = np.array([len(f"{v}.") for v in range(256)], dtype=np.int64)
_QUADS = np.frombuffer(b"".join(f"{v:04d}".encode() for v in range(10000)), dtype=np.uint8)


@_hot
def _decimal_len(v):
    """Digits of v >= 0 (a port has at most five: compared, not divided)."""
    if v < 10:
        return 1
    if v < 100:
        return 2
    if v < 1000:
        return 3
    if v < 10000:
        return 4
    d = 5
    v //= 100000
    while v > 0:
        v //= 10
        d += 1
    return d


@_hot
def _put_decimal(out, w, v):
    """Write the decimal digits of v >= 0 at out[w:]; the position after them. Below 256 three bytes are
    written whatever the digits (the caller leaves room; later writes cover the padding)."""
    if v < 256:
        out[w] = _OCTETS[v, 0]
        out[w + 1] = _OCTETS[v, 1]
        out[w + 2] = _OCTETS[v, 2]
        return w + np.int64(_OCTETS[v, 3])
    digits = _decimal_len(v)
    i = w + digits
    while v >= 100:
        q = v // 100
        r = v - 100 * q
        out[i - 2] = _PAIRS[r, 0]
        out[i - 1] = _PAIRS[r, 1]
        i -= 2
        v = q
    if v >= 10:
        out[i - 2] = _PAIRS[v, 0]
        out[i - 1] = _PAIRS[v, 1]
    else:
        out[i - 1] = 48 + v
    return w + digits


# Rows ahead whose IPv4 slot is prefetched, and whose value the slot names (when taken) is: a host per
# message misses the cache on nearly every row, and the misses of rows apart overlap (over a million hosts
# 26 ms without, 14.5 ms with both).
_SLOT_AHEAD = 32
_VALUE_AHEAD = 16


@njit(cache=True)
def spilled_host_dictionary(b, base, phys, hosts, sysflags, valid, reps, keys):
    """The born-host dictionary of a spilled walk by hashing, in one pass over the rows: every distinct
    host gets an index in the order rows first show it, the IPv4 hosts first, then the IPv6 ones, and
    `hosts` (the walk's indices: into `reps` where it still interned, SPILLED after) is rewritten in place
    for the rows with a host (`valid`). Returns (the IPv4 values as their 8 bytes in little-endian int64s,
    the IPv6 values as (offset in b, 20, hash) rows).

    An IPv4 host is its 8 stored bytes read as one int64: the walk's key (`keys`, C64_BORN_KEY) for the
    rows it did not intern, the representative's bytes for the others; its open-addressing table holds
    index + 1 in an int32 (0: empty), at most half full (8 to 16 bytes a row), its slots prefetched rows
    ahead. IPv6 hosts (a few per mille of a dual-stack store) go through the
    walk's own byte-span table (`_intern`)."""
    n = hosts.shape[0]
    size = 16
    while size < 2 * n:
        size *= 2
    mask = size - 1
    slots4 = np.zeros(size, dtype=np.int32)
    values4 = np.empty(n, dtype=np.int64)
    n4 = 0
    last_key = np.int64(0)
    last = -1
    slots6 = np.full((64, 2), -1, dtype=np.int64)
    reps6 = np.empty((32, 3), dtype=np.int64)
    count6 = np.zeros(2, dtype=np.int64)
    count6[1] = -1
    is6 = np.zeros(n, dtype=np.bool_)
    for r in range(n):
        # hints: the key of a row the walk interned, or without a host, is stale and costs a wasted fetch
        if r + _SLOT_AHEAD < n:
            _prefetch(slots4, _mix64(keys[r + _SLOT_AHEAD]) & mask)
        if r + _VALUE_AHEAD < n:
            ahead = slots4[_mix64(keys[r + _VALUE_AHEAD]) & mask] - 1
            if ahead >= 0:
                _prefetch(values4, ahead)
        if valid[r] == 0:
            continue
        k = hosts[r]
        if k >= 0:
            p = reps[k, 0]
            ln = reps[k, 1]
            key = _le64(b, p) if ln == 8 else np.int64(0)
        else:
            p = phys[r] - base + BORNHOST_AT
            ln = 20 if sysflags[r] & 0x10 else 8
            key = keys[r]
        if ln != 8:
            if _table_full(slots6, reps6, count6, 1):
                slots6, reps6 = _grown_table(slots6, reps6, count6)
            hosts[r] = _intern(b, p, 20, slots6, reps6, count6)
            is6[r] = True
            continue
        if key == last_key and last >= 0:
            hosts[r] = last
            continue
        i = _mix64(key) & mask
        while True:
            idx = slots4[i] - 1
            if idx < 0:
                idx = n4
                values4[n4] = key
                slots4[i] = n4 + 1
                n4 += 1
                break
            if values4[idx] == key:
                break
            i = (i + 1) & mask
        hosts[r] = idx
        last_key = key
        last = idx
    if count6[0]:
        for r in range(n):
            if is6[r]:
                hosts[r] += n4
    return values4[:n4], reps6[: count6[0]]


@_hot
def _put_hex(out, w, v):
    """Write v (0..0xffff) in lower-case hex without leading zeros at out[w:]; the position after."""
    shift = 12
    while shift > 0 and (v >> shift) == 0:
        shift -= 4
    while shift >= 0:
        d = (v >> shift) & 0xF
        out[w] = 48 + d if d < 10 else 87 + d  # '0'.., 'a'..
        w += 1
        shift -= 4
    return w


@_hot
def _put_ipv4(out, w, b, p):
    """a.b.c.d of the 4 bytes at b[p:]."""
    for j in range(4):
        w = _put_decimal(out, w, np.int64(b[p + j]))
        if j < 3:
            out[w] = 46  # '.'
            w += 1
    return w


@_hot
def _put_ipv6(out, w, b, p, mapped_dotted):
    """The 16 address bytes at b[p:] as `ipaddress.IPv6Address.compressed` writes them (RFC 5952: hex
    groups without leading zeros, the first longest run of two or more zero groups as "::"); an
    IPv4-mapped address ends in dotted IPv4 when mapped_dotted (Python 3.13+)."""
    if mapped_dotted:
        mapped = b[p + 10] == 255 and b[p + 11] == 255
        for j in range(10):
            if b[p + j] != 0:
                mapped = False
        if mapped:
            for c in (58, 58, 102, 102, 102, 102, 58):  # "::ffff:"
                out[w] = c
                w += 1
            return _put_ipv4(out, w, b, p + 12)
    best = -1
    best_len = 0
    run = 0
    for g in range(8):
        if b[p + 2 * g] == 0 and b[p + 2 * g + 1] == 0:
            run += 1
            if run > best_len:
                best_len = run
                best = g - run + 1
        else:
            run = 0
    if best_len < 2:
        best = -1
    g = 0
    while g < 8:
        if g == best:
            out[w] = 58
            out[w + 1] = 58
            w += 2
            g += best_len
            continue
        if g > 0 and g != best + best_len:
            out[w] = 58  # ':'
            w += 1
        w = _put_hex(out, w, (np.int64(b[p + 2 * g]) << 8) | np.int64(b[p + 2 * g + 1]))
        g += 1
    return w


@njit(cache=True)
def ipv4_key_texts(keys):
    """ "a.b.c.d:port" of IPv4 hosts given as their 8 stored bytes in little-endian int64s (the address,
    then the big-endian int32 port, printed signed as Java does): (int32 offsets, UTF-8 bytes) of an
    Arrow string array, the text as `host_texts` writes it, the buffer sized exactly (a spilled walk's
    dictionary holds a host per message: host_texts' buffer for the longest host was 44 MB per file)."""
    k = keys.shape[0]
    offs = np.empty(k + 1, dtype=np.int32)
    size = 0
    for r in range(k):
        key = keys[r]
        for j in range(4):
            size += _DOTTED_LEN[(key >> (8 * j)) & 0xFF]  # the digits and a dot (the last: the colon)
        port = _key_port(key)
        size += _decimal_len(port if port >= 0 else -port) + (1 if port < 0 else 0)
    # + what a 4-byte copy of a short octet, or _put_decimal of a value below 256, writes past the text
    out = np.empty(size + 3, dtype=np.uint8)
    offs[0] = 0
    w = 0
    for r in range(k):
        key = keys[r]
        for j in range(4):
            v = (key >> (8 * j)) & 0xFF
            _memcpy(out, w, _DOTTED, 4 * v, 4)
            w += _DOTTED_LEN[v]
        out[w - 1] = 58  # ':'
        port = _key_port(key)
        if 10000 <= port < 100000:  # an ephemeral port, most of a host per message
            high = port // 10000
            out[w] = 48 + high
            _memcpy(out, w + 1, _QUADS, 4 * (port - 10000 * high), 4)
            w += 5
            offs[r + 1] = w
            continue
        if port < 0:
            out[w] = 45  # '-'
            w += 1
            port = -port
        w = _put_decimal(out, w, port)
        offs[r + 1] = w
    return offs, out[:w]


@_hot
def _key_port(key):
    """The signed big-endian int32 port in bytes 4..7 of a little-endian int64 key."""
    port = (((key >> 32) & 0xFF) << 24) | (((key >> 40) & 0xFF) << 16) | (((key >> 48) & 0xFF) << 8)
    port |= (key >> 56) & 0xFF
    return port - 4294967296 if port >= 2147483648 else port


@njit(cache=True)
def host_texts(b, reps, mapped_dotted):
    """ "a.b.c.d:port" of every 8-byte stored host and "[v6]:port" of every 20-byte one (address bytes,
    big-endian int32 port, printed signed as Java does) whose (offset, length, hash) row is in reps:
    (int32 offsets, UTF-8 bytes) of an Arrow string array, as `formats.message.msgid.host_str` writes
    them. One pass in compiled code: a store of short-lived producers has a host per message, and
    formatting was then most of the decode."""
    k = reps.shape[0]
    offs = np.empty(k + 1, dtype=np.int32)
    out = np.empty(k * 55, dtype=np.uint8)  # [ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:-2147483648
    offs[0] = 0
    w = 0
    for r in range(k):
        p = reps[r, 0]
        ln = reps[r, 1]
        if ln == 20:
            out[w] = 91  # '['
            w = _put_ipv6(out, w + 1, b, p, mapped_dotted)
            out[w] = 93  # ']'
            w += 1
        else:
            w = _put_ipv4(out, w, b, p)
        out[w] = 58  # ':'
        w += 1
        q = p + ln - 4
        port = (np.int64(b[q]) << 24) | (np.int64(b[q + 1]) << 16) | (np.int64(b[q + 2]) << 8)
        port |= np.int64(b[q + 3])
        if port >= 2147483648:
            port -= 4294967296
            out[w] = 45  # '-'
            w += 1
            port = -port
        w = _put_decimal(out, w, port)
        offs[r + 1] = w
    return offs, out[:w]
