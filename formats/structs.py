"""Every binary layout of a RocketMQ broker store, declared once with construct.

This module is the single source of truth for byte layouts; each is cited with the upstream class that
writes it. Other modules in `formats` interpret these structs (CommitLog records, ConsumeQueue units,
IndexFile, StoreCheckpoint, timer files); their faster struct/numpy twins live beside them, registered
with the declaration they mirror (`formats.twins`) and property-tested against it.
All integers are big-endian and signed, as Java's ByteBuffer writes them.
"""

from __future__ import annotations

from construct import (
    Bytes,
    Const,
    GreedyBytes,
    Int8sb,
    Int16sb,
    Int32sb,
    Int64sb,
    Prefixed,
    Struct,
    Switch,
    this,
)

# --- CommitLog (MessageExtEncoder) ----------------------------------------------------------------

MAGIC_V1 = -626843481  # 0xDAA320A7
MAGIC_V2 = -626843477  # 0xDAA320AB, 5.1.0+: 2-byte topic length
BLANK_MAGIC = -875286124  # 0xCBD43194, end-of-file marker
MESSAGE_MAGICS = (MAGIC_V1, MAGIC_V2)

END_FILE_MIN_BLANK_LENGTH = 8

# MessageSysFlag bits (common/.../sysflag/MessageSysFlag.java)
COMPRESSED_FLAG = 0x001
MULTI_TAGS_FLAG = 0x002
TRANSACTION_TYPE_MASK = 0x00C
TRANSACTION_NOT_TYPE = 0x000
TRANSACTION_PREPARED_TYPE = 0x004
TRANSACTION_COMMIT_TYPE = 0x008
TRANSACTION_ROLLBACK_TYPE = 0x00C
BORNHOST_V6_FLAG = 0x010
STOREHOSTADDRESS_V6_FLAG = 0x020
NEED_UNWRAP_FLAG = 0x040
INNER_BATCH_FLAG = 0x080
COMPRESSION_TYPE_MASK = 0x700

SYSFLAG_NAMES = {
    COMPRESSED_FLAG: "COMPRESSED",
    MULTI_TAGS_FLAG: "MULTI_TAGS",
    BORNHOST_V6_FLAG: "BORNHOST_V6",
    STOREHOSTADDRESS_V6_FLAG: "STOREHOST_V6",
    NEED_UNWRAP_FLAG: "NEED_UNWRAP",
    INNER_BATCH_FLAG: "INNER_BATCH",
}
TRANSACTION_TYPE_NAMES = {
    TRANSACTION_NOT_TYPE: "NOT_TYPE",
    TRANSACTION_PREPARED_TYPE: "PREPARED",
    TRANSACTION_COMMIT_TYPE: "COMMIT",
    TRANSACTION_ROLLBACK_TYPE: "ROLLBACK",
}
COMPRESSION_TYPE_NAMES = {0: "zlib", 1: "lz4", 2: "zstd", 3: "zlib"}

# Host field: IPv4 (4 address bytes) or IPv6 (16) followed by an int32 port.
Host4 = Struct("address" / Bytes(4), "port" / Int32sb)
Host6 = Struct("address" / Bytes(16), "port" / Int32sb)

# A message record (`MessageExtEncoder.encode`, read by `CommitLog.checkMessageAndReturnSize`). Host widths
# follow SYSFLAG bits 0x10/0x20, the topic length width follows the magic code (V1: signed byte, V2: int16).
MessageRecord = Struct(
    "totalSize" / Int32sb,
    "magicCode" / Int32sb,
    "bodyCRC" / Int32sb,
    "queueId" / Int32sb,
    "flag" / Int32sb,
    "queueOffset" / Int64sb,
    "physicalOffset" / Int64sb,
    "sysFlag" / Int32sb,
    "bornTimestamp" / Int64sb,
    "bornHost" / Switch(this.sysFlag & BORNHOST_V6_FLAG, {BORNHOST_V6_FLAG: Host6}, default=Host4),
    "storeTimestamp" / Int64sb,
    "storeHost"
    / Switch(this.sysFlag & STOREHOSTADDRESS_V6_FLAG, {STOREHOSTADDRESS_V6_FLAG: Host6}, default=Host4),
    "reconsumeTimes" / Int32sb,
    "preparedTransactionOffset" / Int64sb,
    "body" / Prefixed(Int32sb, GreedyBytes),
    "topic" / Prefixed(Switch(this.magicCode, {MAGIC_V2: Int16sb}, default=Int8sb), GreedyBytes),
    "properties" / Prefixed(Int16sb, GreedyBytes),
)

# The 8-byte end-of-file marker; the rest of the file after it is left as it was (zeros).
BlankRecord = Struct(
    "totalSize" / Int32sb,
    "magicCode" / Const(BLANK_MAGIC, Int32sb),
)

# The first 8 bytes every record starts with: enough to classify it.
RecordPrelude = Struct(
    "totalSize" / Int32sb,
    "magicCode" / Int32sb,
)

# --- ConsumeQueue (ConsumeQueue.putMessagePositionInfo) -------------------------------------------

CQ_STORE_UNIT_SIZE = 20

ConsumeQueueUnit = Struct(
    "phyOffset" / Int64sb,
    "size" / Int32sb,
    "tagsCode" / Int64sb,
)

# BatchConsumeQueue unit (`BatchConsumeQueue.putBatchMessagePositionInfo`): the unit of a BatchCQ topic's
# `batchconsumequeue/<topic>/<queueId>/` files, one per commitlog record; an inner-batch record covers
# queue offsets [msgBaseOffset, msgBaseOffset + batchSize).
BCQ_STORE_UNIT_SIZE = 46

BatchConsumeQueueUnit = Struct(
    "phyOffset" / Int64sb,
    "size" / Int32sb,
    "tagsCode" / Int64sb,
    "storeTime" / Int64sb,
    "msgBaseOffset" / Int64sb,
    "batchSize" / Int16sb,
    "compactedOffset" / Int32sb,
    "reserved" / Int32sb,
)

# One message of a batch body (`MessageDecoder.encodeMessage`, the client's batch encoding): the body of an
# inner-batch record is these back to back. The magic code and body CRC are written as 0 by the client.
InnerBatchMessage = Struct(
    "totalSize" / Int32sb,
    "magicCode" / Int32sb,
    "bodyCRC" / Int32sb,
    "flag" / Int32sb,
    "bodyLength" / Int32sb,
    "body" / Bytes(this.bodyLength),
    "propertiesLength" / Int16sb,
    "properties" / Bytes(this.propertiesLength),
)

# ConsumeQueueExt unit (`ConsumeQueueExt.CqExtUnit.write`).
ConsumeQueueExtUnit = Struct(
    "size" / Int16sb,
    "tagsCode" / Int64sb,
    "msgStoreTime" / Int64sb,
    "bitMapSize" / Int16sb,
    "filterBitMap" / Bytes(this.bitMapSize),
)
CQ_EXT_MIN_UNIT_SIZE = 20
CQ_EXT_END_MARKER = -1

# --- IndexFile (IndexHeader, IndexFile.putKey) ----------------------------------------------------

INDEX_HEADER_SIZE = 40
INDEX_SLOT_SIZE = 4
INDEX_ENTRY_SIZE = 20

IndexHeader = Struct(
    "beginTimestamp" / Int64sb,
    "endTimestamp" / Int64sb,
    "beginPhyOffset" / Int64sb,
    "endPhyOffset" / Int64sb,
    "hashSlotCount" / Int32sb,
    "indexCount" / Int32sb,
)

IndexSlot = Int32sb

IndexEntry = Struct(
    "keyHash" / Int32sb,
    "phyOffset" / Int64sb,
    "timeDiff" / Int32sb,
    "prevIndex" / Int32sb,
)

# --- StoreCheckpoint (StoreCheckpoint.flush) ------------------------------------------------------

CHECKPOINT_FILE_SIZE = 4096

StoreCheckpoint = Struct(
    "physicMsgTimestamp" / Int64sb,
    "logicsMsgTimestamp" / Int64sb,
    "indexMsgTimestamp" / Int64sb,
    "masterFlushedOffset" / Int64sb,  # 5.x
    "confirmPhyOffset" / Int64sb,  # 5.x
    "rest" / Bytes(CHECKPOINT_FILE_SIZE - 40),
)

# --- Timer wheel (5.x: TimerWheel, TimerLog, TimerCheckpoint) -------------------------------------

TIMER_LOG_UNIT_SIZE = 52
TIMER_WHEEL_SLOT_SIZE = 32

TimerWheelSlot = Struct(
    "timeSecs" / Int64sb,
    "firstPos" / Int64sb,
    "lastPos" / Int64sb,
    "num" / Int32sb,
    "magic" / Int32sb,
)

TimerLogUnit = Struct(
    "size" / Int32sb,
    "prevPos" / Int64sb,
    "magic" / Int32sb,
    "currWriteTimeMs" / Int64sb,
    "delayedTime" / Int32sb,
    "offsetPy" / Int64sb,
    "sizePy" / Int32sb,
    "hashCodeOfRealTopic" / Int32sb,
    "reserved" / Int64sb,
)

TimerCheckpoint = Struct(
    "lastReadTimeMs" / Int64sb,
    "lastTimerLogFlushPos" / Int64sb,
    "lastTimerQueueOffset" / Int64sb,
    "masterTimerQueueOffset" / Int64sb,
    "dataVersionStateVersion" / Int64sb,
    "dataVersionTimestamp" / Int64sb,
    "dataVersionCounter" / Int64sb,
)

# --- DLedger commitlog (openmessaging/dledger 0.3.1.2, a broker with enableDLegerCommitLog) ---------------
# Byte layouts only; their meaning (pad, magic, the message at +48) is in formats/dledger.py, the facts with
# file:line references in tests/oracle/DLEDGER.md
# (D: = dledger/src/main/java/io/openmessaging/storage/dledger/).

DLEDGER_ENTRY_HEADER_SIZE = 48  # DLedgerEntry.BODY_OFFSET: the body (one message record) starts here

# One entry of a data file (`DLedgerEntryCoder.encode`, D:entry/DLedgerEntryCoder.java:23-38).
DLedgerEntryHeader = Struct(
    "magic" / Int32sb,
    "size" / Int32sb,  # the whole entry: 48 + bodySize
    "index" / Int64sb,
    "term" / Int64sb,
    "pos" / Int64sb,  # the entry's own absolute data offset
    "channel" / Int32sb,
    "chainCrc" / Int32sb,
    "bodyCrc" / Int32sb,
    "bodySize" / Int32sb,
)

# The end of a data file (`MmapFileList.preAppend`, D:store/file/MmapFileList.java:188-226): magic -1,
# then the bytes from here to the file end (this pad included); zeros follow.
DLedgerPad = Struct(
    "magic" / Const(-1, Int32sb),
    "remaining" / Int32sb,
)

DLEDGER_INDEX_UNIT_SIZE = 32

# Entry i's unit at i * 32 of the index files (`DLedgerEntryCoder.encodeIndex`,
# D:entry/DLedgerEntryCoder.java:40-48).
DLedgerIndexUnit = Struct(
    "magic" / Int32sb,
    "pos" / Int64sb,
    "size" / Int32sb,
    "index" / Int64sb,
    "term" / Int64sb,
)

__all__ = [name for name in globals() if not name.startswith("_")]
