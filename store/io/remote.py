"""Stores (and audit outputs) named by URL — s3://, gs://, hdfs://, file://, ... — read through pyarrow.fs.

Why pyarrow.fs rather than fsspec + s3fs: pyarrow is already a dependency (the columnar decoder's output
type), its wheel carries the S3, GCS and HDFS clients, so executors need nothing more installed;
`FileSystem.from_uri` takes credentials and endpoints only from each client's standard environment and
config files (AWS_ENDPOINT_URL, AWS_PROFILE, ~/.aws/config, GOOGLE_APPLICATION_CREDENTIALS, Hadoop's
configuration); and `RandomAccessFile.read_at` is one ranged GET that runs without the GIL. Schemes pyarrow
does not know (oss://, abfs://, ...) go through fsspec when it is installed (`PyFileSystem(FSSpecHandler)`).

Who reads what:

* the driver (`open_view`) lists the store once and fetches its small files — config/, checkpoint, abort,
  the ConsumeQueues, index and timer files — into a private temporary directory that `Store` opens as
  usual. The commitlog files there are sparse placeholders of their real size: `MappedFile.read` of a
  placeholder is a ranged read, and a placeholder is fetched whole only when driver code maps it
  (`fetch_placeholder`, from `MappedFile.buffer`).
* an executor reads only its own byte range (`file_array`: a lazily zeroed array of the file's size with
  the range filled in, so the decoder sees file positions, no mmap, no local file) and the ConsumeQueue
  units and index entries of the files the driver named by URL (`read_range`).

A URL is shown without user info and query (`redact`), and errors never carry the clients' secrets.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from formats.errors import MqtoolError

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+://")
CHUNK = 16 << 20  # one ranged GET: large enough that a request's fixed cost is small
_SECRET_ENV = ("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ACCESS_KEY_ID", "GOOGLE_OAUTH_ACCESS_TOKEN")
URL_COMMANDS = "audit, info, verify and replicas diff"


class RemoteError(MqtoolError):
    """A store or output named by URL that cannot be listed, read or written."""


def is_url(text: object) -> bool:
    return isinstance(text, str) and bool(_URL.match(text))


def redact(url: str) -> str:
    """The URL without user info, query and fragment (where credentials could be given)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def _scrub(text: str) -> str:
    for name in _SECRET_ENV:
        value = os.environ.get(name)
        if value and len(value) >= 4:
            text = text.replace(value, "***")
    return text


def refuse_url(path: object) -> None:
    """The one-line refusal of commands that need a local store directory."""
    if is_url(path):
        raise RemoteError(
            "this command needs a local store directory; a store named by URL is read only by "
            + URL_COMMANDS,
            redact(str(path)),
        )


# --- the file system of a URL -----------------------------------------------------------------------


@lru_cache(maxsize=32)
def _filesystem(scheme: str, netloc: str, query: str) -> tuple[Any, str]:
    import pyarrow.fs as pafs

    uri = urlunsplit((scheme, netloc, "/", query, ""))
    try:
        return pafs.FileSystem.from_uri(uri)
    except Exception as first:  # an unknown scheme: fsspec's, when installed
        try:
            import fsspec
        except ImportError:
            raise RemoteError(f"cannot open the file system: {_scrub(str(first))}", redact(uri)) from None
        try:
            fs, path = fsspec.core.url_to_fs(uri)
        except Exception as exc:
            raise RemoteError(f"cannot open the file system: {_scrub(str(exc))}", redact(uri)) from None
        return pafs.PyFileSystem(pafs.FSSpecHandler(fs)), path


def resolve(url: str) -> tuple[Any, str]:
    """(pyarrow FileSystem, path inside it) of a URL; one client per scheme, host and options."""
    parts = urlsplit(url)
    fs, base = _filesystem(parts.scheme, parts.netloc, parts.query)
    path = parts.path.strip("/")
    base = base.rstrip("/")
    return fs, (f"{base}/{path}" if path else base) if base else "/" + path


def join(url: str, *names: str) -> str:
    parts = urlsplit(url)
    path = "/".join([parts.path.rstrip("/"), *names])
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def failure(action: str, url: str, exc: BaseException) -> RemoteError:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return RemoteError(f"cannot {action}: {_scrub(first)}", redact(url))


def list_files(url: str) -> dict[str, int] | None:
    """Relative path -> size of every file under the URL; None when nothing is there."""
    import pyarrow.fs as pafs

    fs, root = resolve(url)
    try:
        info = fs.get_file_info(root)
        if info.type == pafs.FileType.NotFound:
            return None
        if info.type == pafs.FileType.File:
            raise RemoteError("not a directory: a store root is a directory", redact(url))
        entries = fs.get_file_info(pafs.FileSelector(root, recursive=True))
    except RemoteError:
        raise
    except Exception as exc:
        raise failure("list", url, exc) from None
    prefix = root.rstrip("/") + "/"
    return {
        e.path[len(prefix) :]: e.size
        for e in entries
        if e.type == pafs.FileType.File and e.path.startswith(prefix)
    }


def read_range(url: str, offset: int, length: int) -> bytes:
    """Bytes [offset, offset+length) of the file (fewer at its end): ranged reads of CHUNK bytes."""
    fs, path = resolve(url)
    try:
        with fs.open_input_file(path) as f:
            length = max(0, min(length, f.size() - offset))
            return b"".join(
                f.read_at(min(CHUNK, offset + length - at), at)
                for at in range(offset, offset + length, CHUNK)
            )
    except Exception as exc:
        raise failure("read", url, exc) from None


def file_array(url: str, size: int, lo: int, hi: int):
    """A zeroed uint8 array of the file's size (untouched pages cost nothing) with [lo, hi) read in."""
    import numpy as np

    data = np.zeros(size, dtype=np.uint8)
    fill(data, url, lo, hi)
    return data


def fill(data, url: str, lo: int, hi: int) -> None:
    """Read [lo, hi) of the file into data[lo:hi] with ranged reads."""
    import numpy as np

    fs, path = resolve(url)
    hi = min(hi, len(data))
    try:
        with fs.open_input_file(path) as f:
            for at in range(lo, hi, CHUNK):
                got = f.read_at(min(CHUNK, hi - at), at)
                data[at : at + len(got)] = np.frombuffer(got, dtype=np.uint8)
    except Exception as exc:
        raise failure("read", url, exc) from None


def write_bytes(url: str, payload: bytes) -> None:
    fs, path = resolve(url)
    try:
        with fs.open_output_stream(path) as out:
            out.write(payload)
    except Exception as exc:
        raise failure("write", url, exc) from None


def delete_tree(url: str) -> None:
    fs, path = resolve(url)
    try:
        fs.delete_dir_contents(path, missing_dir_ok=True)
    except Exception as exc:
        raise failure("delete", url, exc) from None


# --- the driver's view of a store --------------------------------------------------------------------

_LOCK = threading.Lock()
_VIEWS: dict[str, str] = {}  # local root -> store URL
_PLACEHOLDERS: dict[str, tuple[str, int]] = {}  # local commitlog file -> (URL, size)
FETCHED: list[str] = []  # commitlog files the driver fetched whole (for tests and the bench)
_RECORD_READS: dict[str, int] = {}
WHOLE_AFTER = 64  # record reads of one placeholder after which fetching the file whole is cheaper


def open_view(url: str, files: dict[str, int]) -> Path:
    """A private local directory holding the store's small files (`files`: the store's listing, name ->
    size) and placeholders of its commitlog files; removed when the process exits."""
    root = Path(tempfile.mkdtemp(prefix="mqtool-view-"))
    atexit.register(shutil.rmtree, root, True)
    small = []
    for name, size in files.items():
        local = root / name
        local.parent.mkdir(parents=True, exist_ok=True)
        if name.startswith("commitlog/"):
            with open(local, "wb") as fh:
                fh.truncate(size)  # sparse: no byte read or written
            _PLACEHOLDERS[str(local)] = (join(url, name), size)
        else:
            small.append((name, local))
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda item: item[1].write_bytes(read_range(join(url, item[0]), 0, 1 << 62)), small))
    _VIEWS[str(root)] = url
    return root


def placeholder(path: Path | str) -> tuple[str, int] | None:
    return _PLACEHOLDERS.get(str(path)) if _PLACEHOLDERS else None


def read_often(path: Path | str) -> bool:
    """Count a record read of a placeholder; True once the file is better fetched whole."""
    key = str(path)
    _RECORD_READS[key] = _RECORD_READS.get(key, 0) + 1
    return _RECORD_READS[key] > WHOLE_AFTER


def fetch_placeholder(path: Path | str) -> None:
    """Fill a commitlog placeholder with the file's bytes (driver code is about to map it)."""
    with _LOCK:
        entry = _PLACEHOLDERS.pop(str(path), None)
        if entry is None:
            return
        url, size = entry
        try:
            with open(path, "r+b") as fh:
                for at in range(0, size, CHUNK):
                    fh.write(read_range(url, at, CHUNK))
        except BaseException:
            _PLACEHOLDERS[str(path)] = entry
            raise
        FETCHED.append(url)


def location(path: Path | str) -> str:
    """Where an executor finds a file of a store: its URL for a file of a view, else its absolute path."""
    text = str(Path(path).absolute())
    for root, url in _VIEWS.items():
        if text.startswith(root + os.sep):
            return join(url, *Path(text).relative_to(root).parts)
    return text


def store_url(root: Path | str) -> str | None:
    """The URL a view was opened from (None for a local store)."""
    return _VIEWS.get(str(Path(root).absolute()))
