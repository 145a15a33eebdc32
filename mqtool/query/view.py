"""A found message as `mqtool query` hands it out: the body view (decompressed, as text where it is
UTF-8), the message document (msgId, body text, consumedBy and consumedReason per group), and the export of
bodies to one file each with a manifest.json (as mqadmin queryMsgById stores a message body to a file).
Nothing here writes into the store.
"""

from __future__ import annotations

import base64
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from formats.errors import MqtoolError
from formats.message.commitlog import Message
from formats.message.compression import BodyNotDecoded
from mqtool.outputs import OutputFile, OutputRefused, output_directory, replacing
from mqtool.query.consumed import ConsumerState
from store.io.pathnames import component_problem
from store.storedir import Store


class ExportError(MqtoolError):
    """The export directory cannot be used."""


@dataclass
class BodyView:
    data: bytes  # decompressed when possible
    decompressed: bool
    error: str | None
    text: str | None  # when `data` is valid UTF-8


def body_view(msg: Message) -> BodyView:
    data, decompressed, error = msg.body, False, None
    if msg.compression:
        try:
            data, decompressed = msg.decompressed_body(), True
        except BodyNotDecoded as exc:
            error = str(exc)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    return BodyView(data, decompressed, error, text)


def message_document(
    msg: Message, consumers: ConsumerState | None = None, *, body_limit: int | None = None
) -> dict[str, Any]:
    """Message.to_json plus msgId, the body as text where possible, consumedBy {group: bool} (the group's
    committed offset is past the message) and consumedReason {group: why, in words} (`mqtool.query.consumed`:
    the groups of consumedBy, and the group of a retry or dead-letter copy)."""
    doc = msg.to_json(include_body=True)
    view = body_view(msg)
    if body_limit is not None and len(msg.body) > body_limit:
        doc["body"] = base64.b64encode(msg.body[:body_limit]).decode("ascii")
    doc["msgId"] = msg.uniq_key or msg.offset_msg_id
    doc["bodyCompression"] = msg.compression
    doc["bodyDecompressed"] = view.decompressed
    if view.error:
        doc["bodyError"] = view.error
    text = view.text
    if text is not None and body_limit is not None and len(text) > body_limit:
        text = text[:body_limit]
    doc["bodyText"] = text
    doc["bodyTruncated"] = body_limit is not None and len(view.data) > body_limit
    doc["consumedBy"] = consumers.consumed_by(msg) if consumers is not None else {}
    verdicts = consumers.verdicts(msg) if consumers is not None else {}
    doc["consumedReason"] = {group: verdict.reason for group, verdict in verdicts.items()}
    return doc


_UNSAFE = re.compile(r"[^A-Za-z0-9%_.+-]")


@dataclass
class ExportResult:
    directory: Path
    files: list[str]
    manifest: Path


def export_file_name(msg: Message) -> str:
    """The file an exported body is written to: the topic with every character a file name should not
    hold replaced, cut to 100 characters, then queue, queue offset and physical offset; checked to be one
    file name (`store.io.pathnames.component_problem`) like every name from a store that becomes a path."""
    topic = _UNSAFE.sub("_", msg.topic)[:100]
    name = f"{topic}_{msg.queue_id}_{msg.queue_offset}_{msg.physical_offset}.bin"
    problem = component_problem(name)
    if problem is not None:  # pragma: no cover - the replacement leaves no such name
        raise ExportError(f"export file name {name!r} {problem}")
    return name


def export_directory(directory: Path | str, store: Store, *, force: bool = False) -> Path:
    """The real path of an export directory (mqtool.outputs): in no store, and without an earlier
    export's manifest.json unless `force`."""
    target = output_directory(directory, option="--export", stores=[store.root])
    if not force and os.path.lexists(target / "manifest.json"):
        raise OutputRefused(
            "--export already holds an export (manifest.json); choose another directory or add --force",
            str(directory),
        )
    return target


def export_messages(
    messages: list[Message],
    directory: Path | str,
    store: Store,
    consumers: ConsumerState | None = None,
    *,
    force: bool = False,
) -> ExportResult:
    """Write each body (decompressed when possible) to its own file and a manifest.json describing them.

    The directory is checked first (mqtool.outputs): in no store; one that holds a manifest.json (an
    earlier export) or a file of a name to be written is refused unless `force`. Each file is written
    under a temporary name and renamed into place.
    """
    target = export_directory(directory, store, force=force)
    given = str(directory)
    manifest = target / "manifest.json"
    names = [export_file_name(m) for m in messages]
    if not force:
        taken = next((name for name in names if os.path.lexists(target / name)), None)
        if taken is not None:
            raise OutputRefused(
                f"--export already holds a file {taken}; choose another directory or add --force", given
            )
    try:
        target.mkdir(parents=True, exist_ok=True)
        entries = []
        for msg, name in zip(messages, names, strict=True):
            view = body_view(msg)
            with replacing(OutputFile(target / name, given)) as out:
                out.write(view.data)
            doc = message_document(msg, consumers)
            for key in ("body", "bodyText"):
                doc.pop(key, None)
            doc["file"] = name
            doc["fileLength"] = len(view.data)
            entries.append(doc)
        with replacing(OutputFile(manifest, given), "w") as out:
            out.write(json.dumps(entries, ensure_ascii=False, indent=2) + "\n")
    except OSError as exc:
        raise ExportError(f"cannot write the export: {exc.strerror or exc}", str(target)) from exc
    return ExportResult(target, names, manifest)
