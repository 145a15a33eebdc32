"""`mqtool export` and `dump commitlog --format parquet`: commitlog ranges to Parquet / JSONL, columnar.

Records are decoded in bounded chunks by the columnar decoder (`store.log.scan.iter_batches`) and written
batch by batch, so memory stays flat on any range. Only accepted messages are written (BLANK markers and
the record that stops the walk are not; the summary says where and why the walk stopped). Columns follow
the message fields of notes/json-output.md: physicalOffset, totalSize, magicCode, bodyCRC, queueId, flag,
queueOffset, sysFlag, bornTimestamp, bornHost, storeTimestamp, storeHost, reconsumeTimes,
preparedTransactionOffset, topic, properties, keys, tags, uniqKey, offsetMsgId, bodyLength and, with
bodies, body (the stored bytes; compressed bodies stay compressed).

`properties` is a map<string, string> in Parquet, with the pairs in stored order exactly as
`string2messageProperties` accepts them (non-empty name and value); a name stored twice appears twice
(the broker keeps the last one). In JSONL it is an object (last one wins) and the body is base64.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from formats.errors import MqtoolError, UsageError
from formats.message.msgid import parse_host
from mqtool.outputs import OutputFile, output_directory, output_file, replacing
from store.checks.records import take_rows
from store.storedir import Store

EXPORT_FORMATS = ("parquet", "jsonl")
_HEX = np.frombuffer(b"0123456789ABCDEF", dtype=np.uint8)
PROPERTIES_TYPE = pa.map_(pa.string(), pa.string())


@dataclass
class ExportSummary:
    """What an export wrote."""

    output: str
    format: str
    messages: int = 0
    bytes_read: int = 0
    first_offset: int | None = None
    last_offset: int | None = None
    stop: dict[str, Any] | None = None
    topics: dict[str, int] = field(default_factory=dict)
    tiered: Any = None  # mqtool.tiered.export.TieredExport: the messages read from the tiered store

    def to_json(self) -> dict[str, Any]:
        return {
            "output": self.output,
            "format": self.format,
            "messages": self.messages,
            "bytesRead": self.bytes_read,
            "firstOffset": self.first_offset,
            "lastOffset": self.last_offset,
            "stop": self.stop,
            "topics": self.topics,
            "tiered": None if self.tiered is None else self.tiered.to_json(),
        }


# --- column builders ------------------------------------------------------------------------------


_COLUMNS = (
    "physicalOffset",
    "totalSize",
    "magicCode",
    "bodyCRC",
    "queueId",
    "flag",
    "queueOffset",
    "sysFlag",
    "bornTimestamp",
    "bornHost",
    "storeTimestamp",
    "storeHost",
    "reconsumeTimes",
    "preparedTransactionOffset",
    "topic",
    "properties",
    "keys",
    "tags",
    "uniqKey",
    "offsetMsgId",
    "bodyLength",
)


def hex16(values: np.ndarray) -> pa.Array:
    """Upper-case 16-digit hex of int64 values (big-endian bytes), as an Arrow string array."""
    values = np.ascontiguousarray(values, dtype=">i8")
    n = len(values)
    raw = values.view(np.uint8).reshape(n, 8)
    out = np.empty((n, 16), dtype=np.uint8)
    out[:, 0::2] = _HEX[raw >> 4]
    out[:, 1::2] = _HEX[raw & 15]
    offsets = np.arange(0, 16 * (n + 1), 16, dtype=np.int32)
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(out.reshape(-1))])


def offset_msg_ids(store_host: pa.DictionaryArray, phy: np.ndarray) -> pa.Array:
    """offsetMsgId (`MessageDecoder.createMessageId`): store host address + port + physical offset, upper-case
    hex; null for a store host that is no address and port (a port past 65535: the client's decode of such a
    message fails on its InetSocketAddress, so it has no offsetMsgId)."""
    prefixes: list[str | None] = []
    for text in store_host.dictionary.to_pylist():
        try:
            address, port = parse_host(text)
        except (MqtoolError, TypeError):
            prefixes.append(None)
            continue
        prefixes.append((address + int(port).to_bytes(4, "big", signed=True)).hex().upper())
    prefix = pa.array(prefixes, pa.string()).take(store_host.indices)
    return pc.binary_join_element_wise(prefix, hex16(phy), "")


def properties_map(raw: pa.Array) -> pa.Array:
    """PROPERTIES bytes -> map<string, string> of the pairs the broker's reader accepts, stored order."""
    if isinstance(raw, pa.ChunkedArray):
        raw = raw.combine_chunks()
    if not pa.types.is_binary(raw.type):
        raw = raw.cast(pa.binary())
    try:
        text = raw.cast(pa.string())
    except pa.ArrowInvalid:  # invalid UTF-8: decode as Java does (U+FFFD)
        text = pa.array(
            [None if v is None else v.decode("utf-8", "replace") for v in raw.to_pylist()], pa.string()
        )
    parts = pc.split_pattern(text, "\x02")
    flat = parts.flatten()
    kv = pc.split_pattern(flat, "\x01", max_splits=1)
    offsets = kv.offsets.to_numpy(zero_copy_only=False)
    pairs = np.flatnonzero(np.diff(offsets) == 2)  # parts with a \x01: name and value
    values = kv.values
    names = values.take(pa.array(offsets[pairs]))
    texts = values.take(pa.array(offsets[pairs] + 1))
    keep = (pc.binary_length(names).to_numpy(zero_copy_only=False) > 0) & (
        pc.binary_length(texts).to_numpy(zero_copy_only=False) > 0
    )
    parent = pc.list_parent_indices(parts).to_numpy(zero_copy_only=False)[pairs[keep]]
    counts = np.bincount(parent, minlength=len(raw)) if len(parent) else np.zeros(len(raw), np.int64)
    map_offsets = np.zeros(len(raw) + 1, dtype=np.int32)
    np.cumsum(counts, out=map_offsets[1:])
    if not keep.all():
        mask = pa.array(keep)
        names, texts = names.filter(mask), texts.filter(mask)
    return pa.MapArray.from_arrays(
        pa.array(map_offsets),
        names,
        texts,
        type=PROPERTIES_TYPE,
        mask=raw.is_null(),
    )


def export_batch(batch: pa.RecordBatch, *, with_body: bool, topic: str | None = None) -> pa.RecordBatch:
    """The accepted messages (of `topic`) of a decoded batch, with the export columns."""
    keep = batch.column("status").indices.to_numpy(zero_copy_only=False) == 0
    if topic is not None:
        keep &= pc.fill_null(pc.equal(batch.column("topic").dictionary_decode(), topic), False).to_numpy(
            zero_copy_only=False
        )
    rows = np.flatnonzero(keep)
    if len(rows) != batch.num_rows:
        if len(rows) and rows[-1] == len(rows) - 1:
            batch = batch.slice(0, len(rows))  # the accepted rows are a prefix
        else:
            names = batch.schema.names
            batch = pa.RecordBatch.from_arrays([take_rows(batch.column(c), rows) for c in names], names=names)
    phy = batch.column("physicalOffset").to_numpy(zero_copy_only=False)
    columns: dict[str, pa.Array] = {}
    for name in _COLUMNS:
        if name == "properties":
            columns[name] = properties_map(batch.column("properties"))
        elif name == "offsetMsgId":
            columns[name] = offset_msg_ids(batch.column("storeHost"), phy)
        elif name in ("topic", "bornHost", "storeHost"):
            columns[name] = batch.column(name).dictionary_decode()
        else:
            columns[name] = batch.column(name)
    if with_body:
        columns["body"] = batch.column("body")
    return pa.RecordBatch.from_pydict(columns)


@dataclass(frozen=True)
class _RangeTask:
    """One byte range of one commitlog file to export (what a worker is sent)."""

    path: str
    base: int
    size: int
    file_index: int
    start: int
    end: int
    resync: bool  # False: `start` is a record boundary (the first range of the walk)
    check_crc: bool
    with_body: bool
    topic: str | None
    spill: str | None = None  # a directory: the rows go through an Arrow file there, not the pipe


@dataclass
class _RangePiece:
    """A range decoded: every row's position, TOTALSIZE and status; the export rows of its messages (or
    the Arrow file that holds them)."""

    task: _RangeTask
    phy: np.ndarray
    size: np.ndarray
    status: np.ndarray
    rows: pa.RecordBatch | str

    def batch(self) -> pa.RecordBatch:
        """The rows; from a spill file, mapped (no copy: the map lives as long as the batch) and the
        file's name removed."""
        if isinstance(self.rows, pa.RecordBatch):
            return self.rows
        rows = pa.ipc.open_file(pa.memory_map(self.rows)).get_batch(0)
        os.unlink(self.rows)
        return rows


def _export_range(task: _RangeTask) -> _RangePiece:
    """Decode one range and build its export columns (runs in a worker)."""
    from formats.columnar.decoder import _status_codes, decode_range, decode_resync
    from store.log.mappedfile import MappedFile

    f = MappedFile(Path(task.path), task.base, task.size)
    try:
        decode = decode_resync if task.resync else decode_range
        batch = decode(
            f.buffer(), task.base, task.start, task.end, check_crc=task.check_crc, with_body=task.with_body
        )
        rows = export_batch(batch, with_body=task.with_body, topic=task.topic)
        if task.spill is not None:  # one copy into memory the parent maps, instead of four through a pipe
            path = os.path.join(task.spill, f"{task.file_index}-{task.start}.arrow")
            with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, rows.schema) as writer:
                writer.write_batch(rows)
            rows = path
        phy = batch.column("physicalOffset").to_numpy().copy()
        size = batch.column("totalSize").to_numpy().astype(np.int64)
        piece = _RangePiece(task, phy, size, _status_codes(batch).copy(), rows)
        del batch
        return piece
    finally:
        f.close()


def iter_export_batches(
    store: Store,
    *,
    topic: str | None = None,
    from_offset: int | None = None,
    to_offset: int | None = None,
    with_body: bool = False,
    check_crc: bool = False,
    limit: int | None = None,
    summary: ExportSummary | None = None,
    progress: Callable[[int], None] | None = None,
    jobs: int = 1,
    range_size: int | None = None,
) -> Iterator[pa.RecordBatch]:
    """Export batches of the range, in physical order; fills `summary` (stop, counts) as it goes.

    The walk is the broker's (`store.log.scan.iter_batches`): from `from_offset` (a record start,
    checked), a BLANK moves on to the next file, the first other row that is not a message ends it. Its
    byte ranges (`store.log.ranges`, at most 64 MiB each) are decoded and turned into export rows by
    `jobs` worker processes, and consumed here in order (each becomes a batch: a Parquet row group)."""
    from formats.columnar.decoder import STATUS_NAMES, STATUS_OK
    from store.log.dledger import DLedgerCommitLog
    from store.log.ranges import auto_range_size, byte_ranges, run_in_order, with_data, workers_for

    if from_offset is not None and to_offset is not None and to_offset <= from_offset:
        raise UsageError("--to-offset must be greater than --from-offset")
    commitlog = store.commitlog
    if isinstance(commitlog, DLedgerCommitLog):  # DLedger's entry walk decides each file's end: one process
        yield from _iter_entry_batches(
            store, topic, from_offset, to_offset, with_body, check_crc, limit, summary, progress
        )
        return
    files = commitlog.files
    if not files:
        return
    first, pos = 0, 0
    if from_offset is not None:
        first, f = commitlog._file_for(from_offset)
        pos = from_offset - f.start_offset
        if pos:
            commitlog._check_boundary(f, pos, check_crc)
    sizes = [f.size for f in files]
    if to_offset is not None:  # no range starts at or after to_offset
        sizes = [max(0, min(size, to_offset - f.start_offset)) for size, f in zip(sizes, files, strict=True)]
    jobs = workers_for(sum(sizes[first:]) - pos, jobs)
    size = range_size or min(64 << 20, auto_range_size(sum(sizes[first:]) - pos, jobs))
    spill = _spill_dir() if jobs > 1 else None
    tasks = []
    for r in with_data(byte_ranges(sizes, size, first, pos), [f.path for f in files]):
        f = files[r.file_index]
        resync = (r.file_index, r.start) != (first, pos)
        task = _RangeTask(
            str(f.path),
            f.start_offset,
            f.size,
            r.file_index,
            r.start,
            r.end,
            resync,
            check_crc,
            with_body,
            topic,
            spill,
        )
        tasks.append(task)
    written = 0
    done_file = -1  # a file whose walk ended in a BLANK: its later ranges are not part of the walk
    pieces = run_in_order(_export_range, tasks, jobs)
    try:
        for n, piece in enumerate(pieces):
            task = piece.task
            if progress is not None:
                progress(task.end - task.start)
            if task.file_index == done_file:
                continue
            rows, phy, status, sizes_of = piece.batch(), piece.phy, piece.status, piece.size
            if to_offset is not None and len(phy) and phy[-1] >= to_offset:
                keep = int(np.searchsorted(phy, to_offset))
                phy, status, sizes_of = phy[:keep], status[:keep], sizes_of[:keep]
                rows = rows.filter(pc.less(rows.column("physicalOffset"), to_offset))
            stop = None
            if len(status) and status[-1] != STATUS_OK:
                stop = STATUS_NAMES[int(status[-1])]
            if summary is not None:
                summary.bytes_read += int(sizes_of[status == STATUS_OK].sum())
                if stop not in (None, "blank"):
                    summary.stop = _stop_row(files[task.file_index], int(phy[-1]), stop)
            if limit is not None and written + rows.num_rows > limit:
                rows = rows.slice(0, limit - written)
            if rows.num_rows:
                written += rows.num_rows
                if summary is not None:
                    _count(summary, rows)
                yield rows
            if limit is not None and written >= limit:
                return
            if stop == "blank":
                done_file = task.file_index
                continue
            if stop is not None or (to_offset is not None and len(phy) < len(piece.phy)):
                return  # the walk ends here (a failure or the end of the data), or at to_offset
            following = tasks[n + 1] if n + 1 < len(tasks) else None
            if following is None or following.file_index != task.file_index:
                return  # records up to the very end of a file: the next read fails there
    finally:
        pieces.close()
        if spill is not None:
            shutil.rmtree(spill, ignore_errors=True)


def _spill_dir() -> str:
    """A directory for the workers' Arrow files: in memory (/dev/shm) where there is one."""
    shm = "/dev/shm"
    return tempfile.mkdtemp(prefix="mqtool-export-", dir=shm if os.access(shm, os.W_OK) else None)


def _stop_row(f, physical_offset: int, status: str) -> dict[str, Any]:
    """The summary's `stop`: where the walk ended in file `f`, and why."""
    return {
        "physicalOffset": physical_offset,
        "status": status,
        "file": f.name,
        "position": physical_offset - f.start_offset,
    }


def _count(summary: ExportSummary, rows: pa.RecordBatch) -> None:
    phys = rows.column("physicalOffset")
    summary.messages += rows.num_rows
    if summary.first_offset is None:
        summary.first_offset = phys[0].as_py()
    summary.last_offset = phys[rows.num_rows - 1].as_py()
    for row in rows.column("topic").value_counts().to_pylist():
        summary.topics[row["values"]] = summary.topics.get(row["values"], 0) + row["counts"]


def _json_rows(batch: pa.RecordBatch) -> Iterator[str]:
    for row in batch.to_pylist():
        props = row.get("properties")
        row["properties"] = dict(props) if props is not None else {}
        body = row.get("body")
        if body is not None:
            row["body"] = base64.b64encode(body).decode("ascii")
        yield json.dumps(row, ensure_ascii=False)


PARQUET_MARK = {b"mqtool": b"export"}
"""Key-value metadata of every Parquet file `write_batches` writes: how `is_export_file` knows it."""
_JSONL_HEAD = re.compile(rb'\{"physicalOffset": \d+, "totalSize": -?\d+, "magicCode": ')


def is_export_file(path: Path) -> bool:
    """Whether `path` is a file `write_batches` wrote (so an export may replace it): a Parquet file with
    `PARQUET_MARK` or the export's columns (files of earlier versions), or a JSONL file that is empty or
    starts with an export row."""
    with open(path, "rb") as fh:
        head = fh.read(4)
        if head == b"PAR1":
            import pyarrow.parquet as pq

            schema = pq.read_schema(path)
            names = tuple(schema.names)
            return (schema.metadata or {}).get(b"mqtool") == b"export" or names in (
                _COLUMNS,
                (*_COLUMNS, "body"),
            )
        return head == b"" or bool(_JSONL_HEAD.match(head + fh.read(60)))


def export_output(
    path: Path | str, *, option: str, stores: list[Path | str | None], force: bool = False
) -> OutputFile:
    """Where an export or a Parquet dump may write (mqtool.outputs): in no store, replacing only a file
    an export wrote unless `force`."""
    return output_file(
        path, option=option, what="an export file", stores=stores, written_by=is_export_file, force=force
    )


def write_batches(
    batches: Iterator[pa.RecordBatch], target: OutputFile, fmt: str, *, with_body: bool
) -> None:
    """Write export batches to one Parquet file (one row group per batch) or one JSONL file, under a
    temporary name renamed over the target at the end."""
    if fmt not in EXPORT_FORMATS:
        raise UsageError(f"unknown export format {fmt!r}; choose one of {', '.join(EXPORT_FORMATS)}")
    try:
        target.path.parent.mkdir(parents=True, exist_ok=True)
        if fmt == "parquet":
            import pyarrow.parquet as pq

            with replacing(target) as out:
                writer = None
                try:
                    for batch in batches:
                        if writer is None:
                            schema = batch.schema.with_metadata(PARQUET_MARK)
                            writer = pq.ParquetWriter(out, schema, compression="zstd")
                        writer.write_batch(batch)
                    if writer is None:
                        schema = export_schema(with_body).with_metadata(PARQUET_MARK)
                        writer = pq.ParquetWriter(out, schema, compression="zstd")
                finally:
                    if writer is not None:
                        writer.close()
        else:
            with replacing(target, "w") as out:
                for batch in batches:
                    for line in _json_rows(batch):
                        out.write(line)
                        out.write("\n")
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise MqtoolError(f"cannot write: {exc.strerror}", target.given) from exc


def export_schema(with_body: bool) -> pa.Schema:
    """The schema of export batches (for empty outputs)."""
    from formats.columnar.decoder import MESSAGE_SCHEMA

    fields = []
    for name in _COLUMNS:
        if name == "properties":
            fields.append(pa.field(name, PROPERTIES_TYPE))
        elif name == "offsetMsgId" or name in ("topic", "bornHost", "storeHost"):
            fields.append(pa.field(name, pa.string()))
        else:
            fields.append(MESSAGE_SCHEMA.field(name))
    if with_body:
        fields.append(pa.field("body", pa.binary()))
    return pa.schema(fields)


def _iter_entry_batches(
    store: Store,
    topic: str | None,
    from_offset: int | None,
    to_offset: int | None,
    with_body: bool,
    check_crc: bool,
    limit: int | None,
    summary: ExportSummary | None,
    progress: Callable[[int], None] | None,
) -> Iterator[pa.RecordBatch]:
    """iter_export_batches over a DLedger commitlog: `store.log.scan.iter_batches` walks the classic part,
    then each data file's entries, in one process."""
    from store.log.scan import iter_batches

    written = 0
    for f, batch in iter_batches(
        store.commitlog, from_offset, to_offset, check_crc=check_crc, with_body=with_body, progress=progress
    ):
        last = batch.num_rows - 1
        status = batch.column("status").cast(pa.string())[last].as_py()
        if summary is not None:
            ok = batch.column("status").indices.to_numpy() == 0
            summary.bytes_read += int(batch.column("totalSize").to_numpy()[ok].sum())
            if status not in ("ok", "blank"):
                summary.stop = _stop_row(f, batch.column("physicalOffset")[last].as_py(), status)
        out = export_batch(batch, with_body=with_body, topic=topic)
        if limit is not None and written + out.num_rows > limit:
            out = out.slice(0, limit - written)
        if out.num_rows:
            written += out.num_rows
            if summary is not None:
                _count(summary, out)
            yield out
        if limit is not None and written >= limit:
            return


def export_range(
    store: Store,
    output: Path,
    *,
    fmt: str = "parquet",
    topic: str | None = None,
    from_offset: int | None = None,
    to_offset: int | None = None,
    with_body: bool = False,
    check_crc: bool = False,
    progress: Callable[[int], None] | None = None,
    jobs: int = 1,
    force: bool = False,
) -> ExportSummary:
    """`mqtool export`: the messages of [from_offset, to_offset) (optionally one topic) into
    OUTPUT/messages.parquet or OUTPUT/messages.jsonl, decoded over `jobs` worker processes; OUTPUT is
    checked first (mqtool.outputs): in no store, and an existing file there replaced only when an export
    wrote it, or with `force`. With a tiered tree named (--tiered, broker.conf) and no offset range, the
    messages the broker serves from the tiered store come first (`mqtool.tiered.export`)."""
    if fmt not in EXPORT_FORMATS:
        raise UsageError(f"unknown export format {fmt!r}; choose one of {', '.join(EXPORT_FORMATS)}")
    directory = output_directory(output, option="--output", stores=[store.root])
    path = Path(output) / f"messages.{fmt}"
    target = export_output(directory / path.name, option="--output", stores=[store.root], force=force)
    summary = ExportSummary(str(path), fmt)
    batches = iter_export_batches(
        store,
        topic=topic,
        from_offset=from_offset,
        to_offset=to_offset,
        with_body=with_body,
        check_crc=check_crc,
        summary=summary,
        progress=progress,
        jobs=jobs,
    )
    if store.tiered is not None and from_offset is None and to_offset is None:
        from mqtool.tiered.export import TieredExport, iter_tiered_batches

        summary.tiered = TieredExport()
        older = iter_tiered_batches(
            store, topic=topic, with_body=with_body, check_crc=check_crc, report=summary.tiered
        )
        batches = itertools.chain(_counted(older, summary), batches)
    write_batches(batches, target, fmt, with_body=with_body)
    return summary


def _counted(batches: Iterator[pa.RecordBatch], summary: ExportSummary) -> Iterator[pa.RecordBatch]:
    """The batches, counted into the summary's messages and topics (not its physical offsets: these are
    another log's)."""
    for batch in batches:
        summary.messages += batch.num_rows
        for row in batch.column("topic").value_counts().to_pylist():
            summary.topics[row["values"]] = summary.topics.get(row["values"], 0) + row["counts"]
        yield batch


def dump_commitlog_parquet(
    store: Store,
    output: Path,
    *,
    from_offset: int | None = None,
    count: int | None = None,
    topic: str | None = None,
    with_body: bool = False,
    check_crc: bool = True,
    progress: Callable[[int], None] | None = None,
    jobs: int = 1,
    force: bool = False,
) -> ExportSummary:
    """`dump commitlog --format parquet --output FILE`: like the dump (CRC checked by default, `count`
    messages at most), written to one Parquet file through the columnar path (`jobs` worker processes)."""
    if count is not None and count < 0:
        raise UsageError("--count must not be negative")
    target = export_output(output, option="--output", stores=[store.root], force=force)
    summary = ExportSummary(str(output), "parquet")
    batches = iter_export_batches(
        store,
        topic=topic,
        from_offset=from_offset,
        with_body=with_body,
        check_crc=check_crc,
        limit=count,
        summary=summary,
        progress=progress,
        jobs=jobs,
    )
    write_batches(batches, target, "parquet", with_body=with_body)
    return summary


__all__ = [
    "EXPORT_FORMATS",
    "ExportSummary",
    "dump_commitlog_parquet",
    "export_batch",
    "export_range",
    "export_output",
    "export_schema",
    "hex16",
    "is_export_file",
    "iter_export_batches",
    "offset_msg_ids",
    "properties_map",
    "write_batches",
]
