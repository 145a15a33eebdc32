"""The audit's SparkSession (driver only): reuse the active one, take spark-submit's as given, or start one
with quiet logs, no UI, Python workers on this interpreter forked from a daemon that has the scan loaded
(`mqtool.audit.session.daemon`) and the driver JVM on the class-data archive (`mqtool.audit.session.cds`);
stop it, waiting for the archive the first audit on a machine writes.

What the executors run lives in `mqtool.audit.executor.scan` (one split), `mqtool.audit.sections.duplicates`
(key hashes) and `mqtool.audit.executor.checks` (the verify checks); the rows they exchange with the driver in
`mqtool.audit.schema`. Their public names stay importable from here.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

# the executors' names this module held before they had modules of their own

# --- the session (driver only) ---------------------------------------------------------------------

SPARK_MISSING = "mqtool audit needs PySpark: pip install 'mqtool[spark]'"


def require_pyspark() -> None:
    """PySpark and pandas are the `spark` extra (every other command runs without them): say in one line
    how to get them, before the audit plans or writes anything. An error of the input's kind (exit 1):
    nothing is wrong with the command line."""
    from importlib.util import find_spec

    from mqtool.audit.plan import AuditError

    try:
        import pyspark  # noqa: F401  (the audit imports it next anyway)

        missing = find_spec("pandas") is None
    except ImportError:
        missing = True
    if missing:
        raise AuditError(SPARK_MISSING)


_LOG4J = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n
# Spark sets the shell's level from this logger; when it is configured and equal to the root level, Spark
# does not print "Setting default log level to ..." on every start
logger.shell.name = org.apache.spark.api.python.PythonGatewayServer
logger.shell.level = error
"""


def _quiet_log_config() -> str:
    import tempfile

    path = Path(tempfile.gettempdir()) / f"mqtool-log4j2-{os.getuid()}.properties"
    if not path.exists() or path.read_text() != _LOG4J:
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(_LOG4J)
        os.replace(tmp, path)
    return str(path)


def active_session():
    """The SparkSession already running in this process (under spark-submit, or a test's), else None.
    Seen from any thread: the audit starts its session in a helper thread, where getActiveSession (per
    thread) finds nothing, and taking over another's session as our own would stop it at the end."""
    from pyspark.sql import SparkSession

    session = SparkSession.getActiveSession()
    if session is not None:
        return session
    try:
        return SparkSession.active()  # the active or default session of the process
    except Exception:  # PySparkRuntimeError NO_ACTIVE_OR_DEFAULT_SESSION
        return None


def under_spark_submit() -> bool:
    """True in a Python driver that spark-submit launched (its JVM is already running and configured)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


# the JVM's notice for the incubator module Spark 4 always adds (--add-modules=jdk.incubator.vector)
_JVM_NOTICE = b"WARNING: Using incubator modules:"


def _launch_driver_jvm(settings: dict[str, str]) -> None:
    """Start the driver JVM (the py4j gateway) as PySpark would, with `settings`, but with its stderr read
    by a thread that drops the JVM's incubator-module notice and passes every other line on."""
    import subprocess
    import threading

    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None:
        return
    conf = SparkConf(loadDefaults=False).setAll(list(settings.items()))
    gateway = launch_gateway(conf, popen_kwargs={"stderr": subprocess.PIPE})
    threading.Thread(
        target=_pass_stderr, args=(gateway.proc.stderr,), name="mqtool-jvm-stderr", daemon=True
    ).start()
    SparkContext._ensure_initialized(gateway=gateway, conf=conf)


def _pass_stderr(stream) -> None:
    for line in iter(stream.readline, b""):
        if not line.startswith(_JVM_NOTICE):
            with contextlib.suppress(Exception):  # our stderr closed or replaced: the line is lost
                sys.stderr.write(line.decode("utf-8", "replace"))
                sys.stderr.flush()


def start_session(
    master: str = "local[*]",
    app_name: str = "mqtool audit",
    conf: dict | None = None,
    create_class_archive: bool = False,
):
    """Reuse the active session; under spark-submit take its configuration as given (--master, memory,
    PYSPARK_PYTHON); else start one on `master` with quiet logs, no UI, Python workers running this
    interpreter and the driver JVM on the class-data archive (`mqtool.audit.session.cds`) when there is one.
    With `create_class_archive` and no archive yet, the JVM writes one as it exits: end such a session
    with `stop_session`. Returns (session, started_here)."""
    session = active_session()
    if session is not None:
        return session, False
    if under_spark_submit():
        from pyspark.sql import SparkSession

        builder = SparkSession.builder.appName(app_name).config(
            "spark.sql.execution.arrow.pyspark.enabled", "true"
        )
        session = builder.getOrCreate()
        return session, True
    local = master.startswith("local")
    if local or "PYSPARK_PYTHON" not in os.environ:
        os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    if local:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    from mqtool.audit.session import cds as spark_cds

    global _creating_archive
    log = f"-Dlog4j.configurationFile=file:{_quiet_log_config()} -Dlog4j2.level=error"
    archive = spark_cds.class_archive(create=create_class_archive)
    driver_options = [log, archive.java_options() if archive else "", _driver_jit_option()]
    settings = {
        "spark.master": master,
        "spark.app.name": app_name,
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.shuffle.partitions": "8",
        "spark.driver.extraJavaOptions": " ".join(o for o in driver_options if o),
        "spark.executor.extraJavaOptions": log,
    }
    if local:
        settings["spark.driver.memory"] = "2g"
    if os.environ.get(PRELOAD_SWITCH, "1").strip().lower() not in ("0", "off", "no", "false"):
        # workers forked with numpy, pyarrow, numba's kernels and the scan already loaded (audit/daemon.py)
        settings["spark.python.daemon.module"] = "mqtool.audit.session.daemon"
    settings.update({key: str(value) for key, value in (conf or {}).items()})
    _launch_driver_jvm(settings)
    builder = SparkSession.builder
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    _creating_archive = archive if archive is not None and archive.creating is not None else None
    return session, True


PRELOAD_SWITCH = "MQTOOL_SPARK_PRELOAD"
C1_SWITCH = "MQTOOL_SPARK_C1"


def _driver_jit_option() -> str:
    """The driver JVM compiles with C1 only: an audit's driver runs for a minute, mostly waiting on Python
    workers, and the C2 compiler threads it would start take the cores those workers need (see
    bench/bench_audit.py --no-c1-row). `MQTOOL_SPARK_C1=0` leaves the JVM's tiered compilation as it is."""
    if os.environ.get(C1_SWITCH, "1").strip().lower() in ("0", "off", "no", "false"):
        return ""
    return "-XX:TieredStopAtLevel=1"


_creating_archive = None  # the class archive the running JVM writes at exit (start_session)


def stop_session(session) -> None:
    """Stop a session start_session started; when its JVM is writing the class archive, end the JVM and
    wait for the archive (only the first audit on a machine does)."""
    global _creating_archive
    session.stop()
    archive, _creating_archive = _creating_archive, None
    if archive is not None:
        from mqtool.audit.session import cds as spark_cds

        if spark_cds.stop_jvm():  # a JVM still running may still be writing: leave its file alone
            archive.finish()


__all__ = [
    "active_session",
    "start_session",
    "stop_session",
    "under_spark_submit",
]
