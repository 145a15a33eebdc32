"""The store mutations the startup verdict is proved on (tests/oracle/startup_cases.py records the real
broker's load of each; tests/test_startup.py replays them): each takes a copy of a golden store."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path


def _commitlog(root: Path) -> list[Path]:
    return sorted((root / "commitlog").iterdir())


def _queue_files(root: Path, topic: str = "TopicTest", queue_id: int = 1) -> list[Path]:
    return sorted((root / "consumequeue" / topic / str(queue_id)).iterdir())


def clean(root: Path) -> None:
    """No change."""


def commitlog_file_short(root: Path) -> None:
    """The middle commitlog file cut short (a copy that did not finish, a disk that filled)."""
    os_truncate(_commitlog(root)[1], 1_000_000)


def commitlog_middle_missing(root: Path) -> None:
    """A commitlog file in the middle deleted (#2141)."""
    _commitlog(root)[1].unlink()


def cq_file_short(root: Path) -> None:
    """A ConsumeQueue file of the wrong size."""
    os_truncate(_queue_files(root)[0], 5000)


def cq_last_file_zero_length(root: Path) -> None:
    """A zero-length file after a queue's last file (the broker created it and stopped before mapping it)."""
    last = _queue_files(root)[-1]
    size = last.stat().st_size
    (last.parent / f"{int(last.name) + size:020d}").touch()


def offsets_and_bak_corrupt(root: Path) -> None:
    """consumerOffset.json and its .bak both undecodable."""
    for name in ("consumerOffset.json", "consumerOffset.json.bak"):
        (root / "config" / name).write_text('{"offsetTable": {', encoding="utf-8")


def offsets_corrupt_bak_good(root: Path) -> None:
    """consumerOffset.json undecodable, its .bak good (ConfigManager.load falls back to it)."""
    (root / "config" / "consumerOffset.json").write_text('{"offsetTable": {', encoding="utf-8")


def timer_wheel_short(root: Path) -> None:
    """timerwheel cut to one page (neither empty nor 2 x 7 days of slots)."""
    os_truncate(root / "timerwheel", 4096)


def timerlog_second_file_short(root: Path) -> None:
    """A second timerlog file of 1000 bytes after the first (1 MiB) one."""
    first = sorted((root / "timerlog").iterdir())[0]
    size = first.stat().st_size
    (first.parent / f"{int(first.name) + size:020d}").write_bytes(b"\0" * 1000)


def timerlog_empty_last_file(root: Path) -> None:
    """A zero-length timerlog file after the last one (created, never mapped)."""
    last = sorted((root / "timerlog").iterdir())[-1]
    (last.parent / f"{int(last.name) + last.stat().st_size:020d}").touch()


def timerlog_unit_bad_magic(root: Path) -> None:
    """Timerlog unit 100's magic given high bits (a torn or foreign write): the recovery stops there."""
    with open(sorted((root / "timerlog").iterdir())[0], "r+b") as fh:
        fh.seek(100 * 52 + 12)
        fh.write((0x100).to_bytes(4, "big"))


def timermetrics_and_bak_corrupt(root: Path) -> None:
    """config/timermetrics and its .bak both undecodable."""
    for name in ("timermetrics", "timermetrics.bak"):
        (root / "config" / name).write_text('{"timingCount": {', encoding="utf-8")


def timermetrics_corrupt_bak_good(root: Path) -> None:
    """config/timermetrics undecodable, its .bak good."""
    (root / "config" / "timermetrics").write_text('{"timingCount": {', encoding="utf-8")


def os_truncate(path: Path, size: int) -> None:
    with open(path, "r+b") as fh:
        fh.truncate(size)


MUTATIONS: dict[str, Callable[[Path], None]] = {
    "clean": clean,
    "commitlog-file-short": commitlog_file_short,
    "commitlog-middle-missing": commitlog_middle_missing,
    "cq-file-short": cq_file_short,
    "cq-last-file-zero-length": cq_last_file_zero_length,
    "offsets-and-bak-corrupt": offsets_and_bak_corrupt,
    "offsets-corrupt-bak-good": offsets_corrupt_bak_good,
    "timer-wheel-short": timer_wheel_short,
    "timerlog-second-file-short": timerlog_second_file_short,
    "timerlog-empty-last-file": timerlog_empty_last_file,
    "timerlog-unit-bad-magic": timerlog_unit_bad_magic,
    "timermetrics-and-bak-corrupt": timermetrics_and_bak_corrupt,
    "timermetrics-corrupt-bak-good": timermetrics_corrupt_bak_good,
}
