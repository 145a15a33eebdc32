"""A RocketMQ store root (`storePathRootDir`): where each part lives, opened read-only on demand.

`Store.open(path, broker_config)` resolves the root (`--store`, else `$MQTOOL_STORE`, else `~/store` as
the broker defaults) and checks that it looks like a store. Its `layout` (`store.layout.StoreLayout`) is
the one place store settings are resolved; the Store hands out the readers (CommitLog, ConsumeQueues,
IndexService, checkpoint, config files) and the writers built on the same settings (`appender()`,
`dispatcher()`, `config(name).save`).
"""

from __future__ import annotations

import os
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from formats.batchconsumequeue import BATCH_CQ_DIR
from formats.errors import MqtoolError
from store.config.brokerconf import BrokerConfig
from store.io.remote import is_url, list_files, open_view, redact, refuse_url
from store.liveness import Liveness, check_liveness

if TYPE_CHECKING:
    from store.layout import StoreLayout

STORE_MARKERS = ("commitlog", "consumequeue", "index", "config", "checkpoint")
# the directories the broker lists at load: one it cannot list (a dangling link) loads as empty
LOADED_DIRS = ("commitlog", "consumequeue", BATCH_CQ_DIR, "index", "config")


class NotAStoreError(MqtoolError):
    """The path given is missing or is not a RocketMQ store root."""


def _require_markers(names: set[str], where: str) -> None:
    if not names.intersection(STORE_MARKERS):
        raise NotAStoreError(
            "not a RocketMQ store: none of commitlog/, consumequeue/, index/, config/ or checkpoint here",
            where,
        )


def resolve_store_root(path: Path | str | None) -> Path:
    if path is None:
        env = os.environ.get("MQTOOL_STORE")
        path = Path(env) if env else Path.home() / "store"
    return Path(path).expanduser()


def _refuse_dangling_links(root: Path) -> None:
    """A store directory that is a symbolic link to nothing (an unmounted disk, a moved directory): the
    broker's load lists it as empty (`File.listFiles()` is null), its recovery of an empty commitlog drops
    the consume queues, and nothing can be written through it; so it is an error, not an empty part."""
    for name in LOADED_DIRS:
        part = root / name
        if part.is_symlink() and not part.exists():
            try:
                target = os.readlink(part)
            except OSError:
                target = "?"
            raise NotAStoreError(
                f"symbolic link to {target}, which does not exist: the broker would load an empty {name}/",
                str(part),
            )


class Store:
    """One store directory: its layout, its readers, and its writers."""

    def __init__(self, root: Path, broker_config: BrokerConfig | None = None) -> None:
        self.root = root
        self.location = str(root)  # what the user named: the root, or a URL without credentials
        self.is_remote = False  # named by URL: its files are fetched (store.remote)
        self.broker_config = broker_config or BrokerConfig()
        self.tiered_path: Path | None = None  # --tiered (else broker.conf's tieredStoreFilePath)
        self._queues: dict[tuple[str, int], object] = {}
        self._batch_queues: dict[tuple[str, int], object] = {}

    @classmethod
    def open(cls, path: Path | str | None = None, broker_config: BrokerConfig | None = None) -> Store:
        refuse_url(path if path is not None else os.environ.get("MQTOOL_STORE"))
        root = resolve_store_root(path)
        if not root.exists():
            raise NotAStoreError("no such store directory (use --store or $MQTOOL_STORE)", str(root))
        if not root.is_dir():
            raise NotAStoreError("not a directory: a store root is a directory", str(root))
        try:
            present = {entry.name for entry in os.scandir(root)}
        except OSError as exc:
            raise NotAStoreError(f"cannot list the store directory: {exc.strerror}", str(root)) from exc
        _require_markers(present, str(root))
        _refuse_dangling_links(root)
        return cls(root, broker_config)

    @classmethod
    def open_location(
        cls, path: Path | str | None = None, broker_config: BrokerConfig | None = None
    ) -> Store:
        """Store.open, or for a URL (s3://, gs://, hdfs://, file://, ...) its driver view
        (store.io.remote)."""
        if path is None and is_url(os.environ.get("MQTOOL_STORE")):
            path = os.environ["MQTOOL_STORE"]
        if is_url(path):
            files = list_files(str(path))
            if files is None:
                raise NotAStoreError("no such store (nothing at that URL)", redact(str(path)))
            _require_markers({name.split("/", 1)[0] for name in files}, redact(str(path)))
            store = cls.open(open_view(str(path), files), broker_config)
            store.location = redact(str(path))
            store.is_remote = True
            return store
        return cls.open(path, broker_config)

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for name in ("commitlog", "index_service", "consume_queues", "compaction"):
            part = self.__dict__.get(name)
            if hasattr(part, "close"):  # a file-based ConsumeQueueStore holds nothing open
                part.close()
        for queues in (self._queues, self._batch_queues):
            for queue in queues.values():
                queue.close()
            queues.clear()

    # --- paths ----------------------------------------------------------------------------------

    @property
    def commitlog_dir(self) -> Path:
        return self.root / "commitlog"

    @property
    def consumequeue_dir(self) -> Path:
        return self.root / "consumequeue"

    @property
    def index_dir(self) -> Path:
        return self.root / "index"

    @property
    def config_dir(self) -> Path:
        return self.root / "config"

    @property
    def checkpoint_path(self) -> Path:
        return self.root / "checkpoint"

    # --- settings -------------------------------------------------------------------------------

    @cached_property
    def layout(self) -> StoreLayout:
        """File sizes, index geometry, delay levels, broker version and backends, resolved once."""
        from store.layout import StoreLayout

        return StoreLayout(self.root, self.broker_config)

    # --- parts ----------------------------------------------------------------------------------

    def liveness(self) -> Liveness:
        return check_liveness(self.root)

    @cached_property
    def commitlog(self):
        """`CommitLog`, or for a broker with a DLedger commitlog (`dledger-<selfId>/`, or
        enableDLegerCommitLog in broker.conf) `DLedgerCommitLog`, the same reads over DLedger's entries."""
        from store.log.commitlog import CommitLog
        from store.log.dledger import DLedgerCommitLog, DLedgerPaths

        paths = DLedgerPaths.find(self.root, self.broker_config)
        if paths is not None:
            size = self.layout.configured("mappedFileSizeCommitLog")
            return DLedgerCommitLog(self.root, paths, file_size=size)
        return CommitLog(self.commitlog_dir)

    @cached_property
    def consume_queues(self):
        """`ConsumeQueueStore`: topics and queue ids under consumequeue/ (min offsets use the commitlog's, the
        file size `StoreLayout`'s);
        `RocksDBConsumeQueueStore` when consumequeue/ is a RocksDB database (storeType=defaultRocksDB)."""
        from store.queue.consumequeue import ConsumeQueueStore

        if self.layout.consume_queues_in_rocksdb:
            from store.rocksdb.consumequeue import RocksDBConsumeQueueStore

            return RocksDBConsumeQueueStore(self.root, commitlog_min_offset=self.commitlog.min_offset)
        # one size for every queue, as the broker's mappedFileSizeConsumeQueue: broker.conf's, else the
        # size most files have (a queue's file of another size is then an error naming it)
        layout = self.layout
        return ConsumeQueueStore(
            self.root,
            commitlog_min_offset=self.commitlog.min_offset,
            file_size=layout.configured("mappedFileSizeConsumeQueue") or layout.cq_file_size_on_disk,
        )

    def consume_queue(self, topic: str, queue_id: int):
        """The ConsumeQueue of (topic, queueId), opened once per store."""
        key = (topic, queue_id)
        if key not in self._queues:
            self._queues[key] = self.consume_queues.open(topic, queue_id)
        return self._queues[key]

    @cached_property
    def batch_consume_queues(self):
        """`BatchConsumeQueueStore`: the BatchCQ topics' queues under batchconsumequeue/."""
        from store.queue.batchconsumequeue import BatchConsumeQueueStore

        return BatchConsumeQueueStore(self.root, commitlog_min_offset=self.commitlog.min_offset)

    def batch_consume_queue(self, topic: str, queue_id: int):
        """The BatchConsumeQueue of (topic, queueId), opened once per store."""
        key = (topic, queue_id)
        if key not in self._batch_queues:
            self._batch_queues[key] = self.batch_consume_queues.open(topic, queue_id)
        return self._batch_queues[key]

    @cached_property
    def batch_cq_topics(self) -> frozenset[str]:
        """Topics the broker keeps in batchconsumequeue/: `queue.type=BatchCQ` in topics.json, and the
        topic directories there (the broker loads those whatever topics.json says)."""
        from store.queue.batchconsumequeue import batch_cq_topics

        return batch_cq_topics(self)

    @cached_property
    def compaction(self):
        """`CompactionStore` (`store.kv.compaction`): compaction/ and the topics topics.json makes
        compaction topics (`cleanup.policy=COMPACTION`); an unreadable topics.json names none."""
        from formats.errors import MqtoolError
        from store.kv.compaction import CompactionStore

        try:
            table = getattr(self.config("topics.json").load().model, "topic_config_table", {})
        except MqtoolError:
            table = {}
        return CompactionStore(self.root, {name: config.attributes for name, config in table.items()})

    # --- the queue of a topic, whatever its type (ConsumeQueueStore.findOrCreateConsumeQueue) -----

    def queue_type(self, topic: str) -> str:
        """`BatchCQ` or `SimpleCQ`: the kind of queue the broker opens for `topic`
        (`ConsumeQueueStore.findOrCreateConsumeQueue` by `QueueTypeUtils.getCQType`; a RocksDB store's
        `RocksDBConsumeQueueStore` opens every queue in RocksDB, a SimpleCQ here)."""
        if not self.layout.consume_queues_in_rocksdb and topic in self.batch_cq_topics:
            return "BatchCQ"
        return "SimpleCQ"

    def queue_ids(self, topic: str) -> list[int]:
        """The queue ids `topic` has in the queue store of its type (`queue_type`), ascending."""
        if self.queue_type(topic) == "BatchCQ":
            return self.batch_consume_queues.queue_ids(topic)
        return self.consume_queues.queue_ids(topic)

    def open_queue(self, topic: str, queue_id: int):
        """The queue of (topic, queueId) whatever its type - a `ConsumeQueue`, `RocksDBConsumeQueue` (LMQ
        queues are ConsumeQueues) or `BatchConsumeQueue` - with the reading interface they share
        (`store.queue.unitqueue.UnitQueue`: min/max offsets, the store's search by time, the store time
        at a queue offset). A new reader the caller closes (a store may hold 100,000+ queues)."""
        if self.queue_type(topic) == "BatchCQ":
            return self.batch_consume_queues.open(topic, queue_id)
        return self.consume_queues.open(topic, queue_id)

    def queue(self, topic: str, queue_id: int):
        """`open_queue`, opened once per store and closed with it."""
        if self.queue_type(topic) == "BatchCQ":
            return self.batch_consume_queue(topic, queue_id)
        return self.consume_queue(topic, queue_id)

    @cached_property
    def index_service(self):
        from store.index.indexservice import IndexService

        layout = self.layout
        return IndexService(
            self.root,
            hash_slot_num=layout.configured("maxHashSlotNum"),
            index_num=layout.configured("maxIndexNum"),
        )

    @cached_property
    def confirm(self):
        """The recovered confirm offset of a controller-mode broker (`store.log.confirm.ConfirmState`),
        None when the store's broker does not run in controller mode (every valid record served)."""
        from store.log.confirm import confirm_state

        return confirm_state(self)

    @cached_property
    def consume_queue_end(self) -> int:
        """maxPhyOffsetOfConsumeQueue as the recovery computes it: the largest phy + size of any queue's last
        unit (BatchCQ queues' too; LMQ units repeat a unit their record's own queue got first), 0 without
        units."""
        from store.queue.lmq import is_lmq

        end = 0
        for topic, queue_id in self.consume_queues.queues():
            if is_lmq(topic):
                continue
            queue = self.consume_queues.open(topic, queue_id)  # closed at once: there may be 100,000+
            try:
                if queue.max_offset > queue.min_offset:
                    unit = queue.unit(queue.max_offset - 1)
                    if unit is not None and not unit.is_filler:
                        end = max(end, unit.phy_offset + unit.size)
            finally:
                queue.close()
        for topic, queue_id in self.batch_consume_queues.queues():
            last = self.batch_consume_queue(topic, queue_id).last_unit
            if last is not None:
                end = max(end, last.phy_offset + last.size)
        return end

    @property
    def served_end(self) -> int:
        """Where what the broker dispatches and serves ends: the commitlog's valid end, or in controller mode
        the confirm offset, or the consume queues' end where they already go further (units the reput wrote
        while the live confirm offset was ahead of the checkpoint's: both recoveries keep and serve them)."""
        state = self.confirm
        if state is None:
            return self.commitlog.max_offset
        return min(state.max_offset, max(state.confirm_offset, self.consume_queue_end))

    def checkpoint(self):
        """The decoded StoreCheckpoint, or None when the file is missing."""
        from store.checkpoint import read_checkpoint

        return read_checkpoint(self.root)

    @cached_property
    def tiered(self):
        """The broker's tiered store (`store.tiered.flatfile.TieredStore`) when --tiered or broker.conf's
        tieredStoreFilePath names its tree; None otherwise."""
        from store.tiered.flatfile import TieredStore
        from store.tiered.settings import resolve_tiered

        settings = resolve_tiered(self.broker_config, self.tiered_path)
        if settings is not None and self.is_remote:
            raise MqtoolError("--tiered reads beside a store on this machine only, not one named by URL")
        return None if settings is None else TieredStore(settings, self.root)

    def config(self, name: str):
        """`ConfigFile` for config/<name> (load() falls back to .bak as the broker does); the RocksDB
        tables the broker loads instead when it keeps them in RocksDB (`store.rocksdb.config`)."""
        from store.config.configfile import ConfigFile
        from store.rocksdb.config import rocksdb_config_file

        kv = rocksdb_config_file(self.root, name, self.broker_config, self.layout.consume_queues_in_rocksdb)
        return kv or ConfigFile(self.root, name)

    # --- writers (the caller holds the store lock: `mqtool.safety.write_guard`) ------------------

    def appender(self, **options):
        """A `CommitLogAppender` on this store and its layout (options: see `CommitLogAppender`)."""
        from store.appender import CommitLogAppender

        return CommitLogAppender(self, **options)

    def dispatcher(
        self,
        *,
        cq_file_size: int | None = None,
        index_geometry=None,
        index: bool = True,
        **options,
    ):
        """A `Dispatcher` writing this store's consumequeue/ and index/ with the layout's settings (it
        refuses the BatchCQ topics)."""
        from store.dispatch import Dispatcher

        layout = self.layout
        if layout.consume_queues_in_rocksdb:  # units would land as files inside the RocksDB directory
            from store.queue.consumequeue import RocksDBConsumeQueueError

            raise RocksDBConsumeQueueError(
                "consume queues are stored in RocksDB (storeType=defaultRocksDB); mqtool writes no message "
                "into such a store (its consume queue units would not reach RocksDB)",
                str(self.consumequeue_dir),
            )
        geometry = index_geometry or layout.configured_index_geometry or layout.index_geometry_on_disk
        return Dispatcher(
            self.consumequeue_dir,
            self.index_dir if index else None,
            cq_file_size=layout.cq_file_size(cq_file_size).value,
            index_geometry=geometry,
            scratch=options.pop("scratch", self.root),
            lmq=options.pop("lmq", layout.lmq),
            batch_cq_topics=self.batch_cq_topics,
            **options,
        )

    def write_checkpoint(self, **times: int | None):
        """Raise the checkpoint's times (never lower them), crash-safely; see `store.checkpoint`."""
        from store.checkpoint import write_checkpoint

        return write_checkpoint(self.root, **times)
