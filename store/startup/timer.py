"""The timer wheel's part of the start-up verdict: what `TimerMessageStore` does with timerlog/, timerwheel,
config/timercheck and config/timermetrics when a 5.x broker starts.

A 5.3.3 broker builds the timer store when `timerWheelEnable` (MessageStoreConfig.java:84, default true),
whether or not the files exist (BrokerController.initializeMessageStore, 5.3.3 BrokerController.java:846-851),
then loads it after the message store (:889-891). Its conditions, in that order:

- `new TimerCheckpoint(config/timercheck)` maps the file's first page, whatever its size
  (TimerCheckpoint.java:51-80): only a path that cannot be opened as a file throws.
- `new TimerWheel(timerwheel)` throws "Timer wheel length:%d != expected" when the file is neither empty nor
  2 x 7 days of 32-byte slots (TimerWheel.java:51-66). A throw in the constructors is caught by
  initializeMessageStore (BrokerController.java:852-855), which returns false: BrokerStartup exits (-3).
- `TimerMessageStore.load` (TimerMessageStore.java:237-244): `TimerLog.load` (a MappedFileQueue: every file
  `mappedFileSizeTimerLog` bytes, MappedFileQueue.java:246-266) and `TimerMetrics.load` (a ConfigManager:
  the file, else its .bak, ConfigManager.java:29-60) must both succeed, or the start is refused.
- `recover()` (:274-331) walks the timerlog from the file holding timercheck's flush position less one file
  size (:276-284) with `recoverAndRevise(..., true)` (:402-460): units of 52 bytes, a blank ends a file, a
  unit whose size is not 52 or whose magic has high bits ends the walk, and `truncateDirtyFiles` (:457) cuts
  the log there (later files deleted). The enqueue then resumes from the queue offset `reviseQueueOffset`
  finds for the last kept unit (:286-307).

A 4.x broker has no timer wheel: the files are left as they are.
"""

from __future__ import annotations

from formats.errors import MqtoolError
from formats.timer import TIMER_WHEEL_FILE_SIZE
from store.config.configfile import ConfigFile, ConfigLoadError
from store.log.mappedfile import MappedFileQueue
from store.startup.verdict import REFUSE, START, StartupVerdict, check_file_queue, data_end, rel

_SOURCE = "rocketmq-all-5.3.3 TimerMessageStore.java"


def has_timer_files(store) -> bool:
    root = store.root
    return any(p.exists() for p in (root / "timerlog", root / "timerwheel", store.config_dir / "timercheck"))


def judge_timer(store, verdict: StartupVerdict) -> None:
    """Add the timer store's start-up reasons to `verdict` (and `recovery["timer"]`)."""
    present = has_timer_files(store)
    if verdict.major < 5:
        if present:
            verdict.add(
                "timer_ignored",
                START,
                "a 4.x broker has no timer wheel: timerlog/, timerwheel and "
                "timercheck stay as they are and nothing in them is delivered",
                None,
                "4.9.8 has no store/timer",
            )
        return
    cfg = store.layout.broker_config
    if "timerWheelEnable" in cfg.explicit and not cfg.timerWheelEnable:
        if present:
            verdict.add(
                "timer_disabled",
                START,
                "broker.conf sets timerWheelEnable=false: the timer store is "
                "not built, its files stay as they are and nothing in them is delivered",
                None,
                "BrokerController.java:846,889",
            )
        return
    before = len(verdict.reasons)
    _constructors(store, verdict)
    if any(r.effect != START for r in verdict.reasons[before:]):
        return  # initializeMessageStore failed: nothing is loaded
    files = _timerlog_load(store, verdict)
    _metrics_load(store, verdict)
    if any(r.effect != START for r in verdict.reasons[before:]):
        return
    _recover(store, verdict, files)


def _constructors(store, verdict: StartupVerdict) -> None:
    check = store.config_dir / "timercheck"
    if check.exists() and not check.is_file():
        verdict.add(
            "timer_checkpoint_unopenable",
            REFUSE,
            "not a regular file: new TimerCheckpoint throws, "
            "initializeMessageStore returns false and BrokerStartup exits (-3)",
            rel(store, check),
            "TimerCheckpoint.java:51-58, BrokerController.java:847,852-855",
        )
    wheel = store.root / "timerwheel"
    if wheel.exists():
        size = wheel.stat().st_size if wheel.is_file() else -1
        if size not in (0, TIMER_WHEEL_FILE_SIZE):
            what = f"{size} bytes" if size >= 0 else "not a regular file"
            verdict.add(
                "timer_wheel_length",
                REFUSE,
                f"{what}, not {TIMER_WHEEL_FILE_SIZE}: new TimerWheel throws "
                '"Timer wheel length ... != expected", initializeMessageStore returns false and '
                "BrokerStartup exits (-3)",
                "timerwheel",
                "TimerWheel.java:61-66, BrokerController.java:849,852-855",
            )
    elif (store.root / "timerlog").is_dir():
        verdict.add(
            "timer_wheel_missing",
            START,
            "no timerwheel: the timer store creates an empty one, and "
            "recovery puts back into it only the slots of the units it walks (from the last timerlog "
            "files)",
            "timerwheel",
            "TimerWheel.java:58-69",
        )


def _timerlog_load(store, verdict: StartupVerdict) -> list:
    setting = store.layout.timerlog_file_size()
    source = {
        "broker.conf": "broker.conf's mappedFileSizeTimerLog",
        "current files": "the timerlog files (no --broker-config)",
    }.get(setting.source, setting.source)
    return check_file_queue(store, verdict, store.root / "timerlog", setting.value, source, "timerlog")


def _metrics_load(store, verdict: StartupVerdict) -> None:
    try:
        loaded = ConfigFile(store.root, "timermetrics").load()
    except ConfigLoadError as exc:
        verdict.add(
            "timer_metrics_unloadable",
            REFUSE,
            f"{exc.message}: TimerMetrics.load returns false, so "
            "does TimerMessageStore.load, and BrokerStartup exits (-3)",
            "config/timermetrics",
            f"{_SOURCE}:239, ConfigManager.java:29-60",
        )
        return
    except MqtoolError as exc:
        verdict.add("timer_metrics_unloadable", REFUSE, exc.message, exc.file, f"{_SOURCE}:239")
        return
    if loaded.source == "bak":
        verdict.add(
            "config_bak",
            START,
            f"{loaded.reason}: the timer starts with the .bak's metrics",
            "config/timermetrics",
            "ConfigManager.loadBak",
        )


def recovery_begin(files: list, flush_pos: int) -> int:
    """Index of the timerlog file `recover` walks from: the last whose start is at or below timercheck's
    flush position less the last file's size (0 when none is), TimerMessageStore.java:276-284,405-417."""
    begin = max(flush_pos - files[-1].size, 0)
    index = 0
    for i, f in enumerate(files):
        if f.start_offset <= begin:
            index = i
    return index


def _recover(store, verdict: StartupVerdict, files: list) -> None:
    from store.timer.timerstore import read_timercheck, walk_timerlog

    files = [f for f in files if f.size]
    if not files:
        return  # nothing to recover (the timer store creates its files)
    check = read_timercheck(store)
    flush_pos = check.last_timer_log_flush_pos if check is not None else 0
    first = recovery_begin(files, flush_pos)
    walk = walk_timerlog(MappedFileQueue(store.root / "timerlog", files[first:]))
    end = walk.end
    if walk.stop == "end" and walk.blanks and walk.blanks[-1] >= files[-1].start_offset:
        end = walk.blanks[-1]  # checkOffset is the blank's position, not the file's end (:433-435,451)
    timer = {"walkFrom": files[first].start_offset, "timerLogEnd": end}
    verdict.recovery["timer"] = timer
    written = data_end(files)
    if written > end:
        deleted = [rel(store, f.path) for f in files if f.start_offset > end]
        timer["truncatedBytes"] = written - end
        gone = f"; files deleted: {', '.join(deleted)}" if deleted else ""
        verdict.add(
            "timer_log_truncated",
            START,
            f"the timer's recovery stops at {end} ({walk.stop}) and "
            f"truncates the timerlog there: the {written - end} bytes written after it are dropped, "
            f"and the messages of those units are never delivered{gone}",
            rel(store, walk.stop_file) if walk.stop_file else "timerlog",
            f"{_SOURCE}:402-460",
        )
    if check is not None and check.last_timer_log_flush_pos > end:
        verdict.add(
            "timer_check_ahead",
            START,
            f"timercheck's flush position {check.last_timer_log_flush_pos} "
            f"is past the recovered end {end}: units the checkpoint says were flushed are gone",
            "config/timercheck",
            f"{_SOURCE}:274-284",
        )
    resume = _enqueue_from(store, walk)
    if resume is not None:
        timer["enqueueFrom"] = resume


def _enqueue_from(store, walk) -> int | None:
    """The rmq_sys_wheel_timer queue offset the enqueue resumes from (`store.timer.messages`), from the
    units the recovery kept (`walk`): the wheel is not read, the log not walked again."""
    from store.timer.messages import enqueue_position
    from store.timer.timerstore import TimerStore, read_timercheck, roll_window_slots

    cfg = store.layout.broker_config
    window = roll_window_slots(cfg.timerRollWindowSlot)
    timer = TimerStore(store.root, cfg.timerPrecisionMs, window, read_timercheck(store), walk, None)
    return enqueue_position(store, timer)
