"""The settings of one store, resolved in one place: file sizes, index geometry, delay levels, version.

A setting is taken as the broker takes it: an explicit value (a command-line flag) first, then
broker.conf when it sets the key, then what the store's files show, then the broker's default. The
commitlog's file size is the exception: existing files cannot change size, so they decide (the appender
refuses a different one given or configured). What the files show is read once per `StoreLayout`
(lazily: a command pays only for what it asks).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from formats.consumequeue import DEFAULT_CQ_FILE_SIZE
from formats.errors import MqtoolError
from formats.indexfile import DEFAULT_HASH_SLOT_NUM, DEFAULT_INDEX_NUM, IndexGeometry
from formats.message.commitlog import DEFAULT_DELAY_LEVELS_MS, Message
from formats.structs import CQ_STORE_UNIT_SIZE
from formats.timer import DEFAULT_TIMER_LOG_FILE_SIZE
from store.config.brokerconf import BrokerConfig
from store.io.pathnames import queue_dir
from store.kind import StoreKind, identify
from store.log.confirm import ControllerMode, controller_mode
from store.log.mappedfile import MappedFileQueue, majority_size, possible_file_size
from store.queue.consumequeue import ConsumeQueueStore, is_rocksdb_dir
from store.queue.lmq import LmqSettings, offset_file_name, resolve_lmq_settings
from store.version import BrokerVersion, detect_broker_version, resolve_broker_version


@dataclass(frozen=True)
class Setting:
    """A resolved value and where it came from: a flag name, broker.conf, current files, broker default."""

    value: int
    source: str


@dataclass(frozen=True)
class DelayLevelTable:
    """messageDelayLevel in use: level (1-based) -> delay in ms, its text, and where it came from."""

    table: dict[int, int]
    text: str
    source: str  # "default" or "broker-config"

    @property
    def max_level(self) -> int:
        return max(self.table) if self.table else 0

    def delay_ms(self, level: int) -> int | None:
        return self.table.get(level)

    @property
    def in_level_order(self) -> tuple[int, ...]:
        """The delays in ms in level order (empty when the table is)."""
        return tuple(self.table[level] for level in sorted(self.table))

    @property
    def ms(self) -> tuple[int, ...]:
        """The delays as `Message.tags_code` takes them (the broker's default table when empty)."""
        return self.in_level_order or DEFAULT_DELAY_LEVELS_MS


def delay_levels_ms(table: dict[int, int] | None) -> tuple[int, ...]:
    """BrokerConfig.delay_level_table() as the tuple `Message.tags_code` takes."""
    return DelayLevelTable(table or {}, "", "").ms


# Files counted before the size most of them have is taken as settled (a store may hold 100,000+ queues).
_SETTLED_VOTES = 64


def existing_cq_file_size(root: Path) -> int | None:
    """`mappedFileSizeConsumeQueue` as the current ConsumeQueue files show it: the size most of them have
    (`store.log.mappedfile.majority_size`), so one file truncated up to 100 GiB never decides it; None
    when there are none or no size has most. Queues are read until one size has `_SETTLED_VOTES` files
    and four times as many as any other."""
    cq_dir = root / "consumequeue"
    if not cq_dir.is_dir() or is_rocksdb_dir(cq_dir):
        return None
    store = ConsumeQueueStore(root, commitlog_min_offset=0)
    sizes: list[int] = []
    for topic, queue_id in store.queues():
        sizes.extend(f.size for f in MappedFileQueue.open(queue_dir(cq_dir, topic, queue_id)))
        if len(sizes) >= _SETTLED_VOTES:
            ranked = Counter(s for s in sizes if possible_file_size(s, CQ_STORE_UNIT_SIZE)).most_common(2)
            lead = ranked[0][1] if ranked else 0
            if lead >= _SETTLED_VOTES and (len(ranked) < 2 or lead >= 4 * ranked[1][1]):
                break
    return majority_size(sizes, CQ_STORE_UNIT_SIZE)


def existing_index_geometry(root: Path) -> IndexGeometry | None:
    """(maxHashSlotNum, maxIndexNum) as the current index files show it (None when unknown)."""
    from store.index.indexservice import IndexService
    from store.index.indexwriter import list_index_files

    if not list_index_files(root / "index"):
        return None
    service = IndexService(root)
    try:
        return service.geometry
    finally:
        service.close()


@dataclass
class StoreLayout:
    """What the broker.conf and the files of the store at `root` say about how it is laid out."""

    root: Path
    broker_config: BrokerConfig

    # --- broker.conf --------------------------------------------------------------------------------

    def configured(self, key: str) -> int | None:
        """The broker.conf value of `key` when broker.conf sets it, else None."""
        return getattr(self.broker_config, key) if key in self.broker_config.explicit else None

    @property
    def configured_index_geometry(self) -> IndexGeometry | None:
        """The geometry broker.conf gives when it sets either key (the other at its default)."""
        cfg = self.broker_config
        if {"maxHashSlotNum", "maxIndexNum"} & cfg.explicit:
            return IndexGeometry(cfg.maxHashSlotNum, cfg.maxIndexNum)
        return None

    @cached_property
    def delay_levels(self) -> DelayLevelTable:
        cfg = self.broker_config
        source = "broker-config" if "messageDelayLevel" in cfg.explicit else "default"
        return DelayLevelTable(cfg.delay_level_table(), cfg.messageDelayLevel, source)

    # --- what the files show ------------------------------------------------------------------------

    @cached_property
    def commitlog_file_size_on_disk(self) -> int | None:
        return MappedFileQueue.open(self.root / "commitlog").file_size or None

    @cached_property
    def timerlog_file_size_on_disk(self) -> int | None:
        return MappedFileQueue.open(self.root / "timerlog").file_size

    @cached_property
    def cq_file_size_on_disk(self) -> int | None:
        return existing_cq_file_size(self.root)

    @cached_property
    def index_geometry_on_disk(self) -> IndexGeometry | None:
        """Raises when the index files cannot be read (see `index_geometry_or_note`)."""
        return existing_index_geometry(self.root)

    def index_geometry_or_note(self) -> tuple[IndexGeometry | None, str | None]:
        try:
            return self.index_geometry_on_disk, None
        except MqtoolError as exc:
            return None, f"index geometry not readable from the current files ({exc})"

    @cached_property
    def consume_queues_in_rocksdb(self) -> bool:
        """consumequeue/ holds a RocksDB database (storeType=defaultRocksDB), not mapped files."""
        return is_rocksdb_dir(self.root / "consumequeue")

    @cached_property
    def lmq(self) -> LmqSettings:
        """enableLmq / enableMultiDispatch (see `store.queue.lmq.resolve_lmq_settings`)."""
        return resolve_lmq_settings(self.root, self.broker_config)

    @cached_property
    def config_backend(self) -> str:
        """Where the broker's managers keep offsets, topics and groups: "json", "rocksdb" (v1) or "rdb"
        (v2, config/rdb); see `store.rocksdb.config.config_backend`."""
        from store.rocksdb.config import config_backend

        return config_backend(self.root, self.broker_config, self.consume_queues_in_rocksdb)

    @cached_property
    def kind(self) -> StoreKind:
        """Every part of this store's layout, named, and what mqtool reads and writes of it
        (`store.kind.identify`)."""
        return identify(
            self.root,
            self.broker_config,
            consume_queues_in_rocksdb=self.consume_queues_in_rocksdb,
            config_backend=self.config_backend,
        )

    @cached_property
    def controller_mode(self) -> ControllerMode:
        """Whether the store's broker runs in controller mode: on, off or ambiguous
        (`store.log.confirm.controller_mode`)."""
        return controller_mode(self.root, self.broker_config)

    @property
    def consumer_offset_file(self) -> str:
        """The consumer offset table the broker loads (`store.queue.lmq.offset_file_name`)."""
        return offset_file_name(self.lmq, self.config_backend)

    @cached_property
    def detected_version(self) -> BrokerVersion | None:
        return detect_broker_version(self.root)

    def detect_version(self, record: Message | None = None) -> BrokerVersion | None:
        """`detected_version`, with a record the broker serialised as further evidence."""
        if record is None:
            return self.detected_version
        return detect_broker_version(self.root, record)

    def broker_version(self, given: int | None = None, record: Message | None = None) -> BrokerVersion:
        """`--broker-version` when given (4 or 5), else detected (with `record` as further evidence), else
        5.x (the current broker)."""
        if given is not None:
            return resolve_broker_version(self.root, given)
        return self.detect_version(record) or BrokerVersion(5, "no version marks in the store; assuming 5.x")

    # --- resolved settings --------------------------------------------------------------------------

    def _pick(self, given: int | None, given_name: str, key: str, found: int | None, default: int) -> Setting:
        if given is not None:
            return Setting(given, given_name)
        configured = self.configured(key)
        if configured is not None:
            return Setting(configured, "broker.conf")
        if found is not None:
            return Setting(found, "current files")
        return Setting(default, "broker default")

    def cq_file_size(self, given: int | None = None, given_name: str = "given") -> Setting:
        """mappedFileSizeConsumeQueue (a multiple of the 20-byte unit unless given otherwise)."""
        return self._pick(
            given, given_name, "mappedFileSizeConsumeQueue", self.cq_file_size_on_disk, DEFAULT_CQ_FILE_SIZE
        )

    def timerlog_file_size(self) -> Setting:
        """mappedFileSizeTimerLog: what TimerLog's MappedFileQueue requires of every timerlog file."""
        return self._pick(
            None, "", "mappedFileSizeTimerLog", self.timerlog_file_size_on_disk, DEFAULT_TIMER_LOG_FILE_SIZE
        )

    def index_settings(
        self,
        hash_slot_num: int | None = None,
        hash_slot_name: str = "given",
        index_num: int | None = None,
        index_num_name: str = "given",
    ) -> tuple[Setting, Setting, list[str]]:
        """(maxHashSlotNum, maxIndexNum), each resolved on its own; unreadable index files become a note."""
        geometry, note = self.index_geometry_or_note()
        slots = self._pick(hash_slot_num, hash_slot_name, "maxHashSlotNum",
                           geometry.hash_slot_num if geometry else None, DEFAULT_HASH_SLOT_NUM)  # fmt: skip
        num = self._pick(index_num, index_num_name, "maxIndexNum", geometry.index_num if geometry else None,
                         DEFAULT_INDEX_NUM)  # fmt: skip
        return slots, num, [note] if note else []


__all__ = [
    "DelayLevelTable",
    "Setting",
    "StoreLayout",
    "delay_levels_ms",
    "existing_cq_file_size",
    "existing_index_geometry",
]
