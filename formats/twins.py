"""The registry of fast twins: each `struct` / numpy read path paired with its construct declaration.

A fast twin reads or writes the same bytes as a declaration in `formats.structs`, only faster. Every
twin is made through `struct_twin` or `dtype_twin` beside its declaration, which records the pair here;
one property test (tests/test_twins.py) walks `registered()` and checks each twin against its
declaration on random bytes. Fast parsers of text formats (the revive bodies' columnar parser) are
recorded with their reference parser by `parser_twin`; `registered_parsers()` lists them, and the same
test module checks each on random and mutated bodies.
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
    "formats.message.commitlog",
    "formats.consumequeue",
    "formats.dledger",
    "formats.indexfile",
    "formats.pop.columns",
    "formats.message.recordfast",
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


@dataclass(frozen=True)
class ParserTwin:
    """A fast parser of a text format and the reference parser it must equal: each takes the bytes and
    gives the parsed object, or the reference's one-line error message."""

    name: str
    reference: Callable[[bytes], Any]
    fast: Callable[[bytes], Any]


_REGISTRY: dict[str, Twin] = {}
_PARSERS: dict[str, ParserTwin] = {}


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


def parser_twin(name: str, reference: Callable[[bytes], Any], fast: Callable[[bytes], Any]) -> None:
    """Record `fast` as the twin of the reference parser `reference`."""
    _PARSERS[name] = ParserTwin(name, reference, fast)


def registered() -> list[Twin]:
    """Every layout twin, once all the declaring modules are imported."""
    for module in TWIN_MODULES:
        importlib.import_module(module)
    return list(_REGISTRY.values())


def registered_parsers() -> list[ParserTwin]:
    """Every parser twin, once all the declaring modules are imported."""
    registered()
    return list(_PARSERS.values())


__all__ = [
    "TWIN_MODULES",
    "ParserTwin",
    "Twin",
    "dtype_twin",
    "parser_twin",
    "registered",
    "registered_parsers",
    "struct_twin",
]
