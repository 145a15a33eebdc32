"""A RocketMQ store root (`storePathRootDir`): where each part lives, opened read-only on demand.

`Store.open(path)` resolves the root (`--store`, else `$MQTOOL_STORE`, else `~/store` as the broker
defaults), checks that it looks like a store, and hands out the CommitLog, the ConsumeQueues, the
IndexService, the checkpoint and the config files. Nothing here writes.
"""

from __future__ import annotations

import os
import stat
from functools import cached_property
from pathlib import Path

from formats.errors import MqtoolError
from store.brokerconf import BrokerConfig
from store.liveness import Liveness, check_liveness

STORE_MARKERS = ("commitlog", "consumequeue", "index", "config", "checkpoint")


class NotAStoreError(MqtoolError):
    """The path given is missing or is not a RocketMQ store root."""


def resolve_store_root(path: Path | str | None) -> Path:
    if path is None:
        env = os.environ.get("MQTOOL_STORE")
        path = Path(env) if env else Path.home() / "store"
    return Path(path).expanduser()


class Store:
    """Read-only view of one store directory."""

    def __init__(self, root: Path, broker_config: BrokerConfig | None = None) -> None:
        self.root = root
        self.broker_config = broker_config or BrokerConfig()
        self._queues: dict[tuple[str, int], object] = {}

    @classmethod
    def open(cls, path: Path | str | None = None, broker_config: BrokerConfig | None = None) -> Store:
        root = resolve_store_root(path)
        if not root.exists():
            raise NotAStoreError("no such store directory (use --store or $MQTOOL_STORE)", str(root))
        if not root.is_dir():
            raise NotAStoreError("not a directory: a store root is a directory", str(root))
        try:
            present = {entry.name for entry in os.scandir(root)}
        except OSError as exc:
            raise NotAStoreError(f"cannot list the store directory: {exc.strerror}", str(root)) from exc
        if not present.intersection(STORE_MARKERS):
            raise NotAStoreError(
                "not a RocketMQ store: none of commitlog/, consumequeue/, index/, config/ or checkpoint here",
                str(root),
            )
        return cls(root, broker_config)

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for name in ("commitlog", "index_service"):
            part = self.__dict__.get(name)
            if part is not None:
                part.close()
        for queue in self._queues.values():
            queue.close()
        self._queues.clear()

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

    # --- parts ----------------------------------------------------------------------------------

    def liveness(self) -> Liveness:
        return check_liveness(self.root)

    @cached_property
    def commitlog(self):
        from store.commitlog import CommitLog

        return CommitLog(self.commitlog_dir)

    @cached_property
    def consume_queues(self):
        """`ConsumeQueueStore`: topics and queue ids under consumequeue/ (min offsets use the commitlog's)."""
        from store.consumequeue import ConsumeQueueStore

        size = self.broker_config.mappedFileSizeConsumeQueue
        explicit = "mappedFileSizeConsumeQueue" in self.broker_config.explicit
        return ConsumeQueueStore(
            self.root, commitlog_min_offset=self.commitlog.min_offset, file_size=size if explicit else None
        )

    def consume_queue(self, topic: str, queue_id: int):
        """The ConsumeQueue of (topic, queueId), opened once per store."""
        key = (topic, queue_id)
        if key not in self._queues:
            self._queues[key] = self.consume_queues.open(topic, queue_id)
        return self._queues[key]

    @cached_property
    def index_service(self):
        from store.index import IndexService

        cfg = self.broker_config
        slots = cfg.maxHashSlotNum if "maxHashSlotNum" in cfg.explicit else None
        num = cfg.maxIndexNum if "maxIndexNum" in cfg.explicit else None
        return IndexService(self.root, hash_slot_num=slots, index_num=num)

    def checkpoint(self):
        """The decoded StoreCheckpoint, or None when the file is missing."""
        from formats.checkpoint import decode_checkpoint
        from store.mappedfile import StoreFileError

        path = self.checkpoint_path
        if not path.exists():
            return None
        try:
            if not stat.S_ISREG(path.stat().st_mode):  # a FIFO would block, a device never end
                raise StoreFileError("cannot read: not a regular file", str(path))
            data = path.read_bytes()
        except OSError as exc:
            raise StoreFileError(f"cannot read: {exc.strerror}", str(path)) from exc
        return decode_checkpoint(data, file=str(path))

    def config(self, name: str):
        """`ConfigFile` for config/<name> (load() falls back to .bak as the broker does)."""
        from store.config import ConfigFile

        return ConfigFile(self.root, name)
