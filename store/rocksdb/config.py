"""Consumer offsets, topics and groups a RocksDB-mode broker keeps in RocksDB instead of the JSON files.

Which files a 5.3.3 broker loads (`BrokerController`'s constructor): `configManagerVersion=v2` -> the v2
managers over `config/rdb` (`ConfigStorage`, 5.3.2+); else `storeType=defaultRocksDB` -> the v1 managers
(`RocksDBConsumerOffsetManager`, `RocksDBTopicConfigManager`, `RocksDBSubscriptionGroupManager`) over
`config/consumerOffsets`, `config/topics`, `config/subscriptionGroups`; else the JSON files. Without a
broker.conf saying so, the store's files tell: a RocksDB consume queue directory or v1 config directories.

A v1 manager's `load()` reads its RocksDB table, then `merge()`: when `<name>.json` exists and its
dataVersion counter is ahead of the KV data version, the JSON is loaded instead (and written into RocksDB).
So `RocksDBConfigFile.load()` answers what the broker will hold: the RocksDB table (source "rocksdb", with a
note that the JSON is stale) or the JSON ahead of it (source "file"). Its `save()` is how an offline write
reaches such a broker: consumerOffset.json with a data version ahead of the KV one, which the next start
imports (proven with the oracle's `rocksdb-read`). The v2 managers never read the JSON: `load()` answers
from config/rdb (`TopicConfigManagerV2`, `SubscriptionGroupManagerV2`, `ConsumerOffsetManagerV2`; LMQ offsets
included, which that manager keeps only there), nothing offline is loaded, so writes are refused in one line.
Neither kind of manager reads lmqConsumerOffset.json (`store.queue.lmq.offset_file_name`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from formats import rocksdb as layout
from formats.config import fastjson
from formats.config.base import DataVersion
from formats.config.codec import build_config
from formats.config.metadata import SubscriptionGroupTable, TopicConfigTable
from formats.config.offsets import ConsumerOffsetTable
from formats.errors import MqtoolError
from store.config.configfile import CONFIG_DIR, ConfigFile, LoadedConfig, read_config_text
from store.queue.consumequeue import is_rocksdb_dir
from store.rocksdb.db import ReadOnlyRocksDB

V1_FAMILIES = ("default", layout.KV_DATA_VERSION_COLUMN_FAMILY, layout.FORBIDDEN_COLUMN_FAMILY)
V2_FAMILIES = ("default",)
TABLE_KEYS = {  # config file -> (its table's JSON name, how one RocksDB value becomes a table entry)
    "consumerOffset.json": "offsetTable",
    "topics.json": "topicConfigTable",
    "subscriptionGroup.json": "subscriptionGroupTable",
}
MODELS = {
    "consumerOffset.json": ConsumerOffsetTable,
    "topics.json": TopicConfigTable,
    "subscriptionGroup.json": SubscriptionGroupTable,
}
V2_TABLES = {  # config file -> its table in config/rdb (TableId)
    "consumerOffset.json": layout.TABLE_CONSUMER_OFFSET,
    "topics.json": layout.TABLE_TOPIC,
    "subscriptionGroup.json": layout.TABLE_SUBSCRIPTION_GROUP,
}
NAME_FIELDS = {"topics.json": "topicName", "subscriptionGroup.json": "groupName"}  # the managers' table keys
ONLINE_WRITES = {  # what changes the table on the running broker instead
    "consumerOffset.json": "mqadmin resetOffsetByTime",
    "topics.json": "mqadmin updateTopic / deleteTopic",
    "subscriptionGroup.json": "mqadmin updateSubGroup / deleteSubGroup",
}
ONLINE_RESET = ONLINE_WRITES["consumerOffset.json"]


class RocksDBConfigWriteError(MqtoolError):
    """An offline write the broker would never load (config manager v2, or no JSON import for this file)."""


def config_backend(root: Path, broker_config: Any, cq_in_rocksdb: bool) -> str:
    """ "json", "rocksdb" (v1 managers) or "rdb" (v2, config/rdb), as the broker picks its managers."""
    explicit = broker_config.explicit
    if "configManagerVersion" in explicit and str(broker_config.configManagerVersion).lower() == "v2":
        return "rdb"
    if "storeType" in explicit:
        return "rocksdb" if str(broker_config.storeType).lower() == "defaultrocksdb" else "json"
    config = root / CONFIG_DIR
    v1 = any(is_rocksdb_dir(config / d) for d in layout.CONFIG_V1_DIRS.values())
    if not v1 and is_rocksdb_dir(config / layout.CONFIG_V2_DIR):
        return "rdb"  # a v1 manager creates its directory at the first start; only v2 writes config/rdb
    return "rocksdb" if v1 or cq_in_rocksdb else "json"


@dataclass
class KVTable:
    """One v1 RocksDB config table: name -> parsed fastjson value, and its KV data version."""

    entries: dict[str, Any]
    data_version: Any  # the parsed DataVersion JSON, None when absent
    path: Path
    exists: bool


def read_v1_table(directory: Path) -> KVTable:
    """`RocksDBConfigManager.loadData` + `loadDataVersion` of one v1 directory (empty when it is missing,
    as a broker creating it would start)."""
    try:
        missing = not directory.exists()
    except OSError as exc:
        raise MqtoolError(f"cannot read: {exc.strerror or exc}", str(directory)) from exc
    if missing:
        return KVTable({}, None, directory, False)
    where = str(directory)
    entries: dict[str, Any] = {}
    with ReadOnlyRocksDB(directory, V1_FAMILIES) as db:
        for key, value in db.items("default"):
            name = key.decode("utf-8", "replace")
            entries[name] = _parse_json(value, f"{where} key {name!r}")
        raw = db.get(layout.KV_DATA_VERSION_COLUMN_FAMILY, layout.KV_DATA_VERSION_KEY)
    version = None
    if raw:
        version = _parse_json(raw, f"{where} kvDataVersion")
    return KVTable(entries, version, directory, True)


def _parse_json(value: bytes, where: str) -> Any:
    text = value.decode("utf-8", "replace")
    try:
        return fastjson.parse(text, file=where)
    except MqtoolError as exc:
        raise MqtoolError(f"value is not the broker's JSON ({exc.message})", where) from None


def v1_model(name: str, table: KVTable) -> Any:
    """The file model (formats.config.codec) the v1 manager holds after loading `table`."""
    if name == "consumerOffset.json":
        value = {k: _wrapper_table(v, table.path, k) for k, v in table.entries.items()}
    else:
        value = dict(table.entries)
    obj: dict[str, Any] = {TABLE_KEYS[name]: value}
    if table.data_version is not None:
        obj["dataVersion"] = table.data_version
    text = fastjson.dumps(obj, pretty=False)
    return build_config(MODELS[name], obj, text, {}, str(table.path))


def _wrapper_table(value: Any, path: Path, key: str) -> Any:
    """`RocksDBOffsetSerializeWrapper.offsetTable`."""
    if not isinstance(value, dict) or not isinstance(value.get("offsetTable"), dict):
        raise MqtoolError(f"key {key!r}: not a RocksDBOffsetSerializeWrapper (no offsetTable)", str(path))
    return value["offsetTable"]


def kv_counter(table: KVTable) -> int:
    """The KV data version's counter (a fresh `DataVersion`'s 0 when absent)."""
    if table.data_version is None:
        return 0
    return DataVersion.from_json(table.data_version).counter


V2Version = tuple[int, int, int] | None  # (stateVersion, timestamp, counter)


def read_v2_offsets(directory: Path) -> tuple[dict[str, dict[int, int]], V2Version]:
    """`ConsumerOffsetManagerV2.load`: "topic@group" -> {queueId: offset}, and the table's data version. LMQ
    offsets are included: the manager leaves them out of its table but answers `queryOffset` from here."""
    where = str(directory)
    table: dict[str, dict[int, int]] = {}
    with ReadOnlyRocksDB(directory, V2_FAMILIES) as db:
        prefix = layout.v2_table_prefix(layout.TABLE_CONSUMER_OFFSET, layout.RECORD_PREFIX_DATA)
        for key, value in db.items("default", prefix):
            group, topic, queue_id, offset = layout.parse_v2_consumer_offset(key, value, where)
            table.setdefault(f"{topic}@{group}", {})[queue_id] = offset
        version = _v2_version(db, layout.TABLE_CONSUMER_OFFSET, where)
    return table, version


def read_v2_beans(directory: Path, name: str) -> tuple[dict[str, Any], V2Version]:
    """`TopicConfigManagerV2.load` / `SubscriptionGroupManagerV2.load` (name "topics.json" or
    "subscriptionGroup.json"): name -> the bean's JSON object, keyed by its own topicName / groupName as
    `putTopicConfig` keys it; records of another serialization type are skipped as the managers skip them."""
    where = str(directory)
    table_id = V2_TABLES[name]
    beans: dict[str, Any] = {}
    with ReadOnlyRocksDB(directory, V2_FAMILIES) as db:
        for key, value in db.items("default", layout.v2_table_prefix(table_id, layout.RECORD_PREFIX_DATA)):
            record, payload = layout.parse_v2_named_record(key, value, where)
            if payload is None:
                continue
            bean = _parse_json(payload, f"{where} key {record!r}")
            if not isinstance(bean, dict):
                raise MqtoolError(f"key {record!r}: value is not a JSON object", where)
            own = bean.get(NAME_FIELDS[name])
            beans[own if isinstance(own, str) else record] = bean
        version = _v2_version(db, table_id, where)
    return beans, version


def _v2_version(db: ReadOnlyRocksDB, table_id: int, where: str) -> V2Version:
    raw = db.get("default", layout.v2_data_version_key(table_id))
    return None if raw is None else layout.parse_v2_data_version(raw, where)


def v2_model(name: str, directory: Path) -> Any:
    """The file model (formats.config.codec) the v2 manager of `name` holds after loading config/rdb."""
    table, version = (
        read_v2_offsets(directory) if name == "consumerOffset.json" else read_v2_beans(directory, name)
    )
    obj: dict[str, Any] = {TABLE_KEYS[name]: table}
    if version is not None:
        state, timestamp, counter = version
        obj["dataVersion"] = {"counter": counter, "stateVersion": state, "timestamp": timestamp}
    return build_config(MODELS[name], obj, fastjson.dumps(obj, pretty=False), {}, str(directory))


class RocksDBConfigFile(ConfigFile):
    """consumerOffset.json / topics.json / subscriptionGroup.json of a broker whose managers use RocksDB."""

    def __init__(self, root: Path, name: str, backend: str) -> None:
        super().__init__(root, name)
        self.root = Path(root)
        self.backend = backend
        if backend == "rdb":
            self.kv_path = self.root / CONFIG_DIR / layout.CONFIG_V2_DIR
        else:
            self.kv_path = self.root / CONFIG_DIR / layout.CONFIG_V1_DIRS[name]

    def load(self) -> LoadedConfig:
        if self.backend == "rdb":
            return self._load_v2()
        table = read_v1_table(self.kv_path)
        counter = kv_counter(table)
        rel = f"{CONFIG_DIR}/{self.kv_path.name}"
        json_counter = self._json_counter()
        if json_counter is not None and json_counter > counter:
            loaded = super().load()
            loaded.reason = (
                f"{self.name}'s dataVersion counter {json_counter} is ahead of RocksDB {rel}'s {counter}: "
                "the broker imports it at start (merge)"
            )
            return loaded
        model = v1_model(self.name, table)
        if json_counter is None:
            stale = f"no {self.name}"
        else:
            stale = f"{self.name} is stale (dataVersion counter {json_counter}, RocksDB's {counter})"
        state = "" if table.exists else " (missing: the broker starts with an empty table)"
        reason = f"read from RocksDB {rel}{state}, as the broker's RocksDB config manager does; {stale}"
        return LoadedConfig(self.name, model, "rocksdb", self.kv_path, reason, True)

    def _json_counter(self) -> int | None:
        """`loadDataVersion` in merge(): the main file's counter only (None when it is missing)."""
        text, _ = read_config_text(self.path)
        if text is None:
            return None
        try:
            value = fastjson.parse(text, file=str(self.path)) if text.strip() else None
        except MqtoolError:
            return 0
        if not isinstance(value, dict) or not isinstance(value.get("dataVersion"), dict):
            return 0
        return DataVersion.from_json(value["dataVersion"]).counter

    def _load_v2(self) -> LoadedConfig:
        rel = f"{CONFIG_DIR}/{layout.CONFIG_V2_DIR}"
        model = v2_model(self.name, self.kv_path)
        reason = (
            f"read from RocksDB {rel} (configManagerVersion=v2); {self.name} is not read by such a broker"
        )
        if self.name == "consumerOffset.json":
            reason += "; LMQ offsets as its queryOffset reads them there (they never enter its table)"
        else:  # TopicConfigManager.init / SubscriptionGroupManager.init
            reason += (
                "; the built-in system entries the broker creates in memory at start are not stored there"
            )
        return LoadedConfig(self.name, model, "rocksdb", self.kv_path, reason, True)

    def save(self, model: Any, pretty: bool | None = None) -> str:
        """Write the JSON the broker re-imports at start (v1 consumer offsets only); refuse anything else."""
        if self.backend == "rdb":
            raise RocksDBConfigWriteError(
                f"a RocketMQ 5.3.x broker with configManagerVersion=v2 never loads an offline change of "
                f"{CONFIG_DIR}/{layout.CONFIG_V2_DIR} ({self.name}'s table): use "
                f"{ONLINE_WRITES[self.name]} on the running broker",
                str(self.kv_path),
            )
        if self.name != "consumerOffset.json":
            raise RocksDBConfigWriteError(
                f"the broker keeps {self.name}'s table in RocksDB; mqtool writes only consumer offsets there",
                str(self.kv_path),
            )
        counter = kv_counter(read_v1_table(self.kv_path))
        version = model.data_version
        if version is None or version.counter <= counter:
            # merge() imports the JSON only when its counter is ahead of the KV data version
            base = version or DataVersion(0, 0, 0)
            model.data_version = DataVersion(counter + 1, base.timestamp, base.state_version or 0)
            model.with_group_topic_map = True
        return super().save(model, True if pretty is None else pretty)


def rocksdb_config_file(
    root: Path, name: str, broker_config: Any, cq_in_rocksdb: bool
) -> RocksDBConfigFile | None:
    """The RocksDB-aware stand-in for `config/<name>` when the broker keeps that table in RocksDB."""
    if name not in TABLE_KEYS:
        return None
    backend = config_backend(root, broker_config, cq_in_rocksdb)
    if backend == "json":
        return None
    return RocksDBConfigFile(root, name, backend)


__all__ = [
    "RocksDBConfigFile",
    "RocksDBConfigWriteError",
    "config_backend",
    "read_v1_table",
    "read_v2_beans",
    "read_v2_offsets",
    "v2_model",
    "rocksdb_config_file",
]
