"""Controller mode and `CommitLog`'s confirm offset: the one place that decides both for a store.

**Whether the owning broker runs in controller mode.** `BrokerConfig.enableControllerMode` (5.3.3
BrokerConfig.java:349, default false) is a broker.conf setting; the store only keeps traces of it:
`epochFileCheckpoint` (AutoSwitchHAService's EpochFileCache, MessageStoreConfig.getStorePathEpochFile) and
`brokerIdentity` (ReplicasManager). So:

* broker.conf given with `enableControllerMode=true`: **on**;
* broker.conf given without it (or false): **off** - the broker builds the DefaultHAService and never reads
  the files (DefaultMessageStore.java:244-252; `store.startup.controller` names them);
* no broker.conf but the files: **ambiguous** - read as controller mode (what the files say the last broker
  ran), every read says so, and every write refuses (`store.kind`);
* neither: **off**.

**The confirm offset.** `DefaultMessageStore.loadCheckPoint` sets it from the checkpoint's confirmPhyOffset
(DefaultMessageStore.java:383-389). The broker is fenced during load in controller mode
(ReplicasManager.setFenced(true) before `messageStore.load()`, BrokerController.java:879-887), so
`CommitLog.getConfirmOffset` returns that value unchanged (CommitLog.java:655-668). Recovery then clamps it:

* normal (no `abort`): below the commitlog's min offset -> the min offset; above the valid end
  (`processOffset`) -> the valid end (CommitLog.java:388-395);
* abnormal: the walk from the recovery's start file dispatches only records ending at or before it and
  remembers the last such end (`lastConfirmValidMsgPhyOffset`, starting at the start file's offset); below the
  min offset -> the min offset, above that last end -> that end (CommitLog.java:751-754, 797-804).

Without controller mode the recovery sets the confirm offset to the last valid record's *start*
(CommitLog.java:396-398, 805-806), and `getConfirmOffset` answers the max offset anyway (:672): every valid
record is dispatched and served.

**What that bounds.** The reput dispatches up to `getConfirmOffset()` (ReputMessageService.getReputEndOffset,
DefaultMessageStore.java:2855-2857), which stays at the recovered value until the controller elects a role:
records past it get no ConsumeQueue unit and no index entry, so `getMessage` and `queryMessage` do not serve
them. On the next start, what the real 5.3.3 code does with them (tests/data/store-controller/expect.json):
a normal recovery dispatches every record after the consume queues' end but the first
(`commitLogOffset > maxPhyOffsetOfConsumeQueue`, CommitLog.java:349-355, the same in classic mode); an
abnormal one dispatches none of them (CommitLog.java:751-754). Once a role is decided, a master keeps and
confirms them (AutoSwitchHAService.changeToMaster -> truncateInvalidMsg cuts only invalid data, :115-160,
495-539) and a slave truncates its log to where its epochs agree with the master's (AutoSwitchHAClient), which
may remove them: mqtool calls them the **unconfirmed tail**. Units already on disk past the confirm offset
(dispatched while the live confirm offset was ahead of the checkpoint's) are kept by both recoveries (they
truncate the consume queues only at the valid end, CommitLog.java:401-404, 810-814) and served. A master
without slaves never stores its confirm offset (`getConfirmOffset` answers the max physical offset without
setting it, CommitLog.java:658-661), so its checkpoint keeps the election's value while the reput dispatches
everything (tests/data/store-controller-lone: 0): what is served then ends at the consume queues' end
(`Store.served_end`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from store.config.brokerconf import BrokerConfig

CONTROLLER_FILES = ("epochFileCheckpoint", "brokerIdentity")
ON, OFF, AMBIGUOUS = "on", "off", "ambiguous"
PART_NAME = "controller-mode replica"  # the store.kind part


@dataclass(frozen=True)
class ControllerMode:
    """Whether the broker owning a store runs in controller mode, and what showed it."""

    mode: str  # ON, OFF, AMBIGUOUS
    evidence: str  # "broker.conf enableControllerMode=true", the files found, or ""
    files: tuple[str, ...] = ()

    @property
    def controller_reading(self) -> bool:
        """Reads follow the controller-mode broker (on, and ambiguous: the files' reading)."""
        return self.mode in (ON, AMBIGUOUS)

    @property
    def reading(self) -> str:
        """One sentence on the reading used (for ambiguous stores: which, and how to decide it)."""
        if self.mode == ON:
            return "read as a controller-mode broker reads it (broker.conf enableControllerMode=true)"
        if self.mode == AMBIGUOUS:
            return (
                f"{self.evidence} without a broker.conf: read as a controller-mode broker reads it (records "
                "past the checkpoint's confirm offset not served); give the broker's --broker-config to "
                "decide (writes refuse until then)"
            )
        return "not in controller mode: every valid record is dispatched and served"

    def as_dict(self) -> dict[str, Any]:
        return {"mode": self.mode, "evidence": self.evidence, "reading": self.reading}


def controller_mode(root: Path, cfg: BrokerConfig) -> ControllerMode:
    """Decide from broker.conf (`cfg.source` set when one was given) and the files in `root`."""
    files = tuple(n for n in CONTROLLER_FILES if (root / n).exists())
    given = cfg.source is not None
    if "enableControllerMode" in cfg.explicit and cfg.enableControllerMode:
        return ControllerMode(ON, "broker.conf enableControllerMode=true", files)
    if given:
        why = "broker.conf does not set enableControllerMode=true"
        return ControllerMode(OFF, f"{why} ({', '.join(files)} not read)" if files else why, files)
    if files:
        return ControllerMode(AMBIGUOUS, ", ".join(files), files)
    return ControllerMode(OFF, "", files)


@dataclass(frozen=True)
class ConfirmState:
    """The confirm offset a controller-mode broker's recovery computes, and the commitlog around it."""

    mode: ControllerMode
    recovery: str  # "normal" or "abnormal" (abort present)
    checkpoint_confirm: int | None  # the checkpoint's confirmPhyOffset (None: no checkpoint file, read as 0)
    confirm_offset: int  # after the recovery's clamp: the dispatch and serving end
    clamp: str | None  # why the recovery moved it, when it did
    min_offset: int
    max_offset: int  # the valid end (processOffset)
    load_fails: str | None = None  # why the broker's load fails on this confirm offset (it exits -3)
    source: str = "CommitLog.java:388-395 (normal), 751-754 and 797-804 (abnormal)"

    @property
    def unconfirmed_bytes(self) -> int:
        return max(0, self.max_offset - self.confirm_offset)

    def as_dict(self) -> dict[str, Any]:
        return {
            **self.mode.as_dict(),
            "recovery": self.recovery,
            "checkpointConfirmPhyOffset": self.checkpoint_confirm,
            "confirmOffset": self.confirm_offset,
            "confirmOffsetClamp": self.clamp,
            "minPhyOffset": self.min_offset,
            "maxPhyOffset": self.max_offset,
            "unconfirmedBytes": self.unconfirmed_bytes,
            "loadFails": self.load_fails,
            "source": self.source,
        }


def confirm_state(store: Any) -> ConfirmState | None:
    """The recovered confirm offset of `store` (a `store.storedir.Store`) under the controller reading; None
    when its broker does not run in controller mode (then every valid record is served)."""
    mode = store.layout.controller_mode
    if not mode.controller_reading:
        return None
    version = store.layout.detected_version
    if version is not None and version.major < 5:  # 4.x has no controller mode: the files are not read
        return None
    checkpoint = store.checkpoint()
    stored = None if checkpoint is None else checkpoint.confirm_phy_offset
    confirm = stored or 0  # a missing checkpoint is created zeroed (StoreCheckpoint's constructor)
    commitlog = store.commitlog
    abnormal = store.liveness().abort_present
    files = [f for f in commitlog.files if f.size]
    if not files:  # the "commitlog files are deleted" branch clamps nothing
        return ConfirmState(mode, "abnormal" if abnormal else "normal", stored, confirm, None, 0, 0)
    lo = commitlog.min_offset
    if abnormal:
        start = abnormal_start_offset(store)
        end = commitlog.valid_end(start)
        bound = _last_confirmed_end(commitlog, start, confirm)
        bound_name = "the end of the last record at or before it the abnormal recovery dispatches"
    else:
        end = commitlog.max_offset
        bound = end
        bound_name = "the commitlog's valid end"
    clamp = None
    if confirm < lo:
        clamp = f"below the commitlog's min offset {lo}: the recovery raises it there"
        value = lo
    elif confirm > bound:
        clamp = f"above {bound_name} ({bound}): the recovery lowers it there"
        value = bound
    else:
        value = confirm
    fails = _compensate_fails(commitlog, value, end)
    return ConfirmState(mode, "abnormal" if abnormal else "normal", stored, value, clamp, lo, end, fails)


def _compensate_fails(commitlog: Any, confirm: int, end: int) -> str | None:
    """Why `ConsumeQueueStore.compensateForHA` (run by every controller-mode load after the recovery,
    ConsumeQueueStore.java:474-475, 481-520) throws, failing the load: it reads the records from the
    confirm offset to the end, and a confirm offset inside a record reads a header out of a body (the real
    load fails so: store-controller/cases.json, "mid-record"), and a record of magic code V2 is an
    "Unknown magicCode"."""
    from formats.errors import MqtoolError
    from formats.message.commitlog import MAGIC_V1, Message

    if confirm >= end:
        return None
    try:
        for record in commitlog.iter_records(confirm):
            if not isinstance(record, Message) or record.physical_offset >= end:
                if isinstance(record, Message) or not _is_blank(record):
                    break
                continue
            if record.magic_code != MAGIC_V1:
                return (
                    f"the record at {record.physical_offset} past the confirm offset has magic code V2: "
                    'compensateForHA throws "Unknown magicCode" and the load fails'
                )
    except MqtoolError as exc:
        return f"{exc.message}: compensateForHA reads a record header there and the load fails"
    return None


def abnormal_start_offset(store: Any) -> int:
    """Where `recoverAbnormally` starts: the last file whose first record is stored at or before the
    checkpoint's min timestamp, else the first file (`store.log.recovery.recovery_start_abnormal`)."""
    from store.log.recovery import recovery_start_abnormal

    files = [f for f in store.commitlog.files if f.size]
    if not files:
        return 0
    cp = store.checkpoint()
    bound = cp.min_timestamp if cp is not None else 0
    firsts = []
    for f in files:
        stamp = store.commitlog.store_time_at(f.start_offset)
        firsts.append(None if stamp is None else (1, stamp))
    return files[recovery_start_abnormal(firsts, bound)].start_offset


def _last_confirmed_end(commitlog: Any, start: int, confirm: int) -> int:
    """`lastConfirmValidMsgPhyOffset`: the end of the last valid message ending at or before `confirm`,
    walking from `start` (its initial value)."""
    from formats.message.commitlog import Message

    last = start
    for record in commitlog.iter_records(start):
        if not isinstance(record, Message):
            continue
        end = record.physical_offset + record.total_size
        if end > confirm:
            break  # records are in physical order: none after ends at or before it
        last = end
    return last


def unconfirmed_topics(store: Any, state: ConfirmState) -> dict[str, int]:
    """The unconfirmed tail's messages per topic (a walk from the confirm offset to the valid end)."""
    from formats.errors import MqtoolError
    from formats.message.commitlog import Message

    counts: Counter[str] = Counter()
    if state.unconfirmed_bytes <= 0:
        return {}
    try:
        for record in store.commitlog.iter_records(state.confirm_offset):
            if isinstance(record, Message):
                if record.physical_offset >= state.max_offset:
                    break
                counts[record.topic] += 1
            elif not _is_blank(record):
                break
    except MqtoolError:
        return {}  # not a record boundary: only the bytes are told
    return dict(sorted(counts.items()))


def _is_blank(record: Any) -> bool:
    from formats.message.commitlog import Blank

    return isinstance(record, Blank)
