"""The exit statuses of `mqtool`, defined once: `main` (mqtool/cli/__init__.py) ends with them, `verify`
and `audit` choose between CLEAN, FOUND and UNREADABLE, and README, `--help` and the man pages list them
(`EXIT_STATUS_HELP`).
"""

from __future__ import annotations

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

FAIL_ON = ("error", "warning", "never")
"""`--fail-on`: the least severe problem that makes a check exit FOUND."""

EXIT_STATUS_HELP = (
    "Exit status: 0 nothing found at the --fail-on severity, 1 problems found (errors; warnings too "
    "with --fail-on warning), 2 usage error, 3 a store could not be read, 70 internal error."
)

GENERAL_EXIT_STATUS_HELP = (
    "Exit status: 0 done; 1 failed (verify and audit: problems found at the --fail-on severity); 2 usage "
    "error, a refused output path included; 3 (verify, audit) a store could not be read; 70 internal error."
)


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
