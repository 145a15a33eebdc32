"""`dlq export`: the selected dead letters to a JSONL, CSV or Parquet file, one row per message.

Columns: the fields of `dlq list` (`DlqRow.to_json`), then `properties` (every stored property: a map in
Parquet, an object in JSONL, a JSON object text in CSV) and, with bodies, `body` (the stored bytes; base64
in JSONL and CSV). The output file is checked and written as every output is (`mqtool.outputs`: in no
store, replaced atomically, an existing file only when a dlq export wrote it or with `force`); Parquet and
JSONL go through `mqtool.export.write_batches`.
"""

from __future__ import annotations

import base64
import csv
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from formats.errors import MqtoolError, UsageError
from mqtool.dlq.listing import DlqRow
from mqtool.dlq.selection import DlqSelector, select_dead_letters
from mqtool.export import PROPERTIES_TYPE, write_batches
from mqtool.outputs import OutputFile, output_file, replacing
from store.broker.messagerebuild import read_message_or_none
from store.storedir import Store

DLQ_EXPORT_FORMATS = ("jsonl", "csv", "parquet")

_INT = pa.int64()
_STR = pa.string()
ROW_SCHEMA = pa.schema(
    [
        ("group", _STR),
        ("topic", _STR),
        ("queueId", _INT),
        ("queueOffset", _INT),
        ("physicalOffset", _INT),
        ("storeTimestamp", _INT),
        ("bornTimestamp", _INT),
        ("reconsumeTimes", _INT),
        ("uniqKey", _STR),
        ("offsetMsgId", _STR),
        ("originMessageId", _STR),
        ("originTopic", _STR),
        ("originQueueId", _INT),
        ("originQueueOffset", _INT),
        ("originStoreTimestamp", _INT),
        ("realTopic", _STR),
        ("realQueueId", _INT),
        ("keys", _STR),
        ("tags", _STR),
        ("bodySize", _INT),
        ("originNote", _STR),
        ("properties", PROPERTIES_TYPE),
    ]
)
COLUMNS = tuple(ROW_SCHEMA.names)


def row_schema(with_body: bool) -> pa.Schema:
    return ROW_SCHEMA.append(pa.field("body", pa.binary())) if with_body else ROW_SCHEMA


@dataclass
class DlqExportSummary:
    output: str
    format: str
    messages: int = 0
    groups: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "output": self.output,
            "format": self.format,
            "messages": self.messages,
            "groups": self.groups,
        }


def file_format_for(path: Path | str, given: str | None) -> str:
    """`given`, else the output's suffix when it names one of the formats, else jsonl."""
    if given is not None:
        if given not in DLQ_EXPORT_FORMATS:
            raise UsageError(f"--file-format must be one of {', '.join(DLQ_EXPORT_FORMATS)}, not {given!r}")
        return given
    suffix = Path(path).suffix.lstrip(".").lower()
    return suffix if suffix in DLQ_EXPORT_FORMATS else "jsonl"


def is_dlq_export_file(path: Path) -> bool:
    """Whether `path` is a file a dlq export wrote: Parquet with `mqtool.export.PARQUET_MARK` and these
    columns, a CSV whose first line is the export's header, or a JSONL file that is empty or starts
    with an export row."""
    with open(path, "rb") as fh:
        head = fh.read(4)
        if head == b"PAR1":
            import pyarrow.parquet as pq

            schema = pq.read_schema(path)
            marked = (schema.metadata or {}).get(b"mqtool") == b"export"
            return marked and tuple(schema.names) in (COLUMNS, (*COLUMNS, "body"))
        first = (head + fh.readline()).rstrip(b"\r\n")
    if not first:
        return True
    header = ",".join(COLUMNS).encode()
    return first in (header, header + b",body") or first.startswith(b'{"group": ')


def _rows(store: Store, rows: list[DlqRow], with_body: bool, warnings: list[str]) -> Iterator[dict[str, Any]]:
    for r in rows:
        data = r.to_json()
        msg = read_message_or_none(store, r.physical_offset, None)
        if msg is None:  # deleted between the listing and now
            warnings.append(f"no message at commitlog offset {r.physical_offset} any more")
            continue
        data["properties"] = list(msg.properties.items())
        if with_body:
            data["body"] = msg.body
        yield data


def export_dead_letters(
    store: Store,
    output: Path | str,
    *,
    fmt: str | None = None,
    with_body: bool = False,
    group: str | None = None,
    selector: DlqSelector | None = None,
    force: bool = False,
) -> DlqExportSummary:
    """Write the dead letters of `group` (or every DLQ group) that `selector` picks to `output`."""
    fmt = file_format_for(output, fmt)
    target = output_file(
        output,
        option="--output",
        what="a dlq export file",
        stores=[store.root],
        written_by=is_dlq_export_file,
        force=force,
    )
    listing = select_dead_letters(store, group, selector or DlqSelector())
    summary = DlqExportSummary(str(output), fmt, groups=listing.groups, warnings=list(listing.warnings))
    rows = list(_rows(store, listing.rows, with_body, summary.warnings))
    summary.messages = len(rows)
    if fmt == "csv":
        _write_csv(rows, target, with_body)
        return summary
    schema = row_schema(with_body)
    batch = pa.RecordBatch.from_pylist(rows, schema=schema)
    write_batches(iter([batch]), target, fmt, with_body=with_body)
    return summary


def _write_csv(rows: list[dict[str, Any]], target: OutputFile, with_body: bool) -> None:
    names = [*COLUMNS, "body"] if with_body else list(COLUMNS)
    try:
        target.path.parent.mkdir(parents=True, exist_ok=True)
        with replacing(target, "w") as out:
            writer = csv.writer(out, lineterminator="\n")
            writer.writerow(names)
            for row in rows:
                values = dict(row)
                values["properties"] = json.dumps(dict(row["properties"]), ensure_ascii=False)
                if with_body:
                    values["body"] = base64.b64encode(row["body"]).decode("ascii")
                writer.writerow(["" if values[n] is None else values[n] for n in names])
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise MqtoolError(f"cannot write: {exc.strerror}", target.given) from exc


__all__ = ["DLQ_EXPORT_FORMATS", "DlqExportSummary", "export_dead_letters", "is_dlq_export_file"]
