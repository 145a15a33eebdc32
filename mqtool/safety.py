"""The write safety rules every mutating command follows.

Dry run by default: the command computes and prints its plan, and only `--execute` changes the store.
Before any plan, refuse a store whose layout the write cannot be trusted on (DLedger, multi-path
commitlogs, compaction topics, controller-mode replicas, tiered storage: `store.kind`).
With `--execute`, refuse while a broker (or another mqtool) holds the store lock — `--force` never
overrides that — then hold the lock ourselves for the whole write, as the broker would, so a broker
started meanwhile refuses to start. Warn when `abort` says the last shutdown was not clean. Before the
first byte, every file and directory the write changes is checked writable (`targets`,
`store.io.filewrites.WriteTargets`); a step that still fails after an earlier one wrote says what was
written and how to finish (`finishing`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from formats.errors import MqtoolError
from store.io.filewrites import WriteTargets
from store.liveness import BrokerRunningError, hold_store_lock
from store.storedir import Store


class PartialWriteError(MqtoolError):
    """A write that stopped after an earlier step changed the store: what was written, how to finish."""


def warn(message: str) -> None:
    sys.stderr.write(f"mqtool: warning: {message}\n")


def refuse_unsupported_layout(store: Store, touches: str = "log") -> None:
    """Refuse, before any plan is made, a write on a layout mqtool does not fully support (`store.kind`):
    `touches`: what the write touches (`store.kind.WRITE_KINDS`: config, index, queues or log)."""
    store.layout.kind.refuse_writes(store.root, touches)


@contextmanager
def write_guard(
    store: Store,
    execute: bool,
    *,
    note: Callable[[str], None] = warn,
    touches: str = "log",
    targets: WriteTargets | Callable[[], WriteTargets] | None = None,
) -> Iterator[bool]:
    """Yield True when the caller may write (execute and the lock is ours), False for a dry run. Refuses
    first on a layout the write cannot be trusted on (`refuse_unsupported_layout`). With `targets` (or a
    function giving them), every one is checked writable once the lock is ours."""
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
        if targets is not None:
            (targets() if callable(targets) else targets).check()
        yield True


@contextmanager
def finishing(written: str, finish: str) -> Iterator[None]:
    """The steps after a write changed the store: a failure among them becomes one line saying why, what
    was `written` already, and how to `finish`."""
    try:
        yield
    except (MqtoolError, OSError) as exc:
        reason = exc.message if isinstance(exc, MqtoolError) else exc.strerror or str(exc)
        where = exc.file if isinstance(exc, MqtoolError) else exc.filename
        if getattr(exc, "left_abort", False):  # its own advice comes first: the broker's recovery
            raise PartialWriteError(f"{reason} ({written} before it)", where and str(where)) from exc
        raise PartialWriteError(f"{reason}; {written} already: {finish}", where and str(where)) from exc
