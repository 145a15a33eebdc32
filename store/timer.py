"""TimerMessageStore's reading side (5.x timer wheel): the timer topic, the TIMER_* properties, and
`config/timercheck` (TimerCheckpoint) as the broker reads them. Timer messages are listed by
`mqtool.delay`; the wheel itself (timerlog, timerwheel) is not read yet.
"""

from __future__ import annotations

from dataclasses import dataclass

from formats.structs import TimerCheckpoint
from store.storedir import Store

TIMER_TOPIC = "rmq_sys_wheel_timer"

PROPERTY_TIMER_DELIVER_MS = "TIMER_DELIVER_MS"
PROPERTY_TIMER_DELAY_SEC = "TIMER_DELAY_SEC"
PROPERTY_TIMER_DELAY_MS = "TIMER_DELAY_MS"
PROPERTY_TIMER_OUT_MS = "TIMER_OUT_MS"
PROPERTY_TIMER_ROLL_TIMES = "TIMER_ROLL_TIMES"
PROPERTY_TIMER_DEL_UNIQKEY = "TIMER_DEL_UNIQKEY"
TIMER_PROPERTIES = (
    PROPERTY_TIMER_DELIVER_MS,
    PROPERTY_TIMER_DELAY_SEC,
    PROPERTY_TIMER_DELAY_MS,
    PROPERTY_TIMER_OUT_MS,
)


@dataclass
class TimerCheck:
    """The fields of `config/timercheck` the listing uses."""

    last_read_time_ms: int
    last_timer_queue_offset: int


def read_timercheck(store: Store) -> TimerCheck | None:
    """`TimerCheckpoint` as the broker loads it, or None when the file is missing or short."""
    path = store.config_dir / "timercheck"
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if len(data) < TimerCheckpoint.sizeof():
        return None
    c = TimerCheckpoint.parse(data[: TimerCheckpoint.sizeof()])
    return TimerCheck(c.lastReadTimeMs, c.lastTimerQueueOffset)
