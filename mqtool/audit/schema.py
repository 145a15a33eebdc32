"""What travels between the audit's driver and its executors: the split rows (`SPLIT_SCHEMA`, `SplitTask`),
the store facts the executors' checks need (`StoreContext`), and the partial rows they return
(`PARTIAL_SCHEMA`, one `kind` per audit: see `mqtool.audit.executor.scan`).

Executors import it: at module level only the standard library, numpy and pyarrow.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from store.queue.lmq import LmqSettings

if TYPE_CHECKING:
    from mqtool.audit.executor.batchcq import BatchQueueContext
    from store.checks.index import ReachableKeys

# --- kinds of partial rows -------------------------------------------------------------------------

QUEUE, RATE, BODY, RETRY, DUP_UNIQ, DUP_KEY, STOP, PROBLEM = range(8)
KIND_NAMES = ("queue", "rate", "body", "retry", "dup_uniq", "dup_key", "stop", "problem")
NO_STOP = -1  # STOP row of a split whose records all passed (it ends at a record boundary)


SPLIT_FIELDS = (
    ("seq", pa.int32(), "int"),
    ("store", pa.int32(), "int"),
    ("path", pa.string(), "string"),
    ("root", pa.string(), "string"),
    ("base", pa.int64(), "bigint"),
    ("start", pa.int64(), "bigint"),
    ("end", pa.int64(), "bigint"),
    ("bucketMs", pa.int64(), "bigint"),
    ("checkCrc", pa.bool_(), "boolean"),
    ("fileIndex", pa.int32(), "int"),
    ("fileSize", pa.int64(), "bigint"),
    ("output", pa.string(), "string"),
    ("label", pa.string(), "string"),
    ("entries", pa.bool_(), "boolean"),
    ("confirm", pa.int64(), "bigint"),
)
SPLIT_SCHEMA = pa.schema([(name, t) for name, t, _ in SPLIT_FIELDS])

PARTIAL_FIELDS = (
    ("seq", pa.int32(), "int"),
    ("store", pa.int32(), "int"),
    ("kind", pa.int32(), "int"),
    ("topic", pa.string(), "string"),
    ("queueId", pa.int32(), "int"),
    ("key", pa.int64(), "bigint"),
    ("n", pa.int64(), "bigint"),
    ("bytes", pa.int64(), "bigint"),
    ("lo", pa.int64(), "bigint"),
    ("hi", pa.int64(), "bigint"),
    ("qlo", pa.int64(), "bigint"),
    ("qhi", pa.int64(), "bigint"),
    ("extra", pa.int64(), "bigint"),
    ("text", pa.string(), "string"),
    ("severity", pa.string(), "string"),
    ("detail", pa.string(), "string"),
    ("file", pa.string(), "string"),
    ("hashes", pa.list_(pa.int64()), "array<bigint>"),
    ("counts", pa.list_(pa.int64()), "array<bigint>"),
    ("firsts", pa.list_(pa.int64()), "array<bigint>"),
    ("lasts", pa.list_(pa.int64()), "array<bigint>"),
)
PARTIAL_SCHEMA = pa.schema([(name, t) for name, t, _ in PARTIAL_FIELDS])
PARTIAL_DDL = ", ".join(f"{name} {ddl}" for name, _, ddl in PARTIAL_FIELDS)

# Message metadata rows written with --output (MESSAGE_SCHEMA without body position and status).
MESSAGE_COLUMNS = (
    "physicalOffset",
    "totalSize",
    "magicCode",
    "bodyCRC",
    "queueId",
    "flag",
    "queueOffset",
    "physicalOffsetField",
    "sysFlag",
    "bornTimestamp",
    "bornHost",
    "storeTimestamp",
    "storeHost",
    "reconsumeTimes",
    "preparedTransactionOffset",
    "bodyLength",
    "topic",
    "properties",
    "keys",
    "tags",
    "uniqKey",
)


@dataclass(frozen=True)
class SplitTask:
    """One split as the driver planned it (a row of SPLIT_SCHEMA)."""

    seq: int
    store: int
    path: str
    root: str
    base: int
    start: int
    end: int
    bucketMs: int  # noqa: N815 (the Spark column name)
    checkCrc: bool  # noqa: N815
    fileIndex: int  # noqa: N815
    fileSize: int  # noqa: N815
    output: str | None
    label: str
    entries: bool = False  # a DLedger data file (store.log.dledger): decoded entry by entry
    confirm: int = (
        -1
    )  # controller mode: where the broker's dispatch ends (Store.served_end); none past counts


@dataclass(frozen=True)
class CqFile:
    """One ConsumeQueue file as the driver saw it: its valid units and the range of offsets they hit."""

    path: str
    first_queue_offset: int
    units: int
    min_phy: int  # fillers left out; min_phy > max_phy when there is none
    max_phy: int


@dataclass(frozen=True)
class QueueContext:
    topic: str
    queue_id: int
    min_offset: int
    max_offset: int
    file_size: int
    files: tuple[CqFile, ...]


@dataclass(frozen=True)
class IndexContext:
    path: str
    name: str  # relative to the store root
    hash_slot_num: int
    entry_offset: int  # byte position of entry 1
    entries: int  # used entries (indexCount - 1)


@dataclass
class StoreContext:
    """What the executors' checks need to know about a store besides their split (sent with the job)."""

    label: str
    file_starts: list[int]
    file_names: list[str]
    delay_levels: tuple[int, ...]
    commitlog_min: int
    abort: bool
    confirm: int | None = None  # controller mode: the recovered confirm offset (store.log.confirm)
    queues: list[QueueContext] = field(default_factory=list)
    facts: dict[tuple[str, int], tuple[int, int, int]] = field(default_factory=dict)  # min, max, last end
    index_files: list[IndexContext] = field(default_factory=list)
    max_rows: int = 1000
    checks: bool = True
    index_keys: ReachableKeys | None = None  # with --deep: every key's reachability is checked
    batch_queues: list[BatchQueueContext] = field(default_factory=list)  # BatchCQ topics' queues
    lmq: LmqSettings = field(default_factory=LmqSettings)  # enableMultiDispatch: records name LMQ queues
    # the topic config's (readQueueNums, writeQueueNums): a deleted topic's or queue's records are no error
    known_topics: dict[str, tuple[int, int]] | None = None


# --- building partial rows -----------------------------------------------------------------------


def partial_rows(columns: dict[str, list | pa.Array | np.ndarray], count: int) -> pa.RecordBatch:
    arrays = []
    for column in PARTIAL_SCHEMA:
        value = columns.get(column.name)
        if value is None:
            arrays.append(pa.nulls(count, column.type))
        elif isinstance(value, pa.Array | pa.ChunkedArray):
            arrays.append(value.cast(column.type) if value.type != column.type else value)
        else:
            arrays.append(pa.array(value, column.type))
    arrays = [a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a for a in arrays]
    return pa.RecordBatch.from_arrays(arrays, schema=PARTIAL_SCHEMA)


def constant(value, count: int, kind: pa.DataType) -> pa.Array:
    return pa.array(np.full(count, value), kind) if count else pa.array([], kind)
