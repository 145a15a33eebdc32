"""The 5.x timer wheel's files as bytes: timerlog units, timerwheel slots, and their fast numpy twins.

Layouts are declared once in `formats.structs` (`TimerLogUnit`, `TimerWheelSlot`, `TimerCheckpoint`);
this module holds the constants the broker uses with them and the numpy twins that read a whole timerlog
file or the whole wheel in one call. Facts from RocketMQ 5.3.3 `store/timer/`: `TimerLog` (unit size 52,
the file-end blank), `TimerWheel` (7 days of slots, twice over, 32 bytes each, time stored divided by
the precision), `TimerMessageStore` (the magic bits, `isMagicOK`).
"""

from __future__ import annotations

import functools

from formats.structs import (
    BLANK_MAGIC,
    TIMER_LOG_UNIT_SIZE,
    TIMER_WHEEL_SLOT_SIZE,
    TimerLogUnit,
    TimerWheelSlot,
)
from formats.twins import dtype_twin

# TimerMessageStore: a unit's magic is a set of these bits
MAGIC_DEFAULT = 1
MAGIC_ROLL = 1 << 1
MAGIC_DELETE = 1 << 2

# TimerLog.BLANK_MAGIC_CODE, `0xBBCCDDEE ^ 1880681586 + 8` (+ binds tighter than ^), is the commitlog's
# blank magic; it ends a timerlog file in a 16-byte blank (size, 0L, magic)
TIMER_LOG_BLANK_MAGIC = BLANK_MAGIC
TIMER_LOG_MIN_BLANK_LEN = 4 + 8 + 4
DEFAULT_TIMER_LOG_FILE_SIZE = 100 * 1024 * 1024  # MessageStoreConfig.mappedFileSizeTimerLog

# TimerWheel / TimerMessageStore: TIMER_WHEEL_TTL_DAY * DAY_SECS slots, the file holds twice that
TIMER_WHEEL_TTL_DAY = 7
TIMER_WHEEL_SLOTS = TIMER_WHEEL_TTL_DAY * 24 * 3600
TIMER_WHEEL_FILE_SIZE = TIMER_WHEEL_SLOTS * 2 * TIMER_WHEEL_SLOT_SIZE
DEFAULT_TIMER_PRECISION_MS = 1000  # MessageStoreConfig.timerPrecisionMs
DEFAULT_TIMER_ROLL_WINDOW_SLOT = 3600 * 24 * 2  # MessageStoreConfig.timerRollWindowSlot
TIMER_BLANK_SLOTS = 60


def is_magic_ok(magic: int) -> bool:
    """`TimerMessageStore.isMagicOK`: only the low four bits may be set."""
    return (magic | 0xF) == 0xF


def slot_index(time_ms: int, precision_ms: int) -> int:
    """`TimerWheel.getSlotIndex`: where the slot of `time_ms` sits in the wheel file."""
    return time_ms // precision_ms % (TIMER_WHEEL_SLOTS * 2)


@dtype_twin("TimerLogUnit (numpy)", TimerLogUnit)
@functools.cache
def timer_log_unit_dtype():
    import numpy as np

    return np.dtype(
        [
            ("size", ">i4"),
            ("prevPos", ">i8"),
            ("magic", ">i4"),
            ("currWriteTimeMs", ">i8"),
            ("delayedTime", ">i4"),
            ("offsetPy", ">i8"),
            ("sizePy", ">i4"),
            ("hashCodeOfRealTopic", ">i4"),
            ("reserved", ">i8"),
        ]
    )


@dtype_twin("TimerWheelSlot (numpy)", TimerWheelSlot)
@functools.cache
def timer_wheel_slot_dtype():
    import numpy as np

    return np.dtype(
        [("timeSecs", ">i8"), ("firstPos", ">i8"), ("lastPos", ">i8"), ("num", ">i4"), ("magic", ">i4")]
    )


assert TIMER_LOG_UNIT_SIZE == 52 and TIMER_WHEEL_SLOT_SIZE == 32
