"""Compaction topics (RIP-30): names, cleanup policy, file sizes, offset-map key, position-checkpoint.

A topic whose `cleanup.policy` attribute is `COMPACTION` is served to consumers from `compaction/` (5.3.3
store/.../DefaultMessageStore.java:804-809), not from its ConsumeQueue. What lives there is made of formats
declared elsewhere: a compaction log file holds commitlog records (`formats.message.commitlog`: copied with
the PHYSICALOFFSET field rewritten to the record's place in the compaction log, CompactionLog.java:866-873,
and a BLANK record where a file ends, :857-862) and a compaction CQ file holds 46-byte BatchConsumeQueue
units of batch size 1 (`formats.batchconsumequeue`; SparseConsumeQueue extends BatchConsumeQueue), with an
end unit (phyOffset -1, size 0, `SparseConsumeQueue.putEndPositionInfo`, SparseConsumeQueue.java:252-280)
where a file was closed early. New here: the directory names, the attribute, the file-size rule, the MD5 key
of the compaction's offset map and the position-checkpoint (`CompactionPositionMgr`, a ConfigManager JSON).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from formats.errors import FormatError

# CompactionStore.java:48-50, CompactionPositionMgr.java:27, CompactionLog.java:76-77
COMPACTION_DIR = "compaction"
COMPACTION_LOG_DIR = "compactionLog"
COMPACTION_CQ_DIR = "compactionCq"
POSITION_CHECKPOINT = "position-checkpoint"
COMPACTING_SUB_FOLDER = "compacting"
REPLICATING_SUB_FOLDER = "replicating"
DELETE_SUFFIX = ".delete"  # DefaultMappedFile.renameToDelete, before a replaced file is destroyed

# TopicAttributes.CLEANUP_POLICY_ATTRIBUTE: enum DELETE | COMPACTION, default DELETE
CLEANUP_POLICY_ATTRIBUTE = "cleanup.policy"
CLEANUP_POLICIES = ("DELETE", "COMPACTION")

# MessageStoreConfig.java:56 and :59: compactionMappedFileSize, compactionCqMappedFileSize
DEFAULT_COMPACTION_LOG_SETTING = 100 * 1024 * 1024
DEFAULT_COMPACTION_CQ_SETTING = 10 * 1024 * 1024


def cleanup_policy(attributes: dict[str, str] | None) -> str:
    """`CleanupPolicyUtils.getDeletePolicy`: the attribute's value, or DELETE when absent. The broker's
    `CleanupPolicy.valueOf` throws on anything but the two exact names: FormatError here."""
    value = (attributes or {}).get(CLEANUP_POLICY_ATTRIBUTE, "DELETE")
    if value not in CLEANUP_POLICIES:
        raise FormatError(
            f"topic attribute {CLEANUP_POLICY_ATTRIBUTE}={value!r} is neither DELETE nor COMPACTION"
        )
    return value


def is_compaction_topic(attributes: dict[str, str] | None) -> bool:
    """`CleanupPolicyUtils.isCompaction`; a value the broker cannot parse counts as not COMPACTION here
    (callers that must decide call `cleanup_policy` and report the error)."""
    try:
        return cleanup_policy(attributes) == "COMPACTION"
    except FormatError:
        return False


def compaction_cq_file_size(setting: int = DEFAULT_COMPACTION_CQ_SETTING) -> int:
    """CompactionLog.java:106-108: compactionCqMappedFileSize rounded down to whole 46-byte units."""
    from formats.structs import BCQ_STORE_UNIT_SIZE

    return setting // BCQ_STORE_UNIT_SIZE * BCQ_STORE_UNIT_SIZE


def compaction_log_file_size(cq_file_size: int, setting: int = DEFAULT_COMPACTION_LOG_SETTING) -> int:
    """`CompactionLog.getCompactionLogSize` (CompactionLog.java:127-138): a whole number of CQ file sizes,
    at least five, so that log and CQ files can share names."""
    n, m = divmod(setting, cq_file_size)
    if n < 5:
        return cq_file_size * 5
    return n * cq_file_size if 0 < m < cq_file_size >> 1 else (n + 1) * cq_file_size


def offset_map_key(keys: str) -> bytes:
    """The key the compaction's OffsetMap stores for a record: MD5 of the whole KEYS property, UTF-8
    (`OffsetMap.hashInto`, CompactionLog.java:972-975; the map is filled with `msg.getKeys()`, :655, so
    "a b" is one key of its own, not two)."""
    return hashlib.md5(keys.encode("utf-8", "surrogatepass")).digest()


def is_end_unit(phy_offset: int, size: int, base_offset: int, batch_size: int) -> bool:
    """The unit `putEndPositionInfo` writes where a CQ file is closed (phyOffset -1, all else 0)."""
    return phy_offset == -1 and size == 0 and base_offset == 0 and batch_size == 0


@dataclass(frozen=True)
class PositionCheckpoint:
    """`CompactionPositionMgr`: per "<topic>_<queueId>", the queue offset the last compaction reached
    (`getOffset` answers -1 for a queue never compacted)."""

    queue_offset_map: dict[str, int]

    def offset(self, topic: str, queue_id: int) -> int:
        return self.queue_offset_map.get(f"{topic}_{queue_id}", -1)


def decode_position_checkpoint(text: str, file: str | None = None) -> PositionCheckpoint:
    """The checkpoint's JSON as `RemotingSerializable.fromJson` reads it: `queueOffsetMap` of longs (other
    keys, such as the `empty` the getter `isEmpty` adds on writing, are ignored)."""
    from formats.config.fastjson import parse

    value = parse(text, file=file)
    if value is None:
        return PositionCheckpoint({})
    if not isinstance(value, dict):
        raise FormatError("position-checkpoint is not a JSON object", file)
    table = value.get("queueOffsetMap") or {}
    if not isinstance(table, dict):
        raise FormatError("position-checkpoint's queueOffsetMap is not an object", file)
    out: dict[str, int] = {}
    for key, offset in table.items():
        if isinstance(offset, bool) or not isinstance(offset, int) or not -(2**63) <= offset < 2**63:
            raise FormatError(f"position-checkpoint's offset of {key!r} is not a long: {offset!r}", file)
        out[str(key)] = offset
    return PositionCheckpoint(out)


__all__ = [
    "CLEANUP_POLICIES",
    "CLEANUP_POLICY_ATTRIBUTE",
    "COMPACTING_SUB_FOLDER",
    "COMPACTION_CQ_DIR",
    "COMPACTION_DIR",
    "COMPACTION_LOG_DIR",
    "DEFAULT_COMPACTION_CQ_SETTING",
    "DEFAULT_COMPACTION_LOG_SETTING",
    "DELETE_SUFFIX",
    "POSITION_CHECKPOINT",
    "PositionCheckpoint",
    "REPLICATING_SUB_FOLDER",
    "cleanup_policy",
    "compaction_cq_file_size",
    "compaction_log_file_size",
    "decode_position_checkpoint",
    "is_compaction_topic",
    "is_end_unit",
    "offset_map_key",
]
