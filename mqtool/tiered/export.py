"""`mqtool export --tiered`: the messages a broker with the tiered plugin serves from its tiered store, as
export batches, ahead of the local commitlog's.

Per tiered queue (of --topic, or all), the queue offsets the broker reads from the tiered store
(`mqtool.tiered.fetch.tiered_span`: from the tiered minimum up to where the local store takes over) are
taken from the queue's COMMIT_LOG segments, each segment decoded whole by the columnar decoder up to its
commit position (a segment holds whole messages of that one queue, in queue order). Their physicalOffset is
the tiered COMMIT_LOG's - the upload rewrites PHYSICALOFFSET - and so is their offsetMsgId, as the broker
serves them. A segment whose walk stops at a damaged message, a missing segment file, or a queue whose
exported messages do not cover its span is said in the summary's `tiered.problems`, naming the file and
offset; the rest is exported. The local part of the export is the commitlog's records, as always: where the
tiered store serves offsets the local commitlog also holds (a queue whose local ConsumeQueue is gone), both
are exported, each with its own physicalOffset.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from formats.errors import MqtoolError
from store.checks.records import take_rows
from store.storedir import Store
from store.tiered.scan import decode_segment


@dataclass
class TieredExport:
    """What the tiered part of an export wrote: messages per queue and what could not be read."""

    messages: int = 0
    queues: dict[str, int] = field(default_factory=dict)  # "topic/queueId" -> messages exported
    problems: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"messages": self.messages, "queues": self.queues, "problems": self.problems}


def iter_tiered_batches(
    store: Store, *, topic: str | None, with_body: bool, check_crc: bool, report: TieredExport
) -> Iterator[pa.RecordBatch]:
    """Export batches (`mqtool.export.export_batch`) of the messages the broker serves from the tiered
    store, queue by queue in (topic, queueId) order, each queue's in queue-offset order; fills `report`."""
    from mqtool.export import export_batch
    from mqtool.tiered.fetch import tiered_span

    tiered = store.tiered
    if tiered is None:
        return
    for t, q in tiered.queues():
        if topic is not None and t != topic:
            continue
        try:
            span = tiered_span(store, t, q)
            low = None if span is None else span[0].min_offset
        except MqtoolError as exc:
            report.problems.append(f"{t}/{q}: {exc}")
            continue
        if span is None or low >= span[1]:
            continue
        queue, stop = span
        expected, exported = stop - low, 0
        for batch in _segment_batches(queue, with_body, check_crc, report):
            offsets = batch.column("queueOffset").to_numpy(zero_copy_only=False)
            keep = np.flatnonzero((offsets >= low) & (offsets < stop))
            if len(keep) != batch.num_rows:
                names = batch.schema.names
                batch = pa.RecordBatch.from_arrays(
                    [take_rows(batch.column(c), keep) for c in names], names=names
                )
            out = export_batch(batch, with_body=with_body)
            unnamed = out.column("offsetMsgId").null_count
            if unnamed:
                report.problems.append(
                    f"{t}/{q}: {unnamed} message(s) whose store host is no address:port (a port past 65535; "
                    "a client's decode rejects them): exported with offsetMsgId null"
                )
            exported += out.num_rows
            if out.num_rows:
                yield out
        report.messages += exported
        report.queues[f"{t}/{q}"] = exported
        if exported != expected:
            report.problems.append(
                f"{t}/{q}: {exported} of the {expected} messages the broker serves from the tiered store "
                f"(queue offsets [{low}, {stop})) exported"
            )


def _segment_batches(
    queue, with_body: bool, check_crc: bool, report: TieredExport
) -> Iterator[pa.RecordBatch]:
    """Each COMMIT_LOG segment of the queue decoded up to its commit position (its accepted rows)."""
    for segment in queue.commit_log.segments:
        if segment.file_size is None:
            report.problems.append(f"{segment.path}: segment file is missing (listed in the metadata)")
            continue
        scan = decode_segment(
            str(segment.path),
            segment.base_offset,
            segment.commit_position,
            check_crc=check_crc,
            with_body=with_body,
        )
        if scan.error is not None:
            report.problems.append(f"{segment.path}: {scan.error}")
        if scan.stop is not None:
            position, status = scan.stop
            report.problems.append(
                f"{segment.path}: offset {position}: {status} (the rest of the segment is not exported)"
            )
        if scan.batch is not None and scan.batch.num_rows:
            yield scan.batch
