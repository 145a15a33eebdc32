"""The files under `<root>/config/`: load them as `ConfigManager.load` does, write them atomically.

Loading (`ConfigManager.load`, written by `MixAll.string2File`): read `<f>`; missing, empty or undecodable ->
read `<f>.bak`; an undecodable `.bak` makes the broker's start fail; no usable file at all -> empty tables.
The result says which file was used and why. Writing: `atomic_write` (temp file + fsync, previous content
copied to `<f>.bak` atomically, `os.replace`, directory fsync), so `<f>` is never torn or empty, unlike the
broker's own in-place writes.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from formats.config import fastjson
from formats.config.codec import RawConfig, build_config, encode_config
from formats.config.metadata import MessageRequestModeTable, SubscriptionGroupTable, TopicConfigTable
from formats.config.offsets import ConsumerOffsetTable, DelayOffsetTable, LmqConsumerOffsetTable
from formats.config.order import ConsumerOrderInfoTable
from formats.errors import MqtoolError
from formats.java.hash import to_int32
from store.io.filereads import opened, read_file, read_from
from store.io.filewrites import WriteTargets

CONFIG_DIR = "config"
BAK_SUFFIX = ".bak"
# Not the broker's own `<f>.tmp` (4.9.x, metrics files), and not a 20-digit mapped-file name.
TEMP_SUFFIX = ".mqtool.tmp"

CONFIG_NAMES: tuple[str, ...] = (
    "consumerOffset.json",
    "delayOffset.json",
    "topics.json",
    "subscriptionGroup.json",
    "messageRequestMode.json",
    "consumerFilter.json",
    "consumerOrderInfo.json",
    "timermetrics",
    "transactionMetrics",
    "lmqConsumerOffset.json",
)

MODELS: dict[str, type[Any]] = {
    "consumerOffset.json": ConsumerOffsetTable,
    "lmqConsumerOffset.json": LmqConsumerOffsetTable,
    "delayOffset.json": DelayOffsetTable,
    "topics.json": TopicConfigTable,
    "subscriptionGroup.json": SubscriptionGroupTable,
    "messageRequestMode.json": MessageRequestModeTable,
    "consumerOrderInfo.json": ConsumerOrderInfoTable,
}

# TimerMetrics/TransactionMetrics persist with encode(false); every other manager writes PrettyFormat.
COMPACT_NAMES = frozenset({"timermetrics", "transactionMetrics"})

# A config file longer than this is refused (named) instead of read: the largest real ones (an LMQ
# broker's lmqConsumerOffset.json with 100,000 queues) are tens of MB.
CONFIG_MAX_READ = 1 << 28

# JSONLexer.isWhitespace: text of only these makes fastjson return null instead of throwing.
_FASTJSON_BLANK = " \t\n\r\f\b"


class ConfigLoadError(MqtoolError):
    """Neither `<f>` nor `<f>.bak` can be decoded: the broker would refuse to start."""


class ConfigWriteError(MqtoolError):
    """A config file could not be written; the previous file is left as it was."""


@dataclass
class LoadedConfig:
    """The outcome of `ConfigFile.load()`."""

    name: str
    model: Any  # an instance of the file's model (formats.configs); empty tables when source == "none"
    source: str  # "file", "bak" or "none"
    path: Path | None  # the file the model was read from
    reason: str  # why this source, in words
    pretty: bool  # layout of the file read (the broker's default layout when none)
    file_error: MqtoolError | None = None  # why `<f>` itself was not used, when it failed to read/decode
    warnings: list[str] = field(default_factory=list)


def config_path(root: str | os.PathLike[str], name: str) -> Path:
    return Path(root) / CONFIG_DIR / name


class ConfigFile:
    """One config file `<root>/config/<name>` and its `.bak`."""

    NAMES = CONFIG_NAMES

    def __init__(self, root: str | os.PathLike[str], name: str, model: type[Any] | None = None) -> None:
        self.name = name
        self.path = config_path(root, name)
        self.bak_path = self.path.with_name(name + BAK_SUFFIX)
        self.model: type[Any] = model or MODELS.get(name, RawConfig)

    @property
    def default_pretty(self) -> bool:
        return self.name not in COMPACT_NAMES

    def load(self) -> LoadedConfig:
        """`ConfigManager.load()`: the file, else its `.bak`, else empty tables (see module doc)."""
        try:
            text, warnings = read_config_text(self.path)
        except MqtoolError as exc:
            return self._load_bak(f"{self.name} cannot be read ({exc.message})", exc)
        if text is None:
            return self._load_bak(f"{self.name} is missing", None)
        if not text:
            why = f" ({warnings[0]})" if warnings else " (0 bytes)"
            return self._load_bak(f"{self.name} is empty{why}", None)
        try:
            return self._decoded(self.path, text, "file", f"decoded {self.name}", warnings)
        except MqtoolError as exc:
            return self._load_bak(f"{self.name} cannot be decoded ({exc.message})", exc)

    def _load_bak(self, problem: str, file_error: MqtoolError | None) -> LoadedConfig:
        bak_name = self.bak_path.name
        try:
            text, warnings = read_config_text(self.bak_path)
        except MqtoolError as exc:
            # ConfigManager.loadBak catches the IOException and returns false.
            raise ConfigLoadError(
                f"{problem}, and {bak_name} cannot be read ({exc.message}): broker start would fail",
                str(self.bak_path),
            ) from exc
        if not text:
            state = "missing" if text is None else "empty"
            reason = f"{problem}; {bak_name} is {state}: the broker starts with empty tables"
            return LoadedConfig(
                self.name, self.model(), "none", None, reason, self.default_pretty, file_error
            )
        try:
            loaded = self._decoded(self.bak_path, text, "bak", f"{problem}; loaded {bak_name}", warnings)
        except MqtoolError as exc:
            raise ConfigLoadError(
                f"{problem}, and {bak_name} cannot be decoded ({exc.message}): broker start would fail",
                str(self.bak_path),
                exc.offset,
            ) from exc
        loaded.file_error = file_error
        return loaded

    def _decoded(self, path: Path, text: str, source: str, reason: str, warnings: list[str]) -> LoadedConfig:
        if not text.strip(_FASTJSON_BLANK):
            value = None
        else:
            positions: dict[fastjson.Path, int] = {}
            value = fastjson.parse(text, file=str(path), positions=positions)
        pretty = self.default_pretty if value is None else fastjson.is_pretty(text)
        # fastjson returns null for a bean read from blank text, `null` or `[]` (verified with 1.2.83)
        # and the managers' decode() then keeps their empty tables.
        if value is None or value == [] or value == ():
            reason += ": it decodes to null, so the broker keeps empty tables"
            return LoadedConfig(self.name, self.model(), source, path, reason, pretty, warnings=warnings)
        model = build_config(self.model, value, text, positions, str(path))
        return LoadedConfig(self.name, model, source, path, reason, pretty, warnings=warnings)

    def write_targets(self) -> WriteTargets:
        """What `save` changes (`atomic_write`): the file, its `.bak` and their temporary files, all in
        config/ (created when missing)."""
        tmp = self.path.with_name(self.path.name + TEMP_SUFFIX)
        bak_tmp = self.bak_path.with_name(self.bak_path.name + TEMP_SUFFIX)
        return WriteTargets(dirs=[self.path.parent], replaced=[self.path, self.bak_path, tmp, bak_tmp])

    def save(self, model: Any, pretty: bool | None = None) -> str:
        """Write `model` atomically; the layout defaults to that of the current file. Returns the text."""
        if pretty is None:
            try:
                current, _ = read_config_text(self.path)
            except MqtoolError:
                current = None
            blank = not current or not current.strip(_FASTJSON_BLANK)
            pretty = self.default_pretty if blank else fastjson.is_pretty(current)
        text = encode_config(model, pretty)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigWriteError(
                f"cannot create directory: {exc.strerror or exc}", str(self.path.parent)
            ) from exc
        atomic_write(self.path, text)
        return text


def read_config_text(path: Path) -> tuple[str | None, list[str]]:
    """(text, warnings), text None when missing; what `MixAll.file2String` reads, decoded as Java's
    `new String(bytes, UTF-8)`.

    file2String allocates `new byte[(int) file.length()]` (rocketmq-all-5.3.3 common/.../MixAll.java
    :243-258): a file past 2 GiB is read through the Java int its length wraps to - negative throws
    (ConfigManager.load falls back to `.bak`), zero reads as empty, positive reads that many bytes
    from the start. Larger than `CONFIG_MAX_READ` is refused naming the file, never read whole."""
    warnings: list[str] = []
    try:
        with opened(path) as fd:
            size = os.fstat(fd).st_size
            length = to_int32(size)
            if length != size:
                if length < 0:
                    raise MqtoolError(
                        f"cannot read: {size} bytes, and the broker's file2String allocates (int) {size} "
                        f"= {length} bytes (NegativeArraySizeException)",
                        str(path),
                    )
                warnings.append(
                    f"{path.name}: {size} bytes, read as the broker reads it: the first (int) {size} = "
                    f"{length} bytes"
                )
            if length > CONFIG_MAX_READ:
                raise MqtoolError(
                    f"cannot read: {length} bytes, more than mqtool reads of a config file "
                    f"({CONFIG_MAX_READ} bytes)",
                    str(path),
                )
            data = read_from(fd, path, length)
    except FileNotFoundError:
        return None, []
    try:
        return data.decode("utf-8"), warnings
    except UnicodeDecodeError as exc:
        warnings.append(f"{path.name}: invalid UTF-8 at byte {exc.start}, read as U+FFFD as Java does")
        return data.decode("utf-8", errors="replace"), warnings


def atomic_write(path: str | os.PathLike[str], text: str) -> None:
    """Replace `path` with `text` (UTF-8) so that a crash or error leaves the old or the new file, whole.

    Steps: write and fsync `<f>.mqtool.tmp`; copy the current `<f>` to `<f>.bak` through its own temp
    file (an empty `<f>` is not copied: it would only destroy a good `.bak`); `os.replace` the temp file
    onto `<f>`; fsync the directory. On any error the temp files are removed and ConfigWriteError says
    why (no space, read-only file system, ...).
    """
    path = Path(path)
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ConfigWriteError(f"text is not encodable as UTF-8 at character {exc.start}", str(path)) from exc
    if not data:
        raise ConfigWriteError("refusing to write an empty config file", str(path))
    tmp = path.with_name(path.name + TEMP_SUFFIX)
    bak = path.with_name(path.name + BAK_SUFFIX)
    bak_tmp = bak.with_name(bak.name + TEMP_SUFFIX)
    try:
        current = read_file(path, CONFIG_MAX_READ, "config file")  # a FIFO or a 100 GiB file: refused
    except FileNotFoundError:
        current = b""
    try:
        try:
            mode: int | None = stat.S_IMODE(os.stat(path).st_mode)
        except FileNotFoundError:
            mode = None
        _write_synced(tmp, data, mode)
        if current:
            _write_synced(bak_tmp, current, mode)
            os.replace(bak_tmp, bak)
        os.replace(tmp, path)
    except OSError as exc:
        for leftover in (tmp, bak_tmp):
            with contextlib.suppress(OSError):
                os.unlink(leftover)
        raise ConfigWriteError(
            f"cannot write: {_os_reason(exc)}; the file was left unchanged", str(path)
        ) from exc
    try:
        _fsync_directory(path.parent)
    except OSError as exc:
        raise ConfigWriteError(
            f"written, but syncing its directory failed: {_os_reason(exc)}", str(path)
        ) from exc


def _os_reason(exc: OSError) -> str:
    if exc.errno == errno.ENOSPC:
        return "no space left on device"
    if exc.errno == errno.EROFS:
        return "read-only file system"
    return exc.strerror or str(exc)


def _write_synced(path: Path, data: bytes, mode: int | None) -> None:
    """Write and fsync `path`, with the permission bits of the file it replaces (`mode`) when known."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        if mode is not None:
            os.fchmod(fd, mode)
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP):  # some file systems cannot fsync a directory
            raise
    finally:
        os.close(fd)
