"""The start-up verdict's vocabulary: start / refuse / exit, one reason, the verdict, and the helpers every
part's judge shares (a file path relative to the store, `MappedFileQueue.load`'s size checks)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from formats.errors import MqtoolError
from store.io.filereads import last_nonzero_end
from store.log.mappedfile import MappedFileQueue

START, REFUSE, EXIT = "start", "refuse", "exit"
SEVERITY = {START: 0, REFUSE: 1, EXIT: 2}


@dataclass(frozen=True)
class StartupReason:
    """One thing the broker's start-up does with this store: its effect, what and where, and the code."""

    code: str
    effect: str  # start (a note), refuse, exit
    message: str
    file: str | None = None
    code_ref: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "effect": self.effect,
            "message": self.message,
            "file": self.file,
            "source": self.code_ref,
        }


@dataclass
class StartupVerdict:
    """start / refuse / exit for a broker of `major`, the reasons, and what its recovery does."""

    major: int
    reasons: list[StartupReason] = field(default_factory=list)
    recovery: dict[str, Any] = field(default_factory=dict)

    @property
    def verdict(self) -> str:
        return max((r.effect for r in self.reasons), key=SEVERITY.__getitem__, default=START)

    def add(self, *args: Any, **kwargs: Any) -> None:
        self.reasons.append(StartupReason(*args, **kwargs))

    def as_dict(self) -> dict[str, Any]:
        return {
            "broker": f"{self.major}.x",
            "verdict": self.verdict,
            "reasons": [r.as_dict() for r in self.reasons],
            "recovery": self.recovery,
        }


def data_end(files: list) -> int:
    """The end of the last non-zero byte of the last file holding data (what a recovery that ends earlier
    drops): for the commitlog, DLedger's data files and the timerlog alike."""
    for f in reversed(files):
        end = last_nonzero_end(f.path, 0, f.size)
        if end:
            return f.start_offset + end
    return 0


def rel(store, path: Any) -> str:
    try:
        return str(Path(path).relative_to(store.root))
    except ValueError:
        return str(path)


def check_file_queue(
    store, verdict: StartupVerdict, directory, size: int, size_source: str, what: str
) -> list:
    """`MappedFileQueue.load` -> `doLoad` (5.3.3 MappedFileQueue.java:246-290; 4.9.8 :158-190): every
    file must be `size` bytes; 5.3.3 deletes a zero-length last file first (4.9.8 refuses it). Returns the
    files."""
    try:
        queue = MappedFileQueue.open(directory)
    except MqtoolError as exc:
        verdict.add(
            f"{what}_unloadable",
            REFUSE,
            f"{exc.message}: the store's load() fails",
            exc.file,
            "MappedFileQueue.doLoad",
        )
        return []
    files = list(queue.files)
    if files and files[-1].size == 0 and verdict.major >= 5:
        verdict.add(
            f"{what}_empty_last_file",
            START,
            "a zero-length last file: the 5.x load deletes it and goes on",
            rel(store, files[-1].path),
            "5.3.3 MappedFileQueue.java:255-260",
        )
        files.pop()
    for f in files:
        if f.size != size:
            verdict.add(
                f"{what}_file_size",
                REFUSE,
                f"{f.size} bytes, not the {size} of {size_source}: MappedFileQueue.doLoad returns "
                "false, the store's load() fails and BrokerStartup exits (-3)",
                rel(store, f.path),
                "MappedFileQueue.doLoad (5.3.3 :262-266, 4.9.8 :163-167)",
            )
            break
    return files
