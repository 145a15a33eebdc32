"""`mqtool bundle -o FILE.tar.gz`: everything needed to look at a store elsewhere, in one archive, as
Redpanda's `rpk debug bundle` does - without message bodies (unless asked) and without secrets.

Members, in this order (the same store gives the same member list, each member dated `--now`):
README.txt (what the archive holds), info.json, startup.json, verify.json, retention.json (the commands'
JSON documents), inventory.json (every file of the store: size, time, and the SHA-256 of its first 4 KiB,
the header), broker.conf (every secret-looking value replaced: `mqtool.oncall.secrets`), config/ (the JSON
config files and their .bak as they are), checkpoint and the other small state files of the root (lock, abort,
epochFileCheckpoint, brokerIdentity), config/timercheck, last-records.json (the last records of the
commitlog: fixed fields, properties; the bodies only with `with_bodies`). Every member passes through the
scrubber, so a secret of broker.conf echoed anywhere leaves as `<redacted>`.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import tarfile
from collections import deque
from dataclasses import dataclass, field
from datetime import tzinfo
from pathlib import Path
from typing import Any

from formats.errors import MqtoolError
from formats.message.commitlog import Message, decode_record
from mqtool.oncall.secrets import Scrubber, sanitize_properties
from mqtool.outputs import OutputFile, output_file, replacing
from mqtool.render.output import to_json_text
from store.storedir import Store

HEADER_BYTES = 4096
ROOT_STATE_FILES = ("checkpoint", "lock", "abort", "epochFileCheckpoint", "brokerIdentity")
CONFIG_SUFFIXES = (".json", ".json.bak")
CONFIG_EXTRA = ("timercheck", "timermetrics", "transactionMetrics")
MAX_CONFIG_BYTES = 64 << 20  # a config file larger than this is listed, not copied

README = """mqtool support bundle
=====================

Store:        {store}
Written at:   {now} (epoch ms; every member is dated so)
By:           mqtool {version}
Bodies:       {bodies}

What is here
------------
README.txt           this file
info.json            `mqtool info --format json`: commitlog range and times, queues, index, checkpoint, config
                     files, the timer wheel, the start-up verdict
startup.json         `mqtool verify --startup --format json`: would a broker started now start, refuse or exit
verify.json          `mqtool verify --format json`: the whole-store check (problems by file and offset)
retention.json       `mqtool retention --format json`: what retention deletes next, and when
inventory.json       every file of the store: path, size, mtime (epoch ms), SHA-256 of its first 4096 bytes
broker.conf          the broker.conf given with --broker-config, every secret-looking value replaced
config/              the store's config/*.json and *.json.bak, and timercheck, as they are on disk
checkpoint, lock, ...  the small state files of the store root, as they are
last-records.json    the last {records} records of the commitlog: fixed fields and properties{body_note}

What is not here
----------------
Message bodies (unless --with-bodies), the commitlog, ConsumeQueue and index files themselves, RocksDB
directories, and every value of a secret-looking broker.conf key (access keys, secret keys, passwords,
tokens, credentials, auth users), which is replaced by <redacted> wherever it would appear.
"""


@dataclass
class BundleSummary:
    """What `write_bundle` wrote."""

    path: str
    members: list[str] = field(default_factory=list)
    bytes: int = 0
    redacted_keys: int = 0
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "bundle": self.path,
            "members": self.members,
            "bytes": self.bytes,
            "secretValuesRedacted": self.redacted_keys,
            "notes": self.notes,
        }


def check_output(store: Store, output: Path, force: bool) -> OutputFile:
    """The archive path, through the one output check (`mqtool.outputs`): in no store, and an existing file
    replaced only when it is a bundle mqtool wrote, or with `force`."""
    return output_file(
        output, option="-o", what="a support bundle", stores=[store.root], written_by=_is_bundle, force=force
    )


def _is_bundle(path: Path) -> bool:
    """Whether `path` is a gzip'd tar whose first member is the README every bundle starts with."""
    try:
        with tarfile.open(path, "r:gz") as tar:
            first = tar.next()
    except (tarfile.TarError, EOFError, OSError):
        return False
    return first is not None and first.name == "mqtool-bundle/README.txt"


def inventory(store: Store) -> list[dict[str, Any]]:
    """Every file under the store root, sorted by path: size, mtime, SHA-256 of its first 4 KiB."""
    rows = []
    for dirpath, dirnames, filenames in os.walk(store.root):
        dirnames.sort()
        for name in sorted(filenames):
            path = Path(dirpath) / name
            rel = str(path.relative_to(store.root))
            try:
                st = path.lstat()
                digest = None
                if path.is_file() and not path.is_symlink():
                    with open(path, "rb") as fh:
                        digest = hashlib.sha256(fh.read(HEADER_BYTES)).hexdigest()
                rows.append(
                    {
                        "path": rel,
                        "size": st.st_size,
                        "mtimeMs": st.st_mtime_ns // 1_000_000,
                        "headSha256": digest,
                    }
                )
            except OSError as exc:
                rows.append({"path": rel, "error": exc.strerror})
    rows.sort(key=lambda r: r["path"])
    return rows


def last_records(store: Store, count: int, with_bodies: bool) -> list[dict[str, Any]]:
    """The last `count` accepted records of the commitlog, oldest first (walked with the broker's check
    from the start of the last files holding records)."""
    kept: deque[tuple[Any, int]] = deque()
    log = store.commitlog
    for f in reversed(log.files):
        if len(kept) >= count:
            break
        kept.extendleft((f, pos) for pos in reversed(log.tail_positions(f, count - len(kept))))
    out = []
    for f, pos in kept:
        record = decode_record(f.buffer(), pos, f.start_offset, check_crc=False, file=str(f.path))
        if isinstance(record, Message):
            out.append(record.to_json(include_body=with_bodies))
    return out


def write_bundle(
    store: Store,
    output: Path,
    *,
    now_ms: int,
    zone: tzinfo,
    with_bodies: bool = False,
    records: int = 20,
    force: bool = False,
    disk_used: float | None = None,
    jobs: int = 1,
) -> BundleSummary:
    """Write the bundle of `store` to `output` (atomically: a temporary file beside it, then a rename).
    verify's pass over the commitlog (in byte ranges over `jobs` worker processes) runs first: it records
    every file's walk (`store.log.walks`), from which info's end and newest record, the start-up verdict's
    recovery end and the last records are then answered without reading the log again."""
    from mqtool import __version__
    from mqtool.info import store_info
    from mqtool.oncall.retention import retention_report
    from mqtool.verify import startup_check, verify_store

    target = check_output(store, output, force)
    scrubber = Scrubber()
    members: list[tuple[str, bytes]] = []
    notes: list[str] = []
    conf_text = None
    if store.broker_config.source:
        raw = Path(store.broker_config.source).read_text(encoding="utf-8", errors="replace")
        conf_text = sanitize_properties(raw, scrubber)

    def build_document(name: str, build) -> tuple[bytes, str | None]:
        try:
            return (to_json_text(build()) + "\n").encode("utf-8"), None
        except MqtoolError as exc:
            return (to_json_text({"error": str(exc)}) + "\n").encode("utf-8"), f"{name}: {exc}"

    def document(name: str, build, built: tuple[bytes, str | None] | None = None) -> None:
        content, note = built or build_document(name, build)
        members.append((name, content))
        if note:
            notes.append(note)

    body_note = ", and bodies (base64)" if with_bodies else " (no bodies)"
    readme = README.format(
        store=store.location,
        now=now_ms,
        version=__version__,
        records=records,
        bodies="included" if with_bodies else "not included",
        body_note=body_note,
    )
    members.append(("README.txt", readme.encode("utf-8")))
    verified = build_document("verify.json", lambda: verify_store(store, jobs=jobs).to_json())
    document("info.json", lambda: store_info(store, jobs=jobs))
    document("startup.json", lambda: startup_check(store))
    document("verify.json", None, verified)
    document(
        "retention.json",
        lambda: retention_report(store, now_ms=now_ms, zone=zone, disk_used=disk_used).to_json(),
    )
    document("inventory.json", lambda: inventory(store))
    if conf_text is not None:
        members.append(("broker.conf", conf_text.encode("utf-8")))
    for name in ROOT_STATE_FILES:
        _copy_member(store.root / name, name, members, notes)
    config_dir = store.config_dir
    if config_dir.is_dir():
        for entry in sorted(os.scandir(config_dir), key=lambda e: e.name):
            if entry.is_file(follow_symlinks=False) and (
                entry.name.endswith(CONFIG_SUFFIXES) or entry.name in CONFIG_EXTRA
            ):
                _copy_member(Path(entry.path), f"config/{entry.name}", members, notes)
    document("last-records.json", lambda: last_records(store, records, with_bodies))

    data = _archive([(name, scrubber.data(content)) for name, content in members], now_ms)
    with replacing(target) as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    return BundleSummary(
        str(target.path), [name for name, _ in members], len(data), len(scrubber.values), notes
    )


def _copy_member(path: Path, name: str, members: list[tuple[str, bytes]], notes: list[str]) -> None:
    try:
        if not path.is_file() or path.is_symlink():
            return
        if path.stat().st_size > MAX_CONFIG_BYTES:
            notes.append(f"{name}: over {MAX_CONFIG_BYTES} bytes, listed in inventory.json only")
            return
        members.append((name, path.read_bytes()))
    except OSError as exc:
        notes.append(f"{name}: {exc.strerror}")


def _archive(members: list[tuple[str, bytes]], now_ms: int) -> bytes:
    """A gzip'd tar of the members in the given order, every header the same but for name and size."""
    buf = io.BytesIO()
    with (
        gzip.GzipFile(fileobj=buf, mode="wb", mtime=now_ms // 1000) as gz,
        tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar,
    ):
        for name, content in members:
            info = tarfile.TarInfo(f"mqtool-bundle/{name}")
            info.size, info.mtime, info.mode = len(content), now_ms // 1000, 0o644
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(content))
    return buf.getvalue()


__all__ = ["BundleSummary", "check_output", "inventory", "last_records", "write_bundle"]
