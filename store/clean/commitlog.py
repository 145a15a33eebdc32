"""`CleanCommitLogService`: whether a clean run deletes commitlog files, and which.

One run (`run()`: `deleteExpiredFiles`, 5.3.3 DefaultMessageStore.java:2277-2317, 4.9.8 :1674-1702):
`isTimeToDelete()` (the hour of `deleteWhen`), then `isSpaceToDelete()` (the disk ratios, which also set
`cleanImmediately`); when either holds, `CommitLog.deleteExpiredFile` with
`cleanAtOnce = cleanFileForciblyEnable && cleanImmediately`, i.e. `MappedFileQueue.deleteExpiredFileByTime`
(5.3.3 MappedFileQueue.java:479-531, 4.9.8 :350-394): from the first file, never the last, each file whose
`lastModified + fileReservedTime` has passed (any file when cleaning at once) until one is not, at most
`deleteFileBatchMax` per run (4.9.8: 10). An exception in the run (an hour in `deleteWhen` that
`Integer.parseInt` refuses, a ratio property `Double.parseDouble` refuses) is caught by `run()`: nothing is
deleted, whatever the disk says. Manual deletes (`executeDeleteFilesManually`) and a file still referenced
by a reader (`destroy` fails until `destroyMapedFileIntervalForcibly`) are not modelled: files are taken as
destroyable, as they are when no reader holds them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from formats.message.commitlog import java_parse_int
from store.clean.settings import CleanSettings


@dataclass(frozen=True)
class CleanDecision:
    """What one run of `deleteExpiredFiles` decides before it deletes."""

    time_up: bool
    space_to_delete: bool
    clean_immediately: bool
    error: str | None = None  # the run throws (caught by run()): nothing is deleted
    why: tuple[str, ...] = ()

    @property
    def runs(self) -> bool:
        return self.error is None and (self.time_up or self.space_to_delete)

    def clean_at_once(self, settings: CleanSettings) -> bool:
        return settings.clean_file_forcibly_enable and self.clean_immediately

    def as_dict(self, settings: CleanSettings) -> dict[str, object]:
        return {
            "timeUp": self.time_up,
            "spaceToDelete": self.space_to_delete,
            "cleanImmediately": self.clean_immediately,
            "cleanAtOnce": self.runs and self.clean_at_once(settings),
            "deletes": self.runs,
            "error": self.error,
            "why": list(self.why),
        }


def java_split(text: str, sep: str) -> list[str]:
    """`String.split(sep)` for a one-character literal: trailing empty strings dropped, except that a text
    without the separator is returned whole (even when empty)."""
    parts = text.split(sep)
    if len(parts) == 1:
        return parts
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def is_time_to_delete(delete_when: str, hour: int) -> bool:
    """`UtilAll.isItTimeToDo(deleteWhen)` (5.3.3 UtilAll.java:119-132): each `;`-separated hour parsed in
    turn with `Integer.parseInt` and compared with the current hour of day; ValueError where the parse
    throws before a match."""
    for item in java_split(delete_when, ";"):
        value = java_parse_int(item)
        if value is None:
            raise ValueError(f"deleteWhen={delete_when!r}: {item!r} is not an hour Integer.parseInt accepts")
        if value == hour:
            return True
    return False


def is_space_to_delete(settings: CleanSettings, physic: float, logics: float) -> tuple[bool, bool, list[str]]:
    """`isSpaceToDelete()`: (its answer, cleanImmediately after it, why) for the commitlog partition's ratio
    `physic` and the consumequeue partition's `logics` (-1: the path is missing). 5.3.3
    DefaultMessageStore.java:2346-2434; 4.9.8 :1716-1790."""
    warning, forcibly = settings.warning_ratio, settings.forcibly_ratio
    limit = settings.disk_max_used_space_ratio
    why: list[str] = []
    if settings.major >= 5:
        for name, ratio in (("commitlog", physic), ("consumequeue", logics)):
            if ratio > warning:
                why.append(
                    f"{name} disk {ratio:.2f} > warning ratio {warning:.2f}: disk marked full, clean at once"
                )
                return True, True, why
            if ratio > forcibly:
                why.append(f"{name} disk {ratio:.2f} > forced-clean ratio {forcibly:.2f}: clean at once")
                return True, True, why
        if settings.ints["replicasPerDiskPartition"] > 1:
            raise ValueError("replicasPerDiskPartition > 1 (the logical-ratio rule) is not modelled")
        for name, ratio in (("commitlog", physic), ("consumequeue", logics)):
            if ratio < 0 or ratio > limit:
                why.append(
                    f"{name} disk {ratio:.2f} > diskMaxUsedSpaceRatio {limit:.2f}: reclaim expired files"
                )
                return True, False, why
        return False, False, why
    clean_immediately = False
    for name, ratio in (("commitlog", physic), ("consumequeue", logics)):
        if ratio > warning or ratio > forcibly:
            level = "warning" if ratio > warning else "forced-clean"
            why.append(f"{name} disk {ratio:.2f} > {level} ratio: clean at once")
            clean_immediately = True
        if ratio < 0 or ratio > limit:
            why.append(f"{name} disk {ratio:.2f} > diskMaxUsedSpaceRatio {limit:.2f}: reclaim")
            return True, clean_immediately, why
    return False, clean_immediately, why


def decide(
    settings: CleanSettings, hour: int, physic: float, logics: float, previous: bool = False
) -> CleanDecision:
    """One run's decision at hour of day `hour` with the given disk ratios. `previous`: cleanImmediately
    left by the last run (kept when this run throws before isSpaceToDelete resets it)."""
    try:
        time_up = is_time_to_delete(settings.delete_when, hour)
    except ValueError as exc:
        return CleanDecision(False, False, previous, error=str(exc))
    try:
        space, immediately, why = is_space_to_delete(settings, physic, logics)
    except ValueError as exc:
        return CleanDecision(time_up, False, False, error=str(exc))
    if time_up:
        why.insert(0, f"hour {hour:02d} is in deleteWhen={settings.delete_when!r}")
    return CleanDecision(time_up, space, immediately, why=tuple(why))


@dataclass(frozen=True)
class TimedFile:
    """A commitlog file as the clean service sees it: where it starts, its size, File.lastModified (ms)."""

    name: str
    start: int
    size: int
    mtime_ms: int


def delete_expired_by_time(
    files: Sequence[TimedFile], reserved_ms: int, now_ms: int, clean_at_once: bool, batch_max: int
) -> list[TimedFile]:
    """`deleteExpiredFileByTime`: the files one run deletes (never the last; stops at the first kept)."""
    deleted: list[TimedFile] = []
    for f in files[:-1]:
        if not (now_ms >= f.mtime_ms + reserved_ms or clean_at_once):
            break  # "avoid deleting files in the middle"
        deleted.append(f)
        if len(deleted) >= batch_max:
            break
    return deleted
