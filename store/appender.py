"""Append messages to a stopped broker's commitlog with the broker's rules, and dispatch them like it.

`CommitLogAppender` is `CommitLog.asyncPutMessage` + `DefaultAppendMessageCallback.doAppend` offline
(`MessageExtEncoder.encode`; what the broker does next: `DefaultMessageStore.recover`):

* the append position is the valid end the broker's recovery finds (walking from the third-from-last
  file, `CommitLog.recoverNormally`); a torn or corrupt tail is refused ("run the broker's recovery first"),
  bytes after the end of the last file are zeroed, files after it must be empty pre-allocated files;
* QUEUEOFFSET = the ConsumeQueue max offset of the queue (then +1 per message), 0 for PREPARED /
  ROLLBACK records (not dispatched to a ConsumeQueue); PHYSICALOFFSET = the append position;
  STORETIMESTAMP = max(now, the last store time) so store times never go backwards; STOREHOST = the
  store's (taken from its last record); BODYCRC, TOTALSIZE and the host V6 bits are computed;
* V1 records unless the topic is longer than 127 characters (V2, 5.x only: a 4.9.x store refuses such
  a topic, as its broker does); topics over 127 bytes must be `%RETRY%` topics and none may pass 255
  bytes (`HookUtils.checkBeforePutMessage`);
* a record that does not fit (`len + 8 > bytes left`) is preceded by an 8-byte BLANK record and goes to
  offset 0 of a new full-size sparse file named by the next start offset; the file size comes from the
  existing files (or the given/`broker.conf` `mappedFileSizeCommitLog`).

Settings (file sizes, index geometry, delay levels, store version) come from the store's layout
(`Store.layout`, `store.layout.StoreLayout`); the version takes the last record as further evidence, and
unknown (an empty new store) counts as 5 unless given. `Store.appender()` builds one.

What the broker does with our records at its next start, and why the write order below is safe:

* The broker never learns about records from the files alone on every version: 4.9.x dispatches
  everything after the ConsumeQueues' end at start, 5.0-5.3.1 dispatch nothing, 5.3.2-5.3.3 all but
  the first record after that end (`>` instead of `>=` in `DefaultMessageStore.recover`). So we write the
  ConsumeQueue units and index entries ourselves, byte-identical to the broker's dispatch (`store.dispatch`);
  after a complete run every version finds a consistent store and dispatches nothing (no duplicates: the CQ
  end equals the commitlog end, so 4.9.x/5.3.x start dispatching exactly at the end).
* While we write, an `abort` file exists (created before the first byte, removed after the last
  fsync). If we are killed at any point, the broker therefore runs its abnormal recovery: it starts
  from the commitlog file the checkpoint selects (`min(physic, logics) - 3 s`; the checkpoint is only
  raised in the last phase, so that file is at or before our first record), truncates a torn record,
  and re-dispatches every complete record - ConsumeQueue units it already has are skipped ("build
  consume queue repeatedly"), index entries below the last index file's endPhyOffset too. Without
  `abort`, a crash between phases would leave records that 5.0-5.3.1 never dispatch (their queue
  offsets would then be handed out twice).
* Write order per batch: commitlog records (fsync) -> ConsumeQueue units (fsync) -> index (fsync) ->
  checkpoint (fsync). Before the index phase the checkpoint's indexMsgTimestamp is raised to the end
  time the index will have: after a crash the broker deletes index files ending after that time
  (`IndexService.load`), which would lose older entries; our files are fsynced, so keeping them is right.
  The last index file is updated copy-on-write (temporary copy + atomic rename), so it is the old or
  the new file, never half-written. At the end physicMsgTimestamp / logicsMsgTimestamp = our last
  store time and indexMsgTimestamp = the index's end time.
* So a kill leaves: the old store, or the new one, or (with `abort`) a store whose records are the old
  ones plus a prefix of the new ones, each of which the broker's recovery dispatches exactly once
  (the record at the index's endPhyOffset may get a second index entry: the broker's own "<" quirk).
  Appending one message is therefore all or nothing; a batch is per message, like the broker's own.
"""

from __future__ import annotations

import os
import struct
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import tzinfo
from pathlib import Path

from formats.errors import MqtoolError
from formats.indexfile import IndexGeometry
from formats.message.commitlog import (
    DEFAULT_COMMITLOG_FILE_SIZE,
    MAX_TOPIC_LENGTH_V1,
    RECORD_PRELUDE,
    BadRecord,
    Blank,
    EndOfData,
    Message,
    build_message,
    decode_record,
    encode_message,
    java_length,
    message_length,
)
from formats.message.msgid import create_offset_msg_id
from formats.message.properties import (
    PROPERTY_KEYS,
    PROPERTY_UNIQ_KEY,
    decode_properties,
    encode_properties,
)
from formats.message.recordfast import encode_record
from formats.names import RETRY_PREFIX
from formats.structs import (
    BLANK_MAGIC,
    BORNHOST_V6_FLAG,
    END_FILE_MIN_BLANK_LENGTH,
    MAGIC_V1,
    MAGIC_V2,
    STOREHOSTADDRESS_V6_FLAG,
    TRANSACTION_PREPARED_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
    TRANSACTION_TYPE_MASK,
)
from store.checkpoint import read_checkpoint, write_checkpoint
from store.config.brokerconf import BrokerConfig
from store.dispatch import (
    DispatchRequest,
    dispatch_tags_code,
    iter_dispatch,
)
from store.index.indexwriter import list_index_files
from store.io.filewrites import (
    FileSet,
    create_sparse_file,
    fsync_dir,
    last_nonzero_end,
    pwrite_all,
    remove_leftovers,
    replace_file,
    temp_path,
    write_done,
)
from store.log.commitlog import CommitLog
from store.log.mappedfile import offset_to_file_name
from store.log.recovery import recovery_start_normal
from store.queue.consumequeue import ConsumeQueueStore
from store.queue.lmq import (
    PROPERTY_INNER_MULTI_DISPATCH,
    PROPERTY_INNER_MULTI_QUEUE_OFFSET,
    is_blank,
    topic_allows_lmq,
)
from store.storedir import Store
from store.version import BrokerVersion

MAX_MESSAGE_SIZE = 4 * 1024 * 1024  # maxMessageSize: the broker's limit on BODY
MAX_TOPIC_BYTES = 255  # HookUtils: no topic longer than this is stored
DEFAULT_STORE_HOST = (bytes([127, 0, 0, 1]), 10911)
DEFAULT_BATCH_BYTES = 64 * 1024 * 1024

Host = tuple[bytes, int]


class AppendError(MqtoolError):
    """A message or a store the broker's append rules refuse."""


def now_ms() -> int:
    return int(time.time() * 1000)


_BLANK = RECORD_PRELUDE  # TOTALSIZE, BLANK_MAGIC


# --- the appender ---------------------------------------------------------------------------------


@dataclass
class NewMessage:
    """A message as a producer (or the broker itself) hands it to the store."""

    topic: str
    body: bytes
    properties: Mapping[str, str] | Iterable[tuple[str, str]] | bytes = b""
    queue_id: int = 0
    flag: int = 0
    sys_flag: int = 0
    born_timestamp: int | None = None  # default: the store timestamp
    born_host: Host | None = None  # default: the store host
    reconsume_times: int = 0
    prepared_transaction_offset: int = 0
    # `decode_properties(properties)` when `properties` are bytes and the caller already has it (the
    # dispatcher then skips decoding them again); it must be exactly what the broker would read
    properties_map: Mapping[str, str] | None = None


@dataclass(frozen=True, slots=True)
class AppendResult:
    """Where one message went (what the broker's PutMessageResult says)."""

    topic: str
    queue_id: int
    physical_offset: int
    total_size: int
    queue_offset: int
    store_timestamp: int
    store_host: Host

    @property
    def msg_id(self) -> str:
        """The offsetMsgId the broker returns."""
        return create_offset_msg_id(self.store_host[0], self.store_host[1], self.physical_offset)


@dataclass
class _Chunk:
    file_start: int
    position: int
    data: bytearray


@dataclass
class _Tail:
    end: int
    last_message: Message | None
    last_store_timestamp: int
    last_cq_record_end: int  # end of the last record that goes to a ConsumeQueue


class CommitLogAppender:
    """Appends to `root/commitlog` and (with `dispatch`) writes the ConsumeQueue units and index entries.

    Use as a context manager, or call `close()`: pending records are written in batches of about
    `batch_bytes` and at the end. The caller holds the store lock (see `mqtool.safety.write_guard`).
    """

    def __init__(
        self,
        store: Store | Path | str,
        *,
        file_size: int | None = None,
        store_host: Host | None = None,
        now: Callable[[], int] | None = None,
        version: int | None = None,
        broker_config: BrokerConfig | None = None,
        cq_file_size: int | None = None,
        index_geometry: IndexGeometry | None = None,
        dispatch: bool = True,
        zone: tzinfo | None = None,
        allow_unclean: bool = False,
        copy_on_write_index: bool = True,
        batch_bytes: int = DEFAULT_BATCH_BYTES,
        append_prop_crc: bool | None = None,
    ) -> None:
        if not isinstance(store, Store):
            store = Store(Path(store), broker_config or BrokerConfig())
        self.store = store
        layout = store.layout
        self.root = store.root
        self.now = now or now_ms
        self.zone = zone
        self.dispatching = dispatch
        self.batch_bytes = batch_bytes
        config = store.broker_config
        self.delay_levels = layout.delay_levels.ms
        self.append_prop_crc = config.enabledAppendPropCRC if append_prop_crc is None else append_prop_crc
        self._abort_created = False
        self._committed_once = False
        self.warnings: list[str] = []
        if (self.root / "abort").exists() and not allow_unclean:
            raise AppendError(
                "`abort` exists: the last broker run did not shut down cleanly. Start the broker once and "
                "stop it cleanly so its recovery runs, then append (mqtool rebuild does not clear `abort`)",
                str(self.root / "abort"),
            )
        self.leftovers = remove_leftovers(self.root)
        self._dirty: tuple[int, int, int] | None = None
        self.commitlog_dir = self.root / "commitlog"
        commitlog = CommitLog.open(self.root)
        try:
            existing = layout.commitlog_file_size_on_disk
            wanted = file_size or layout.configured("mappedFileSizeCommitLog")
            if existing and wanted and existing != wanted:
                raise AppendError(
                    f"commitlog files are {existing} bytes, not the {wanted} given", str(self.commitlog_dir)
                )
            self.file_size = existing or wanted or DEFAULT_COMMITLOG_FILE_SIZE
            if self.file_size < 4096:
                raise AppendError(f"commitlog file size {self.file_size} is too small")
            # a 4.9.x broker stops at a V2 record (illegal magic): walk as it would
            pre = version or getattr(layout.detected_version, "major", None)
            tail = self._scan_tail(commitlog, accept_v2=pre != 4)
        finally:
            commitlog.close()
        detected = layout.detect_version(tail.last_message)
        if version is not None:
            if detected is not None and detected.major != version:
                self.warnings.append(
                    f"store looks {detected.major}.x ({detected.reason}), appending as {version}.x"
                )
            self.version = BrokerVersion(version, "given", detected=False)
        else:
            self.version = detected or BrokerVersion(5, "no version marks in the store; assuming 5.x")
        self.store_host: Host = store_host or (
            (tail.last_message.store_host, tail.last_message.store_port)
            if tail.last_message is not None
            else DEFAULT_STORE_HOST
        )
        self.position = tail.end
        self.last_store_timestamp = tail.last_store_timestamp
        self._pending: list[_Chunk] = []
        self._pending_bytes = 0
        self._topic_cache: dict[str, tuple[bytes, int]] = {}
        self._queue_offsets: dict[tuple[str, int], int] = {}
        self.appended = 0
        self.results: list[AppendResult] = []
        self.keep_results = True
        geometry = index_geometry or layout.configured_index_geometry
        on_disk = layout.index_geometry_on_disk
        if geometry is not None and on_disk is not None and geometry != on_disk:
            raise AppendError(
                f"index files have maxHashSlotNum {on_disk.hash_slot_num} / maxIndexNum {on_disk.index_num}, "
                f"not the {geometry.hash_slot_num} / {geometry.index_num} given",
                str(self.root / "index"),
            )
        self.dispatcher = store.dispatcher(
            cq_file_size=cq_file_size or None,
            index_geometry=geometry or on_disk,
            now_ms=self.now,
            zone=zone,
            copy_on_write=copy_on_write_index,
        )
        self._check_dispatched(tail)

    # --- the end of the commitlog ----------------------------------------------------------------

    def _scan_tail(self, commitlog: CommitLog, accept_v2: bool = True) -> _Tail:
        files = commitlog.files
        if not files:
            self._check_after(commitlog, -1)
            return _Tail(0, None, 0, 0)
        first = recovery_start_normal([f.start_offset for f in files])
        end = files[first].start_offset
        last: DispatchRequest | None = None
        last_cq_end = 0
        for item in iter_dispatch(
            commitlog, from_file=first, delay_levels=self.delay_levels, accept_v2=accept_v2, light=True
        ):
            if isinstance(item, DispatchRequest):
                last = item
                end = item.commit_log_offset + item.msg_size
                if item.goes_to_consume_queue:
                    last_cq_end = end
            elif isinstance(item, Blank):
                end = item.physical_offset - item.physical_offset % self.file_size + self.file_size
            elif self._recovered_torn_tail(commitlog, item):
                # The broker's recovery ended the commitlog here and left the torn bytes (it does not zero
                # them); its next start ends it here again and its next append overwrites them. The
                # stale-data zeroing below clears them before this append does the same.
                end = item.physical_offset
                break
            elif item.kind != "end":
                raise AppendError(
                    f"the commitlog does not end cleanly at {item.physical_offset}: {item.reason}. The "
                    "broker's recovery would truncate it there; start the broker once before appending",
                    str(self.commitlog_dir),
                    item.physical_offset,
                )
        last_message = None
        if last is not None:
            f = commitlog.queue.find(last.commit_log_offset)
            assert f is not None
            rec = decode_record(
                f.buffer(), last.commit_log_offset - f.start_offset, f.start_offset, accept_v2=accept_v2
            )
            last_message = rec if isinstance(rec, Message) else None
        end_index = next(
            (i for i, f in enumerate(commitlog.queue.files) if f.start_offset <= end < f.end_offset), None
        )
        self._check_after(commitlog, end)
        if end_index is not None:
            f = commitlog.queue.files[end_index]
            position = end - f.start_offset
            dirty_end = last_nonzero_end(f.path, position, f.size)
            if dirty_end > position:
                self._dirty = (f.start_offset, position, dirty_end - position)
                self.warnings.append(
                    f"{dirty_end - position} bytes of stale data after the end of the commitlog "
                    f"({end}) will be zeroed"
                )
        ts = last.store_timestamp if last is not None else 0
        return _Tail(end, last_message, ts, last_cq_end)

    def _recovered_torn_tail(self, commitlog: CommitLog, item: BadRecord | EndOfData) -> bool:
        """A torn last record with nothing after it, in a store the broker shut down cleanly (no
        `abort`): what the broker's recovery leaves behind after a crash tore the tail."""
        if item.kind != "torn" or (self.root / "abort").exists():
            return False
        f = commitlog.queue.find(item.physical_offset)
        if f is None:
            return False
        position = item.physical_offset - f.start_offset
        return last_nonzero_end(f.path, position, f.size) <= position + item.written

    def _check_after(self, commitlog: CommitLog, end: int) -> None:
        """Files wholly after the end must be empty pre-allocated files (the broker deletes them)."""
        for f in commitlog.queue.files:
            if f.start_offset <= end:
                continue
            if f.size not in (0, self.file_size) or last_nonzero_end(f.path, 0, f.size) > 0:
                raise AppendError(
                    "a file after the end of the valid commitlog data is not an empty pre-allocated file; "
                    "the broker's recovery would delete it - start the broker once or remove it",
                    str(f.path),
                )

    def _check_dispatched(self, tail: _Tail) -> None:
        """Refuse when records after the ConsumeQueues' end were never dispatched (queue offsets unknown)."""
        cq_end = 0
        cq_dir = self.root / "consumequeue"
        if cq_dir.is_dir():
            for topic, queue_id in ConsumeQueueStore(self.root, commitlog_min_offset=0).queues():
                cq_end = max(cq_end, self.dispatcher.queue(topic, queue_id).last_unit_end)
        if tail.last_cq_record_end > cq_end:
            raise AppendError(
                f"records up to {tail.last_cq_record_end} are in the commitlog but the consume queues end at "
                f"{cq_end}: they were never dispatched, so their queue offsets are unknown. Run "
                "`mqtool rebuild all --execute` (or start the broker once) before appending",
                str(self.commitlog_dir),
                cq_end,
            )

    # --- appending -------------------------------------------------------------------------------

    def _topic(self, topic: str) -> tuple[bytes, int]:
        cached = self._topic_cache.get(topic)
        if cached is not None:
            return cached
        raw = topic.encode("utf-8")
        if not topic:
            raise AppendError("empty topic")
        if len(raw) > MAX_TOPIC_BYTES:
            raise AppendError(f"topic of {len(raw)} bytes: the broker stores no topic longer than 255 bytes")
        if len(raw) > MAX_TOPIC_LENGTH_V1 and not topic.startswith(RETRY_PREFIX):
            raise AppendError(
                f"topic of {len(raw)} bytes: the broker accepts topics longer than 127 bytes only "
                "for %RETRY% topics"
            )
        magic = MAGIC_V1
        if java_length(topic) > MAX_TOPIC_LENGTH_V1:
            if self.version.major < 5:
                raise AppendError(
                    f"topic of {java_length(topic)} characters needs a V2 record, which a 4.9.x broker "
                    "cannot read (it would truncate the commitlog there)"
                )
            magic = MAGIC_V2
        self._topic_cache[topic] = (raw, magic)
        return raw, magic

    def next_queue_offset(self, topic: str, queue_id: int) -> int:
        key = (topic, queue_id)
        offset = self._queue_offsets.get(key)
        if offset is None:
            offset = self.dispatcher.next_queue_offset(topic, queue_id)
            self._queue_offsets[key] = offset
        return offset

    def append(self, msg: NewMessage) -> AppendResult:
        """Append one message (written at the next batch boundary or at close)."""
        topic = msg.topic
        cached = self._topic_cache.get(topic)
        topic_raw, magic = cached if cached is not None else self._topic(topic)
        properties = msg.properties
        if isinstance(properties, bytes | bytearray):
            props_raw = bytes(properties)
            props = msg.properties_map if msg.properties_map is not None else decode_properties(props_raw)
        else:
            pairs = list(properties.items() if isinstance(properties, Mapping) else properties)
            props_raw = encode_properties(pairs, trailing_separator=self.version.major >= 5)
            props = dict(pairs)
        body = msg.body
        if len(body) > MAX_MESSAGE_SIZE:
            raise AppendError(f"body of {len(body)} bytes exceeds maxMessageSize {MAX_MESSAGE_SIZE}")
        queue_id = msg.queue_id
        if not 0 <= queue_id < 2**31:
            raise AppendError(f"queue id {queue_id} out of range")
        now = self.now()
        store_ts = now if now > self.last_store_timestamp else self.last_store_timestamp
        born_host = msg.born_host or self.store_host
        store_host = self.store_host
        sys_flag = msg.sys_flag & ~(BORNHOST_V6_FLAG | STOREHOSTADDRESS_V6_FLAG)
        if len(born_host[0]) == 16:
            sys_flag |= BORNHOST_V6_FLAG
        if len(store_host[0]) == 16:
            sys_flag |= STOREHOSTADDRESS_V6_FLAG
        to_cq = sys_flag & TRANSACTION_TYPE_MASK not in (TRANSACTION_PREPARED_TYPE, TRANSACTION_ROLLBACK_TYPE)
        key = (topic, queue_id)
        if to_cq:
            queue_offset = self._queue_offsets.get(key)
            if queue_offset is None:
                queue_offset = self.next_queue_offset(topic, queue_id)
        else:
            queue_offset = 0
        props_len = len(props_raw) + (20 if self.append_prop_crc else 0)
        if props_len > 32767:
            raise AppendError(f"properties of {props_len} bytes exceed 32767")
        length = message_length(sys_flag, len(body), len(topic_raw), props_len, magic)
        file_size = self.file_size
        room = file_size - self.position % file_size
        if length + END_FILE_MIN_BLANK_LENGTH > room:
            if length + END_FILE_MIN_BLANK_LENGTH > file_size:
                raise AppendError(f"a record of {length} bytes cannot fit a commitlog file of {file_size}")
            self._add(_BLANK.pack(room, BLANK_MAGIC))  # the rest of the file stays as it is (zeros)
            self.position += room
            self._new_chunk()
        multi_dispatch = props.get(PROPERTY_INNER_MULTI_DISPATCH)
        if multi_dispatch is not None and self.store.layout.lmq.enable_lmq:
            self._refuse_lmq(topic, multi_dispatch)
        tags_code = dispatch_tags_code(topic, props, store_ts, self.delay_levels)
        if tags_code is None:
            raise AppendError(f"DELAY property {props.get('DELAY')!r} is not an integer")
        born_ts = store_ts if msg.born_timestamp is None else msg.born_timestamp
        phy = self.position
        if self.append_prop_crc:
            data = encode_message(
                build_message(
                    topic=topic,
                    body=body,
                    properties=props_raw,
                    queue_id=queue_id,
                    flag=msg.flag,
                    queue_offset=queue_offset,
                    physical_offset=phy,
                    sys_flag=sys_flag,
                    born_timestamp=born_ts,
                    born_host=born_host,
                    store_timestamp=store_ts,
                    store_host=store_host,
                    reconsume_times=msg.reconsume_times,
                    prepared_transaction_offset=msg.prepared_transaction_offset,
                    magic_code=magic,
                    append_prop_crc=True,
                )
            )
        else:
            data = encode_record(
                topic=topic_raw,
                magic=magic,
                body=body,
                properties=props_raw,
                queue_id=queue_id,
                flag=msg.flag,
                queue_offset=queue_offset,
                physical_offset=phy,
                sys_flag=sys_flag,
                born_timestamp=born_ts,
                born_host=born_host,
                store_timestamp=store_ts,
                store_host=store_host,
                reconsume_times=msg.reconsume_times,
                prepared_transaction_offset=msg.prepared_transaction_offset,
                total_size=length,
            )
        chunk = self._pending[-1] if self._pending else self._new_chunk()
        chunk.data += data
        self._pending_bytes += length
        self.position = phy + length
        self.last_store_timestamp = store_ts
        if to_cq:
            self._queue_offsets[key] = queue_offset + 1
        if self.dispatching:
            self.dispatcher.dispatch(
                DispatchRequest(
                    topic,
                    queue_id,
                    phy,
                    length,
                    tags_code,
                    store_ts,
                    queue_offset,
                    props.get(PROPERTY_KEYS),
                    props.get(PROPERTY_UNIQ_KEY),
                    sys_flag,
                    multi_dispatch,
                    props.get(PROPERTY_INNER_MULTI_QUEUE_OFFSET),
                )
            )
        self.appended += 1
        result = AppendResult(topic, queue_id, phy, length, queue_offset, store_ts, store_host)
        if self.keep_results:
            self.results.append(result)
        if self._pending_bytes >= self.batch_bytes:
            self.commit()
        return result

    def _refuse_lmq(self, topic: str, multi_dispatch: str) -> None:
        """A broker with enableLmq fills INNER_MULTI_QUEUE_OFFSET at put time and re-serialises the message's
        whole in-memory property map (`handlePropertiesForLmqMsg`), which differs by write path (WAIT, the
        properties messageTimeUp clears); mqtool does not reproduce that, so it refuses rather than write a
        record whose LMQ queues never get it."""
        if topic_allows_lmq(topic) and not is_blank(multi_dispatch):
            raise AppendError(
                f"a message to {topic} naming LMQ queues (INNER_MULTI_DISPATCH={multi_dispatch!r}) on a "
                "store of a broker with enableLmq: its put path fills INNER_MULTI_QUEUE_OFFSET, which mqtool "
                "does not reproduce; leave this message to the broker"
            )

    def _new_chunk(self) -> _Chunk:
        start = self.position - self.position % self.file_size
        chunk = _Chunk(start, self.position - start, bytearray())
        self._pending.append(chunk)
        return chunk

    def _add(self, data: bytes) -> None:
        if not self._pending:
            self._new_chunk()
        self._pending[-1].data += data
        self._pending_bytes += len(data)

    # --- writing ---------------------------------------------------------------------------------

    def _ensure_abort(self) -> None:
        if self._abort_created or (self.root / "abort").exists():
            return
        fd = os.open(self.root / "abort", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.close(fd)
        write_done()
        fsync_dir(self.root)
        self._abort_created = True

    def commit(self) -> None:
        """Write everything pending: records, ConsumeQueue units, index entries, checkpoint (each fsynced)."""
        if not self._pending and not self._dispatch_pending():
            return
        self._ensure_abort()
        if not self._committed_once and self.dispatching:
            # index files now on disk are complete (clean shutdown): the broker must keep them after a crash
            names = list_index_files(self.root / "index")
            if names:
                with open(self.root / "index" / names[-1], "rb") as fh:
                    end_ts = struct.unpack(">q", fh.read(16)[8:16])[0]
                write_checkpoint(self.root, index_msg_timestamp=end_ts)
        self._committed_once = True
        self._write_records()
        if not self.dispatching:
            return
        summary = self.dispatcher.commit(
            before_index=lambda s: write_checkpoint(self.root, index_msg_timestamp=s.index_end_timestamp)
        )
        write_checkpoint(
            self.root,
            physic_msg_timestamp=self.last_store_timestamp,
            logics_msg_timestamp=summary.logics_msg_timestamp,
            index_msg_timestamp=summary.index_end_timestamp,
        )

    def _dispatch_pending(self) -> bool:
        d = self.dispatcher
        return any(q.has_pending for q in d.queues.values()) or (d.index is not None and d.index.has_pending)

    def _write_records(self) -> None:
        if not self._pending and self._dirty is None:
            return
        self.commitlog_dir.mkdir(parents=True, exist_ok=True)
        files = FileSet()
        try:
            if self._dirty is not None:
                start, position, length = self._dirty
                pwrite_all(files.fd(self.commitlog_dir / offset_to_file_name(start)), bytes(length), position)
                self._dirty = None
            for chunk in self._pending:
                if not chunk.data:
                    continue
                path = self.commitlog_dir / offset_to_file_name(chunk.file_start)
                size = path.stat().st_size if path.exists() else None
                if size is None:
                    create_sparse_file(path, self.file_size, self.root, [(chunk.position, bytes(chunk.data))])
                elif size == 0:  # 5.x leaves a zero-length last file: replace it
                    tmp = temp_path(self.root, path.name)
                    data = [(chunk.position, bytes(chunk.data))]
                    try:
                        create_sparse_file(tmp, self.file_size, self.root, data)
                        replace_file(tmp, path)
                    except OSError:  # no space, say: no temporary file is left behind
                        tmp.unlink(missing_ok=True)
                        raise
                else:
                    pwrite_all(files.fd(path), chunk.data, chunk.position)
            files.sync_and_close()
        finally:
            files.close()
        self._pending = []
        self._pending_bytes = 0

    def close(self) -> None:
        """Write what is pending, then remove the `abort` marker this appender created."""
        self.commit()
        if self._abort_created and self.dispatching:
            os.unlink(self.root / "abort")
            write_done()
            fsync_dir(self.root)
            self._abort_created = False

    def __enter__(self) -> CommitLogAppender:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        # on an error the pending records are dropped; anything already written is covered by `abort`

    @property
    def checkpoint(self):
        return read_checkpoint(self.root)


__all__ = [
    "AppendError",
    "AppendResult",
    "CommitLogAppender",
    "NewMessage",
    "now_ms",
]
