"""The project's own error types: every problem with input is reported as one of these.

Each carries the file and byte offset it concerns, so the CLI can print one clear line.
`formats` is the lowest layer, so the base class lives here and `store`/`mqtool` derive from it.
"""

from __future__ import annotations


class MqtoolError(Exception):
    """Base of every error mqtool reports to a user as a one-line message."""

    def __init__(self, message: str, file: str | None = None, offset: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.file = file
        self.offset = offset

    def __str__(self) -> str:
        where = []
        if self.file is not None:
            where.append(str(self.file))
        if self.offset is not None:
            where.append(f"offset {self.offset}")
        return f"{': '.join(where)}: {self.message}" if where else self.message


class FormatError(MqtoolError):
    """Bytes or text that do not follow a RocketMQ file format."""


class UsageError(MqtoolError):
    """A command line mqtool cannot act on: a bad option value, options that exclude each other, an
    output format a command cannot give. The command line is at fault, not the store: the CLI exits 2,
    as for an unknown option."""
