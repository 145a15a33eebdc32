"""The exit statuses of `mqtool`, defined and described once: `main` (mqtool/cli/__init__.py) ends with them,
`verify` and `audit` choose between CLEAN, FOUND and UNREADABLE, and `STATUSES` is what the man pages' EXIT
STATUS section (through `mqtool.cli.manual_sections`), `mqtool --help`, `verify --help`, `audit --help` and
the README say of them (tests/test_exit_status.py checks the README against it).
"""

from __future__ import annotations

from dataclasses import dataclass

from formats.errors import MqtoolError

CLEAN = 0
"""Done; for a check (verify, audit): nothing found at the severity asked for (`--fail-on`)."""
FOUND = 1
"""A check found errors (or warnings, with `--fail-on warning`); any other command: it failed."""
USAGE = 2
"""The command line is wrong: an unknown option, a bad value, an output path that is refused."""
UNREADABLE = 3
"""A store could not be read (missing, not a store, an I/O error); an audit still audits the others."""
INTERNAL = 70
"""A bug in mqtool (EX_SOFTWARE): one line, MQTOOL_DEBUG=1 shows the traceback."""
INTERRUPTED = 130
"""Ctrl-C (128 + SIGINT, as shells say)."""

FAIL_ON = ("error", "warning", "never")
"""`--fail-on`: the least severe problem that makes a check exit FOUND."""


@dataclass(frozen=True)
class Status:
    code: int
    meaning: str  # the man pages and the README
    short: str  # `mqtool --help`, `verify --help`, `audit --help`


STATUSES = (
    Status(
        CLEAN,
        "Success; verify and audit: nothing found at the --fail-on severity (default error; verify --strict "
        "is --fail-on warning). A closed pipe downstream (| head) is not an error either.",
        "success (verify, audit: nothing found at the --fail-on severity)",
    ),
    Status(
        FOUND,
        "A problem with the input or the store, said in one line on stderr (mqtool: error: FILE: ...); "
        "verify and audit: problems found at the --fail-on severity (errors; warnings too with --fail-on "
        "warning); audit run without PySpark.",
        "a problem with the input or the store (verify, audit: problems found at the --fail-on severity)",
    ),
    Status(
        USAGE,
        "A usage error: an unknown command or option, a missing argument, a bad option value, options that "
        "exclude each other, an output path that is refused (inside a store, or a file mqtool did not write "
        "without --force).",
        "a usage error, a refused output path included",
    ),
    Status(
        UNREADABLE,
        "verify, audit: a store could not be read (missing, not a store, an I/O error); an audit still "
        "audits the others, and this status wins over problems found in them.",
        "(verify, audit) a store could not be read",
    ),
    Status(INTERNAL, "An internal error: a bug in mqtool (MQTOOL_DEBUG=1 shows the traceback).", "a bug"),
    Status(INTERRUPTED, "Interrupted (Ctrl-C).", "interrupted"),
)


def exit_status_help() -> str:
    """The statuses in one paragraph, as `mqtool --help`, `verify --help` and `audit --help` end."""
    return "Exit status: " + "; ".join(f"{s.code} {s.short}" for s in STATUSES) + "."


def check_status(counts: dict[str, int], fail_on: str, *, unreadable: bool = False) -> int:
    """The exit status of a check from its problem counts per severity."""
    if unreadable:
        return UNREADABLE
    if fail_on == "never":
        return CLEAN
    worst = ("error",) if fail_on == "error" else ("error", "warning")
    return FOUND if any(counts.get(s, 0) for s in worst) else CLEAN


class StoreUnreadableError(MqtoolError):
    """A store a check was asked to read could not be read: the check ends with UNREADABLE."""

    exit_status = UNREADABLE

    @classmethod
    def of(cls, exc: BaseException) -> StoreUnreadableError:
        """The same one-line message, with this class's exit status."""
        if isinstance(exc, MqtoolError):
            return cls(exc.message, exc.file, exc.offset)
        if isinstance(exc, OSError):
            return cls(exc.strerror or str(exc), exc.filename)
        return cls(str(exc))
