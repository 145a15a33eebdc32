"""The whole-store checks that read a store's files, shared by `mqtool verify` and the audit's driver.

`store.checks` judges arrays and batches; this module feeds it from a `Store`: the lock, every
ConsumeQueue (units against the records, file tails, dirty files), every index file (header, slots,
chains, where entries point), the checkpoint against the data, and where the broker's recovery would
start and end. `verify` passes every decoded record; the audit's executors have judged the records
of their byte ranges already, so its driver passes no records and asks only about the units that
point outside the data.

BatchConsumeQueues (BatchCQ topics) are read the same way (`check_batch_queues`): each queue's units,
and per unit what the dispatch reads from its record (`INNER_NUM`, `INNER_BASE`) and how many messages
its inner-batch body holds (one record decode per unit: a BatchCQ unit stands for a whole batch). Their
file tails and dirty files are judged as for ConsumeQueues; the record rows the units hit and each
queue's facts come back so the dispatch coverage check counts BatchCQ records as dispatched.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from formats.batchconsumequeue import BATCH_CQ_DIR, PROPERTY_INNER_NUM
from formats.errors import MqtoolError
from formats.message.innerbatch import count_inner_messages, is_inner_batch
from store.checks.batchcq import check_batch_consume_queue, check_batch_offset_gaps
from store.checks.checkpoint import check_checkpoint
from store.checks.commitlog import CommitLogVerdict
from store.checks.consumequeue import QueueFacts, check_consume_queue, check_cq_tail
from store.checks.index import (
    IndexFileFacts,
    check_index_file,
    check_index_headers_order,
    check_index_targets,
)
from store.checks.problems import ProblemList
from store.io.filereads import last_nonzero_end
from store.kind import TIERED_PART
from store.log.recovery import recovery_start_abnormal, recovery_start_normal
from store.log.scan import CommitLogFile
from store.queue.batchconsumequeue import configured_batch_cq_topics
from store.queue.lmq import is_lmq
from store.rebuild.batchcq import INVALID, batch_fields
from store.storedir import Store


def rel_path(store: Store, path: str | None) -> str | None:
    """A path as the problem tables show it: relative to the store root when inside it."""
    if path is None:
        return None
    try:
        return str(Path(path).relative_to(store.root))
    except ValueError:
        return path


def _tiered_tree_given(store: Store) -> bool:
    try:
        return store.tiered is not None
    except MqtoolError:  # named by the tiered checks
        return False


def note_broker_running(store: Store, problems: ProblemList) -> bool:
    """A warning row when a broker holds the store lock, an error row per layout part mqtool does not
    read exactly (`store.kind`: its answers there are not the broker's); whether `abort` is present."""
    try:
        parts = store.layout.kind.unsupported_reads()
    except MqtoolError as exc:
        problems.add("layout_unsupported", exc.file and rel_path(store, exc.file), exc.offset, exc.message)
        parts = []
    for part in parts:
        if part.name == TIERED_PART and _tiered_tree_given(store):
            continue  # verify reads the tiered tree it was given (store.checks.tiered)
        problems.add(
            "layout_unsupported",
            None,
            None,
            f"this store has a {part.name} ({part.evidence}), which mqtool does not read exactly: "
            f"{part.note}; the checks below do not see it as the broker does",
        )
    live = store.liveness()
    if live.broker_running:
        problems.add(
            "broker_running",
            "lock",
            None,
            f"{live.describe()}: the files change while they are read, so results may be inconsistent",
        )
    return live.abort_present


@dataclass
class QueueCheck:
    """What `check_queue_files` found: the record rows the units hit, and each queue's facts."""

    hits: list[np.ndarray] = field(default_factory=list)
    queues: dict[tuple[str, int], QueueFacts] = field(default_factory=dict)
    units: int = 0


def check_queue_files(
    store: Store,
    records: Any,
    problems: ProblemList,
    *,
    commitlog_min: int,
    valid_end: int,
    outside_only: bool = False,
    advance: Any = None,
) -> QueueCheck:
    """Every ConsumeQueue: its units against `records` (with `outside_only`, only the units before the
    queue's min offset or outside [commitlog_min, valid_end)), its file tail and dirty files."""
    found = QueueCheck()
    try:
        queue_list = list(store.consume_queues.queues())
    except MqtoolError as exc:
        problems.add("cq_not_checked", rel_path(store, exc.file) or "consumequeue", None, exc.message)
        return found
    for topic, queue_id in queue_list:
        try:
            # opened and closed one at a time: a store may hold 100,000+ (LMQ) queues
            queue = store.consume_queues.open(topic, queue_id)
        except MqtoolError as exc:
            problems.add("cq_file", rel_path(store, exc.file), exc.offset, exc.message)
            continue
        try:
            _check_queue(store, queue, topic, queue_id, records, problems, found, commitlog_min=commitlog_min,
                         valid_end=valid_end, outside_only=outside_only, advance=advance)  # fmt: skip
        finally:
            queue.close()
    return found


def _check_queue(
    store: Store,
    queue: Any,
    topic: str,
    queue_id: int,
    records: Any,
    problems: ProblemList,
    found: QueueCheck,
    *,
    commitlog_min: int,
    valid_end: int,
    outside_only: bool,
    advance: Any,
) -> None:
    try:
        units = queue.units(0)
        min_offset, max_offset = queue.min_offset, queue.max_offset
    except MqtoolError as exc:
        problems.add("cq_file", rel_path(store, exc.file), exc.offset, exc.message)
        return
    checked = units
    if outside_only:
        phy = units["phyOffset"]
        checked = units[(units["queueOffset"] < min_offset) | (phy < commitlog_min) | (phy >= valid_end)]
    if not outside_only or len(checked):
        hits = check_consume_queue(
            checked,
            records,
            problems,
            topic=topic,
            queue_id=queue_id,
            min_offset=min_offset,
            file_size=queue.file_size,
            commitlog_min=commitlog_min,
            valid_end=valid_end,
        )
        if not is_lmq(topic):  # an LMQ unit is not the record's own: dispatch coverage counts only those
            found.hits.append(hits)
    found.units += len(units)
    last_end = int(units["phyOffset"][-1]) + int(units["size"][-1]) if len(units) else 0
    found.queues[(topic, queue_id)] = QueueFacts(min_offset, max_offset, last_end)
    check_cq_files(store, queue, topic, queue_id, problems)
    if advance is not None:
        advance(sum(f.size for f in queue.files))


def check_cq_files(store: Store, queue: Any, topic: str, queue_id: int, problems: ProblemList) -> None:
    """Bytes after the last valid unit, and files after it (the broker's recovery deletes those)."""
    live = queue.live_files
    where = f"{topic}/{queue_id}"
    if live:
        last = live[-1]
        wrote = queue.wrote_position(last)
        # holes skipped (SEEK_DATA): a queue's last file is mostly unwritten, and LMQ stores have 100,000+
        end = last_nonzero_end(last.path, wrote, last.size) if wrote < last.size else wrote
        if end > wrote:
            rest = np.frombuffer(last.buffer(), dtype=np.uint8)[wrote:end]
            check_cq_tail(rest, problems, file=rel_path(store, str(last.path)), position=wrote, where=where)
    live_ids = {id(f) for f in live}  # by identity: comparing the dataclasses compares paths, per file pair
    dirty = [f for f in queue.files if id(f) not in live_ids]
    if dirty:
        problems.add(
            "cq_dirty_files",
            rel_path(store, str(dirty[0].path)),
            0,
            f"{where}: {len(dirty)} file(s) after the last valid unit; the broker's recovery deletes them",
        )


@dataclass
class IndexRead:
    """The index files as `read_index_files` found them: per-file facts (reachable entries) and
    (file, endTimestamp) for the checkpoint check."""

    facts: list[IndexFileFacts] = field(default_factory=list)
    ends: list[tuple[str, int]] = field(default_factory=list)
    hash_slot_num: int = 0
    bytes_read: int = 0  # what was reported to the progress callback

    def without_entries(self) -> IndexRead:
        """The same without the per-entry arrays (what a check that does not look at entries needs: the
        files, their entry counts and ends), e.g. to send from a worker."""
        slim = [IndexFileFacts(f.name, f.begin_phy, f.end_phy, f.entries) for f in self.facts]
        return IndexRead(slim, self.ends, self.hash_slot_num, self.bytes_read)


def read_index_files(store: Store, problems: ProblemList, advance: Any = None) -> IndexRead:
    """Every index file's header, slots and chains (`check_index_file`) and the headers' order; needs no
    commitlog."""
    read = IndexRead()
    try:
        service = store.index_service
        geometry = service.geometry
        for f in service.files:  # none when the geometry is unknown (one empty file)
            read.hash_slot_num = geometry.hash_slot_num
            name = f"index/{f.name}"
            entries = f.entries_view()
            read.facts.append(
                check_index_file(
                    f.header,
                    f.slots_view(),
                    entries,
                    problems,
                    file=name,
                    hash_slot_num=geometry.hash_slot_num,
                    index_num=geometry.index_num,
                )
            )
            read.ends.append((name, f.header.end_timestamp))
            read.bytes_read += geometry.hash_slot_num * 4 + len(entries) * 20
            if advance is not None:
                advance(geometry.hash_slot_num * 4 + len(entries) * 20)
        check_index_headers_order(read.facts, problems)
    except MqtoolError as exc:
        problems.add("index_file", rel_path(store, exc.file) or "index", exc.offset, exc.message)
    return read


def check_index_files(
    store: Store,
    records: Any,
    problems: ProblemList,
    *,
    commitlog_min: int,
    valid_end: int,
    advance: Any = None,
    read: IndexRead | None = None,
) -> IndexRead:
    """Every index file (`read_index_files`, unless already `read`), then where the entries point:
    records deleted by retention, past the valid end, or where `records` has no record start."""
    if read is None:
        read = read_index_files(store, problems, advance)
    for facts in read.facts:
        check_index_targets(
            facts,
            records,
            problems,
            hash_slot_num=read.hash_slot_num,
            commitlog_min=commitlog_min,
            valid_end=valid_end,
        )
    return read


def check_checkpoint_file(
    store: Store,
    problems: ProblemList,
    *,
    abort: bool,
    last_store_ts: int | None,
    dispatched_store_ts: int | None,
    index_ends: list[tuple[str, int]],
) -> Any:
    """The checkpoint against the data (`check_checkpoint`); the checkpoint read, or None."""
    cp = None
    try:
        cp = store.checkpoint()
    except MqtoolError as exc:
        problems.add("checkpoint_unreadable", "checkpoint", exc.offset, exc.message)
    check_checkpoint(
        cp,
        problems,
        abort=abort,
        last_store_ts=last_store_ts,
        dispatched_store_ts=dispatched_store_ts,
        index_files=index_ends,
    )
    return cp


def check_timer_files(store: Store, problems: ProblemList, *, commitlog_min: int) -> dict[str, Any] | None:
    """The 5.x timer wheel files (`store.checks.timer`), when the store has them; their summary."""
    from formats.names import TIMER_TOPIC
    from store.checks.timer import check_timer
    from store.timer.messages import enqueue_position
    from store.timer.timerstore import TimerStore

    try:
        timer = TimerStore.open(store)
    except MqtoolError as exc:
        problems.add("timer_file", rel_path(store, exc.file), exc.offset, exc.message)
        return None
    if timer is None:
        return None
    queue_max, position, targets = None, None, []
    try:
        position = enqueue_position(store, timer)
        for queue_id in store.consume_queues.queue_ids(TIMER_TOPIC):
            queue = store.consume_queue(TIMER_TOPIC, queue_id)
            units = queue.units()
            queue_offsets = units["queueOffset"].tolist() if queue_id == 0 else [-1] * len(units)
            targets.extend(
                zip(units["phyOffset"].tolist(), units["size"].tolist(), queue_offsets, strict=True)
            )
            if queue_id == 0:
                queue_max = queue.max_offset
    except MqtoolError as exc:
        problems.add("timer_file", rel_path(store, exc.file), exc.offset, exc.message)
    return check_timer(
        timer,
        targets,
        problems,
        commitlog_min=commitlog_min,
        enqueue_position=position,
        timer_queue_max=queue_max,
    )


def recovery_summary(
    scans: list[CommitLogFile],
    verdict: CommitLogVerdict,
    cp: Any,
    abort: bool,
    problems: ProblemList,
) -> dict[str, Any]:
    """Where the broker's next start walks from and where it ends the commitlog (an info row)."""
    files = [s for s in scans if s.size]
    if not files:
        return {"mode": "abnormal" if abort else "normal", "startFile": None, "end": verdict.valid_end}
    if abort:
        bound = cp.min_timestamp if cp is not None else 0
        firsts = []
        for s in files:
            first = None
            if s.batch is not None and s.batch.num_rows:
                row = s.batch.slice(0, 1).to_pylist()[0]
                if row["status"] == "ok":
                    first = (1, row["storeTimestamp"])
            firsts.append(first)
        start = recovery_start_abnormal(firsts, bound)
        mode = "abnormal (abort present)"
    else:
        start = recovery_start_normal([s.start for s in files])
        mode = "normal"
    end_file, end_pos, end = None, None, None
    for s in files[start:]:
        stop = s.stop()
        if stop is not None and stop[0] != "blank":
            end_file, end_pos, end = s, stop[1], s.start + stop[1]
            break
    if end is None:  # the last file ends in a BLANK: recovery stops there
        end_file = files[-1]
        stop = end_file.stop()
        end_pos = stop[1] if stop is not None else end_file.size
        end = end_file.start + end_pos
    written_end = max((s.start + s.data_end for s in files if s.data_end or s.message_count()), default=end)
    written_end = max(written_end, end)
    detail = (
        f"{mode} recovery walks from {files[start].name} and ends the commitlog at phy {end}"
        f" ({end_file.name} position {end_pos})"
    )
    dropped = written_end - end
    if dropped > 0:
        detail += f"; it drops the {dropped} bytes of written data after that"
    if end != verdict.valid_end:
        detail += f"; it does not see the stop at phy {verdict.valid_end} in an earlier file"
    problems.add("recovery", end_file.name, end_pos, detail)
    return {"mode": mode, "startFile": files[start].name, "end": end, "droppedBytes": max(dropped, 0)}


# --- BatchConsumeQueues (BatchCQ topics) ---------------------------------------------------------------


def dispatch_facts(store: Store, units: np.ndarray, commitlog_min: int, valid_end: int) -> tuple[Any, ...]:
    """Per unit, from its record: the base offset and batch size the dispatch takes (-2 where the broker's
    check refuses the batch properties, -1 where the record is not read), INNER_NUM (-1: none) and the
    messages its inner-batch body holds (-1: not an inner batch, or unreadable)."""
    n = len(units)
    want_base, want_batch, inner_num, body_count = (np.full(n, -1, dtype=np.int64) for _ in range(4))
    for i, (phy, size) in enumerate(units[["phyOffset", "size"]].tolist()):
        if not commitlog_min <= phy < valid_end:
            continue
        try:
            msg = store.commitlog.read_message_at(phy, size)
        except MqtoolError:
            continue  # the check reports the unit that points at no record
        fields = batch_fields(msg.properties, msg.queue_offset)
        want_base[i], want_batch[i] = (-2, -2) if fields == INVALID else fields
        num = msg.properties.get(PROPERTY_INNER_NUM)
        inner_num[i] = want_batch[i] if num is not None and fields != INVALID else -1
        if is_inner_batch(msg.sys_flag):
            counted = count_inner_messages(msg.body)
            body_count[i] = -1 if counted is None else counted
    return want_base, want_batch, inner_num, body_count


def topic_queue_counts(store: Store) -> dict[str, tuple[int, int]] | None:
    """{topic: (readQueueNums, writeQueueNums)} of the topic config the broker loads (topics.json, its
    .bak, or RocksDB with configManagerVersion=v2); None when there is none to judge by (then no topic or
    queue counts as deleted: `store.checks.orphans`)."""
    try:
        loaded = store.config("topics.json").load()
    except MqtoolError:
        return None
    if loaded.source == "none":
        return None
    table = getattr(loaded.model, "topic_config_table", {}) or {}
    return {name: (c.read_queue_nums, c.write_queue_nums) for name, c in table.items()}


def check_queue_types(store: Store, problems: ProblemList) -> None:
    """Queue directories of the other kind than topics.json gives the topic: the broker's load throws
    (`ConsumeQueueStore.queueTypeShouldBe`) and the broker does not start."""
    configured = configured_batch_cq_topics(store)
    if configured is None:
        return  # topics.json unreadable: reported by the config checks
    batch = store.batch_consume_queues
    for topic in batch.topics():
        if topic not in configured and batch.queue_ids(topic):
            problems.add(
                "bcq_queue_type",
                f"{BATCH_CQ_DIR}/{topic}",
                None,
                f"{topic}: BatchConsumeQueue directories, but topics.json does not give the topic "
                "queue.type=BatchCQ: the broker's load throws and it does not start",
            )
    for topic in sorted(configured & set(store.consume_queues.topics())):
        if store.consume_queues.queue_ids(topic):
            problems.add(
                "bcq_queue_type",
                f"consumequeue/{topic}",
                None,
                f"{topic}: ConsumeQueue directories, but topics.json gives the topic queue.type=BatchCQ: "
                "the broker's load throws and it does not start",
            )


def check_batch_queue_files(
    store: Store,
    records: Any,
    problems: ProblemList,
    *,
    commitlog_min: int,
    valid_end: int,
    outside_only: bool = False,
) -> QueueCheck:
    """Every BatchConsumeQueue: units against `records`, base offsets, file tail and dirty files. With
    `outside_only` only the units outside [commitlog_min, valid_end) are judged against records (the
    audit's driver: its executors judge the others)."""
    found = QueueCheck()
    try:
        queue_list = list(store.batch_consume_queues.queues())
        check_queue_types(store, problems)
    except MqtoolError as exc:
        problems.add("bcq_file", rel_path(store, exc.file) or "batchconsumequeue", None, exc.message)
        return found
    for topic, queue_id in queue_list:
        try:
            queue = store.batch_consume_queue(topic, queue_id)
            size = queue.file_size
            units = queue.units()
            min_offset, max_offset = queue.min_offset, queue.max_offset
        except MqtoolError as exc:
            problems.add("bcq_file", rel_path(store, exc.file), exc.offset, exc.message)
            continue
        checked = units
        if outside_only:
            phy = units["phyOffset"]
            checked = units[(phy < commitlog_min) | (phy >= valid_end)]
            # the whole queue: the executors judged its units in parts
            check_batch_offset_gaps(units, problems, topic=topic, queue_id=queue_id, file_size=size)
        facts = dispatch_facts(store, checked, commitlog_min, valid_end)
        want_base, want_batch, inner_num, body_count = facts
        found.hits.append(
            check_batch_consume_queue(
                checked,
                records,
                problems,
                topic=topic,
                queue_id=queue_id,
                want_base=want_base,
                want_batch=want_batch,
                inner_num=inner_num,
                body_count=body_count,
                file_size=queue.file_size,
                commitlog_min=commitlog_min,
                valid_end=valid_end,
                offset_gaps=not outside_only,
            )
        )
        found.units += len(units)
        last = queue.last_unit
        last_end = last.phy_offset + last.size if last is not None else 0
        found.queues[(topic, queue_id)] = QueueFacts(max(min_offset, 0), max_offset, last_end)
        check_cq_files(store, queue, topic, queue_id, problems)
    return found


__all__ = ["check_batch_queue_files", "dispatch_facts"]


# --- a DLedger commitlog ------------------------------------------------------------------------------


@dataclass
class DLedgerScan:
    """What `scan_dledger` found: the classic files' scans (a store switched to DLedger), the data files'
    scans, DLedger's verdict and the recovery row's summary."""

    classic: list[CommitLogFile]
    data: list[Any]
    verdict: Any
    summary: dict[str, Any]


def scan_dledger(
    store: Store,
    problems: ProblemList,
    builder: Any,
    *,
    check_crc: bool,
    accept_v2: bool,
    abort: bool,
    advance: Any = None,
) -> DLedgerScan:
    """Decode and check a DLedger commitlog (`store.log.dledger.DLedgerCommitLog`): the classic files below
    the divided offset as a classic commitlog (`check_commitlog`), then every data file from position 0 with
    DLedger's walk (`store.checks.dledger`); the accepted messages of both go into `builder` (those after
    DLedger's end do not)."""
    from store.checks.commitlog import check_commitlog
    from store.checks.dledger import check_dledger_log, dledger_recovery_row
    from store.log.scan import relative_name, scan_data_file, scan_file

    commitlog = store.commitlog
    log = commitlog.log
    classic: list[CommitLogFile] = []
    for f in commitlog.classic.files:
        scan = scan_file(f, name=relative_name(f, store.root), check_crc=check_crc, accept_v2=accept_v2)
        if scan.batch is not None:
            builder.add(scan.batch)
        scan.slim()
        classic.append(scan)
        if advance is not None:
            advance(f.size)
    if classic:
        check_commitlog(classic, problems, file_size=commitlog.classic.file_size)
    recovery = log.recovery
    data = []
    prev = (-1, -1)
    for f in log.data_files:
        scan = scan_data_file(f, name=relative_name(f, store.root), prev_index=prev[0], prev_term=prev[1],
                              check_crc=check_crc, accept_v2=accept_v2)  # fmt: skip
        if scan.batch is not None:
            builder.add(scan.batch, below=recovery.end)
        reason = scan.stop()[0]
        prev = (scan.last_index, scan.last_term) if reason == "pad" else (-1, -1)
        scan.slim()
        data.append(scan)
        if advance is not None:
            advance(f.size)
    checkpoint, checkpoint_error = None, None
    try:
        checkpoint = log.checkpoint()
    except MqtoolError as exc:
        checkpoint_error = exc.message
    names = {str(f.path): relative_name(f, store.root) for f in log.files + log.index_files}
    verdict = check_dledger_log(
        data, recovery, problems, file_size=log.file_size, load_problems=log.load_problems(),
        units=log.index_units_at, checkpoint=checkpoint, checkpoint_error=checkpoint_error, names=names,
    )  # fmt: skip
    redispatch = _redispatch_file(store, data) if abort else None
    summary = dledger_recovery_row(data, recovery, problems, abort=abort, redispatch_file=redispatch)
    return DLedgerScan(classic, data, verdict, summary)


def _redispatch_file(store: Store, data: list[Any]) -> int | None:
    """5.3.3's abnormal recovery of a DLedger store re-dispatches from the last data file whose first message
    (at +48) is a V1 message with a store time != 0 and at or before the StoreCheckpoint's min time, else
    from the first (R5 DLedgerCommitLog.java:317-395,429-477); 4.9.8 does not re-dispatch."""
    from formats.dledger import BODY_OFFSET
    from formats.structs import MAGIC_V1

    if store.layout.broker_version().major < 5:
        return None
    cp = store.checkpoint()
    bound = cp.min_timestamp if cp is not None else 0
    commitlog = store.commitlog
    firsts = []
    for scan in data:
        first = None
        f = commitlog.queue.find(scan.start)
        if f is not None and f.size >= BODY_OFFSET + 8:
            magic = int.from_bytes(f.read(BODY_OFFSET + 4, 4), "big", signed=True)
            ts = commitlog.store_time_at(scan.start + BODY_OFFSET)
            if magic == MAGIC_V1 and ts is not None:
                first = (1, ts)
        firsts.append(first)
    return recovery_start_abnormal(firsts, bound) if firsts else None


def check_dledger_headers(store: Store, problems: ProblemList, *, abort: bool) -> tuple[Any, dict[str, Any]]:
    """DLedger's checks from the entry headers alone (the audit's driver: its executors checked every
    entry's message): each data file's walk (`DLedgerLog.walk`), index units, checkpoint, the recovery row.
    Returns the verdict and the recovery summary."""
    from store.checks.dledger import check_dledger_log, dledger_recovery_row
    from store.log.scan import DataFileScan, last_nonzero_in_file, relative_name

    class WalkedFile(DataFileScan):
        """A data file known by its header walk, not its decoded records."""

        def __init__(self, name: str, f: Any, walk: Any, data_end: int) -> None:
            last = (int(walk.index[-1]), int(walk.term[-1])) if len(walk) else (-1, -1)
            super().__init__(name, f.start_offset, f.size, None, *last, data_end=data_end)
            self.walk = walk

        def stop(self) -> tuple[str, int, int]:
            return self.walk.reason, self.walk.stop, self.walk.stop_size

        def entries(self) -> dict[str, Any]:
            w = self.walk
            return {"entryPos": w.pos, "entryIndex": w.index, "entryTerm": w.term, "entrySize": w.size,
                    "entryMagic": w.magic}  # fmt: skip

    import numpy as np

    log = store.commitlog.log
    recovery = log.recovery
    scans = []
    prev = (-1, -1)
    for f in log.data_files:
        walk = log.walk(f, 0, *prev)
        data = np.frombuffer(f.buffer(), dtype=np.uint8) if f.size else np.zeros(0, np.uint8)
        end = last_nonzero_in_file(f, data, walk.stop, f.size) if f.size else 0
        del data
        scan = WalkedFile(relative_name(f, store.root), f, walk, end)
        prev = (scan.last_index, scan.last_term) if walk.reason == "pad" else (-1, -1)
        scans.append(scan)
    checkpoint, checkpoint_error = None, None
    try:
        checkpoint = log.checkpoint()
    except MqtoolError as exc:
        checkpoint_error = exc.message
    names = {str(f.path): relative_name(f, store.root) for f in log.files + log.index_files}
    verdict = check_dledger_log(
        scans, recovery, problems, file_size=log.file_size, load_problems=log.load_problems(),
        units=log.index_units_at, checkpoint=checkpoint, checkpoint_error=checkpoint_error, names=names,
        messages=False,
    )  # fmt: skip
    redispatch = _redispatch_file(store, scans) if abort else None
    return verdict, dledger_recovery_row(scans, recovery, problems, abort=abort, redispatch_file=redispatch)


def check_compaction_files(store: Store, problems: ProblemList) -> dict[str, Any] | None:
    """Every compaction topic queue under compaction/ (`store.checks.compaction`): what the broker's start
    refuses or skips, crash leftovers in `compacting/` / `replicating/`, and each live unit against its
    record and the compaction's postconditions. None when the store has no compaction/ and no compaction
    topic."""
    from formats.compaction import COMPACTING_SUB_FOLDER, REPLICATING_SUB_FOLDER
    from store.checks.compaction import ServedRecord, check_compacted_queue, check_load_problems

    cs = store.compaction
    if not cs.topics and not cs.directory.is_dir():
        return None
    summary: dict[str, Any] = {"topics": cs.topics, "queues": {}}
    try:
        queues, listing_problems = cs.load_listing
    except (MqtoolError, OSError) as exc:
        problems.add("compaction_dir", "compaction", None, str(exc))
        return summary
    for message in listing_problems:
        problems.add("compaction_dir", "compaction", None, message)
    try:
        checkpoint = cs.position_checkpoint
    except MqtoolError as exc:
        problems.add("compaction_checkpoint", rel_path(store, exc.file), exc.offset,
                     f"{exc.message}: the broker starts with no compaction position and compacts every "
                     "queue from its start again")  # fmt: skip
        checkpoint = None
    for topic, queue_id in queues:
        where = f"{topic}/{queue_id}"
        try:
            log = cs.log(topic, queue_id)
            check_load_problems(where, rel_path(store, str(log.log.path)), log.load_problems(), problems)
            for listing in (log.log, log.cq):
                for sub in listing.subdirs:
                    path = listing.path / sub
                    if sub in (COMPACTING_SUB_FOLDER, REPLICATING_SUB_FOLDER) and any(path.iterdir()):
                        problems.add("compaction_leftover", rel_path(store, str(path)), None,
                                     f"{where}: files left in {sub}/ by a compaction or replication that "
                                     "did not finish (the broker's start ignores them); the next one opens "
                                     "them and writes from their start: where its result is shorter, their "
                                     "old records and units stay after it, and a restart serves those units "
                                     "(5.3.3 CompactionLog.java:681-705)")  # fmt: skip
            records = []
            for u in log.units:
                cq_file = rel_path(store, str(log.cq.path / u.file))
                unit = u.unit
                try:
                    m = log.read_record(unit)
                except MqtoolError as exc:
                    none = (None,) * 5
                    records.append(ServedRecord(cq_file, u.position, unit.base_offset, unit.phy_offset,
                                                unit.size, *none, exc.message))  # fmt: skip
                    continue
                records.append(ServedRecord(cq_file, u.position, unit.base_offset, unit.phy_offset, unit.size,
                                            m.queue_offset, m.physical_offset, m.total_size, m.keys,
                                            len(m.body)))  # fmt: skip
            compacted_to = checkpoint.offset(topic, queue_id) if checkpoint else -1
            counts = check_compacted_queue(where, records, compacted_to, problems)
            summary["queues"][where] = {"compactedTo": compacted_to, **counts}
        except MqtoolError as exc:
            problems.add("compaction_dir", rel_path(store, exc.file), exc.offset, f"{where}: {exc.message}")
    return summary
