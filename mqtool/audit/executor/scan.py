"""What a Spark task of `mqtool audit` runs on the executors: one commitlog byte range scanned.

Executors import this module, so at module level it imports only the standard library, numpy, pyarrow,
our `formats`/`store` packages and the audit modules that keep to the same (pyspark is imported inside the
session helpers of `mqtool.audit.session.spark`, which run on the driver).

One task = one split (a byte range of one commitlog file, a row of `SPLIT_SCHEMA`). `scan_partition` is the
`mapInArrow` function: for each split it mmaps the file, decodes the records that *start* in the range
with `formats.columnar.decoder.decode_resync` (which finds the first record boundary on its own, so the driver
never looks for boundaries), cuts after the first row that is not `ok` (as `join_splits` does), and
returns partial aggregates as rows of `PARTIAL_SCHEMA`, one `kind` per audit:

* QUEUE — per topic, queueId and transaction type (`key` 0..3): n, bytes (TOTALSIZE), lo/hi first and
  last store time, qlo/qhi first and last queue offset, extra = body bytes;
* RATE — per topic and time bucket (`key` = storeTimestamp // bucketMs): n, bytes;
* BODY — per topic and body size class (`key` 0 = empty, else the bit length): n, bytes = body bytes;
* RETRY — per %RETRY%/%DLQ% topic and reconsumeTimes (`key`): n, bytes;
* DUP_UNIQ / DUP_KEY — per split and hash bucket (`key`: the top 4 bits): arrays hashes/counts/firsts/
  lasts = FNV-1a 64 of topic NUL UNIQ_KEY (or of each KEYS entry), how many of the split's messages carry
  it, first and last physical offset (`mqtool.audit.sections.duplicates`). `merge_duplicates` merges one
  bucket of all splits (Spark shuffles the arrays whole, by bucket) with numpy;
* STOP — one row per split: n / bytes of its ok records, `key` the stopping status (-1: none), detail a
  JSON object of the walk facts the driver's `check_commitlog` needs (the stopping row, the last non-zero
  byte, records a resync finds after a rejected record, the newest dispatched store time);
* PROBLEM — a finding of the shared verify checks: file, lo = offset, text = kind, severity, detail.

Checks run here, per split (`mqtool.audit.executor.checks.check_split`), with the very code `mqtool verify`
runs (`store.checks`): PHYSICALOFFSET fields, ConsumeQueue units pointing into the split against its records
(`check_consume_queue` with `phy_range`), records without their unit (`check_dispatch_coverage`), and
index entries pointing into the split where no record starts (`check_index_targets`). Whole-store checks
(the walk across files, units and entries outside the data, index chains, checkpoint) run on the driver
(`mqtool.audit.executor.checks.store_problems`).

Only the partial aggregates go back to Spark (shipping every decoded row was 1.2-2x slower here). With
an output directory, the split also writes its message metadata rows (no bodies) as one Parquet file
`messages/part-<store>-<seq>.parquet` (written beside, then renamed: a retried task rewrites the same
file), so message rows never travel through the JVM either.
"""

from __future__ import annotations

import contextlib
import json
import mmap
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from formats.columnar.decoder import STATUS_NAMES, STATUS_OK, decode_resync
from formats.names import DLQ_PREFIX, RETRY_PREFIX
from mqtool.audit.schema import (
    BODY,
    MESSAGE_COLUMNS,
    NO_STOP,
    QUEUE,
    RATE,
    RETRY,
    STOP,
    SplitTask,
    StoreContext,
    constant,
    partial_rows,
)
from mqtool.audit.sections.duplicates import dup_key_rows, dup_uniq_rows, topic_seeds
from store.io.filereads import file_size, map_readonly
from store.io.remote import is_url

TRAN_TYPE_MASK = 0xC  # MessageSysFlag.TRANSACTION_ROLLBACK_TYPE: getTransactionValue(sysFlag)


# --- one split -------------------------------------------------------------------------------------


def _open_file(path: str) -> tuple[object, int]:
    size = file_size(path)
    return (map_readonly(path), size) if size else (b"", 0)


def close_map(buf: object) -> None:
    """Close a read-only map the audit opened (the driver's too); `b""` of an empty file is left alone."""
    if isinstance(buf, mmap.mmap):
        with contextlib.suppress(BufferError):  # a view is still alive somewhere: the GC unmaps it later
            buf.close()


def _grouped(task: SplitTask, kind: int, table: pa.Table, keys: list[str], aggs: list, names: dict):
    """group_by(keys).aggregate(aggs) as partial rows; `names` maps result columns to partial columns."""
    if table.num_rows == 0:
        return None
    out = table.group_by(keys, use_threads=False).aggregate(aggs)
    count = out.num_rows
    cols: dict[str, object] = {
        "seq": constant(task.seq, count, pa.int32()),
        "store": constant(task.store, count, pa.int32()),
        "kind": constant(kind, count, pa.int32()),
    }
    for src, dst in names.items():
        cols[dst] = out.column(src)
    return partial_rows(cols, count)


def scan_split(task: SplitTask, context: StoreContext | None = None) -> list[pa.RecordBatch]:
    """Decode one split and return its partial rows (see the module docstring)."""
    if task.entries:
        return _scan_entries(task, context)
    if is_url(task.path):  # a store on object storage: ranged reads of this split only
        from mqtool.audit.session.remote import decode_split, fill_rest

        buf, batch, filled = decode_split(
            task.path, task.fileSize, task.base, task.start, task.end, task.checkCrc
        )
        size = task.fileSize
    else:
        buf, size = _open_file(task.path)
        batch = decode_resync(buf, task.base, task.start, min(task.end, size), check_crc=task.checkCrc)
    try:
        data = np.frombuffer(buf, dtype=np.uint8) if size else np.zeros(0, np.uint8)
        codes = batch.column("status").indices.to_numpy(zero_copy_only=False)
        bad = np.flatnonzero(codes != STATUS_OK)
        if bad.size and is_url(task.path):
            fill_rest(data, task.path, filled)
        cut = int(bad[0]) if bad.size else batch.num_rows
        ok = batch.slice(0, cut)
        facts = _walk_facts(task, batch, ok, cut, bad.size > 0, data, size)
        del data
    finally:
        close_map(buf)
    out: list[pa.RecordBatch] = []
    if ok.num_rows:
        out.extend(b for b in _aggregates(task, ok) if b is not None)
    if context is not None and context.checks:
        # units and index entries at or after a stop that ends the data are the driver's to judge; a
        # BLANK only ends the file: what points into it is judged here (no record starts there)
        ends_data = facts["status"] not in (None, "blank")
        stop_phy = task.base + facts["pos"] if ends_data else None
        from mqtool.audit.executor.checks import check_split  # it imports this module

        problems, split_facts = check_split(task, context, ok, stop_phy)
        facts.update(split_facts)
        out.extend(problems)
    out.insert(0, _stop_row(task, ok, facts))
    if task.output and ok.num_rows:
        write_message_rows(task, ok)
    return out


def _scan_entries(task: SplitTask, context: StoreContext | None) -> list[pa.RecordBatch]:
    """A DLedger data file, whole (`formats.columnar.entries`): the messages of the entries DLedger's walk
    keeps are the records; a message the broker's check rejects is a problem, not a stop (DLedger keeps
    its entry); the file's walk ends at a pad (`blank`: the next file follows) or where DLedger's walk stops
    (`end`; the driver takes the store's end from DLedger's recovery, `mqtool.audit.recovery`)."""
    from formats.columnar.entries import ENTRY_STATUS_NAMES, decode_entries, entry_status_codes
    from store.checks.dledger import check_entry_messages
    from store.checks.problems import ProblemList
    from store.log.scan import DataFileScan, last_nonzero

    if is_url(task.path):
        raise OSError(f"{task.path}: a DLedger data file is read from local stores only")
    buf, size = _open_file(task.path)
    try:
        walk = decode_entries(buf, task.base, 0, size, check_crc=task.checkCrc)
        batch = walk.batch
        entry = entry_status_codes(batch)
        ok = _kept_messages(batch)
        facts: dict = {"status": None, "records": ok.num_rows}
        if ok.num_rows:
            facts["maxTs"] = int(pc.max(ok.column("storeTimestamp")).as_py())
        if batch.num_rows and entry[-1] != 0:
            last = batch.num_rows - 1
            pos = int(batch.column("entryPos")[last].as_py()) - task.base
            facts.update(
                status="blank" if entry[last] == 1 else "end",
                entry=ENTRY_STATUS_NAMES[int(entry[last])],
                pos=pos,
                total=int(batch.column("totalSize")[last].as_py()),
            )
            data = np.frombuffer(buf, dtype=np.uint8) if size else np.zeros(0, np.uint8)
            facts["dataEnd"] = last_nonzero(data, pos, size)
            del data
        scan = DataFileScan(
            context.file_names[task.fileIndex] if context else task.path, task.base, size, batch
        )
        problems = ProblemList(context.label if context else task.label)
        check_entry_messages(scan, problems)
        del batch, scan
    finally:
        close_map(buf)
    out: list[pa.RecordBatch] = []
    if ok.num_rows:
        out.extend(b for b in _aggregates(task, ok) if b is not None)
    if context is not None and context.checks:
        stop_phy = task.base + facts["pos"] if facts["status"] == "end" else None
        from mqtool.audit.executor.checks import check_split, problem_rows  # it imports this module

        found, split_facts = check_split(task, context, ok, stop_phy)
        facts.update(split_facts)
        out.extend(found)
        out.extend(problem_rows(task, problems.table()))
    out.insert(0, _stop_row(task, ok, facts))
    if task.output and ok.num_rows:
        write_message_rows(task, ok.select(list(MESSAGE_COLUMNS)))
    return out


def _kept_messages(batch: pa.RecordBatch) -> pa.RecordBatch:
    """The rows of a decoded DLedger range that are messages: an entry DLedger keeps whose message the
    broker's check accepts (the same schema; usually a prefix of the rows)."""
    from formats.columnar.entries import entry_status_codes
    from store.checks.records import take_rows

    mask = (batch.column("status").indices.to_numpy(zero_copy_only=False) == STATUS_OK) & (
        entry_status_codes(batch) == 0
    )
    k = int(np.count_nonzero(mask))
    if mask[:k].all():
        return batch.slice(0, k)
    rows = np.flatnonzero(mask)
    columns = [
        take_rows(batch.column(i), rows).cast(batch.schema.field(i).type) for i in range(batch.num_columns)
    ]
    return pa.RecordBatch.from_arrays(columns, schema=batch.schema)


def _last_nonzero(data: np.ndarray, start: int, end: int) -> int:
    from store.log.scan import last_nonzero

    return last_nonzero(data, start, end)


def _walk_facts(task, batch, ok, cut, stopped, data, size) -> dict:
    """What `store.log.scan.scan_file` records about a file's walk, for the part of it in this split."""
    facts: dict = {"status": None, "records": ok.num_rows}
    if ok.num_rows:
        facts["maxTs"] = int(pc.max(ok.column("storeTimestamp")).as_py())
        last = ok.num_rows - 1
        facts["lastOk"] = [
            int(ok.column("physicalOffset")[last].as_py()) - task.base,
            int(ok.column("totalSize")[last].as_py()),
        ]
    if task.start == 0 and batch.num_rows:
        facts["first"] = [batch.column("status")[0].as_py(), int(batch.column("storeTimestamp")[0].as_py())]
    if not stopped:
        return facts
    status = STATUS_NAMES[int(batch.column("status").indices[cut].as_py())]
    pos = int(batch.column("physicalOffset")[cut].as_py()) - task.base
    total = int(batch.column("totalSize")[cut].as_py())
    facts.update(status=status, pos=pos, total=total)
    facts["dataEnd"] = _last_nonzero(data, pos, size)
    if status not in ("ok", "blank", "end"):
        extent = min(max(total, 8), size - pos)
        facts["stopDataEnd"] = _last_nonzero(data, pos, pos + extent)
        if facts["dataEnd"] > pos + extent:
            facts["beyond"] = _ok_count(decode_resync(data, task.base, pos + 1, check_crc=task.checkCrc))
    elif status == "end" and facts["dataEnd"] > pos:
        facts["beyond"] = _ok_count(decode_resync(data, task.base, pos + 1, check_crc=task.checkCrc))
    return facts


def _ok_count(batch: pa.RecordBatch) -> int:
    return int(np.count_nonzero(batch.column("status").indices.to_numpy(zero_copy_only=False) == STATUS_OK))


def _stop_row(task: SplitTask, ok: pa.RecordBatch, facts: dict) -> pa.RecordBatch:
    sizes = ok.column("totalSize").to_numpy()
    status = facts["status"]
    return partial_rows(
        {
            "seq": [task.seq],
            "store": [task.store],
            "kind": [STOP],
            "key": [NO_STOP if status is None else STATUS_NAMES.index(status)],
            "n": [ok.num_rows],
            "bytes": [int(sizes.sum(dtype=np.int64))],
            "text": [status],
            "file": [task.path],
            "detail": [json.dumps(facts)],
        },
        1,
    )


def _aggregates(task: SplitTask, ok: pa.RecordBatch) -> list[pa.RecordBatch | None]:
    if task.confirm >= 0:  # controller mode: the unconfirmed tail is not served, so not counted
        ends = ok.column("physicalOffset").to_numpy() + ok.column("totalSize").to_numpy().astype(np.int64)
        ok = ok.slice(0, int(np.count_nonzero(ends <= task.confirm)))  # rows in physical order: a prefix
        if not ok.num_rows:
            return []
    topic_col = ok.column("topic")
    topics = topic_col.dictionary
    t_idx = topic_col.indices
    topic_names = topics.take(t_idx)
    size = ok.column("totalSize")
    store_ts = ok.column("storeTimestamp")
    body = ok.column("bodyLength")
    sys_flag = ok.column("sysFlag").to_numpy()
    body_np = body.to_numpy()
    _, exponent = np.frexp(body_np.astype(np.float64))
    size_class = np.where(body_np > 0, exponent, 0).astype(np.int64)
    table = pa.table(
        {
            "topic": topic_names,
            "queueId": ok.column("queueId"),
            "tran": pa.array(((sys_flag & TRAN_TYPE_MASK) >> 2).astype(np.int64)),
            "size": size.cast(pa.int64()),
            "ts": store_ts,
            "qo": ok.column("queueOffset"),
            "body": body.cast(pa.int64()),
            "bucket": pa.array(store_ts.to_numpy() // task.bucketMs),
            "class": pa.array(size_class),
            "reconsume": ok.column("reconsumeTimes").cast(pa.int64()),
        }
    )
    out = [
        _grouped(
            task,
            QUEUE,
            table,
            ["topic", "queueId", "tran"],
            [
                ("size", "count"),
                ("size", "sum"),
                ("ts", "min"),
                ("ts", "max"),
                ("qo", "min"),
                ("qo", "max"),
                ("body", "sum"),
            ],
            {
                "topic": "topic",
                "queueId": "queueId",
                "tran": "key",
                "size_count": "n",
                "size_sum": "bytes",
                "ts_min": "lo",
                "ts_max": "hi",
                "qo_min": "qlo",
                "qo_max": "qhi",
                "body_sum": "extra",
            },
        ),
        _grouped(
            task,
            RATE,
            table,
            ["topic", "bucket"],
            [("size", "count"), ("size", "sum")],
            {"topic": "topic", "bucket": "key", "size_count": "n", "size_sum": "bytes"},
        ),
        _grouped(
            task,
            BODY,
            table,
            ["topic", "class"],
            [("body", "count"), ("body", "sum")],
            {"topic": "topic", "class": "key", "body_count": "n", "body_sum": "bytes"},
        ),
    ]
    retry_topic = pc.or_(pc.starts_with(topics, RETRY_PREFIX), pc.starts_with(topics, DLQ_PREFIX))
    is_retry = pc.fill_null(retry_topic.take(t_idx), False)
    if pc.any(is_retry).as_py():
        out.append(
            _grouped(
                task,
                RETRY,
                table.filter(is_retry),
                ["topic", "reconsume"],
                [("size", "count"), ("size", "sum")],
                {"topic": "topic", "reconsume": "key", "size_count": "n", "size_sum": "bytes"},
            )
        )
    seeds = topic_seeds(topics)
    row_seeds = seeds[t_idx.to_numpy(zero_copy_only=False)]
    phy = ok.column("physicalOffset").to_numpy()
    out.append(dup_uniq_rows(task, ok.column("uniqKey"), row_seeds, phy))
    out.append(dup_key_rows(task, ok.column("keys"), row_seeds, phy))
    return out


# --- message rows (--output) ----------------------------------------------------------------------


def message_name(store: int, seq: int) -> str:
    return f"part-{store:03d}-{seq:06d}.parquet"


def message_file(output: str, store: int, seq: int) -> Path:
    return Path(output) / "messages" / message_name(store, seq)


def write_message_rows(task: SplitTask, ok: pa.RecordBatch) -> Path | None:
    """The split's message metadata (no bodies) as one Parquet file, written atomically."""
    import pyarrow.parquet as pq

    table = pa.Table.from_batches([ok.select(list(MESSAGE_COLUMNS))])
    table = table.add_column(0, "store", pa.array([task.label] * table.num_rows, pa.string()))
    if is_url(task.output):  # one object per split: a retried task replaces it whole
        from mqtool.audit.session.remote import write_table
        from store.io.remote import join

        write_table(table, join(task.output, "messages", message_name(task.store, task.seq)))
        return None
    target = message_file(task.output, task.store, task.seq)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")
    pq.write_table(table, tmp)
    os.replace(tmp, target)
    return target


# --- the mapInArrow function -----------------------------------------------------------------------


def scan_partition(
    contexts: dict[int, StoreContext], splits: list[dict], batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """mapInArrow over `spark.range(len(splits))` (bind `contexts` and the split rows with
    functools.partial): split numbers in, partial rows out. The splits travel in the function itself, so
    the input is a JVM-only range and no Python stage has to turn driver rows into Spark rows first."""
    for batch in batches:
        for i in batch.column(0).to_pylist():
            task = SplitTask(**splits[i])
            try:
                rows = scan_split(task, contexts.get(task.store))
            except OSError as exc:  # the store fails, not the audit of the others (mqtool.audit.failures)
                from mqtool.audit.failures import reading_failed, unreadable_row

                if not reading_failed(task, exc):
                    raise
                rows = [unreadable_row(task, exc)]
            yield from rows
