"""Paths of the golden stores under tests/data and a cached loader of their expect.json."""

from __future__ import annotations

import functools
import json
from pathlib import Path

GOLDEN = Path(__file__).parent / "data"
STORES = ("store-a", "store-c", "store-49a")


@functools.cache
def expect(store: str) -> dict:
    """The expect.json of a golden store (what the real Java code reads back)."""
    with open(GOLDEN / store / "expect.json", encoding="utf-8") as fh:
        return json.load(fh)


def store_path(store: str) -> Path:
    """The directory of a golden store."""
    return GOLDEN / store
