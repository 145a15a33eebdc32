"""What every man page says besides its commands: EXIT STATUS, ENVIRONMENT and FILES, written once.

`mqtool.cli.manual.manpages` puts them on each page (the audit's own variables and files only on mqtool(1) and
mqtool-audit(1)); `mqtool --help` names the exit statuses and the two variables every command reads.
tests/test_docs.py checks that every environment variable the code reads is listed here.
"""

from __future__ import annotations

from dataclasses import dataclass

from mqtool.exitstatus import STATUSES, exit_status_help


@dataclass(frozen=True)
class Entry:
    name: str
    meaning: str
    audit_only: bool = False  # listed on mqtool(1) and mqtool-audit(1) only
    short: str = ""  # what `mqtool --help` says of it (nothing: not named there)


# The statuses are defined and described in mqtool.exitstatus; the man pages list them from here.
EXIT_STATUS = tuple(Entry(str(s.code), s.meaning, short=s.short) for s in STATUSES)

ENVIRONMENT = (
    Entry(
        "MQTOOL_STORE",
        "The store root when --store is not given (default ~/store).",
        short="the store root when --store is not given",
    ),
    Entry(
        "MQTOOL_DEBUG",
        "When set (to anything), an internal error or an unexpected system error shows Python's "
        "traceback instead of one line.",
        short="set: tracebacks instead of one-line internal errors",
    ),
    Entry("COLUMNS", "The width table output fits in, instead of the terminal's (--wide: no limit)."),
    Entry(
        "MQTOOL_KERNELS",
        "How the decoder's compiled kernels load: aot (the extension pip install built; an error when it is "
        "missing or older than the sources), jit (numba compiles them on first use and caches them), or "
        "unset: the extension when it is current, else numba.",
    ),
    Entry(
        "NUMPY_MADVISE_HUGEPAGE",
        "numpy's own: whether it asks for huge pages for large arrays. mqtool sets it to 0 when it is unset "
        "(a scan's large, sparsely filled arrays cost more zeroed as huge pages); 1 keeps numpy's default.",
    ),
    Entry(
        "MQTOOL_SPARK_CDS",
        "0 (or off, no, false) keeps the audit's driver JVM off its class-data archive and writes none "
        "(start-up is ~4 s slower).",
        audit_only=True,
    ),
    Entry(
        "MQTOOL_SPARK_C1",
        "0 lets the audit's driver JVM use both JIT compilers (by default it compiles with C1 only, "
        "leaving the cores to the Python workers).",
        audit_only=True,
    ),
    Entry(
        "MQTOOL_SPARK_PRELOAD",
        "0 starts Spark's Python workers from PySpark's own daemon instead of mqtool's, which has numpy, "
        "pyarrow and the decoder loaded.",
        audit_only=True,
    ),
    Entry("JAVA_HOME", "The Java (17 or newer) the audit's Spark runs; else java on PATH.", audit_only=True),
    Entry("SPARK_HOME", "A Spark installation to use instead of the one PySpark ships.", audit_only=True),
    Entry(
        "PYSPARK_PYTHON",
        "With a cluster --master, the executors' Python (default: the interpreter mqtool runs on, "
        "which local masters always use).",
        audit_only=True,
    ),
    Entry(
        "SPARK_LOCAL_IP",
        "The address Spark binds to; a local master sets 127.0.0.1 when it is unset.",
        audit_only=True,
    ),
    Entry(
        "PYSPARK_GATEWAY_PORT",
        "Set by spark-submit: the audit then runs in the session spark-submit configured.",
        audit_only=True,
    ),
    Entry(
        "XDG_CACHE_HOME",
        "The cache directory (default ~/.cache); the audit keeps its class-data archives in mqtool/ there.",
        audit_only=True,
    ),
    Entry(
        "AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_PROFILE, AWS_ENDPOINT_URL, "
        "GOOGLE_APPLICATION_CREDENTIALS, GOOGLE_OAUTH_ACCESS_TOKEN",
        "Credentials and endpoints of stores and outputs named by URL (s3://, gs://; audit, info, verify), "
        "read by the file systems' own clients; their values are never printed.",
    ),
    Entry(
        "MQTOOL_CRASH_AFTER_WRITES, MQTOOL_TEST_CRASH_AT",
        "Test hooks of mqtool's crash tests: the process kills itself after that many writes or at the "
        "named steps. Never set them otherwise.",
    ),
)

FILES = (
    Entry("~/store", "The default store root (the broker's default storePathRootDir)."),
    Entry(
        "STORE/commitlog/, consumequeue/, batchconsumequeue/, index/, timerlog/, timerwheel, checkpoint",
        "The store's data files: read-only (mapped read-only) except by --execute commands.",
    ),
    Entry(
        "STORE/config/*.json, STORE/config/*.json.bak",
        "The broker's config files, loaded as the broker loads them (falling back to the .bak); an "
        "--execute command replaces one atomically and keeps the previous content in .bak.",
    ),
    Entry(
        "STORE/lock, STORE/abort",
        "Whether a broker runs (asked of lock with F_GETLK, which takes nothing) and whether its last "
        "run crashed; --execute commands hold the lock while they write.",
    ),
    Entry("STORE/.mqtool-tmp-*", "Staging of an interrupted write; the next writer removes it."),
    Entry("broker.conf", "The broker's settings, read when given with --broker-config."),
    Entry(
        "~/.cache/mqtool/spark-driver-*.jsa",
        "Class-data archives of the audit's driver JVM (the 3 most recently used are kept).",
        audit_only=True,
    ),
)


def for_page(entries: tuple[Entry, ...], audit_page: bool) -> list[Entry]:
    """The entries a page lists: all on mqtool(1) and mqtool-audit(1), the others without the audit's."""
    return [e for e in entries if audit_page or not e.audit_only]


def help_summary() -> str:
    """The exit statuses and main variables, for the end of `mqtool --help`."""
    variables = "; ".join(f"{e.name}: {e.short}" for e in ENVIRONMENT if e.short)
    return (
        f"{exit_status_help()} Environment: {variables}. "
        "The man pages (man mqtool) list every variable and file."
    )
