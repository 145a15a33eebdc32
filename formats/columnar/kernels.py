"""The compiled kernels of the columnar readers, from the ahead-of-time extension when it is current, else
from numba's JIT: `kernel(name)` and the tables they take (`tables()`).

`pip install` (and `make setup`, `make kernels`) compiles every entry point listed in SPECS into the
extension module `formats.columnar._aot_kernels` with numba.pycc (formats/columnar/aot.py). Importing it
needs neither numba nor a compiler: a scanning command starts without numba's import and JIT start-up
(~0.3 s), and the first one after an install does not sit a minute compiling. The extension holds a
digest of the kernel sources it was built from; when it is missing, or older than the sources (an
edited checkout), the kernels come from their numba modules (`@njit(cache=True)`, compiled on first use
and cached), and a compile that takes more than two seconds says so on stderr once.
`MQTOOL_KERNELS=jit` or `aot` forces one way (`aot` fails when the extension is not current).

Both ways take exactly the same arguments: SPECS gives each entry point's argument types, the extension
is compiled for exactly those, and every call checks them (dtype, dimensions, C order, writable
outputs) before it runs: the extension's wrapper would read any buffer it is given as the declared type.

The tables (CRC-32 slicing tables, a C `crc32`'s address, Java's `Character.digit` table) are built here,
without numba.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np

# argument codes: "u8[:]" an array (dtype code, one ":" per dimension), "+" after it: written by the
# kernel (must be writable); "i64", "b": an int64 or bool scalar
_DTYPES = {"u8": np.uint8, "i8": np.int8, "i32": np.int32, "i64": np.int64, "b1": np.bool_}
_WALK_OUT = ["i64[:,:]+", "i32[:,:]+", "i32[:,:]+", "u8[:,:]+", "i8[:]+", "u8[:]+", "u8[:]+"]
_TABLES = ["i64[:,:]", "i64", "i8[:]"]
SPECS: dict[str, tuple[str, str, list[str]]] = {
    # name: (module, function, argument codes)
    "walk": (
        "formats.columnar._columnar_kernels",
        "walk",
        ["u8[:]", "i64", "i64", "i64", "b", "b", "b", "b", "i64", *_TABLES, *_WALK_OUT, *["u8[:]+"] * 4],
    ),
    "walk_stop": (
        "formats.columnar._columnar_kernels",
        "walk_stop",
        ["u8[:]", "i64", "b", "b", *_TABLES, "i64[:]+"],
    ),
    "walk_chain": (
        "formats.columnar._record_kernels",
        "walk_chain",
        ["u8[:]", "i64", "i64", "i64", "b", "b", "b", *_TABLES],
    ),
    "spilled_host_dictionary": (
        "formats.columnar._intern_kernels",
        "spilled_host_dictionary",
        ["u8[:]", "i64", "i64[:]", "i32[:]+", "i32[:]", "b1[:]", "i64[:,:]", "i64[:]"],
    ),
    "ipv4_key_texts": ("formats.columnar._intern_kernels", "ipv4_key_texts", ["i64[:]"]),
    "host_texts": ("formats.columnar._intern_kernels", "host_texts", ["u8[:]", "i64[:,:]", "b"]),
    "find_values": (
        "formats.columnar._property_kernels",
        "find_values",
        ["u8[:]", "i64[:]", "i64[:]", "u8[:]", "i64[:]", "i64[:,:]+", "i64[:,:]+"],
    ),
    "gather": (
        "formats.columnar._property_kernels",
        "gather",
        ["u8[:]", "i64[:]", "i64[:]", "i32[:]+", "u8[:]+"],
    ),
    "plain_longs": (
        "formats.columnar._property_kernels",
        "plain_longs",
        ["u8[:]", "i64[:]", "i64[:]", "i64[:]+", "u8[:]+"],
    ),
    "walk_entries": (
        "formats.columnar._entry_kernels",
        "walk_entries",
        ["u8[:]", "i64", "i64", "i64", "b", "b", "b", "i64", "i64", "i64", *_TABLES, *_WALK_OUT]
        + ["i64[:,:]+", "i32[:,:]+", *["u8[:]+"] * 4],
    ),
    "entry_chain": (
        "formats.columnar._entry_kernels",
        "entry_chain",
        ["u8[:]", "i64", "i64", "i64", "i64", *["i64[:]+"] * 4, "i32[:]+"],
    ),
    "search_sorted": ("formats.columnar._search_kernels", "search_sorted", ["i64[:]", "i64[:]", "i64[:]+"]),
    "pop_parse": (
        "formats.pop._kernels",
        "parse",
        ["u8[:]", "i64[:]", "u8[:]", "i64[:]", "i64[:]", "b1[:]+", "i64[:,:]+", "i64[:,:]+", "i64[:,:]+"]
        + ["i64[:]+", "i64[:]+", "i64[:]+"],
    ),
}
AOT_MODULE = "formats.columnar._aot_kernels"
_ROOT = Path(__file__).resolve().parents[2]
# what the extension is compiled from: a change to any of them makes it stale
SOURCES = (
    "formats/columnar/kernels.py",
    "formats/columnar/_kernel_base.py",
    "formats/columnar/_record_kernels.py",
    "formats/columnar/_intern_kernels.py",
    "formats/columnar/_columnar_kernels.py",
    "formats/columnar/_property_kernels.py",
    "formats/columnar/_entry_kernels.py",
    "formats/columnar/_search_kernels.py",
    "formats/pop/_kernels.py",
)
COMPILE_NOTE_AFTER_S = 2.0


def source_digest() -> int:
    """64 bits of the SHA-256 of the kernel sources (as a signed int64, the extension's return type)."""
    h = hashlib.sha256()
    for name in SOURCES:
        h.update(name.encode())
        h.update((_ROOT / name).read_bytes())
    return int.from_bytes(h.digest()[:8], "little", signed=True)


def parse_code(code: str) -> tuple[str, int, bool]:
    """(dtype code or scalar code, dimensions (0: scalar), written by the kernel) of an argument code."""
    written = code.endswith("+")
    code = code.rstrip("+")
    if "[" not in code:
        return code, 0, False
    name, dims = code.split("[")
    return name, dims.count(":"), written


@functools.cache
def _aot():
    """The extension module when it is built and current, else None (or why not, with MQTOOL_KERNELS=aot)."""
    mode = os.environ.get("MQTOOL_KERNELS", "auto")
    if mode == "jit":
        return None
    try:
        module = importlib.import_module(AOT_MODULE)
        current = module.source_digest() == source_digest()
    except (ImportError, OSError) as exc:
        if mode == "aot":
            raise ImportError(f"MQTOOL_KERNELS=aot: the compiled kernels cannot be loaded: {exc}") from exc
        return None
    if not current:
        if mode == "aot":
            raise ImportError("MQTOOL_KERNELS=aot: the compiled kernels are older than their sources")
        return None
    return module


def using_aot() -> bool:
    """Whether the kernels run from the ahead-of-time extension."""
    return _aot() is not None


@functools.cache
def kernel(name: str) -> Callable:
    """The entry point `name` of SPECS, with its argument checks."""
    module, function, codes = SPECS[name]
    aot = _aot()
    fn = getattr(aot, name) if aot is not None else _jit(getattr(importlib.import_module(module), function))
    specs = [parse_code(c) for c in codes]

    def call(*args):
        if len(args) != len(specs):
            raise TypeError(f"{name} takes {len(specs)} arguments, not {len(args)}")
        for k, (arg, (kind, dims, written)) in enumerate(zip(args, specs, strict=True)):
            if dims and not (
                isinstance(arg, np.ndarray)
                and arg.dtype == _DTYPES[kind]
                and arg.ndim == dims
                and arg.flags.c_contiguous
                and (arg.flags.writeable or not written)
            ):
                what = f"{arg.dtype}[{arg.ndim}]" if isinstance(arg, np.ndarray) else type(arg).__name__
                raise TypeError(f"{name}: argument {k} is {what}, not a C-ordered {kind}[{dims}] array")
        return fn(*args)

    call.__name__ = name
    call.__doc__ = fn.__doc__
    return call


_NOTED: list[bool] = []


def _jit(dispatcher) -> Callable:
    """A numba dispatcher whose first call, if it compiles for longer than COMPILE_NOTE_AFTER_S, says so
    once on stderr (the JIT cache keeps the machine code for later processes)."""
    first = [True]

    def call(*args):
        if not first[0]:
            return dispatcher(*args)
        first[0] = False
        timer = threading.Timer(COMPILE_NOTE_AFTER_S, _compile_note)
        timer.daemon = True
        timer.start()
        try:
            return dispatcher(*args)
        finally:
            timer.cancel()

    call.__doc__ = dispatcher.__doc__
    return call


def _compile_note() -> None:
    if not _NOTED:
        _NOTED.append(True)
        sys.stderr.write("mqtool: compiling the decoder for this machine (first run only, about a minute)\n")
        sys.stderr.flush()


# --- the tables the kernels take ----------------------------------------------------------------------


@functools.cache
def tables() -> tuple[np.ndarray, int, np.ndarray]:
    """(CRC-32 slicing tables, a C crc32's address or 0, Java's digit table): the kernels' last three
    arguments where they check records."""
    return make_crc_table(), crc32_address(), make_digit_table()


def make_digit_table() -> np.ndarray:
    """Decimal value of every BMP code point, -1 for non-digits (Java's Character.digit(c, 10)).

    The decimal digits are Unicode category Nd, which is what `\\d` matches in a str pattern: one regex
    pass over the BMP finds the few hundred of them (asking unicodedata for all 65,536 code points took
    0.1 s of every scanning process)."""
    import re
    import unicodedata

    table = np.full(0x10000, -1, dtype=np.int8)
    for m in re.finditer(r"\d", "".join(map(chr, range(0x10000)))):
        table[m.start()] = unicodedata.decimal(m.group(), -1)
    return table


_LIBS: list = []  # keeps the loaded libraries referenced
# (library names, function): the fastest first. libdeflate's CRC uses carry-less multiplication where the
# CPU has it (15 GB/s here against zlib 1.2's 6.7 GB/s; the body CRC was a quarter of verify's CPU);
# zlib is on every system; without either the kernels' table loop (1-2 GB/s) runs.
CRC32_FUNCTIONS = (
    (("libdeflate.so.0", "deflate"), "libdeflate_crc32"),
    (("libz.so.1", "z"), "crc32"),
)


def crc32_address(functions=CRC32_FUNCTIONS) -> int:
    """Address of the first C CRC-32 function of `functions` found on this system, 0 when none is. Each
    is `crc32(crc, buffer, length)` of the reflected 0xEDB88320 polynomial, what zlib.crc32 computes."""
    import ctypes
    import ctypes.util

    for names, function in functions:
        for name in (names[0], ctypes.util.find_library(names[1])):
            if not name:
                continue
            try:
                lib = ctypes.CDLL(name)
                address = ctypes.cast(getattr(lib, function), ctypes.c_void_p).value
            except (OSError, AttributeError):
                continue
            if address:
                _LIBS.append(lib)
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
