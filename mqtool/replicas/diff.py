"""`mqtool replicas diff A B`: two replicas of one broker compared, read-only.

Identity (broker.conf's brokerClusterName/brokerName/brokerId/brokerRole when given, the store host of
the newest record from the files), the layouts, the commitlogs compared byte for byte
(`mqtool.replicas.logdiff`), what the classic HA rule makes of the pair (`mqtool.replicas.harule`) and
the config tables compared row by row (`mqtool.replicas.configdiff`), the consume queues, index
coverage and checkpoints (`mqtool.replicas.queuediff`). A pair in controller mode
(epochFileCheckpoint, brokerIdentity or enableControllerMode) is judged by the epoch rule of
`AutoSwitchHAService` (`harule.controller_verdict`) when both sides have their epoch file; otherwise the HA
verdict says why not and the pair is never reported identical (fail closed). Note: in controller mode only
what the broker serves - up to its confirm offset - is consumers' (`store.log.confirm`); the comparison is of
the whole logs, as the HA reads them. A DLedger commitlog is not compared yet.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from formats.epoch import EPOCH_FILE
from formats.errors import MqtoolError
from mqtool.replicas.configdiff import ConfigDiff, compare_configs
from mqtool.replicas.harule import HaVerdict, classic_verdict, controller_verdict
from mqtool.replicas.logdiff import LogCompareError, LogDiff, compare_commitlogs
from mqtool.replicas.queuediff import QueueDiff, compare_queues
from store.ha.epochcache import load_epochs
from store.log.confirm import PART_NAME
from store.storedir import Store


@dataclass
class Identity:
    """Who a store belongs to: broker.conf's names (None when no broker.conf was given) and the files'."""

    path: str
    cluster: str | None
    broker_name: str | None
    broker_id: int | None
    broker_role: str | None
    store_host: str | None  # of the newest record
    layout: str
    controller: str | None  # the controller-mode evidence, if any

    @property
    def is_master(self) -> bool | None:
        if self.broker_role is not None:
            return self.broker_role != "SLAVE"
        return None if self.broker_id is None else self.broker_id == 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "brokerClusterName": self.cluster,
            "brokerName": self.broker_name,
            "brokerId": self.broker_id,
            "brokerRole": self.broker_role,
            "storeHost": self.store_host,
            "layout": self.layout,
            "controllerMode": self.controller,
        }


@dataclass
class ReplicaDiff:
    identities: tuple[Identity, Identity]
    log: LogDiff | None
    log_not_compared: str | None  # why the commitlogs were not compared
    ha: list[HaVerdict]
    ha_not_compared: str | None
    configs: ConfigDiff
    queues: QueueDiff
    notes: list[str] = field(default_factory=list)

    @property
    def identical(self) -> bool:
        """Nothing differs and everything was compared (controller mode or a log not compared: False)."""
        return (
            self.log is not None
            and self.log.identical
            and self.ha_not_compared is None
            and not self.configs.rows
            and not self.queues.rows
        )

    @property
    def exit_status(self) -> int:
        return 0 if self.identical else 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "identical": self.identical,
            "stores": [i.to_dict() for i in self.identities],
            "commitlog": None if self.log is None else self.log.to_dict(),
            "commitlogNotCompared": self.log_not_compared,
            "ha": [v.to_dict() for v in self.ha],
            "haNotCompared": self.ha_not_compared,
            "configs": self.configs.to_dict(),
            "queues": self.queues.to_dict(),
            "notes": self.notes,
        }


def identity(store: Store, path: str) -> Identity:
    conf = store.broker_config
    given = conf is not None and conf.source is not None

    def named(name: str):
        return getattr(conf, name) if given and name in conf.explicit else None

    host = None
    last = store.commitlog.last_record() if store.layout.kind.commitlog == "classic" else None
    if last is not None:
        try:
            host = store.commitlog.read_message_at(last.physical_offset, check_crc=False).store_host_str
        except MqtoolError:
            host = None
    controller = next((p.evidence for p in store.layout.kind.parts if p.name == PART_NAME), None)
    return Identity(
        path,
        named("brokerClusterName"),
        named("brokerName"),
        conf.brokerId if given else None,  # unset in broker.conf: the Java defaults, 0 and ASYNC_MASTER
        conf.brokerRole if given else None,
        host,
        store.layout.kind.label,
        controller,
    )


def _masters(ids: tuple[Identity, Identity], notes: list[str]) -> list[str]:
    """The side(s) to judge as master: the one broker.conf names, else both in turn."""
    roles = [i.is_master for i in ids]
    if roles[0] is not None and roles[1] is not None and roles[0] != roles[1]:
        return ["A" if roles[0] else "B"]
    if roles[0] is True and roles[1] is True:
        notes.append("both broker.conf files name a master (brokerId 0 or a MASTER role): judged both ways")
    elif roles[0] is not None and roles[1] is None:
        return ["A" if roles[0] else "B"]
    elif roles[1] is not None and roles[0] is None:
        return ["B" if roles[1] else "A"]
    return ["A", "B"]


def _controller_verdicts(
    stores: tuple[Store, Store], log: LogDiff | None, ids, notes: list[str], evidence: list[str]
) -> tuple[list[HaVerdict], str | None]:
    """The epoch rule for each side that may be the master, from both epoch files (`store.ha.epochcache`)
    and the valid ends; (verdicts, why not) where a side has none or its file fails the broker's start."""
    if log is None:
        return [], f"controller mode ({'; '.join(evidence)}): the commitlogs were not compared"
    epochs = []
    for store, end, label in zip(stores, log.max_offsets, "AB", strict=True):
        if not (store.root / EPOCH_FILE).exists() and not (store.root / f"{EPOCH_FILE}.bak").exists():
            return [], f"controller mode ({'; '.join(evidence)}): {label} has no {EPOCH_FILE}"
        try:
            epochs.append(load_epochs(store.root, end))
        except MqtoolError as exc:
            return [], f"controller mode: {label}'s epoch file fails the broker's start: {exc}"
    out = []
    for master in _masters(ids, notes):
        m, s = (0, 1) if master == "A" else (1, 0)
        ends = (log.max_offsets[m], log.max_offsets[s])
        out.append(controller_verdict(epochs[s], epochs[m], ends, master, log.prefix_end))
    return out, None


def diff_replicas(a: Store, b: Store, labels: tuple[str, str] = ("A", "B")) -> ReplicaDiff:
    """Compare replica stores `a` and `b` (see the module docstring)."""
    ids = (identity(a, labels[0]), identity(b, labels[1]))
    notes: list[str] = []
    for x, y in ((ids[0].broker_name, ids[1].broker_name), (ids[0].cluster, ids[1].cluster)):
        if x is not None and y is not None and x != y:
            notes.append(
                f"the broker.conf files name different brokers ({x} / {y}): not replicas of one broker"
            )
    kinds = (a.layout.kind.commitlog, b.layout.kind.commitlog)
    log, log_why = None, None
    if kinds != ("classic", "classic"):
        log_why = f"commitlogs of kind {kinds[0]} / {kinds[1]}: only classic commitlogs are compared yet"
    else:
        try:
            log = compare_commitlogs(a.commitlog, b.commitlog)
        except LogCompareError as exc:
            log_why = str(exc)
    ha_why = None
    controller = [f"{lab}: {i.controller}" for lab, i in zip("AB", ids, strict=True) if i.controller]
    verdicts: list[HaVerdict] = []
    if controller:
        verdicts, ha_why = _controller_verdicts((a, b), log, ids, notes, controller)
    elif log is None:
        ha_why = log_why
    else:
        verdicts = [classic_verdict(log, m) for m in _masters(ids, notes)]
    ends = (None, None) if log is None else log.max_offsets
    queues = compare_queues(a, b, ends)
    return ReplicaDiff(ids, log, log_why, verdicts, ha_why, compare_configs(a, b), queues, notes)
