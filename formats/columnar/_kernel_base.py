"""The shared pieces of the columnar decoder's numba kernels: status codes, scratch slots and column rows,
unaligned-load / memcpy / count-trailing-zeros intrinsics, CRC32 and the small byte helpers (`_find2`,
`_starts_with`, `_java_parse_int_ok`); the tables they take are built in formats/columnar/kernels.py. See
formats/columnar/_columnar_kernels.py."""

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
# not a column: a spilled walk's born host as its 8 bytes (an IPv4 host; 0 otherwise), read while the
# record's header is in cache, so that the dictionary's hash pass does not read every record again
C64_BORN_KEY = 7
N_C64 = 8
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
# SPILLED in the rows and `spilled_host_dictionary` builds the dictionary afterwards from the 8-byte keys
# the walk kept (C64_BORN_KEY): a compact table of int32 indices with its slots prefetched rows ahead,
# instead of the walk's table and a comparison with an earlier record's bytes per new host.
SPILLED = -1
BORNHOST_AT = 48  # TOTALSIZE .. BORNTIMESTAMP: the born host's offset in a record, V1 and V2 alike


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
    """The CRC-32 of arr[p:p+n] by a C function at address fn (a run-time argument, so that the cached
    machine code holds no absolute address): libdeflate's `libdeflate_crc32(0, buf, len)` or zlib's
    `crc32(0, buf, len)` (formats.columnar.kernels.crc32_address). Called as (int64, pointer, int64)
    -> int64 and cut to 32 bits: both take the CRC and the length in full registers of which they read
    the low 32 or 64 bits (the length is below 2 GiB), and libdeflate returns a 32-bit value."""

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        fnty = ir.FunctionType(i64, [i64, ir.IntType(8).as_pointer(), i64])
        func = builder.inttoptr(args[0], fnty.as_pointer())
        ptr = _address(context, builder, signature.args[1], args[1], args[2])
        crc = builder.call(func, [ir.Constant(i64, 0), ptr, args[3]])
        return builder.and_(crc, ir.Constant(i64, 0xFFFFFFFF))

    return types.int64(fn, arr, p, n), codegen


@intrinsic
def _prefetch(typingctx, arr, pos):
    """Ask the CPU for the cache line of arr[pos] (llvm.prefetch: read, keep in all levels). A hint:
    it never faults, an address outside the mapping or not yet mapped is ignored."""

    def codegen(context, builder, signature, args):
        ptr = _address(context, builder, signature.args[0], args[0], args[1])
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0i8")
        read, keep_everywhere, data = ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)
        builder.call(fn, [builder.bitcast(ptr, i8p), read, keep_everywhere, data])
        return context.get_dummy_value()

    return types.void(arr, pos), codegen


@intrinsic
def _ctz(typingctx, x):
    def codegen(context, builder, signature, args):
        return builder.cttz(args[0], ir.Constant(ir.IntType(1), 0))

    return types.int64(x), codegen


_ONES = 0x0101010101010101
_HIGHS = -0x7F7F7F7F7F7F7F80  # 0x8080808080808080 as int64
_TWOS = 0x0202020202020202


# A walk from record to record reads a few cache lines of each (header, topic, properties) and skips the
# body: a chain of dependent loads that the hardware prefetchers do not follow across pages, so every
# record waited for memory (the walk ran at a sixth of the speed of the same walk with the lines asked
# for in advance). The walks ask for every line FETCH_AHEAD bytes in front of them, and touch one byte per
# page TOUCH_AHEAD bytes in front, so that page faults are taken there (a prefetch of an unmapped page is
# dropped).
FETCH_AHEAD = 4096
TOUCH_AHEAD = 65536
_LINE = 64
_PAGE = 4096


@_hot
def _fetch_ahead(b, n, pos, fetched):
    """Prefetch the cache lines of b from max(fetched, pos) up to pos + FETCH_AHEAD; the new frontier."""
    lim = min(pos + FETCH_AHEAD, n)
    f = max(fetched, pos)
    while f < lim:
        _prefetch(b, f)
        f += _LINE
    return f


@_hot
def _touch_ahead(b, n, pos, touched, acc):
    """Read one byte per page of b from `touched` up to pos + TOUCH_AHEAD (taking their page faults):
    (the new frontier, acc plus the bytes read, so that the reads are not optimised away)."""
    lim = min(pos + TOUCH_AHEAD, n)
    while touched < lim:
        acc += b[touched]
        touched += _PAGE
    return touched, acc


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
