"""When retention will act next: the commitlog's write rate, when each file becomes deletable, and when
the disk reaches each ratio the clean service reacts to.

* The write rate is read from the commitlog itself: the STORETIMESTAMP of each file's first record and of
  the last record, against their physical offsets, over a window ending at the newest record (24 h by
  default, or the whole log when it is younger).
* A file (never the last) expires at `lastModified + fileReservedTime` and is deleted by the first run at
  or after that: at an hour of `deleteWhen`, or at once while the disk is above diskMaxUsedSpaceRatio;
  and never before every file before it is gone (`deleteExpiredFileByTime` stops at the first kept).
* The disk reaches a ratio at `(ratio * (used + usable) - used) / rate`, less what the scheduled deletions
  free before then. Files not written yet, readers holding files, and other writers on the partition are
  not part of the forecast.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo

from store.clean.commitlog import TimedFile, is_time_to_delete
from store.clean.disk import DiskUsage
from store.clean.settings import CleanSettings

HOUR_MS = 3_600_000
DEFAULT_WINDOW_MS = 24 * HOUR_MS


@dataclass(frozen=True)
class WriteRate:
    """Bytes the commitlog grew by over [from_ms, to_ms] (store times of its records)."""

    bytes: int
    from_ms: int | None
    to_ms: int | None

    @property
    def per_ms(self) -> float | None:
        if self.from_ms is None or self.to_ms is None or self.to_ms <= self.from_ms:
            return None
        return self.bytes / (self.to_ms - self.from_ms)

    def as_dict(self) -> dict[str, object]:
        rate = self.per_ms
        return {
            "bytes": self.bytes,
            "fromMs": self.from_ms,
            "toMs": self.to_ms,
            "bytesPerHour": None if rate is None else round(rate * HOUR_MS),
        }


def write_rate(points: Sequence[tuple[int, int]], window_ms: int = DEFAULT_WINDOW_MS) -> WriteRate:
    """The rate over the last `window_ms` of (physical offset, store time) points in offset order: each
    file's first record and the end of the last record."""
    points = [p for p in points if p[1] > 0]
    if len(points) < 2:
        return WriteRate(0, None, None)
    end_offset, end_ms = points[-1]
    start_ms = max(points[0][1], end_ms - window_ms)
    start_offset = points[0][0]
    for (o1, t1), (o2, t2) in zip(points, points[1:], strict=False):
        if t1 <= start_ms <= t2:
            start_offset = o1 + (o2 - o1) * ((start_ms - t1) / (t2 - t1) if t2 > t1 else 1.0)
            break
    return WriteRate(int(end_offset - start_offset), start_ms, end_ms)


def next_delete_hour(settings: CleanSettings, at_ms: int, zone: tzinfo, horizon_h: int = 48) -> int | None:
    """The first time at or after `at_ms` when `isTimeToDelete` holds (the start of a `deleteWhen` hour,
    or `at_ms` itself inside one); None when no hour of the next `horizon_h` qualifies (or the broker's
    parse of deleteWhen throws there)."""
    moment = datetime.fromtimestamp(at_ms / 1000, zone)
    for step in range(horizon_h + 1):
        candidate = moment
        if step:
            candidate = (moment + timedelta(hours=step)).replace(minute=0, second=0, microsecond=0)
        try:
            if is_time_to_delete(settings.delete_when, candidate.hour):
                return int(candidate.timestamp() * 1000)
        except ValueError:
            continue
    return None


@dataclass(frozen=True)
class ScheduledDelete:
    file: TimedFile
    expires_ms: int
    deleted_ms: int | None  # None: not within the horizon (no deleteWhen hour qualifies)


def delete_schedule(
    files: Sequence[TimedFile],
    settings: CleanSettings,
    *,
    now_ms: int,
    zone: tzinfo,
    space_to_delete: bool,
) -> list[ScheduledDelete]:
    """When each file but the last is deleted by age, the disk staying as it is now."""
    out: list[ScheduledDelete] = []
    previous = now_ms
    for f in files[:-1]:
        expires = f.mtime_ms + settings.file_reserved_ms
        ready = max(expires, previous, now_ms)
        when = ready if space_to_delete else next_delete_hour(settings, ready, zone)
        out.append(ScheduledDelete(f, expires, when))
        if when is None:
            break
        previous = when
    return out


def threshold_eta(
    disk: DiskUsage, rate_per_ms: float | None, ratio: float, frees: Sequence[tuple[int, int]], now_ms: int
) -> int | None:
    """Epoch ms when the partition's used ratio passes `ratio` (now_ms when it already has), writing at
    `rate_per_ms` and freeing (time, bytes) as scheduled; None when unknown or never."""
    if disk.ratio > ratio:
        return now_ms
    if not disk.measured or disk.entire <= 0 or not rate_per_ms or rate_per_ms <= 0:
        return None
    limit = ratio * disk.entire
    used, t = float(disk.used), now_ms
    for when, freed in sorted(f for f in frees if f[0] >= now_ms):
        reach = t + (limit - used) / rate_per_ms
        if reach <= when:
            return int(reach)
        used += rate_per_ms * (when - t) - freed
        t = when
    return int(t + max(0.0, limit - used) / rate_per_ms)
