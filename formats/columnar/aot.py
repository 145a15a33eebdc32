"""Build the ahead-of-time kernel extension `formats.columnar._aot_kernels` with numba.pycc (build time
only: it needs numba and a C compiler; at run time formats/columnar/kernels.py loads the result).

Every entry point of `kernels.SPECS` is exported under its name with exactly the argument types the
spec gives (arrays C-ordered; inputs read-only, so the scans' mapped files can be passed), its result
type as numba infers it, plus `source_digest()`: the digest of the sources the module was built from,
which the loader compares with the sources beside it. Code is generated for the generic CPU of the
architecture, so that a built wheel runs on any machine of it.

    python -m formats.columnar.aot [OUTPUT_DIR]   # default: next to this file (what `make kernels` runs)

`setup.py` builds it into every wheel and editable install (`extension()`); a build without numba.pycc
or a compiler leaves it out, and the kernels then compile on first use.
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

from formats.columnar.kernels import AOT_MODULE, SPECS, parse_code, source_digest

_NAME = AOT_MODULE.rsplit(".", 1)[1]


def _numba_type(code: str):
    from numba import types

    kind, dims, written = parse_code(code)
    scalar = {
        "u8": types.uint8,
        "i8": types.int8,
        "i32": types.int32,
        "i64": types.int64,
        "b1": types.boolean,
        "b": types.boolean,
    }[kind]
    if dims == 0:
        return scalar
    return types.Array(scalar, dims, "C", readonly=not written)


def compiler(output_dir: Path | None = None):
    """The numba.pycc CC with every entry point exported (not compiled yet)."""
    import importlib

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pycc's pending deprecation
        from numba import njit
        from numba.pycc import CC

    cc = CC(_NAME, source_module=sys.modules[__name__])
    cc.output_dir = str(output_dir or Path(__file__).parent)
    cc.verbose = False
    for name, (module, function, codes) in SPECS.items():
        dispatcher = getattr(importlib.import_module(module), function)
        argtypes = tuple(_numba_type(c) for c in codes)
        dispatcher.compile(argtypes)  # types the function: the export needs its result type
        cc.export(name, dispatcher.overloads[argtypes].signature)(dispatcher.py_func)
    digest = source_digest()

    @njit
    def digest_of_sources():
        return digest

    digest_of_sources.compile(())
    cc.export("source_digest", digest_of_sources.overloads[()].signature)(digest_of_sources.py_func)
    return cc


def extension():
    """The setuptools Extension of the module (for setup.py)."""
    cc = compiler()
    ext = cc.distutils_extension()
    ext.name = AOT_MODULE
    return ext


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else None
    started = time.perf_counter()
    cc = compiler(out)
    cc.compile()
    print(f"built {Path(cc.output_dir) / cc.output_file} in {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
