"""The write safety rules every mutating command follows.

Dry run by default: the command computes and prints its plan, and only `--execute` changes the store.
Before any plan, refuse a store whose layout the write cannot be trusted on (DLedger, multi-path
commitlogs, compaction topics, controller-mode replicas, tiered storage: `store.kind`).
With `--execute`, refuse while a broker (or another mqtool) holds the store lock — `--force` never
overrides that — then hold the lock ourselves for the whole write, as the broker would, so a broker
started meanwhile refuses to start. Warn when `abort` says the last shutdown was not clean.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from store.liveness import BrokerRunningError, hold_store_lock
from store.storedir import Store


def warn(message: str) -> None:
    sys.stderr.write(f"mqtool: warning: {message}\n")


def refuse_unsupported_layout(store: Store, touches: str = "log") -> None:
    """Refuse, before any plan is made, a write on a layout mqtool does not fully support (`store.kind`):
    `touches`: what the write touches (`store.kind.WRITE_KINDS`: config, index, queues or log)."""
    store.layout.kind.refuse_writes(store.root, touches)


@contextmanager
def write_guard(
    store: Store, execute: bool, *, note: Callable[[str], None] = warn, touches: str = "log"
) -> Iterator[bool]:
    """Yield True when the caller may write (execute and the lock is ours), False for a dry run. Refuses
    first on a layout the write cannot be trusted on (`refuse_unsupported_layout`)."""
    refuse_unsupported_layout(store, touches)
    live = store.liveness()
    if live.abort_present and not live.locked:
        note(
            f"{store.root / 'abort'} exists: the last broker shutdown was not clean; the broker will run "
            "abnormal recovery at its next start"
        )
    if not execute:
        if live.locked:
            note("a broker holds the store lock: --execute would be refused until it stops")
        yield False
        return
    if live.locked:
        pid = f" (pid {live.holder_pid})" if live.holder_pid else ""
        raise BrokerRunningError(
            f"a broker holds the store lock{pid}: stop it before writing (no option overrides this)",
            str(store.root / "lock"),
        )
    with hold_store_lock(store.root):
        yield True
