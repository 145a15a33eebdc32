"""The audit's result written out: the `--output` directory (`prepare_output`: new, empty or an earlier
audit's; `drop_invalid_message_files`: the message files of splits after the recovery cut), its Parquet
tables, audit.json and report.html (`write_output`), and the `--format json` document (`json_document`;
the terminal tables are in `mqtool.cli.batch.audit_render`). Knows the result document that
`mqtool.audit.run_audit` assembles, and the splits' message files.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from mqtool.audit.executor.scan import message_file, message_name
from mqtool.audit.plan import AuditError
from mqtool.outputs import OutputRefused, output_directory
from store.io.remote import is_url, join, redact, write_bytes

if TYPE_CHECKING:
    from mqtool.audit.plan import Split
    from mqtool.audit.run import AuditResult

OUTPUT_MARKER = "audit.json"  # an earlier audit's directory may be written again

TABLES = {
    "queues": (
        "store",
        "topic",
        "queueId",
        "messages",
        "bytes",
        "firstStoreTimestamp",
        "lastStoreTimestamp",
        "records",
        "recordBytes",
        "prepared",
        "rolledBack",
        "minQueueOffset",
        "maxQueueOffset",
        "bodyBytes",
        "cqMinOffset",
        "cqMaxOffset",
        "cqMessages",
        "cqError",
    ),
    "problems": ("store", "file", "offset", "kind", "severity", "detail"),
    "lag": (
        "store",
        "group",
        "topic",
        "queueId",
        "consumerOffset",
        "minOffset",
        "maxOffset",
        "lag",
        "state",
        "firstUnconsumedStoreTimestamp",
        "lagMs",
        "lastConsumedTimestamp",
    ),
    "topics": ("store", "topic", "queues", "messages", "records", "bytes", "share"),
    "rates": ("store", "topic", "bucketStart", "messages", "bytes"),
    "bodySizes": ("store", "topic", "minSize", "maxSize", "messages", "bodyBytes"),
    "delay": (
        "store",
        "level",
        "delayMs",
        "queueId",
        "minOffset",
        "maxOffset",
        "delayOffset",
        "startOffset",
        "backlog",
        "due",
        "oldestDeliverTimestamp",
        "lateMs",
        "stuck",
    ),
    "timer": (
        "store",
        "messages",
        "notEnqueued",
        "waiting",
        "due",
        "overdue",
        "nextHour",
        "nextDay",
        "later",
        "oldestOverdueMs",
        "lateMs",
        "lastReadTimeMs",
        "readBehindMs",
        "stuck",
        "skippedOnRestart",
        "states",
    ),
    "pop": (
        "store",
        "group",
        "popped",
        "acked",
        "inFlight",
        "overdue",
        "revived",
        "oldestInvisibleUntil",
        "oldestOverdue",
        "lateMs",
        "orderly",
        "reviveBacklog",
    ),
    "duplicates": ("store", "by", "topic", "key", "messages", "firstPhyOffset", "lastPhyOffset"),
    "replicas": (
        "group",
        "storeA",
        "storeB",
        "identical",
        "maxOffsetA",
        "maxOffsetB",
        "commonPrefixEnd",
        "firstDifference",
        "ahead",
        "messagesPastPrefixA",
        "messagesPastPrefixB",
        "ha",
        "notCompared",
        "configRowsDiffering",
        "queuesDiffering",
        "notes",
    ),
    "compaction": (
        "store",
        "topic",
        "queueId",
        "served",
        "minOffset",
        "maxOffset",
        "records",
        "keys",
        "superseded",
        "tombstones",
        "logRecords",
        "logBytes",
        "compactedTo",
        "nextCompactionMapEnd",
        "reclaimableRecords",
        "reclaimableBytes",
    ),
    "tiered": (
        "store",
        "topic",
        "queueId",
        "localQueue",
        "localMinOffset",
        "localMaxOffset",
        "tieredMinOffset",
        "tieredMaxOffset",
        "minOffset",
        "maxOffset",
        "commitLogSegments",
        "consumeQueueSegments",
        "scannedMessages",
        "scannedBytes",
        "servedExpected",
        "servedMessages",
        "servedBytes",
        "firstStoreTime",
        "lastStoreTime",
        "damagedSegments",
        "error",
        "note",
    ),
    "retry": ("store", "group", "topic", "kind", "reconsumeTimes", "messages"),
    "trace": (
        "store",
        "traceType",
        "topic",
        "group",
        "records",
        "failed",
        "costP50",
        "costP90",
        "costP99",
        "costMax",
        "firstTimeStamp",
        "lastTimeStamp",
    ),
    "transactions": (
        "store",
        "queueId",
        "halfQueueOffset",
        "phyOffset",
        "state",
        "realTopic",
        "realQueueId",
        "producerGroup",
        "transactionId",
        "checkTimes",
        "bornTimestamp",
    ),
}
_STRING_COLUMNS = {
    "store",
    "topic",
    "file",
    "kind",
    "severity",
    "detail",
    "group",
    "state",
    "cqError",
    "realTopic",
}
_STRING_COLUMNS |= {"producerGroup", "transactionId", "by", "key", "states", "traceType"}
_STRING_COLUMNS |= {"storeA", "storeB", "ahead", "ha", "notCompared", "notes"}


# --- the output directory ----------------------------------------------------------------------------


AUDIT_JSON_HEAD = b'{\n  "scan": {'
"""How audit.json begins (`write_output`: the document's first key): how an earlier audit is known."""


def is_audit_json(head: bytes) -> bool:
    return head.startswith(AUDIT_JSON_HEAD)


def _file_url_path(url: str) -> Path | None:
    parts = urlsplit(url)
    return Path(unquote(parts.path)) if parts.scheme == "file" else None


def _local(location: Path | str) -> Path | str:
    """A file:// URL as its local path; anything else as it is."""
    return (_file_url_path(location) or location) if is_url(location) else location


def _refuse_under_store_urls(output: str, stores: list[Path | str]) -> None:
    """An object-storage output at or under a store's URL would write into that store."""
    out = urlsplit(output)
    for store in stores:
        if not is_url(store):
            continue
        s = urlsplit(str(store))
        base = s.path.rstrip("/")
        same_place = (out.scheme, out.netloc) == (s.scheme, s.netloc)
        if same_place and (out.path.rstrip("/") + "/").startswith(base + "/"):
            raise OutputRefused(
                f"--output is inside the store {redact(str(store))}; choose a path outside it", redact(output)
            )


def prepare_output(output: Path | str | None, stores: list[Path | str] = ()) -> None:
    """Check the output directory before anything is written (mqtool.outputs: in none of the `stores`
    and in nothing that looks like a store), then: it must be new, empty, or an earlier audit's (whose
    message files are removed)."""
    if output is None:
        return
    local_stores = [_local(s) for s in stores]
    if is_url(output):
        local = _file_url_path(str(output))
        if local is not None:
            output_directory(local, option="--output", stores=local_stores)
        _refuse_under_store_urls(str(output), list(stores))
        from mqtool.audit.session.remote import prepare_output as prepare_remote

        prepare_remote(str(output), OUTPUT_MARKER, is_audit_json)
        return
    output_directory(output, option="--output", stores=local_stores)
    if output.exists():
        entries = list(output.iterdir())
        if entries and not _earlier_audit(output):
            raise AuditError(
                "--output is not empty and holds no earlier audit; choose a new directory", str(output)
            )
        shutil.rmtree(output / "messages", ignore_errors=True)
    output.mkdir(parents=True, exist_ok=True)


def _earlier_audit(output: Path) -> bool:
    try:
        with open(output / OUTPUT_MARKER, "rb") as fh:
            return is_audit_json(fh.read(len(AUDIT_JSON_HEAD)))
    except OSError:
        return False


def drop_invalid_message_files(output: Path | str, splits: list[Split], valid: set[int]) -> None:
    for s in splits:
        if s.seq not in valid and is_url(output):
            from mqtool.audit.session.remote import delete_file

            delete_file(join(str(output), "messages", message_name(s.store, s.seq)))
        elif s.seq not in valid:
            path = message_file(str(output.resolve()), s.store, s.seq)
            if path.exists():
                os.unlink(path)


def _flat(document: dict, name: str) -> list[dict]:
    """Rows of a section as a flat table: duplicates one row per named key, retry one per reconsumeTimes."""
    rows = document.get(name, [])
    if name == "duplicates":
        return [{"store": d["store"], "by": d["by"], **t} for d in rows for t in d["top"]]
    if name == "retry":
        return [
            {**r, "reconsumeTimes": int(k), "messages": n}
            for r in rows
            for k, n in r["reconsumeTimes"].items()
        ]
    return rows


def _table(rows: list[dict], columns: tuple[str, ...]):
    import pyarrow as pa

    arrays = {}
    for c in columns:
        values = [r.get(c) for r in rows]
        if c in _STRING_COLUMNS:
            kind = pa.string()
        elif c == "share":
            kind = pa.float64()
        elif c in ("stuck", "orderly", "served", "identical"):
            kind = pa.bool_()
        else:
            kind = pa.int64()
        arrays[c] = pa.array(values, kind)
    return pa.table(arrays)


def write_output(output: Path | str, document: dict) -> None:
    """Parquet tables, audit.json and the self-contained HTML report."""
    import pyarrow.parquet as pq

    from mqtool.audit.results.report import render_html
    from mqtool.render.output import to_json_text

    if is_url(output):  # objects appear whole: no temporary names
        from mqtool.audit.session.remote import write_table

        for name, columns in TABLES.items():
            write_table(_table(_flat(document, name), columns), join(str(output), f"{name}.parquet"))
        write_bytes(join(str(output), "report.html"), render_html(document).encode())
        write_bytes(join(str(output), OUTPUT_MARKER), (to_json_text(document) + "\n").encode())
        return
    for name, columns in TABLES.items():
        tmp = output / f".{name}.parquet.tmp"
        pq.write_table(_table(_flat(document, name), columns), tmp)
        os.replace(tmp, output / f"{name}.parquet")
    _atomic_text(output / "report.html", render_html(document))
    _atomic_text(output / OUTPUT_MARKER, to_json_text(document) + "\n")


def _atomic_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


# --- terminal rendering -----------------------------------------------------------------------------


def json_document(result: AuditResult) -> dict[str, Any]:
    """The `--format json` object (key order: the issue's keys first)."""
    doc = result.document
    order = (
        "queues",
        "problems",
        "lag",
        "delay",
        "timer",
        "pop",
        "transactions",
        "compaction",
        "tiered",
        "replicas",
        "trace",
        "duplicates",
        "retry",
        "topics",
        "stores",
        "failedStores",
        "rates",
        "bodySizes",
        "definitions",
        "scan",
        "now",
        "notes",
    )
    return {k: doc[k] for k in order if k in doc} | {k: v for k, v in doc.items() if k not in order}


__all__ = ["OUTPUT_MARKER", "TABLES", "json_document", "write_output"]
