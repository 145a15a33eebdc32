"""broker.conf: the Java properties file a broker is started with (`-c broker.conf`).

mqtool reads the few settings that change how store files must be read or written: file sizes,
index geometry, delay levels, the store path. Missing keys take the broker's defaults.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from formats.compaction import DEFAULT_COMPACTION_CQ_SETTING, DEFAULT_COMPACTION_LOG_SETTING
from formats.consumequeue import DEFAULT_CQ_FILE_SIZE
from formats.errors import MqtoolError
from formats.indexfile import DEFAULT_HASH_SLOT_NUM, DEFAULT_INDEX_NUM, oversized_index
from formats.java.props import parse_properties
from formats.message.commitlog import DEFAULT_COMMITLOG_FILE_SIZE, DEFAULT_MESSAGE_DELAY_LEVEL, java_parse_int
from formats.structs import CQ_STORE_UNIT_SIZE
from formats.timer import (
    DEFAULT_TIMER_LOG_FILE_SIZE,
    DEFAULT_TIMER_PRECISION_MS,
    DEFAULT_TIMER_ROLL_WINDOW_SLOT,
)
from store.io.filereads import read_file

_UNIT_MS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
# Sizes and counts the store's layout is computed from: zero or less is not a layout.
POSITIVE = frozenset(
    {
        "mappedFileSizeCommitLog",
        "mappedFileSizeConsumeQueue",
        "maxHashSlotNum",
        "maxIndexNum",
        "mappedFileSizeTimerLog",
        "mapperFileSizeBatchConsumeQueue",
        "compactionMappedFileSize",
        "compactionCqMappedFileSize",
    }
)
TIMER_PRECISIONS_MS = (100, 200, 500, 1000)  # MessageStoreConfig.setTimerPrecisionMs rounds down to one
_INTEGER = re.compile(r"[+-]?[0-9]+")


@dataclass
class BrokerConfig:
    """Store-relevant broker settings, with the 5.3.3 defaults (MessageStoreConfig)."""

    mappedFileSizeCommitLog: int = DEFAULT_COMMITLOG_FILE_SIZE
    mappedFileSizeConsumeQueue: int = DEFAULT_CQ_FILE_SIZE
    maxHashSlotNum: int = DEFAULT_HASH_SLOT_NUM
    maxIndexNum: int = DEFAULT_INDEX_NUM
    messageDelayLevel: str = DEFAULT_MESSAGE_DELAY_LEVEL
    storePathRootDir: str | None = None
    transactionCheckMax: int = 15
    # POP (BrokerConfig): the revive topic is rmq_sys_REVIVE_LOG_<brokerClusterName>; acks without a broker
    # name pair under brokerName (its default is the host name: None here, unknown offline)
    brokerName: str | None = None
    brokerClusterName: str = "DefaultCluster"
    # place in the broker group: BrokerConfig.brokerId (MixAll.MASTER_ID = 0), MessageStoreConfig.brokerRole
    brokerId: int = 0
    brokerRole: str = "ASYNC_MASTER"
    enableRetryTopicV2: bool = False
    enabledAppendPropCRC: bool = False
    # LMQ multi-dispatch (MessageStoreConfig): INNER_MULTI_DISPATCH records also go to %LMQ% queues
    enableLmq: bool = False
    enableMultiDispatch: bool = False
    # the 5.x timer wheel (TimerMessageStore)
    timerWheelEnable: bool = True
    timerPrecisionMs: int = DEFAULT_TIMER_PRECISION_MS
    timerRollWindowSlot: int = DEFAULT_TIMER_ROLL_WINDOW_SLOT
    mappedFileSizeTimerLog: int = DEFAULT_TIMER_LOG_FILE_SIZE
    mapperFileSizeBatchConsumeQueue: int = 300_000 * 46  # BatchCQ topics' files (46-byte units)
    # compaction topics (MessageStoreConfig.java:67): on, the broker serves them from compaction/
    enableCompaction: bool = True
    compactionMappedFileSize: int = DEFAULT_COMPACTION_LOG_SETTING
    compactionCqMappedFileSize: int = DEFAULT_COMPACTION_CQ_SETTING
    # RocksDB mode (MessageStoreConfig.storeType "default" / "defaultRocksDB"; BrokerConfig's "v1" / "v2")
    storeType: str = "default"
    configManagerVersion: str = "v1"
    # layouts beside the classic one (store.kind names them; writes refuse on those mqtool cannot follow)
    storePathCommitLog: str | None = None  # ";" separates several paths (MultiPathMappedFileQueue)
    readOnlyCommitLogStorePaths: str | None = None
    enableDLegerCommitLog: bool = False
    storePathDLedgerCommitLog: str | None = None
    dLegerGroup: str | None = None
    dLegerPeers: str | None = None
    dLegerSelfId: str | None = None
    enableControllerMode: bool = False
    popConsumerKVServiceInit: bool = False  # the KV POP service's RocksDB store (BrokerConfig.java:243)
    messageStorePlugIn: str = ""
    # the tiered store plugin (5.3.3 tieredstore MessageStoreConfig): where its tree is, and its providers
    tieredStoreFilePath: str = ""
    tieredBackendServiceProvider: str = "org.apache.rocketmq.tieredstore.provider.MemoryFileSegment"
    tieredMetadataServiceProvider: str = "org.apache.rocketmq.tieredstore.metadata.DefaultMetadataStore"
    tieredStorageLevel: str = "NOT_IN_DISK"  # a name or 0-3 (store.tiered.settings.storage_level)
    tieredStoreIndexFileMaxHashSlotNum: int = 5_000_000  # how the plugin reads its compacted index files
    explicit: frozenset[str] = frozenset()
    source: str | None = None  # the broker.conf read, for error messages

    def delay_level_table(self) -> dict[int, int]:
        """Level (1-based) -> delay in ms, parsed like ScheduleMessageService.parseDelayLevel."""
        return parse_delay_levels(self.messageDelayLevel)


def parse_delay_levels(text: str) -> dict[int, int]:
    table: dict[int, int] = {}
    for level, item in enumerate(text.split(), start=1):
        unit = item[-1:]
        if unit not in _UNIT_MS or not item[:-1].isdecimal():  # isdigit() takes "²", which int() refuses
            raise MqtoolError(f"bad messageDelayLevel entry {item!r} (expected e.g. 10s, 5m, 2h, 1d)")
        table[level] = int(item[:-1]) * _UNIT_MS[unit]
        if table[level] >= 2**63:  # the broker's Long.parseLong(n) * unit
            raise MqtoolError(f"messageDelayLevel entry {item!r} overflows Java long (int64) milliseconds")
    return table


BROKER_CONF_MAX_READ = 1 << 24  # a properties file of a few hundred keys; anything larger is not one


def load_broker_config(path: Path | str | None) -> BrokerConfig:
    if path is None:
        return BrokerConfig()
    path = Path(path)
    try:
        text = read_file(path, BROKER_CONF_MAX_READ, "broker config").decode("utf-8", errors="replace")
    except FileNotFoundError as exc:
        raise MqtoolError(f"cannot read broker config: {exc.strerror}", str(path)) from exc
    props = parse_properties(text)
    config = BrokerConfig()
    explicit = set()
    for name, default in vars(BrokerConfig()).items():
        if name in ("explicit", "source") or name not in props:
            continue
        value = props[name]
        if isinstance(default, bool):
            converted: object = value.lower() == "true"
        elif isinstance(default, int):
            # Java int fields, which the broker reads with Integer.parseInt: refuse what it cannot parse
            converted = java_parse_int(value)
            if converted is None:
                why = "overflows Java int (int32)" if _INTEGER.fullmatch(value) else "is not a number"
                raise MqtoolError(f"{name}={value!r} {why}", str(path))
            if name in POSITIVE and converted <= 0:
                raise MqtoolError(f"{name}={value!r} must be positive", str(path))
            if name == "mappedFileSizeConsumeQueue":  # getMappedFileSizeConsumeQueue: up to whole units
                converted = -(-converted // CQ_STORE_UNIT_SIZE) * CQ_STORE_UNIT_SIZE
                if converted >= 2**31:
                    raise MqtoolError(
                        f"{name}={value!r} rounds up to {converted} (whole 20-byte units), past a Java int",
                        str(path),
                    )
            if name == "timerPrecisionMs":  # the setter keeps the largest candidate not above the value
                converted = max(
                    [p for p in TIMER_PRECISIONS_MS if p <= converted] or [TIMER_PRECISIONS_MS[0]]
                )
        else:
            converted = value
        setattr(config, name, converted)
        explicit.add(name)
    config.explicit = frozenset(explicit)
    config.source = str(path)
    oversized = oversized_index(config.maxHashSlotNum, config.maxIndexNum)
    if oversized:
        raise MqtoolError(oversized, str(path))
    try:
        config.delay_level_table()  # validate early
    except MqtoolError as exc:
        raise MqtoolError(exc.message, str(path)) from exc
    return config
