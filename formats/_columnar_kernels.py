"""Numba kernels of the columnar CommitLog decoder; the public API is formats/columnar.py.

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
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

# Record status codes; formats.columnar.STATUS_NAMES gives their names in this order.
OK = 0
BLANK = 1
END = 2
BAD_MAGIC = 3
TRUNCATED = 4
SIZE_MISMATCH = 5
CRC_MISMATCH = 6
BAD_PROPERTY = 7

MAGIC_V1 = -626843481
MAGIC_V2 = -626843477
BLANK_MAGIC = -875286124
MIN_RECORD_SIZE = 91  # V1, IPv4 hosts, empty body, topic and properties

# Scratch slots filled by check_record.
S_TOTAL = 0
S_MAGIC = 1
S_BODYCRC = 2
S_QUEUEID = 3
S_FLAG = 4
S_QUEUEOFFSET = 5
S_PHYS = 6
S_SYSFLAG = 7
S_BORNTS = 8
S_BORNHOST_POS = 9
S_BORNHOST_LEN = 10
S_STORETS = 11
S_STOREHOST_POS = 12
S_STOREHOST_LEN = 13
S_RECONSUME = 14
S_PREPARED = 15
S_BODY_POS = 16
S_BODY_LEN = 17
S_TOPIC_POS = 18
S_TOPIC_LEN = 19
S_PROPS_POS = 20
S_PROPS_LEN = 21
S_KEYS_POS = 22
S_KEYS_LEN = 23
S_TAGS_POS = 24
S_TAGS_LEN = 25
S_UNIQ_POS = 26
S_UNIQ_LEN = 27
S_STAGE = 28  # 0: only size/magic read, 1: fixed fields read, 2: and topic, 3: whole record
N_SCRATCH = 32

# Rows of the int64 / int32 column matrices returned by walk.
C64_PHYSICAL_OFFSET = 0
C64_QUEUE_OFFSET = 1
C64_PHYS_FIELD = 2
C64_BORN_TS = 3
C64_STORE_TS = 4
C64_PREPARED = 5
C64_BODY_OFFSET = 6
N_C64 = 7
C32_TOTAL = 0
C32_MAGIC = 1
C32_BODYCRC = 2
C32_QUEUEID = 3
C32_FLAG = 4
C32_SYSFLAG = 5
C32_RECONSUME = 6
C32_BODY_LEN = 7
C32_TOPIC = 8
C32_BORNHOST = 9
C32_STOREHOST = 10
N_C32 = 11
# Variable-length columns (rows of the offsets matrix, index into the data-buffer tuple, validity bits).
# Properties are not copied: their column is an Arrow binary_view into the file buffer (`pviews`, 16 bytes
# per row); its offsets row and data buffer stay unused.
V_PROPS = 0
V_KEYS = 1
V_TAGS = 2
V_UNIQ = 3
V_BODY = 4
N_VAR = 5
# Bit of the per-row validity mask for the topic and host dictionary columns.
VALID_TOPIC_BIT = 1 << N_VAR

SCHEDULE_TOPIC = np.frombuffer(b"SCHEDULE_TOPIC_XXXX", dtype=np.uint8)

_FNV_OFFSET = -3750763034362895579  # 0xcbf29ce484222325 as int64
_FNV_PRIME = 1099511628211
# MurmurHash3's 64-bit finalizer (fmix64) constants, as int64
_FMIX1 = -49064778989728563  # 0xff51afd7ed558ccd
_FMIX2 = -4265267296055464877  # 0xc4ceb9fe1a85ec53
_LOW31 = 0x7FFFFFFF  # what a logical shift right by 33 keeps
# The born-host dictionary stops growing past host_spill_min values (formats.columnar.HOST_SPILL_MIN)
# when they are more than a quarter of the rows (producers that connect per message): the walk then leaves
# SPILLED in the rows and `spilled_host_keys` + a sort build the dictionary afterwards, which costs the
# same for any number of distinct hosts instead of a random table access per row.
SPILLED = -1
BORNHOST_AT = 48  # TOTALSIZE .. BORNTIMESTAMP: the born host's offset in a record, V1 and V2 alike


def make_digit_table() -> np.ndarray:
    """Decimal value of every BMP code point, -1 for non-digits (Java's Character.digit(c, 10))."""
    import unicodedata

    return np.array([unicodedata.decimal(chr(c), -1) for c in range(0x10000)], dtype=np.int8)


_LIBZ: list = []  # keeps the loaded library referenced


def zlib_crc32_address() -> int:
    """Address of zlib's `crc32` (about twice as fast as the table loop here), 0 when not found."""
    import ctypes
    import ctypes.util

    for name in ("libz.so.1", ctypes.util.find_library("z")):
        if not name:
            continue
        try:
            lib = ctypes.CDLL(name)
            address = ctypes.cast(lib.crc32, ctypes.c_void_p).value
        except (OSError, AttributeError):
            continue
        if address:
            _LIBZ.append(lib)
            return address
    return 0


def make_crc_table() -> np.ndarray:
    """Slicing-by-8 tables of the reflected CRC-32 (zlib) polynomial, shape (8, 256)."""
    table = np.zeros((8, 256), dtype=np.int64)
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0xEDB88320 if c & 1 else c >> 1
        table[0, i] = c
    for k in range(1, 8):
        for i in range(256):
            c = table[k - 1, i]
            table[k, i] = (c >> 8) ^ table[0, c & 0xFF]
    return table


# Kernels that allocate nothing are compiled without NRT reference counting (`_nrt=False`): numba
# otherwise increfs/decrefs every array argument on each call, which tripled the cost of the walk.
_hot = njit(cache=True, nogil=True, _nrt=False)

# --- intrinsics: unaligned loads, memcpy, count trailing zeros ----------------------------------
# Byte-by-byte indexing costs a negative-index check per byte and defeats vectorisation; these compile
# to single machine loads. Callers make sure the bytes read are inside the array.


def _address(context, builder, arytype, ary, offset):
    return builder.gep(context.make_array(arytype)(context, builder, ary).data, [offset])


def _make_load(bits: int, big_endian: bool):
    @intrinsic
    def load(typingctx, arr, pos):
        def codegen(context, builder, signature, args):
            ptr = _address(context, builder, signature.args[0], args[0], args[1])
            value = builder.load(builder.bitcast(ptr, ir.IntType(bits).as_pointer()), align=1)
            if big_endian:
                value = builder.bswap(value)
            return builder.sext(value, ir.IntType(64)) if bits < 64 else value

        return types.int64(arr, pos), codegen

    return load


_be16 = _make_load(16, True)  # signed big-endian int16 at b[p:p+2], as int64
_be32 = _make_load(32, True)
_be64 = _make_load(64, True)
_le64 = _make_load(64, False)  # 8 bytes in memory order (byte k = bits 8k..8k+7)


@intrinsic
def _memcpy(typingctx, dst, at, src, p, n):
    def codegen(context, builder, signature, args):
        d = _address(context, builder, signature.args[0], args[0], args[1])
        s = _address(context, builder, signature.args[2], args[2], args[3])
        cgutils.raw_memcpy(builder, d, s, args[4], 1)
        return context.get_dummy_value()

    return types.void(dst, at, src, p, n), codegen


@intrinsic
def _zlib_crc32(typingctx, fn, arr, p, n):
    """zlib's `crc32(0, arr + p, n)` called through its address fn (a run-time argument, so that the
    cached machine code holds no absolute address)."""

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        fnty = ir.FunctionType(i64, [i64, ir.IntType(8).as_pointer(), ir.IntType(32)])
        func = builder.inttoptr(args[0], fnty.as_pointer())
        ptr = _address(context, builder, signature.args[1], args[1], args[2])
        return builder.call(func, [ir.Constant(i64, 0), ptr, builder.trunc(args[3], ir.IntType(32))])

    return types.int64(fn, arr, p, n), codegen


@intrinsic
def _ctz(typingctx, x):
    def codegen(context, builder, signature, args):
        return builder.cttz(args[0], ir.Constant(ir.IntType(1), 0))

    return types.int64(x), codegen


_ONES = 0x0101010101010101
_HIGHS = -0x7F7F7F7F7F7F7F80  # 0x8080808080808080 as int64
_TWOS = 0x0202020202020202


@_hot
def _find2(b, i, e):
    """Index of the first 0x02 byte in b[i:e], or e (eight bytes per step)."""
    while i + 8 <= e:
        x = _le64(b, i) ^ _TWOS
        t = (x - _ONES) & ~x & _HIGHS
        if t != 0:
            return i + (_ctz(t) >> 3)
        i += 8
    while i < e:
        if b[i] == 2:
            return i
        i += 1
    return e


@njit(cache=True)
def _wrap32(v):
    v = v & 0xFFFFFFFF
    return v - 0x100000000 if v >= 0x80000000 else v


@_hot
def crc32(b, p, n, t):
    """zlib CRC-32 of b[p:p+n] (unmasked, 0..2**32-1), slicing by 8."""
    c = np.int64(0xFFFFFFFF)
    i = p
    e = p + n
    while i + 8 <= e:
        w = _le64(b, i)
        one = c ^ (w & 0xFFFFFFFF)
        two = (w >> 32) & 0xFFFFFFFF
        c = (
            t[7, one & 0xFF]
            ^ t[6, (one >> 8) & 0xFF]
            ^ t[5, (one >> 16) & 0xFF]
            ^ t[4, one >> 24]
            ^ t[3, two & 0xFF]
            ^ t[2, (two >> 8) & 0xFF]
            ^ t[1, (two >> 16) & 0xFF]
            ^ t[0, two >> 24]
        )
        i += 8
    while i < e:
        c = t[0, (c ^ b[i]) & 0xFF] ^ (c >> 8)
        i += 1
    return c ^ 0xFFFFFFFF


@_hot
def _starts_with(b, p, e, lit):
    """b[p:e] starts with the bytes of lit."""
    m = lit.shape[0]
    if e - p < m:
        return False
    for k in range(m):  # noqa: SIM110 - numba has no all(generator)
        if b[p + k] != lit[k]:
            return False
    return True


@_hot
def _java_parse_int_ok(b, p, n, digits):
    """Whether Java's `Integer.parseInt` accepts the UTF-8 text b[p:p+n].

    digits maps each BMP code point to its decimal digit value or -1 (Character.digit(c, 10));
    a supplementary character is two UTF-16 units, neither a digit, so it fails like ill-formed UTF-8.
    """
    if n <= 0 or not _utf8_ok(b, p, n):
        return False
    i = p
    e = p + n
    neg = False
    if b[i] == 45 or b[i] == 43:  # '-' / '+'
        neg = b[i] == 45
        i += 1
        if i == e:
            return False
    v = np.int64(0)
    limit = np.int64(2147483648) if neg else np.int64(2147483647)
    while i < e:
        c = np.int64(b[i])
        if c < 0x80:
            i += 1
        elif c < 0xE0:
            c = ((c & 0x1F) << 6) | (np.int64(b[i + 1]) & 0x3F)
            i += 2
        elif c < 0xF0:
            c = ((c & 0x0F) << 12) | ((np.int64(b[i + 1]) & 0x3F) << 6) | (np.int64(b[i + 2]) & 0x3F)
            i += 3
        else:
            return False
        d = digits[c]
        if d < 0:
            return False
        v = v * 10 + d
        if v > limit:
            return False
    return True


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
    h = (h ^ ((h >> 33) & _LOW31)) * _FMIX1
    h = (h ^ ((h >> 33) & _LOW31)) * _FMIX2
    return h ^ ((h >> 33) & _LOW31)


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


@_hot
def _utf8_ok(b, p, n):
    """Whether b[p:p+n] is well-formed UTF-8 (no surrogates, no overlongs)."""
    i = p
    e = p + n
    while i + 8 <= e and (_le64(b, i) & _HIGHS) == 0:
        i += 8
    while i < e:
        c = b[i]
        if c < 0x80:
            i += 1
            continue
        if c < 0xC2 or c > 0xF4:
            return False
        if c < 0xE0:
            if i + 1 >= e or (b[i + 1] & 0xC0) != 0x80:
                return False
            i += 2
            continue
        if c < 0xF0:
            if i + 2 >= e:
                return False
            c1 = b[i + 1]
            lo = 0xA0 if c == 0xE0 else 0x80
            hi = 0x9F if c == 0xED else 0xBF
            if c1 < lo or c1 > hi or (b[i + 2] & 0xC0) != 0x80:
                return False
            i += 3
            continue
        if i + 3 >= e:
            return False
        c1 = b[i + 1]
        lo = 0x90 if c == 0xF0 else 0x80
        hi = 0x8F if c == 0xF4 else 0xBF
        if c1 < lo or c1 > hi or (b[i + 2] & 0xC0) != 0x80 or (b[i + 3] & 0xC0) != 0x80:
            return False
        i += 4
    return True


@_hot
def _put_decimal(out, w, v):
    """Write the decimal digits of v >= 0 at out[w:]; the position after them."""
    digits = 1
    t = v
    while t >= 10:
        t //= 10
        digits += 1
    end = w + digits
    i = end - 1
    while True:
        out[i] = 48 + v % 10
        v //= 10
        if v == 0:
            break
        i -= 1
    return end


@njit(cache=True)
def spilled_host_keys(b, base, phys, hosts, sysflags, valid, reps):
    """The born host of every row of a spilled walk as an int64 key (its 8 bytes, little-endian): from
    the dictionary where the walk still interned it, from the record otherwise. Rows without a host
    (not valid) get 0; the second result is False when some host is IPv6 (20 bytes: no int64 key)."""
    n = hosts.shape[0]
    keys = np.zeros(n, dtype=np.int64)
    for r in range(n):
        if valid[r] == 0:
            continue
        k = hosts[r]
        if k >= 0:
            if reps[k, 1] != 8:
                return keys, False
            keys[r] = _le64(b, reps[k, 0])
        else:
            if sysflags[r] & 0x10:
                return keys, False
            keys[r] = _le64(b, phys[r] - base + BORNHOST_AT)
    return keys, True


@njit(cache=True)
def ipv4_host_texts(b, reps):
    """ "a.b.c.d:port" of every 8-byte stored host (4 address bytes, big-endian int32 port, printed
    signed as Java does) whose (offset, length, hash) row is in reps: (int32 offsets, UTF-8 bytes) of an
    Arrow string array. One pass in compiled code: a store of short-lived producers has a host per
    message, and formatting was then most of the decode."""
    k = reps.shape[0]
    offs = np.empty(k + 1, dtype=np.int32)
    out = np.empty(k * 27, dtype=np.uint8)  # 255.255.255.255:-2147483648
    offs[0] = 0
    w = 0
    for r in range(k):
        p = reps[r, 0]
        for j in range(4):
            w = _put_decimal(out, w, np.int64(b[p + j]))
            out[w] = 46 if j < 3 else 58  # '.', ':'
            w += 1
        port = (np.int64(b[p + 4]) << 24) | (np.int64(b[p + 5]) << 16) | (np.int64(b[p + 6]) << 8)
        port |= np.int64(b[p + 7])
        if port >= 2147483648:
            port -= 4294967296
            out[w] = 45  # '-'
            w += 1
            port = -port
        w = _put_decimal(out, w, port)
        offs[r + 1] = w
    return offs, out[:w]


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
    while True:
        # Read ahead: touching the mapping in front of the walk takes page faults off its path.
        while ahead < n and ahead < pos + 65536:
            touch += b[ahead]
            ahead += 4096
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
        c32[C32_BODY_LEN, r] = s[S_BODY_LEN]
        v = 0
        z = 0
        if ok:
            c32[C32_TOPIC, r] = _intern(b, s[S_TOPIC_POS], s[S_TOPIC_LEN], t_slots, t_reps, t_count)
            if h_count[2]:
                c32[C32_BORNHOST, r] = SPILLED
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
