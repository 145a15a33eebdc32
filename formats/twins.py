"""The registry of fast twins: each `struct` / numpy read path paired with its construct declaration.

A fast twin reads or writes the same bytes as a declaration in `formats.structs`, only faster. Every
twin is made through `struct_twin` or `dtype_twin` beside its declaration, which records the pair here;
one property test (tests/test_twins.py) walks `registered()` and checks each twin against its
declaration on random bytes.
"""

from __future__ import annotations

import importlib
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from construct import Construct

# the formats modules that declare twins: imported by `registered()` so the registry is complete
TWIN_MODULES = (
    "formats.batchconsumequeue",
    "formats.commitlog",
    "formats.consumequeue",
    "formats.indexfile",
    "formats.recordfast",
    "formats.timer",
)


@dataclass(frozen=True)
class Twin:
    """A fast layout (`struct.Struct`, or a function returning a numpy dtype) and its declaration."""

    name: str
    declaration: Construct
    fast: struct.Struct | Callable[[], Any]

    @property
    def size(self) -> int:
        return self.declaration.sizeof()


_REGISTRY: dict[str, Twin] = {}


def struct_twin(name: str, declaration: Construct, fast: struct.Struct) -> struct.Struct:
    """Record `fast` as the struct twin of `declaration` and hand it back."""
    _REGISTRY[name] = Twin(name, declaration, fast)
    return fast


def dtype_twin(name: str, declaration: Construct) -> Callable[[Callable[[], Any]], Callable[[], Any]]:
    """Decorator: record a numpy dtype factory as the twin of `declaration`."""

    def register(factory: Callable[[], Any]) -> Callable[[], Any]:
        _REGISTRY[name] = Twin(name, declaration, factory)
        return factory

    return register


def registered() -> list[Twin]:
    """Every twin, once all the declaring modules are imported."""
    for module in TWIN_MODULES:
        importlib.import_module(module)
    return list(_REGISTRY.values())


__all__ = ["TWIN_MODULES", "Twin", "dtype_twin", "registered", "struct_twin"]
