"""Build step beyond pyproject.toml: the columnar readers' kernels compiled ahead of time into the extension
`formats.columnar._aot_kernels` (numba.pycc; formats/columnar/aot.py), so that no scanning command compiles
them after an install. When they cannot be built here (numba.pycc gone, no C compiler), the package
installs without them and they compile on first use (formats/columnar/kernels.py).
"""

from __future__ import annotations

import os
import sys

from setuptools import setup
from setuptools.command.build_ext import build_ext

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def _skipped(exc: Exception) -> None:
    print(f"mqtool: kernels not compiled ahead of time ({type(exc).__name__}: {exc})", file=sys.stderr)


class BuildKernels(build_ext):
    """build_ext that leaves the kernel extension out, with one line, when it cannot be built."""

    def build_extension(self, ext):
        if getattr(ext, "_cc", None) is not None:
            try:
                ext._prepare_object_files(self)  # numba.pycc: LLVM-compile the kernels into object files
                super().build_extension(ext)
            except Exception as exc:  # noqa: BLE001 - any failure: install without, compile on first use
                _skipped(exc)
            return
        super().build_extension(ext)


def _extensions() -> list:
    if os.environ.get("MQTOOL_AOT") == "0":
        return []
    try:
        from formats.columnar.aot import extension

        return [extension()]
    except Exception as exc:  # noqa: BLE001 - no numba.pycc here: install without, compile on first use
        _skipped(exc)
        return []


setup(ext_modules=_extensions(), cmdclass={"build_ext": BuildKernels})
