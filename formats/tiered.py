"""The tiered store's (5.3.3 `tieredstore` module, POSIX provider) file names and segment kinds.

A segment of a queue lives at `<tieredStoreFilePath>/<hash(cluster)>_<cluster>/<broker>/<topic>/<queueId>/
<COMMIT_LOG|CONSUME_QUEUE>/<name>` and the compacted index at `.../<broker>/rmq_sys_INDEX/0/INDEX/<name>`
(`PosixFileSegment.java:61-69`; `MessageStoreUtil.toFilePath`, `getIndexFilePath`). `hash` is the first 8 hex
digits of the MD5 of the UTF-8 text (`MessageStoreUtil.getHash`); a segment's name is that hash of its base
offset in decimal followed by the base offset in 20 digits (`MessageStoreUtil.offset2FileName`), and the base
offset is read back from the last 20 characters (`fileName2Offset`).

Inside a queue's directory, COMMIT_LOG holds that queue's messages only, copied from the local commitlog
(`MessageStoreDispatcherImpl.java:266-274`) at offsets of its own, with one field changed on upload: the
PHYSICALOFFSET of each message is its offset in this COMMIT_LOG (`CommitLogInputStream.java:93-95, 153-166`),
so a message read from the tiered store has another offsetMsgId than it had locally; CONSUME_QUEUE
holds 20-byte units laid out as the local ConsumeQueue's (`FlatMessageFile.appendConsumeQueue`: commit-log
offset, size, tagsCode) whose offset is the one in that queue's tiered COMMIT_LOG, and a unit's byte offset
is its queue offset * 20 (`FlatMessageFile.initOffset`). Segments of one kind follow each other without
gaps: a segment's base offset is the previous one's base plus its size (`FlatAppendFile.append` rolls at
`getAppendOffset`).
"""

from __future__ import annotations

import enum
import hashlib
import re

from formats.java.hash import java_string_hash, to_int32
from formats.structs import CQ_STORE_UNIT_SIZE

INDEX_TOPIC = "rmq_sys_INDEX"  # MessageStoreUtil.RMQ_SYS_TIERED_STORE_INDEX_TOPIC
METADATA_FILE = "tieredStoreMetadata.json"  # DefaultMetadataStore: <storePathRootDir>/config/<this>
DEFAULT_METADATA_PROVIDER = "org.apache.rocketmq.tieredstore.metadata.DefaultMetadataStore"
POSIX_PROVIDER = "org.apache.rocketmq.tieredstore.provider.PosixFileSegment"
TIERED_CQ_UNIT_SIZE = CQ_STORE_UNIT_SIZE  # MessageFormatUtil.CONSUME_QUEUE_UNIT_SIZE
QUEUE_OFFSET_POSITION = 20  # MessageFormatUtil: where a stored message's QUEUEOFFSET starts
PHYSICAL_OFFSET_POSITION = 28  # ... and its PHYSICALOFFSET
STORE_TIMESTAMP_POSITION = 56  # ... and its STORETIMESTAMP

_SEGMENT_NAME = re.compile(r"[0-9a-f]{8}([0-9]{20})")


class SegmentType(enum.IntEnum):
    """FileSegmentType and its code in the metadata file (`type`), which is also the directory name."""

    COMMIT_LOG = 0
    CONSUME_QUEUE = 1
    INDEX = 2


def short_hash(text: str) -> str:
    """MessageStoreUtil.getHash: the first 8 hex digits of MD5(text)."""
    return hashlib.md5(text.encode("utf-8")).hexdigest()[:8]


def cluster_directory(cluster: str) -> str:
    """`<hash>_<cluster>`, the tree's top directory of a cluster (PosixFileSegment.java:66-67)."""
    return f"{short_hash(cluster)}_{cluster}"


def segment_file_name(base_offset: int) -> str:
    """MessageStoreUtil.offset2FileName: hash of the decimal offset, then the offset in 20 digits."""
    return short_hash(str(base_offset)) + f"{base_offset:020d}"


def segment_base_offset(name: str) -> int | None:
    """The base offset a segment file's name carries; None for a name offset2FileName does not write
    (the broker's fileName2Offset reads any 20 trailing digits; mqtool names such a file, never guesses)."""
    match = _SEGMENT_NAME.fullmatch(name)
    if match is None or segment_file_name(int(match.group(1))) != name:
        return None
    return int(match.group(1))


def queue_path(broker: str, topic: str, queue_id: int) -> str:
    """MessageStoreUtil.toFilePath: the `path` of a queue's segments in the metadata."""
    return f"{broker}/{topic}/{queue_id}"


# --- the compacted index file (IndexStoreFile.compactToNewFile), one per INDEX segment ---------------
# header: magic (int), begin timestamp (long), end timestamp (long), used slot count (int), item count (int);
# then the hash slots, 8 bytes each: the position of the slot's items and their total length (ints); then the
# items of slot 0, slot 1, ... back to back, 28 bytes each: key hash, topicId, queueId (ints), offset in
# the queue's tiered COMMIT_LOG (long), message size, (store time - begin) / 1000 (ints)
# (`IndexStoreFile.java:63-75, 436-470`, `IndexItem.java`).
INDEX_HEADER_SIZE = 28
INDEX_SLOT_SIZE = 8
COMPACT_INDEX_ITEM_SIZE = 28
INDEX_BEGIN_MAGIC = to_int32(0xCCDDEEFF ^ (1880681586 + 4))  # IndexStoreFile.BEGIN_MAGIC_CODE
INDEX_END_MAGIC = to_int32(0xCCDDEEFF ^ (1880681586 + 8))  # END_MAGIC_CODE: what a compacted file carries
MAX_ITEMS_READ = 1024  # queryAsyncFromSegmentFile reads at most 1024 items of a slot


def tiered_key_hash(topic: str, key: str) -> int:
    """IndexStoreFile.hashCode(buildKey): |String.hashCode("topic#key")|; Integer.MIN_VALUE stays negative."""
    h = java_string_hash(f"{topic}#{key}")
    return h if h >= 0 else to_int32(-h)
