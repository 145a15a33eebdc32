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


def _timerlog_split_flushed(root: Path, bad_unit: int) -> None:
    """store-timer-crash's timerlog (337 units from 0) laid out in files of 40 units (2080 bytes, the
    harness takes mappedFileSizeTimerLog from the first file), timercheck's flush position set to the end
    of the units (as a checkpoint flushed after the last append), and unit `bad_unit`'s magic given high
    bits. The recovery walks from the file holding flush position - file size: a bad unit before that file
    is never read, one after it cuts the log."""
    directory = root / "timerlog"
    first = directory / "00000000000000000000"
    data = first.read_bytes()
    end = 337 * 52
    size = 40 * 52
    first.unlink()
    for start in range(0, end, size):
        (directory / f"{start:020d}").write_bytes(data[start : start + size].ljust(size, b"\0"))
    at = bad_unit * 52 + 12
    path = directory / f"{at // size * size:020d}"
    with open(path, "r+b") as fh:
        fh.seek(at % size)
        fh.write((0x100).to_bytes(4, "big"))
    with open(root / "config" / "timercheck", "r+b") as fh:
        fh.seek(8)
        fh.write(end.to_bytes(8, "big"))


def timerlog_split_bad_early_unit(root: Path) -> None:
    """_timerlog_split_flushed with unit 10 (file 0) bad: before the file the recovery starts from."""
    _timerlog_split_flushed(root, 10)


def timerlog_split_bad_late_unit(root: Path) -> None:
    """_timerlog_split_flushed with unit 300 (file 7) bad: in the files the recovery walks."""
    _timerlog_split_flushed(root, 300)


def timermetrics_and_bak_corrupt(root: Path) -> None:
    """config/timermetrics and its .bak both undecodable."""
    for name in ("timermetrics", "timermetrics.bak"):
        (root / "config" / name).write_text('{"timingCount": {', encoding="utf-8")


def timermetrics_corrupt_bak_good(root: Path) -> None:
    """config/timermetrics undecodable, its .bak good."""
    (root / "config" / "timermetrics").write_text('{"timingCount": {', encoding="utf-8")


def _dledger_data(root: Path) -> list[Path]:
    return sorted((root / "dledger-n0" / "data").iterdir())


def dledger_data_file_short(root: Path) -> None:
    """A middle DLedger data file cut to 100,000 bytes."""
    os_truncate(_dledger_data(root)[len(_dledger_data(root)) // 2], 100_000)


def dledger_data_middle_missing(root: Path) -> None:
    """A middle DLedger data file deleted."""
    _dledger_data(root)[len(_dledger_data(root)) // 2].unlink()


def dledger_entries_zeroed(root: Path) -> None:
    """store-dledger's entries 266 to 270 zeroed (never written): positions from its expect.json, as
    tests/oracle/dledger_damaged.py's zeros-266."""
    with open(root / "dledger-n0" / "data" / "00000000000001179648", "r+b") as fh:
        fh.seek(1297051 - 1179648)
        fh.write(b"\0" * (1298975 - 1297051))


def dledger_entry_bad_magic(root: Path) -> None:
    """store-dledger's entry 262 given magic 2 (dledger_damaged.py's magic-262): entries after it are written
    but the recovery stops there."""
    with open(root / "dledger-n0" / "data" / "00000000000001179648", "r+b") as fh:
        fh.seek(1294933 - 1179648)
        fh.write((2).to_bytes(4, "big"))


def dledger_third_last_file_bad(root: Path) -> None:
    """The first entry of the third-last data file given a wrong pos field: the recovery walks from an
    earlier file, stops there and would cut more than a file (as dledger_damaged.py's start-file)."""
    with open(_dledger_data(root)[-3], "r+b") as fh:
        fh.seek(24)
        fh.write(b"\0" * 8)


def dledger_checkpoint_not_a_number(root: Path) -> None:
    """DLedger's checkpoint with a committedIndex that is not a number."""
    (root / "dledger-n0" / "checkpoint").write_text("committedIndex=abc\nendIndex=270\n", encoding="utf-8")


def dledger_currterm_not_a_number(root: Path) -> None:
    """DLedger's currterm with a currTerm that is not a number."""
    (root / "dledger-n0" / "currterm").write_text("voteLeader=n0\ncurrTerm=abc\n", encoding="utf-8")


def request_mode_corrupt(root: Path) -> None:
    """config/messageRequestMode.json undecodable, no .bak (ConfigManager.loadBak: true, empty tables)."""
    (root / "config" / "messageRequestMode.json").write_text('{"messageRequestModeMap": {', encoding="utf-8")


def request_mode_and_bak_corrupt(root: Path) -> None:
    """config/messageRequestMode.json and its .bak undecodable (the load returns false)."""
    for name in ("messageRequestMode.json", "messageRequestMode.json.bak"):
        (root / "config" / name).write_text('{"messageRequestModeMap": {', encoding="utf-8")


def order_info_and_bak_corrupt(root: Path) -> None:
    """config/consumerOrderInfo.json and its .bak undecodable (the load returns false)."""
    for name in ("consumerOrderInfo.json", "consumerOrderInfo.json.bak"):
        (root / "config" / name).write_text('{"table": {', encoding="utf-8")


def offsets_corrupt_no_bak(root: Path) -> None:
    """consumerOffset.json undecodable and no .bak: ConfigManager.loadBak returns true with empty tables."""
    (root / "config" / "consumerOffset.json").write_text('{"offsetTable": {', encoding="utf-8")
    (root / "config" / "consumerOffset.json.bak").unlink(missing_ok=True)


def controller_files(root: Path) -> None:
    """An epochFileCheckpoint and brokerIdentity as a controller-mode broker writes them
    (CheckpointFile.write: entry count, CRC32 of the entry lines, `epoch-startOffset` lines;
    BrokerMetadata.encodeToStr: cluster#broker#id)."""
    import zlib

    entries = "1-0\n2-1048576\n"
    (root / "epochFileCheckpoint").write_text(
        f"2\n{zlib.crc32(entries.encode())}\n{entries}", encoding="utf-8"
    )
    (root / "brokerIdentity").write_text("DefaultCluster#broker-a#1", encoding="utf-8")


def compaction_delete_leftover(root: Path) -> None:
    """A `.delete` copy of a compaction log file beside it (tests/oracle/compaction_damaged.py's
    delete-leftover: the 5.3.3 load fails on it)."""
    import shutil

    log = root / "compaction" / "compactionLog" / "CompactTopicA" / "1" / "00000000000000006624"
    shutil.copyfile(log, log.with_name(log.name + ".delete"))


def crash_abort(root: Path) -> None:
    """An `abort` file, as a broker killed while running leaves it: the next start recovers abnormally."""
    (root / "abort").write_bytes(b"")


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
    "timerlog-split-bad-early-unit": timerlog_split_bad_early_unit,
    "timerlog-split-bad-late-unit": timerlog_split_bad_late_unit,
    "timermetrics-and-bak-corrupt": timermetrics_and_bak_corrupt,
    "timermetrics-corrupt-bak-good": timermetrics_corrupt_bak_good,
    "dledger-data-file-short": dledger_data_file_short,
    "dledger-data-middle-missing": dledger_data_middle_missing,
    "dledger-entries-zeroed": dledger_entries_zeroed,
    "dledger-entry-bad-magic": dledger_entry_bad_magic,
    "dledger-third-last-file-bad": dledger_third_last_file_bad,
    "dledger-checkpoint-not-a-number": dledger_checkpoint_not_a_number,
    "dledger-currterm-not-a-number": dledger_currterm_not_a_number,
    "request-mode-corrupt": request_mode_corrupt,
    "request-mode-and-bak-corrupt": request_mode_and_bak_corrupt,
    "order-info-and-bak-corrupt": order_info_and_bak_corrupt,
    "offsets-corrupt-no-bak": offsets_corrupt_no_bak,
    "controller-files": controller_files,
    "compaction-delete-leftover": compaction_delete_leftover,
    "crash-abort": crash_abort,
}
