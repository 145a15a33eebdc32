"""TimerMessageStore's reading side (5.x timer wheel): timerlog, timerwheel, timercheck, and the state of
every message of `rmq_sys_wheel_timer` as the broker would see it.

The broker puts a message with a delivery time into `rmq_sys_wheel_timer` queue 0 (REAL_TOPIC, REAL_QID,
TIMER_OUT_MS); its enqueue service reads that queue from timercheck's queue offset and appends one 52-byte
unit per message to `timerlog/`, chained backwards (prevPos) from the wheel slot of its delivery second
(`timerwheel`: slot time, first and last unit, count). The dequeue service walks the wheel from
timercheck's read time; for each slot it walks the chain and writes each message into its real topic
(TIMER_ENQUEUE_MS / TIMER_DEQUEUE_MS added), or re-puts it into the timer topic when the unit was a roll
(a delay past the roll window, TIMER_ROLL_TIMES + 1). A unit with the DELETE bit is a recall tombstone
(TIMER_DEL_UNIQKEY). Facts from RocketMQ 5.3.3 `store/timer/` (`TimerMessageStore.recover`,
`recoverAndRevise`, `reviseQueueOffset`, `doEnqueue`, `dequeue`; `TimerWheel.getSlot`; `TimerLog.append`).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from formats.errors import MqtoolError
from formats.message.commitlog import Message, java_parse_int
from formats.message.properties import PROPERTY_TIMER_OUT_MS
from formats.structs import TIMER_LOG_UNIT_SIZE, TimerCheckpoint
from formats.timer import (
    MAGIC_DELETE,
    MAGIC_ROLL,
    TIMER_BLANK_SLOTS,
    TIMER_LOG_BLANK_MAGIC,
    TIMER_LOG_MIN_BLANK_LEN,
    TIMER_WHEEL_FILE_SIZE,
    TIMER_WHEEL_SLOTS,
    slot_index,
    timer_log_unit_dtype,
    timer_wheel_slot_dtype,
)
from store.io.filereads import file_size, map_readonly, read_head
from store.log.mappedfile import LENGTH_NOT_MATCHED, MappedFileQueue

if TYPE_CHECKING:
    import numpy as np

    from store.layout import Setting
    from store.storedir import Store


class TimerFileError(MqtoolError):
    """A timer file the broker's TimerMessageStore cannot load."""


# --- timercheck (TimerCheckpoint) -----------------------------------------------------------------


@dataclass
class TimerCheck:
    """`config/timercheck` as TimerCheckpoint loads it."""

    last_read_time_ms: int
    last_timer_log_flush_pos: int
    last_timer_queue_offset: int
    master_timer_queue_offset: int
    data_version: tuple[int, int, int]  # stateVersion, timestamp, counter

    def to_json(self) -> dict[str, Any]:
        return {
            "lastReadTimeMs": self.last_read_time_ms,
            "lastTimerLogFlushPos": self.last_timer_log_flush_pos,
            "lastTimerQueueOffset": self.last_timer_queue_offset,
            "masterTimerQueueOffset": self.master_timer_queue_offset,
            "dataVersionStateVersion": self.data_version[0],
            "dataVersionTimestamp": self.data_version[1],
            "dataVersionCounter": self.data_version[2],
        }


def timercheck_path(store: Store) -> Path:
    return store.config_dir / "timercheck"


def read_timercheck(store: Store) -> TimerCheck | None:
    """`TimerCheckpoint` as the broker loads it, or None when the file is missing or short.

    The broker maps the first OS page of the file and reads its fields there (rocketmq-all-5.3.3
    store/.../timer/TimerCheckpoint.java:52-63), whatever the file's size: only that head is read."""
    try:
        data = read_head(timercheck_path(store), TimerCheckpoint.sizeof())
    except FileNotFoundError:
        return None
    if len(data) < TimerCheckpoint.sizeof():
        return None
    c = TimerCheckpoint.parse(data[: TimerCheckpoint.sizeof()])
    return TimerCheck(
        c.lastReadTimeMs,
        c.lastTimerLogFlushPos,
        c.lastTimerQueueOffset,
        c.masterTimerQueueOffset,
        (c.dataVersionStateVersion, c.dataVersionTimestamp, c.dataVersionCounter),
    )


# --- timerlog (TimerLog) --------------------------------------------------------------------------


@dataclass(frozen=True)
class TimerLogUnit:
    """One timerlog unit: a message (offsetPy, sizePy) in the slot of `delayed_time_ms`."""

    position: int  # in the timerlog's offset space
    size: int
    prev_pos: int
    magic: int
    curr_write_time_ms: int
    delayed_time: int  # ms after curr_write_time_ms
    offset_py: int
    size_py: int
    hash_code_of_real_topic: int

    @property
    def delayed_time_ms(self) -> int:
        return self.curr_write_time_ms + self.delayed_time

    @property
    def roll(self) -> bool:
        return bool(self.magic & MAGIC_ROLL)

    @property
    def delete(self) -> bool:
        return bool(self.magic & MAGIC_DELETE)

    def to_json(self) -> dict[str, Any]:
        return {
            "position": self.position,
            "size": self.size,
            "prevPos": self.prev_pos,
            "magic": self.magic,
            "roll": self.roll,
            "delete": self.delete,
            "currWriteTimeMs": self.curr_write_time_ms,
            "delayedTime": self.delayed_time,
            "delayedTimeMs": self.delayed_time_ms,
            "offsetPy": self.offset_py,
            "sizePy": self.size_py,
            "hashCodeOfRealTopic": self.hash_code_of_real_topic,
        }


@dataclass
class TimerLogWalk:
    """The timerlog as `TimerMessageStore.recoverAndRevise` checks it: units up to `end`, where it stops.

    `segments` holds, per file, its start offset and its accepted units as stored (a big-endian numpy
    view of the mapped file, nothing copied); `units` gathers them into one native array with a
    `position` column when a vectorised check wants it. `stop` says why the walk ended (zeros after the
    last unit, or a unit the recovery rejects: it truncates the log there).
    """

    segments: list[tuple[int, np.ndarray]]
    end: int
    stop: str
    stop_file: str | None = None
    blanks: list[int] = field(default_factory=list)  # positions of file-end blanks

    def __post_init__(self) -> None:
        self._starts = [start for start, _ in self.segments]
        self._firsts: list[int] = []  # index of each segment's first unit
        total = 0
        for _, seg in self.segments:
            self._firsts.append(total)
            total += len(seg)
        self._len = total

    def __len__(self) -> int:
        return self._len

    def _unit(self, k: int, j: int) -> TimerLogUnit:
        start, seg = self.segments[k]
        u = seg[j]
        return TimerLogUnit(start + j * TIMER_LOG_UNIT_SIZE, *(int(u[name]) for name in UNIT_FIELDS[1:]))

    def unit(self, i: int) -> TimerLogUnit:
        if not 0 <= i < self._len:
            raise IndexError(i)
        k = bisect.bisect_right(self._firsts, i) - 1
        return self._unit(k, i - self._firsts[k])

    def __iter__(self) -> Iterator[TimerLogUnit]:
        for k, (_, seg) in enumerate(self.segments):
            for j in range(len(seg)):
                yield self._unit(k, j)

    def _locate(self, position: int) -> tuple[int, int] | None:
        k = bisect.bisect_right(self._starts, position) - 1
        if k < 0:
            return None
        j, rest = divmod(position - self._starts[k], TIMER_LOG_UNIT_SIZE)
        if rest or j >= len(self.segments[k][1]):
            return None
        return k, j

    def at(self, position: int) -> TimerLogUnit | None:
        """The accepted unit at a timerlog position, None when no unit starts there."""
        where = self._locate(position)
        return None if where is None else self._unit(*where)

    def prev_pos(self, position: int) -> int | None:
        """prevPos of the unit at `position` (None when no unit starts there): one hop of a chain."""
        where = self._locate(position)
        return None if where is None else int(self.segments[where[0]][1][where[1]]["prevPos"])

    @cached_property
    def units(self) -> np.ndarray:
        """Every accepted unit, native byte order, with its `position`."""
        import numpy as np

        dtype = timer_log_unit_dtype()
        native = np.dtype([("position", "<i8"), *[(n, dtype[n].newbyteorder("=")) for n in dtype.names]])
        out = np.empty(self._len, native)
        for (start, seg), first in zip(self.segments, self._firsts, strict=True):
            part = out[first : first + len(seg)]
            part["position"] = start + np.arange(len(seg), dtype=np.int64) * TIMER_LOG_UNIT_SIZE
            for name in dtype.names:
                part[name] = seg[name]
        return out


UNIT_FIELDS = (
    "position",
    "size",
    "prevPos",
    "magic",
    "currWriteTimeMs",
    "delayedTime",
    "offsetPy",
    "sizePy",
    "hashCodeOfRealTopic",
)


def timerlog_queue(store_root: Path) -> MappedFileQueue:
    return MappedFileQueue.open(store_root / "timerlog")


def check_timerlog_sizes(queue: MappedFileQueue, size: Setting) -> None:
    """Every timerlog file is `mappedFileSizeTimerLog` bytes (an empty last one aside, which the load
    deletes): TimerLog's MappedFileQueue load refuses any other, and then TimerMessageStore.load and the
    broker's start fail (rocketmq-all-5.3.3 TimerMessageStore.java:237-244, BrokerController.java:889-891)."""
    for i, f in enumerate(queue.files):
        if f.size == size.value or (f.size == 0 and i == len(queue.files) - 1):
            continue
        raise TimerFileError(
            f"file size {f.size} is not the timerlog file size {size.value} ({size.source}): "
            f"{LENGTH_NOT_MATCHED}",
            str(f.path),
        )


def walk_timerlog(queue: MappedFileQueue) -> TimerLogWalk:
    """Every unit of the timerlog files in order, stopping where the broker's recovery stops.

    Within a file, units sit every 52 bytes from its start. A unit whose magic is the blank magic ends
    the file (the rest is padding); a unit whose size is not 52 or whose magic has bits above the low
    four is where the recovery stops checking and truncates; a file too short for a whole unit at the
    current position ends the walk the same way (Java reads past the buffer and stops).
    """
    import numpy as np

    dtype = timer_log_unit_dtype()
    segments: list[tuple[int, np.ndarray]] = []
    blanks: list[int] = []
    end, stop, stop_file = queue.min_offset, "end", None
    files = list(queue)
    for f in files:
        count = f.size // TIMER_LOG_UNIT_SIZE
        raw = np.frombuffer(f.buffer(), dtype=dtype, count=count) if count else np.zeros(0, dtype)
        # size and magic as 32-bit words (units are 13 words): faster than the structured fields
        words = (
            raw.view(">i4").reshape(count, TIMER_LOG_UNIT_SIZE // 4) if count else np.zeros((0, 13), ">i4")
        )
        magic = words[:, 3]
        blank = magic == TIMER_LOG_BLANK_MAGIC
        bad = (words[:, 0] != TIMER_LOG_UNIT_SIZE) | ((magic | 0xF) != 0xF)
        stop_at = np.flatnonzero(blank | bad)
        n = int(stop_at[0]) if len(stop_at) else count
        segments.append((f.start_offset, raw[:n]))
        end = f.start_offset + n * TIMER_LOG_UNIT_SIZE
        if n < count and blank[n]:
            blanks.append(end)
            end = f.end_offset
            continue
        if n < count:
            u = raw[n]
            stop = "zeros follow the last unit" if not u.tobytes().strip(b"\0") else (
                f"unit size {int(u['size'])} at {end}" if u["size"] != TIMER_LOG_UNIT_SIZE
                else f"bad magic {int(u['magic'])} at {end}"
            )  # fmt: skip
        else:
            tail = f.size - n * TIMER_LOG_UNIT_SIZE
            buf = f.buffer()
            at = n * TIMER_LOG_UNIT_SIZE
            if tail >= TIMER_LOG_MIN_BLANK_LEN and int.from_bytes(
                buf[at + 12 : at + 16], "big", signed=True
            ) == (TIMER_LOG_BLANK_MAGIC):
                blanks.append(end)  # the blank needs only its 16 bytes: size, 0L, magic
                end = f.end_offset
                continue
            if not tail and f is not files[-1]:
                # units to the very end (no blank): the recovery's loop over the file ends without a stop
                # and it reads on in the next file (TimerMessageStore.java:422-455)
                end = f.end_offset
                continue
            stop = "end of the last file" if not tail else f"{tail} bytes at {end}: too short for a unit"
        stop_file = str(f.path)
        break
    return TimerLogWalk(segments, end, stop, stop_file, blanks)


# --- timerwheel (TimerWheel) ----------------------------------------------------------------------


@dataclass(frozen=True)
class WheelSlot:
    """A non-empty slot of the wheel: its index, time, first and last unit, count (magic unused)."""

    index: int
    time_ms: int
    first_pos: int
    last_pos: int
    num: int
    magic: int
    placed: bool  # the slot index of its own time is where it sits (else getSlot never returns it)

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "timeMs": self.time_ms,
            "firstPos": self.first_pos,
            "lastPos": self.last_pos,
            "num": self.num,
            "magic": self.magic,
            "placed": self.placed,
        }


class TimerWheel:
    """The `timerwheel` file: 2 × 7 days of slots (one per precision tick), mapped read-only (38 MB, of
    which a command mostly reads a few slots or one pass over the file)."""

    def __init__(self, path: Path, precision_ms: int) -> None:
        import numpy as np

        self.path = path
        self.precision_ms = precision_ms
        size = file_size(path)
        if size not in (0, TIMER_WHEEL_FILE_SIZE):
            raise TimerFileError(
                f"timer wheel length {size} != expected {TIMER_WHEEL_FILE_SIZE}: the broker refuses to start",
                str(path),
            )
        if size == 0:
            self.slots = np.zeros(TIMER_WHEEL_SLOTS * 2, timer_wheel_slot_dtype())
        else:
            self.slots = np.frombuffer(map_readonly(path), dtype=timer_wheel_slot_dtype())

    def slot_at(self, index: int) -> WheelSlot:
        s = self.slots[index]
        time_ms = int(s["timeSecs"]) * self.precision_ms
        placed = slot_index(time_ms, self.precision_ms) == index if time_ms >= 0 else False
        return WheelSlot(
            index, time_ms, int(s["firstPos"]), int(s["lastPos"]), int(s["num"]), int(s["magic"]), placed
        )

    def get_slot(self, time_ms: int) -> WheelSlot | None:
        """`TimerWheel.getSlot`: the slot of `time_ms` when its stored time is that second, else None."""
        s = self.slot_at(slot_index(time_ms, self.precision_ms))
        return s if s.time_ms == time_ms // self.precision_ms * self.precision_ms else None

    def non_empty(self) -> list[WheelSlot]:
        """Slots with any non-zero field, in index order."""
        import numpy as np

        s = self.slots
        hit = np.flatnonzero(
            (s["timeSecs"] != 0) | (s["firstPos"] != 0) | (s["lastPos"] != 0) | (s["num"] != 0)
        )
        return [self.slot_at(int(i)) for i in hit]


def chain(walk: TimerLogWalk, last_pos: int, limit: int | None = None) -> tuple[list[int], str | None]:
    """Positions of a slot's units, newest first (lastPos, then each unit's prevPos) as `dequeue` reads
    them, and why the chain ended early (`None` at prevPos -1). A position outside the walked units
    (deleted file, truncated log) or a second visit (a cycle) ends it."""
    seen: set[int] = set()
    out: list[int] = []
    pos = last_pos
    limit = len(walk) if limit is None else limit
    while pos != -1:
        if pos in seen or len(out) > limit:
            return out, f"cycle at {pos}"
        prev = walk.prev_pos(pos)
        if prev is None:
            return out, f"no unit at {pos}"
        seen.add(pos)
        out.append(pos)
        pos = prev
    return out, None


# --- the timer store as a whole ----------------------------------------------------------------------


def roll_window_slots(configured: int) -> int:
    """`timerRollWindowSlots` as the TimerMessageStore constructor settles it."""
    total = TIMER_WHEEL_SLOTS
    return (
        total - TIMER_BLANK_SLOTS if configured > total - TIMER_BLANK_SLOTS or configured < 2 else configured
    )


@dataclass
class TimerStore:
    """What the broker's TimerMessageStore would load from a store: the timerlog walk, the wheel, the
    checkpoint, and the settings (precision, roll window) from broker.conf or the broker's defaults."""

    root: Path
    precision_ms: int
    roll_window_slots: int
    check: TimerCheck | None
    walk: TimerLogWalk
    wheel: TimerWheel | None

    @classmethod
    def open(cls, store: Store) -> TimerStore | None:
        """None when the store has no timer files at all (a 4.x store, or the wheel never enabled)."""
        root = store.root
        has_log = (root / "timerlog").is_dir()
        has_wheel = (root / "timerwheel").exists()
        if not (has_log or has_wheel or timercheck_path(store).exists()):
            return None
        cfg = store.layout.broker_config
        precision = cfg.timerPrecisionMs
        wheel = TimerWheel(root / "timerwheel", precision) if has_wheel else None
        queue = timerlog_queue(root)
        check_timerlog_sizes(queue, store.layout.timerlog_file_size())
        return cls(
            root,
            precision,
            roll_window_slots(cfg.timerRollWindowSlot),
            read_timercheck(store),
            walk_timerlog(queue),
            wheel,
        )

    @cached_property
    def units_by_offset_py(self) -> dict[int, list[int]]:
        """Commitlog position -> indexes of the units for it (a rolled message has one per roll)."""
        out: dict[int, list[int]] = {}
        for i, off in enumerate(self.walk.units["offsetPy"].tolist()):
            out.setdefault(off, []).append(i)
        return out

    def slot_read(self, time_ms: int) -> bool:
        """Whether the dequeue has passed the slot of `time_ms` (it is before timercheck's read time)."""
        return self.check is not None and time_ms < self.check.last_read_time_ms


def message_deliver_ms(msg: Message) -> int | None:
    """TIMER_OUT_MS of a timer-topic record (a Java long: digits beyond int range are kept)."""
    return timer_out_ms(msg.properties.get(PROPERTY_TIMER_OUT_MS))


def timer_out_ms(text: str | None) -> int | None:
    """A TIMER_OUT_MS value as `message_deliver_ms` reads it (None outside a Java long)."""
    if text is None:
        return None
    value = java_parse_int(text)
    if value is None and text.lstrip("-").isdigit() and len(text) < 20:
        value = int(text)
    return value if value is None or -(2**63) <= value < 2**63 else None


__all__ = [
    "TimerCheck",
    "TimerFileError",
    "TimerLogUnit",
    "TimerLogWalk",
    "TimerStore",
    "TimerWheel",
    "WheelSlot",
    "chain",
    "message_deliver_ms",
    "read_timercheck",
    "roll_window_slots",
    "timer_out_ms",
    "walk_timerlog",
]
