"""A broker's RocksDB database opened read-only, without writing a byte into the store.

rocksdict drops `rocksdict-config.json` into a database directory even when it opens it read-only, and
RocksDB may write its info LOG there. So the database is opened through a private temporary directory of
symbolic links to its files: whatever the binding or RocksDB writes lands in that directory, never in the
store (tests/test_rocksdb_store.py proves it on a read-only bind mount). Read-only RocksDB replays the WAL
in memory and takes no LOCK. Every failure (missing CURRENT, a truncated SST, an unknown column family, a
broken MANIFEST) becomes one `RocksDBReadError` naming the directory. RocksDB reads some files whole
(CURRENT, IDENTITY, OPTIONS-*: a 4 GiB one aborts the process with std::bad_alloc, out of reach of any
Python handler), so those are refused past `_WHOLE_READ_MAX` bytes, naming the file; only regular files
are linked (`store.io.filereads`: a FIFO, device or loop there is named too).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from formats.errors import MqtoolError
from store.io.filereads import StoreFileError, file_size

# Files not linked: the lock (read-only RocksDB never takes it) and the database's own info logs.
_NOT_LINKED = ("LOCK", "LOG", "LOG.old")
# Files RocksDB reads whole, and the most of them it is given (they hold a few KB).
_READ_WHOLE = ("CURRENT", "IDENTITY", "OPTIONS-")
_WHOLE_READ_MAX = 16 << 20


class RocksDBReadError(MqtoolError):
    """A RocksDB directory of the store cannot be read (missing, partial or corrupt)."""


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


class ReadOnlyRocksDB:
    """One RocksDB database of the store (raw keys and values), read-only through a directory of links.

    `column_families`: the families the broker opens it with; a database holding any other family is
    refused, as the broker's `RocksDB.open` with its descriptor list refuses it.
    """

    def __init__(self, path: Path | str, column_families: Iterable[str]) -> None:
        from rocksdict import AccessType, Options, Rdict

        self.path = Path(path)
        where = str(self.path)
        try:
            if not self.path.is_dir():
                raise RocksDBReadError("not a RocksDB directory (missing)", where)
            if not (self.path / "CURRENT").is_file():
                raise RocksDBReadError("not a readable RocksDB database: CURRENT is missing", where)
        except OSError as exc:
            raise RocksDBReadError(f"cannot read: {exc.strerror or exc}", where) from exc
        self._links = tempfile.mkdtemp(prefix="mqtool-rocksdb-")
        self._cleanup = weakref.finalize(self, shutil.rmtree, self._links, True)
        try:
            for entry in os.scandir(self.path):
                if entry.name.startswith(_NOT_LINKED) or entry.is_dir():
                    continue
                size = file_size(entry.path)  # a FIFO, a device, a link loop: named
                if entry.name.startswith(_READ_WHOLE) and size > _WHOLE_READ_MAX:
                    self.close()
                    raise StoreFileError(
                        f"{size} bytes: RocksDB reads this file whole (it holds a few KB); not opened",
                        entry.path,
                    )
                os.symlink(os.path.abspath(entry.path), os.path.join(self._links, entry.name))
        except StoreFileError:
            self.close()
            raise
        except OSError as exc:
            self.close()
            raise RocksDBReadError(f"cannot list: {exc.strerror or exc}", where) from exc
        wanted = list(column_families)
        try:
            found = Rdict.list_cf(self._links)
        except Exception as exc:  # rocksdict raises plain Exception with RocksDB's status text
            self.close()
            raise RocksDBReadError(f"RocksDB cannot read it: {_one_line(exc)}", where) from None
        unknown = sorted(set(found) - set(wanted))
        missing = sorted(set(wanted) - set(found))
        if unknown or missing:
            self.close()
            what = (
                [f"unknown column famil{'y' if len(unknown) == 1 else 'ies'} {', '.join(unknown)}"]
                if unknown
                else []
            )
            what += [f"no column family {', '.join(missing)}"] if missing else []
            raise RocksDBReadError(f"{'; '.join(what)} (the broker opens it with {', '.join(wanted)})", where)
        try:
            self._db = Rdict(
                self._links,
                options=Options(raw_mode=True),
                access_type=AccessType.read_only(False),
                column_families={cf: Options(raw_mode=True) for cf in wanted if cf != "default"},
            )
        except Exception as exc:
            self.close()
            raise RocksDBReadError(f"RocksDB cannot open it: {_one_line(exc)}", where) from None
        self._families: dict[str, Any] = {}

    def family(self, name: str) -> Any:
        if name not in self._families:
            self._families[name] = self._db if name == "default" else self._db.get_column_family(name)
        return self._families[name]

    def get(self, family: str, key: bytes) -> bytes | None:
        try:
            return self.family(family).get(key)
        except Exception as exc:
            raise RocksDBReadError(f"RocksDB read failed: {_one_line(exc)}", str(self.path)) from None

    def items(self, family: str, prefix: bytes = b"") -> Iterator[tuple[bytes, bytes]]:
        """(key, value) of a column family in key order, only keys starting with `prefix`."""
        try:
            it = self.family(family).iter()
            if prefix:
                it.seek(prefix)
            else:
                it.seek_to_first()
            while it.valid():
                key = it.key()
                if not key.startswith(prefix):
                    break
                yield key, it.value()
                it.next()
            it.status()
        except MqtoolError:
            raise
        except Exception as exc:
            raise RocksDBReadError(f"RocksDB read failed: {_one_line(exc)}", str(self.path)) from None

    def close(self) -> None:
        db = self.__dict__.pop("_db", None)
        if db is not None:
            self._families.clear()
            db.close()
        self._cleanup()

    def __enter__(self) -> ReadOnlyRocksDB:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["ReadOnlyRocksDB", "RocksDBReadError"]
