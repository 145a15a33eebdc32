"""What kind of store this is: every layout a broker writes, named, with what mqtool reads and writes of it.

A broker's store root holds more than the classic `commitlog/` + `consumequeue/` + `index/`: its mode and
features leave directories, files and broker.conf flags (5.3.3 `StorePathConfigHelper`,
`MessageStoreConfig` lines 38-67 and 243-246, `BrokerConfig.enableControllerMode` / `messageStorePlugIn`,
`TimerMessageStore` lines 247-251, `CompactionStore` lines 48-50, `PopConsumerService` line 72, DLedger's
`DLedgerConfig.getDefaultPath`: `${storePathRootDir}/dledger-<selfId>`). `identify` names each part it finds,
with the evidence, and says whether mqtool reads it exactly and may write on it. A part mqtool does not fully
support makes every write refuse in one line naming it (`StoreKind.refuse_writes`); reads go on with a
warning. Entries of the root that no layout explains are listed, never touched.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from formats.config.fastjson import parse
from formats.errors import MqtoolError
from store.config.brokerconf import BrokerConfig
from store.config.configfile import read_config_text
from store.log.confirm import AMBIGUOUS, ON, PART_NAME, ControllerMode, controller_mode

# what a 4.9.x / 5.x broker (and mqtool's own staging) may leave in the store root
_KNOWN_DIRS = {
    "commitlog",
    "consumequeue",
    "consumequeue_ext",
    "batchconsumequeue",
    "index",
    "config",
    "timerlog",
    "kvStore",
    "compaction",
    "transaction",  # StorePathConfigHelper's statetable/redolog of old brokers
    "lost+found",  # the root is often a file system's mount point
}
_KNOWN_FILES = {
    "checkpoint",
    "lock",
    "abort",
    "abort.bak",
    "timerwheel",
    "epochFileCheckpoint",
    "epochFileCheckpoint.bak",
    "brokerIdentity",
}


# what a write touches: config files only, index files only, consume queues (rebuilt, with the index), the
# commitlog (appends, then dispatch into queues and index), the compaction topics' CQ files (rebuilt from
# their compaction logs, which do not depend on the commitlog's layout), or the tiered store's metadata file
# (rebuilt from the tiered tree)
WRITE_KINDS = ("config", "index", "queues", "log", "compaction", "tiered")


class UnsupportedLayoutError(MqtoolError):
    """A write on a store whose layout mqtool does not fully support."""


TIERED_PART = "tiered storage"  # the layout part of a broker with the tieredstore plugin


@dataclass(frozen=True)
class LayoutPart:
    """One part of a store's layout: what it is, what showed it, and what mqtool does with it."""

    name: str
    evidence: str
    reads: bool  # mqtool reads it exactly as the broker does
    writes: tuple[str, ...]  # the kinds of write that stay right with it (WRITE_KINDS)
    note: str = ""  # what mqtool does or does not do about it

    def as_dict(self) -> dict[str, object]:
        return {"name": self.name, "evidence": self.evidence, "reads": self.reads, "writes": self.writes,
                "note": self.note}  # fmt: skip


@dataclass(frozen=True)
class StoreKind:
    """The layout of one store: the commitlog's kind, where consume queues and config live, every other
    part found, and the root's entries no layout explains."""

    commitlog: str  # "classic", "dledger", "dledger-mixed", "multi-path", "elsewhere"
    consume_queues: str  # "files" or "rocksdb"
    config: str  # "json", "rocksdb" (v1) or "rdb" (v2)
    parts: tuple[LayoutPart, ...] = ()
    unknown: tuple[str, ...] = field(default=())

    @property
    def label(self) -> str:
        return f"{self.commitlog} commitlog, consume queues in {self.consume_queues}, config in {self.config}"

    def unsupported_reads(self) -> list[LayoutPart]:
        return [p for p in self.parts if not p.reads]

    def unsupported_writes(self, touches: str = "log") -> list[LayoutPart]:
        """The parts a write that touches `touches` (one of WRITE_KINDS) cannot be trusted on."""
        if touches not in WRITE_KINDS:
            raise ValueError(touches)
        return [p for p in self.parts if touches not in p.writes]

    def refuse_writes(self, root: Path | str, touches: str = "log", what: str = "write") -> None:
        """Raise UnsupportedLayoutError naming the first part such a write cannot be trusted on."""
        parts = self.unsupported_writes(touches)
        if parts:
            part = parts[0]
            more = f" (and {', '.join(p.name for p in parts[1:])})" if len(parts) > 1 else ""
            raise UnsupportedLayoutError(
                f"this store has a {part.name}{more} ({part.evidence}): mqtool does not {what} on this layout"
                f"{'; ' + part.note if part.note else ''}",
                str(root),
            )

    def as_dict(self) -> dict[str, object]:
        return {
            "commitlog": self.commitlog,
            "consumeQueues": self.consume_queues,
            "config": self.config,
            "parts": [p.as_dict() for p in self.parts],
            "unknown": list(self.unknown),
        }


def _entries(root: Path) -> list[os.DirEntry]:
    try:
        return sorted(os.scandir(root), key=lambda e: e.name)
    except OSError:
        return []


def _commitlog_paths(cfg: BrokerConfig) -> list[str]:
    if "storePathCommitLog" not in cfg.explicit or not cfg.storePathCommitLog:
        return []
    return [p for p in cfg.storePathCommitLog.split(";") if p.strip()]


def _compaction_topics(root: Path) -> list[str]:
    """Topics with a compacted log (`compaction/compactionLog/<topic>`) or the COMPACTION cleanup policy
    in topics.json (`TopicAttributes.CLEANUP_POLICY_ATTRIBUTE`)."""
    topics = set()
    log_dir = root / "compaction" / "compactionLog"
    if log_dir.is_dir():
        topics.update(e.name for e in _entries(log_dir) if e.is_dir())
    try:
        # through the one reader of config files: a FIFO or a 100 GiB topics.json is refused, not read
        text, _ = read_config_text(root / "config" / "topics.json")
        if text is None or ("cleanup" not in text and "\\u" not in text):
            return sorted(topics)  # no key can spell cleanup.policy: not parsed (a store may hold 10,000s)
        # the broker's parser (fastjson's rules, its nesting limit): Python's json recursed past its limit
        table = parse(text or "{}") or {}
        for name, config in (table.get("topicConfigTable") or {}).items():
            attributes = config.get("attributes") or {} if isinstance(config, dict) else {}
            if str(attributes.get("cleanup.policy", "")).upper() == "COMPACTION":
                topics.add(name)
    except (MqtoolError, OSError, ValueError, AttributeError):
        pass  # a missing or broken topics.json is the config readers' to report
    return sorted(topics)


# what a write may touch on a DLedger store: config files, and the ConsumeQueues and index rebuilt from the
# log; never the log (an offline append on one node of a replicated log diverges from the other peers)
DLEDGER_WRITES = ("config", "index", "queues", "compaction", "tiered")


def _dledger_part(root: Path, cfg: BrokerConfig, evidence: str) -> LayoutPart:
    """The DLedger commitlog part: read exactly (`store.log.dledger`) when its data files are where
    broker.conf (or the default) puts them; a data directory that cannot be found while DLedger's index holds
    entries (storePathDLedgerCommitLog elsewhere, broker.conf not given) is not read, and nothing writes."""
    from store.log.dledger import DLedgerError, DLedgerPaths

    try:
        paths = DLedgerPaths.find(root, cfg)
    except DLedgerError as exc:
        return LayoutPart("DLedger commitlog", evidence, reads=False, writes=(), note=exc.message)
    if paths is not None and not any(d.is_dir() for d in paths.data_dirs) and _index_written(paths.index_dir):
        return LayoutPart(
            "DLedger commitlog", evidence, reads=False, writes=(),
            note=f"its index holds entries but no data directory is found ({paths.data_dirs[0]}): give the "
            "broker's broker.conf (storePathDLedgerCommitLog) with --broker-config",
        )  # fmt: skip
    return LayoutPart(
        "DLedger commitlog", evidence, reads=True, writes=DLEDGER_WRITES,
        note="mqtool does not append to a replicated log: an offline append on one node diverges from the "
        "other peers (delay replay, txn commit/rollback/resolve refuse)",
    )  # fmt: skip


# what a write may touch in controller mode: config files, and ConsumeQueues and index rebuilt up to the
# confirm offset; never the log (an offline append on one replica diverges from the others' epochs)
CONTROLLER_WRITES = ("config", "index", "queues", "tiered")


def _controller_part(mode: ControllerMode) -> LayoutPart | None:
    """The controller-mode part (`store.log.confirm`): on (broker.conf) it is read exactly and written but
    for appends; ambiguous (the files without broker.conf) reads say their reading and nothing writes."""
    if mode.mode == ON:
        return LayoutPart(
            PART_NAME, mode.evidence, reads=True, writes=CONTROLLER_WRITES,
            note="records past the recovered confirm offset are not dispatched by the reput (info, verify, "
            "rebuild and queries stop there); mqtool does not append to a replicated log: an offline append "
            "on one replica diverges from the others' epochs (delay replay, txn commit/rollback/resolve "
            "refuse)",
        )  # fmt: skip
    if mode.mode == AMBIGUOUS:
        return LayoutPart(PART_NAME, mode.evidence, reads=False, writes=(), note=mode.reading)
    return None


def _index_written(index_dir: Path) -> bool:
    try:
        with open(index_dir / "00000000000000000000", "rb") as fh:
            return any(fh.read(32))
    except OSError:
        return False


def identify(
    root: Path, cfg: BrokerConfig, *, consume_queues_in_rocksdb: bool, config_backend: str
) -> StoreKind:
    """Name every part of the store at `root` (with broker.conf `cfg` when given)."""
    parts: list[LayoutPart] = []
    entries = _entries(root)
    names = {e.name for e in entries}
    dledger_dirs = sorted(n for n in names if n.startswith("dledger-"))

    commitlog = "classic"
    paths = _commitlog_paths(cfg)
    dledger_on = "enableDLegerCommitLog" in cfg.explicit and cfg.enableDLegerCommitLog
    if dledger_dirs or dledger_on:
        has_classic = any(True for _ in _entries(root / "commitlog"))
        commitlog = "dledger-mixed" if has_classic else "dledger"
        evidence = ", ".join(f"{d}/" for d in dledger_dirs) or "broker.conf enableDLegerCommitLog=true"
        parts.append(_dledger_part(root, cfg, evidence))
    elif len(paths) > 1 or (
        "readOnlyCommitLogStorePaths" in cfg.explicit and cfg.readOnlyCommitLogStorePaths
    ):
        commitlog = "multi-path"
        parts.append(LayoutPart(
            "multi-path commitlog", f"broker.conf storePathCommitLog={cfg.storePathCommitLog}", reads=False,
            writes=(), note=f"mqtool reads only {root / 'commitlog'}",
        ))  # fmt: skip
    elif paths and Path(paths[0]).resolve() != (root / "commitlog").resolve():
        commitlog = "elsewhere"
        parts.append(LayoutPart(
            "commitlog outside the store root", f"broker.conf storePathCommitLog={paths[0]}", reads=False,
            writes=(), note=f"mqtool reads only {root / 'commitlog'}",
        ))  # fmt: skip

    part = _controller_part(controller_mode(root, cfg))
    if part is not None:
        parts.append(part)
    compacted = _compaction_topics(root)
    if compacted:
        parts.append(LayoutPart(
            "compaction topic", "topics " + ", ".join(compacted[:5]) + (" ..." if len(compacted) > 5 else ""),
            reads=True, writes=("compaction", "tiered"),
            note="consumers of such topics are served from compaction/ (info, dump cq, query offset and "
            "verify read it as the broker does); an appended record reaches it only through the broker's own "
            "dispatch (CompactionStore.doDispatch), so no write appends or rebuilds here but `rebuild "
            "compaction-cq`",
        ))  # fmt: skip
    plug_in = cfg.messageStorePlugIn if "messageStorePlugIn" in cfg.explicit else ""
    tiered_meta = root / "config" / "tieredStoreMetadata.json"
    if "tieredstore" in plug_in.lower() or tiered_meta.exists():
        parts.append(LayoutPart(
            TIERED_PART, f"broker.conf messageStorePlugIn={plug_in}" if plug_in else str(tiered_meta),
            reads=False, writes=("tiered",),
            note="older segments live outside the store: info, query, dump cq, verify, export, audit and "
            "offsets show read them with --tiered (or broker.conf's tieredStoreFilePath, POSIX provider); "
            "other commands see the local store only",
        ))  # fmt: skip
    if "consumequeue_ext" in names:
        parts.append(LayoutPart(
            "ConsumeQueue extension", "consumequeue_ext/", reads=True,
            writes=("config", "index", "compaction", "tiered"),
            note="units hold ext addresses, which mqtool does not write",
        ))  # fmt: skip

    from store.io.filewrites import TMP_PREFIX

    known = _KNOWN_DIRS | _KNOWN_FILES | set(dledger_dirs)
    unknown = tuple(n for n in sorted(names) if n not in known and not n.startswith(TMP_PREFIX))
    return StoreKind(
        commitlog=commitlog,
        consume_queues="rocksdb" if consume_queues_in_rocksdb else "files",
        config=config_backend,
        parts=tuple(parts),
        unknown=unknown,
    )
