"""Checks of the 5.x timer wheel files (TimerMessageStore): what the broker's timer recovery and dequeue
would make of timerlog, timerwheel and timercheck.

- `timer_log_cut` (error): the timerlog walk stops at a unit `recoverAndRevise` rejects (size not 52,
  magic with high bits): recovery truncates the log there and the units after it are lost.
- `timer_unit_target` (error): a unit whose (offsetPy, sizePy) is no `rmq_sys_wheel_timer` record the
  enqueue could have read (no unit of that topic's ConsumeQueue): the dequeue cannot read the message.
  Units into commitlog files retention deleted are counted as `timer_expired_units` (info).
- `timer_slot_misplaced` (error): a non-empty slot whose stored time does not map to its index
  (`TimerWheel.getSlot` never returns it).
- `timer_slot_chain` (error): a slot the dequeue has still to read whose chain breaks (a position that is
  no unit, or a cycle): the messages behind the break are never delivered.
- `timer_slot_count` (warning): a slot's `num` is not its chain's messages less its recall tombstones
  (as `doEnqueue` counts); the metrics, not the delivery, depend on it.
- `timer_check_ahead` (error): timercheck's flush position is past the walk's end (flushed units lost).
- `timer_reenqueue` (warning): units whose record sits at or past the resume point: a crash came after
  the enqueue and before timercheck's flush, so the broker enqueues (and delivers) those messages twice.
- `timer_recovery` (info): where the timer's recovery resumes the enqueue and how many records of the
  timer topic it will still enqueue.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from formats.names import TIMER_TOPIC
from formats.structs import TIMER_WHEEL_SLOT_SIZE
from store.checks.problems import ProblemList
from store.timer.timerstore import TimerStore, chain


def check_timer(
    timer: TimerStore,
    timer_targets: Iterable[tuple[int, int, int]],
    problems: ProblemList,
    *,
    commitlog_min: int,
    enqueue_position: int | None,
    timer_queue_max: int | None,
) -> dict[str, Any]:
    """All timer checks; the summary verify shows. `timer_targets`: (phyOffset, size, queue offset in
    queue 0, else -1) of every ConsumeQueue unit of the timer topic (the records the enqueue reads)."""
    walk = timer.walk
    log_file = walk.stop_file and "timerlog/" + walk.stop_file.rsplit("/", 1)[-1]
    if walk.stop.startswith(("bad magic", "unit size")) or "too short" in walk.stop:
        problems.add(
            "timer_log_cut",
            log_file,
            walk.end,
            f"the timer's recovery stops at this timerlog unit ({walk.stop}) and truncates the log there",
        )
    # units against the records of the timer topic (its ConsumeQueue units: the CQ checks judge those)
    units = walk.units
    expired = units["offsetPy"] < commitlog_min
    targets = {(int(p), int(z)): int(q) for p, z, q in timer_targets}
    ok = np.fromiter(
        (
            (p, z) in targets
            for p, z in zip(units["offsetPy"].tolist(), units["sizePy"].tolist(), strict=True)
        ),
        dtype=bool,
        count=len(units),
    )
    bad = ~ok & ~expired
    for i in np.flatnonzero(bad)[:1000].tolist():
        u = walk.unit(i)
        problems.add(
            "timer_unit_target",
            "timerlog",
            u.position,
            f"unit points at phy {u.offset_py} size {u.size_py}: no {TIMER_TOPIC} record in its ConsumeQueue",
        )
    if expired.any():
        problems.add(
            "timer_expired_units",
            "timerlog",
            None,
            f"{int(expired.sum())} units point into commitlog files retention deleted (delivered or lost)",
        )
    # the wheel
    slots_checked = 0
    if timer.wheel is not None:
        read_ms = timer.check.last_read_time_ms if timer.check is not None else None
        for s in timer.wheel.non_empty():
            slots_checked += 1
            if not s.placed:
                problems.add(
                    "timer_slot_misplaced",
                    "timerwheel",
                    s.index * TIMER_WHEEL_SLOT_SIZE,
                    f"slot {s.index} holds time {s.time_ms}, whose slot is another: the dequeue skips it",
                )
                continue
            if read_ms is not None and s.time_ms < read_ms:
                continue  # read already: the wheel keeps it until it comes round
            positions, broken = chain(walk, s.last_pos)
            if broken is not None:
                problems.add(
                    "timer_slot_chain",
                    "timerwheel",
                    s.index * TIMER_WHEEL_SLOT_SIZE,
                    f"slot {s.time_ms}: its chain ends after {len(positions)} units ({broken}): "
                    "the messages behind it are never delivered",
                )
                continue
            deletes = sum(walk.at(p).delete for p in positions)  # doEnqueue counts a recall -1
            expected = len(positions) - 2 * deletes
            if s.num != expected:
                problems.add(
                    "timer_slot_count",
                    "timerwheel",
                    s.index * TIMER_WHEEL_SLOT_SIZE,
                    f"slot {s.time_ms} counts {s.num} messages, its chain holds {expected} (less recalls)",
                )
    # timercheck
    check = timer.check
    if check is not None and check.last_timer_log_flush_pos > walk.end:
        problems.add(
            "timer_check_ahead",
            "config/timercheck",
            8,
            f"lastTimerLogFlushPos {check.last_timer_log_flush_pos} is past the timerlog's valid end"
            f" {walk.end} (flushed units lost)",
        )
    pending = again = None
    if enqueue_position is not None and timer_queue_max is not None:
        pending = max(timer_queue_max - enqueue_position, 0)
        # units whose record the enqueue will read again: recover() resumes below them (a crash after the
        # enqueue but before timercheck's flush), so the message gets a second unit and a second delivery
        queue_offsets = [
            targets.get((p, z), -1)
            for p, z in zip(units["offsetPy"].tolist(), units["sizePy"].tolist(), strict=True)
        ]
        again = sum(q >= enqueue_position for q in queue_offsets)
        if again:
            problems.add(
                "timer_reenqueue",
                "config/timercheck",
                None,
                f"{again} messages already in the timerlog are at or past queue offset {enqueue_position},"
                " where the timer's recovery resumes: the broker enqueues them again and delivers each twice",
            )
        problems.add(
            "timer_recovery",
            "config/timercheck",
            None,
            f"the timer's recovery resumes the enqueue at {TIMER_TOPIC} queue offset {enqueue_position}:"
            f" {pending} records still to enqueue",
        )
    return {
        "units": len(walk),
        "logEnd": walk.end,
        "logStop": walk.stop,
        "slots": slots_checked,
        "unitsIntoDeletedFiles": int(expired.sum()),
        "enqueuePosition": enqueue_position,
        "toEnqueue": pending,
        "enqueueAgain": again,
        "lastReadTimeMs": None if check is None else check.last_read_time_ms,
    }
