"""Dispatch like ReputMessageService: ConsumeQueue units, IndexFile entries, the checkpoint.

For every commitlog record the broker dispatches (`CommitLogDispatcherBuildConsumeQueue` +
`CommitLogDispatcherBuildIndex`: `ConsumeQueue.putMessagePositionInfo`,
`IndexService.buildIndex`) this module produces the same bytes:

* `ConsumeQueueWriter` (`store.queue.consumequeue_writer`) is `ConsumeQueue.putMessagePositionInfo` for one
  queue.
* `IndexWriter` (`store.index.indexwriter`) is `IndexService.buildIndex` + `IndexFile.putKey`.
* `Dispatcher` feeds both and `commit()` writes them in the order the crash rules need (see
  `store.appender` for the whole argument): ConsumeQueue units (fsync), then index files (fsync), and
  returns what the checkpoint must say; `store.checkpoint.write_checkpoint` writes it.

Writes are plain `pwrite`s on full-size files, through `store.io.filewrites` (new files sparse under a
temporary name, linked into place; every state-changing call passes its crash-test hook `write_done()`).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import tzinfo
from pathlib import Path

from formats.consumequeue import DEFAULT_CQ_FILE_SIZE
from formats.dledger import BODY_OFFSET
from formats.errors import MqtoolError
from formats.indexfile import (
    IndexGeometry,
)
from formats.java.hash import tags_code as tags_code_of
from formats.message.commitlog import (
    DEFAULT_DELAY_LEVELS_MS,
    BadRecord,
    Blank,
    EndOfData,
    Message,
    Record,
    decode_record,
    deliver_tags_code,
    java_parse_int,
)
from formats.message.properties import (
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_KEYS,
    PROPERTY_TAGS,
    PROPERTY_UNIQ_KEY,
    decode_properties,
)
from formats.message.recordcheck import check_record
from formats.message.recordfast import MESSAGE_TO_SYSFLAG
from formats.names import SCHEDULE_TOPIC
from formats.structs import (
    BORNHOST_V6_FLAG,
    MAGIC_V1,
    MAGIC_V2,
    STOREHOSTADDRESS_V6_FLAG,
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_NOT_TYPE,
    TRANSACTION_TYPE_MASK,
)
from store.index.indexwriter import IndexWriter
from store.io.filewrites import FileSet
from store.io.pathnames import new_queue_dir
from store.log.commitlog import CommitLog
from store.log.dledger import DLedgerCommitLog
from store.queue.consumequeue_writer import ConsumeQueueWriter
from store.queue.lmq import (
    PROPERTY_INNER_MULTI_DISPATCH,
    PROPERTY_INNER_MULTI_QUEUE_OFFSET,
    LmqSettings,
    multi_dispatch_units,
)

# --- dispatch requests -----------------------------------------------------------------------------


@dataclass(slots=True)
class DispatchRequest:
    """What `CommitLog.checkMessageAndReturnSize` hands the dispatchers for one record."""

    topic: str
    queue_id: int
    commit_log_offset: int
    msg_size: int
    tags_code: int
    store_timestamp: int
    consume_queue_offset: int
    keys: str | None
    uniq_key: str | None
    sys_flag: int
    # INNER_MULTI_DISPATCH / INNER_MULTI_QUEUE_OFFSET (LMQ multi-dispatch, see store.lmq)
    multi_dispatch: str | None = None
    multi_queue_offset: str | None = None

    @classmethod
    def from_message(
        cls, msg: Message, delay_levels: tuple[int, ...] = DEFAULT_DELAY_LEVELS_MS
    ) -> DispatchRequest:
        return cls(
            topic=msg.topic,
            queue_id=msg.queue_id,
            commit_log_offset=msg.physical_offset,
            msg_size=msg.total_size,
            tags_code=msg.tags_code(delay_levels),
            store_timestamp=msg.store_timestamp,
            consume_queue_offset=msg.queue_offset,
            keys=msg.keys,
            uniq_key=msg.uniq_key,
            sys_flag=msg.sys_flag,
            multi_dispatch=msg.properties.get(PROPERTY_INNER_MULTI_DISPATCH),
            multi_queue_offset=msg.properties.get(PROPERTY_INNER_MULTI_QUEUE_OFFSET),
        )

    @property
    def goes_to_consume_queue(self) -> bool:
        """`CommitLogDispatcherBuildConsumeQueue`: NOT_TYPE and COMMIT records only."""
        return self.sys_flag & TRANSACTION_TYPE_MASK in (TRANSACTION_NOT_TYPE, TRANSACTION_COMMIT_TYPE)


# --- reading records for dispatch ------------------------------------------------------------------

_FIXED = MESSAGE_TO_SYSFLAG  # TOTALSIZE .. SYSFLAG (40 bytes)
_I64 = struct.Struct(">q")
_I32 = struct.Struct(">i")
_I16 = struct.Struct(">h")
_I8 = struct.Struct(">b")


def dispatch_tags_code(
    topic: str, properties: dict[str, str], store_timestamp: int, delay_levels: tuple[int, ...]
) -> int | None:
    """The ConsumeQueue tags code of a record (`CommitLog.checkMessageAndReturnSize`): TAGS hash, or on
    SCHEDULE_TOPIC_XXXX with a DELAY level > 0 the delivery time. None when DELAY is not an int (the broker's
    check fails)."""
    code = tags_code_of(properties.get(PROPERTY_TAGS))
    if topic == SCHEDULE_TOPIC:
        delay = properties.get(PROPERTY_DELAY_TIME_LEVEL)
        if delay is not None:
            if java_parse_int(delay) is None:
                return None
            deliver = deliver_tags_code(store_timestamp, delay, delay_levels)
            if deliver is not None:
                code = deliver
    return code


def _fast_request(
    buf, pos: int, start: int, check_crc: bool, accept_v2: bool, delay_levels, light: bool = False
) -> DispatchRequest | None:
    """The DispatchRequest of a plain valid record at `pos`, or None to let `decode_record` decide.

    Only the common shape is handled here (every length in range, body CRC right, UTF-8 topic, and on
    the schedule topic a parsable DELAY); anything else - a failure, a quirk the broker tolerates - goes
    to the full check. Tested equal to `DispatchRequest.from_message(decode_record(...))`. `light`
    checks the record the same way but leaves the properties undecoded (keys, uniq key None, tags code 0)
    except on the schedule topic, where DELAY decides validity.
    """
    size = len(buf)
    if pos + 40 > size:
        return None
    total, magic, body_crc, queue_id, _flag, queue_offset, phy, sys_flag = _FIXED.unpack_from(buf, pos)
    if magic != MAGIC_V1 and (magic != MAGIC_V2 or not accept_v2):
        return None
    if total <= 40 or pos + total > size:
        return None
    p = pos + 48 + (20 if sys_flag & BORNHOST_V6_FLAG else 8)
    store_ts = _I64.unpack_from(buf, p)[0]
    p += 8 + (20 if sys_flag & STOREHOSTADDRESS_V6_FLAG else 8) + 12
    end = pos + total
    if p + 4 > end:
        return None
    body_len = _I32.unpack_from(buf, p)[0]
    p += 4
    if body_len < 0 or p + body_len + 3 > end:
        return None
    if check_crc and body_len and (zlib.crc32(buf[p : p + body_len]) & 0x7FFFFFFF) != body_crc:
        return None
    p += body_len
    if magic == MAGIC_V1:
        topic_len = _I8.unpack_from(buf, p)[0]
        p += 1
    else:
        topic_len = _I16.unpack_from(buf, p)[0]
        p += 2
    if topic_len < 0 or p + topic_len + 2 > end:
        return None
    try:
        topic = bytes(buf[p : p + topic_len]).decode("utf-8")
    except UnicodeDecodeError:
        return None
    p += topic_len
    props_len = _I16.unpack_from(buf, p)[0]
    p += 2
    if props_len < 0 or p + props_len != end:
        return None
    if light and topic != SCHEDULE_TOPIC:
        return DispatchRequest(topic, queue_id, phy, total, 0, store_ts, queue_offset, None, None, sys_flag)
    props = decode_properties(bytes(buf[p:end])) if props_len else {}
    tags_code = dispatch_tags_code(topic, props, store_ts, delay_levels)
    if tags_code is None:
        return None
    return DispatchRequest(
        topic,
        queue_id,
        phy,
        total,
        tags_code,
        store_ts,
        queue_offset,
        props.get(PROPERTY_KEYS),
        props.get(PROPERTY_UNIQ_KEY),
        sys_flag,
        props.get(PROPERTY_INNER_MULTI_DISPATCH),
        props.get(PROPERTY_INNER_MULTI_QUEUE_OFFSET),
    )


def iter_dispatch(
    commitlog: CommitLog,
    *,
    from_file: int = 0,
    check_crc: bool = True,
    accept_v2: bool = True,
    delay_levels: tuple[int, ...] = DEFAULT_DELAY_LEVELS_MS,
    light: bool = False,
) -> Iterator[DispatchRequest | Record]:
    """`CommitLog.iter_records` from the start of file number `from_file`, with every valid message
    turned into its DispatchRequest (fast path) and BLANK / the final stop record passed through.
    `light`: only what checking the records needs (see `_fast_request`). A DLedger commitlog is walked as
    the broker's dispatch walks it (`_iter_dispatch_entries`)."""
    if isinstance(commitlog, DLedgerCommitLog):
        yield from _iter_dispatch_entries(commitlog, from_file, accept_v2, delay_levels, light)
        return
    files = commitlog.files[from_file:]
    if not files:
        yield EndOfData(0, "the commitlog has no files")
        return
    record: Record | None = None
    for f in files:
        buf = f.buffer()
        pos = 0
        start = f.start_offset
        path = str(f.path)
        while True:
            req = _fast_request(buf, pos, start, check_crc, accept_v2, delay_levels, light)
            if req is not None:
                yield req
                pos += req.msg_size
                continue
            record = decode_record(buf, pos, start, check_crc=check_crc, accept_v2=accept_v2, file=path)
            if isinstance(record, Message):
                yield DispatchRequest.from_message(record, delay_levels)
                pos += record.total_size
                continue
            yield record
            if isinstance(record, Blank):
                break
            return
    assert record is not None
    yield EndOfData(record.physical_offset, "the last file ends with a BLANK record and no file follows")


def _iter_dispatch_entries(
    commitlog: DLedgerCommitLog, from_file: int, accept_v2: bool, delay_levels: tuple[int, ...], light: bool
) -> Iterator[DispatchRequest | Record]:
    """What ReputMessageService dispatches from a DLedger commitlog (R5 DefaultMessageStore.java:2871-2927
    over `DLedgerCommitLog.checkMessageAndReturnSize`, R5 DLedgerCommitLog.java:489-522): the classic files
    below the divided offset as a classic commitlog, then the message at +48 of every entry DLedger's recovery
    keeps, checked without CRC as the dispatch checks it. A message the check rejects is not dispatched: one
    whose lengths disagree (the check returns its TOTALSIZE) is skipped, any other failure skips the rest of
    its data file (`reputFromOffset += result.getSize() - readSize`). A Blank is passed per pad; the last item
    is where DLedger's recovery ends the data."""
    classic = len(commitlog.classic.files)
    if from_file < classic:
        walk = iter_dispatch(
            commitlog.classic, from_file=from_file, check_crc=False, accept_v2=accept_v2,
            delay_levels=delay_levels, light=light,
        )  # fmt: skip
        for item in walk:
            if isinstance(item, EndOfData) and commitlog.log.data_files:
                break  # the classic files end (their BLANK): DLedger's entries follow
            yield item
            if isinstance(item, BadRecord):
                break  # the dispatch skips the rest of that file; the next is DLedger's or none
    end = commitlog.log.recovery.end
    for f in commitlog.log.data_files[max(from_file - classic, 0) :]:
        if f.start_offset >= end and f.start_offset > 0:
            break
        buf = f.buffer()
        start = f.start_offset
        path = str(f.path)
        for phy in commitlog.message_positions(f).tolist():
            if phy - BODY_OFFSET >= end:
                break
            pos = phy - start
            req = _fast_request(buf, pos, start, False, accept_v2, delay_levels, light)
            if req is not None:
                yield req
                continue
            record = decode_record(buf, pos, start, check_crc=False, accept_v2=accept_v2, file=path)
            if isinstance(record, Message):
                yield DispatchRequest.from_message(record, delay_levels)
                continue
            status, total, _ = check_record(buf, len(buf), pos, False, accept_v2)
            if status == "size_mismatch" and total > 0:
                continue  # DispatchRequest(totalSize, false): skipped by its size
            break  # DispatchRequest(-1, false): the rest of the file is skipped
        yield Blank(f.end_offset, 0)
    yield EndOfData(end, "DLedger's recovery ends the data here")


# --- the dispatcher -------------------------------------------------------------------------------


@dataclass
class DispatchSummary:
    """What one `Dispatcher.commit()` wrote, and the values the checkpoint must take."""

    cq_units: int = 0
    index_keys: int = 0
    index_files_created: int = 0
    logics_msg_timestamp: int = 0  # store time of the last record written to a ConsumeQueue
    index_end_timestamp: int = 0  # endTimestamp of the last index file
    last_full_index_end_timestamp: int = 0  # endTimestamp of the last completely filled index file


class BatchCQTopicError(MqtoolError):
    """A write that would put a BatchCQ topic's message in consumequeue/ (then the broker does not start)."""


def refuse_batch_cq_topic(topic: str, batch_cq_topics: frozenset[str]) -> None:
    """Raise `BatchCQTopicError` for a topic the broker keeps in batchconsumequeue/: mqtool writes no
    BatchCQ units, and a ConsumeQueue of such a topic stops the broker's load (`queueTypeShouldBe`)."""
    if topic in batch_cq_topics:
        raise BatchCQTopicError(
            f"{topic} is a BatchCQ topic (queue.type=BatchCQ): mqtool does not write its messages (a "
            "ConsumeQueue for it stops the broker from starting); nothing is written"
        )


def refuse_queue_name(cq_root: Path, topic: str, queue_id: int, *, record: int | None = None) -> None:
    """Raise `store.io.pathnames.UnsafeNameError` for a queue the dispatch could not create: a name the
    broker's own code never gives a queue (`new_queue_dir`; `record`: the physical offset of the record
    it comes from). The plans of writes check every destination queue here before anything is written."""
    new_queue_dir(cq_root, topic, queue_id, record=record)


class Dispatcher:
    """ReputMessageService's dispatchers over `cq_root` (consumequeue/) and `index_dir` (index/).
    A queue of a topic in `batch_cq_topics` is refused (`BatchCQTopicError`)."""

    def __init__(
        self,
        cq_root: Path,
        index_dir: Path | None,
        *,
        cq_file_size: int | None = None,
        index_geometry: IndexGeometry | None = None,
        now_ms: Callable[[], int],
        zone: tzinfo | None = None,
        copy_on_write: bool = False,
        scratch: Path,
        lmq: LmqSettings | None = None,
        durable: bool = True,
        batch_cq_topics: frozenset[str] = frozenset(),
    ) -> None:
        self.cq_root = cq_root
        self.batch_cq_topics = batch_cq_topics
        self.durable = durable  # False: no fsync (a dry run's staging, thrown away)
        self.lmq = lmq or LmqSettings()
        self.lmq_units = 0
        self._lmq_problems: list[str] = []
        self.cq_file_size = cq_file_size or DEFAULT_CQ_FILE_SIZE
        self.scratch = scratch
        self.queues: dict[tuple[str, int], ConsumeQueueWriter] = {}
        self.index = (
            IndexWriter(
                index_dir,
                index_geometry or IndexGeometry(),
                now_ms=now_ms,
                zone=zone,
                copy_on_write=copy_on_write,
            )
            if index_dir is not None
            else None
        )
        self.logics_msg_timestamp = 0
        self.records = 0
        self._index_marks = (0, 0)

    def queue(
        self, topic: str, queue_id: int, *, record: int | None = None, what: str = "topic"
    ) -> ConsumeQueueWriter:
        """The writer of (topic, queueId); `record` (the physical offset of the record naming it) and `what`
        (topic, LMQ queue) say whose name it is when the name is refused (`store.io.pathnames`)."""
        key = (topic, queue_id)
        writer = self.queues.get(key)
        if writer is None:
            refuse_batch_cq_topic(topic, self.batch_cq_topics)
            writer = ConsumeQueueWriter(
                self.cq_root, topic, queue_id, self.cq_file_size, record=record, what=what
            )
            writer.durable = self.durable
            self.queues[key] = writer
        return writer

    def next_queue_offset(self, topic: str, queue_id: int) -> int:
        """The queue offset the broker would give the next message of (topic, queueId): the CQ max."""
        return self.queue(topic, queue_id, record=None).max_offset

    def dispatch(self, req: DispatchRequest, *, cq: bool = True, index: bool = True) -> None:
        self.records += 1
        if cq and req.goes_to_consume_queue:
            if self.queue(req.topic, req.queue_id, record=req.commit_log_offset).put(
                req.commit_log_offset, req.msg_size, req.tags_code, req.consume_queue_offset
            ):
                self.logics_msg_timestamp = req.store_timestamp
            if req.multi_dispatch is not None and self.lmq.dispatches:
                self._multi_dispatch(req)
        if index and self.index is not None:
            self.index.build(req)

    def _multi_dispatch(self, req: DispatchRequest) -> None:
        """`ConsumeQueue.multiDispatchLmqQueue`: the record's unit again in each queue it names."""
        problems: list[str] = []
        for unit in multi_dispatch_units(
            req.topic, req.queue_id, req.multi_dispatch, req.multi_queue_offset, self.lmq, problems
        ):
            if self.queue(unit.queue, unit.queue_id, record=req.commit_log_offset, what="LMQ queue").put(
                req.commit_log_offset, req.msg_size, req.tags_code, unit.queue_offset
            ):
                self.lmq_units += 1
        self._lmq_problems.extend(f"record at {req.commit_log_offset}: {p}" for p in problems)

    @property
    def warnings(self) -> list[str]:
        return [w for q in self.queues.values() for w in q.warnings] + self._lmq_problems

    def flush_consume_queues(self) -> int:
        files = FileSet()
        units = 0
        try:
            for writer in self.queues.values():
                if writer.has_pending:
                    units += writer.pending_units
                    writer.flush(files, self.scratch)
            if self.durable:
                files.sync_and_close()
        finally:
            files.close()
        return units

    def flush_index(self) -> tuple[int, int]:
        """Write the index files; returns (keys, files created) since the previous flush."""
        if self.index is None or not self.index.has_pending:
            return 0, 0
        keys_before, files_before = self._index_marks
        files = FileSet()
        try:
            self.index.flush(files, self.scratch)
            files.sync_and_close()
        finally:
            files.close()
        self._index_marks = (self.index.keys_written, self.index.files_created)
        return self.index.keys_written - keys_before, self.index.files_created - files_before

    def commit(self, before_index: Callable[[DispatchSummary], None] | None = None) -> DispatchSummary:
        """ConsumeQueue units (fsync), then the index (fsync); `before_index` runs between the two."""
        summary = DispatchSummary()
        summary.cq_units = self.flush_consume_queues()
        summary.logics_msg_timestamp = self.logics_msg_timestamp
        if self.index is not None:
            summary.index_end_timestamp = self.index.end_timestamp
            summary.last_full_index_end_timestamp = self.index.last_full_end_timestamp
        if before_index is not None:
            before_index(summary)
        summary.index_keys, summary.index_files_created = self.flush_index()
        return summary


__all__ = [
    "dispatch_tags_code",
    "iter_dispatch",
    "refuse_batch_cq_topic",
    "refuse_queue_name",
    "BatchCQTopicError",
    "DispatchRequest",
    "DispatchSummary",
    "Dispatcher",
]
