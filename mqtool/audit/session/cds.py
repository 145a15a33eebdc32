"""A class-data archive (AppCDS) for the Spark driver JVM that `mqtool audit` starts.

A JVM that starts Spark loads ~15,000 classes from the jars and interprets their first runs; on two cores
that is most of the ~9 s session start and ~3 s of the first job. Java 13+ can dump the classes a run
loaded into an archive at exit (`-XX:ArchiveClassesAtExit`) and map it on later starts
(`-XX:SharedArchiveFile`): session start here goes from ~8.5 s to ~4.8 s.

The first audit on a machine (for a given java binary and Spark install) writes the archive, ~150 MB,
into `$XDG_CACHE_HOME/mqtool` (else `~/.cache/mqtool`): it waits for the JVM to exit after the audit, so
that run takes a few seconds longer. Later audits use it (and touch it: its mtime is its last use). Each
java binary, Spark install or venv path has its own archive; writing one deletes all but the
`KEEP_ARCHIVES` most recently used. The archive is written under a temporary name
and renamed, so a reader never maps a partial file; a JVM that cannot use an archive (another JVM,
another classpath) ignores it (`-Xshare:auto`) and prints nothing (`-Xlog:cds*=off`).
`MQTOOL_SPARK_CDS=0` turns this off. Nothing here touches a store.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

ENV_SWITCH = "MQTOOL_SPARK_CDS"
MIN_FREE_BYTES = 1 << 30  # do not fill a nearly full disk with a cache
STALE_SECONDS = 3600  # a temporary archive older than this was left by a killed run
KEEP_ARCHIVES = 3  # archives kept in the cache (~150 MB each), the most recently used


@dataclass(frozen=True)
class ClassArchive:
    """Where the archive for this java + Spark lives, and whether this run should create it."""

    path: Path
    creating: Path | None  # the temporary file the JVM writes at exit; None: the archive exists

    def java_options(self) -> str:
        # IgnoreUnrecognizedVMOptions: a JVM without these flags starts anyway, just without the archive
        quiet = "-XX:+IgnoreUnrecognizedVMOptions -Xshare:auto -Xlog:cds*=off"
        if self.creating is not None:
            return f"{quiet} -XX:ArchiveClassesAtExit={self.creating}"
        return f"{quiet} -XX:SharedArchiveFile={self.path}"

    def finish(self) -> bool:
        """After the JVM exited: move the archive it wrote into place. True when there is one now."""
        if self.creating is None:
            return self.path.exists()
        try:
            if self.creating.stat().st_size > 0:
                os.replace(self.creating, self.path)
                _remove_least_used(self.path.parent, keep=self.path)
                return True
        except OSError:
            pass
        with contextlib.suppress(OSError):
            self.creating.unlink()
        return self.path.exists()


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "mqtool"


def java_binary() -> Path | None:
    """The java that Spark's launcher runs: $JAVA_HOME/bin/java, else java on PATH."""
    home = os.environ.get("JAVA_HOME")
    found = os.path.join(home, "bin", "java") if home else shutil.which("java")
    if not found or not os.path.exists(found):
        return None
    return Path(os.path.realpath(found))


def spark_jars() -> Path | None:
    home = os.environ.get("SPARK_HOME")
    if not home:
        import pyspark

        home = os.path.dirname(pyspark.__file__)
    jars = Path(home) / "jars"
    return jars if jars.is_dir() else None


def archive_key(java: Path, jars: Path) -> str:
    """Changes whenever the JVM or the jars do (an archive only fits the JVM and classpath it came from)."""
    st = java.stat()
    names = sorted((p.name, p.stat().st_size) for p in jars.iterdir() if p.suffix == ".jar")
    ident = repr((str(java), st.st_size, st.st_mtime_ns, str(jars.resolve()), names))
    return hashlib.sha256(ident.encode()).hexdigest()[:20]


def class_archive(create: bool) -> ClassArchive | None:
    """The archive to use; with `create`, one to write when there is none yet. None when switched off or
    when no cache can be kept (no java found, no writable cache directory, a nearly full disk)."""
    if os.environ.get(ENV_SWITCH, "1").strip().lower() in ("0", "off", "no", "false"):
        return None
    java, jars = java_binary(), spark_jars()
    if java is None or jars is None:
        return None
    try:
        key = archive_key(java, jars)
        directory = cache_dir()
        path = directory / f"spark-driver-{key}.jsa"
        if path.is_file():
            with contextlib.suppress(OSError):
                os.utime(path)  # used now: the archives least recently used are the ones deleted
            return ClassArchive(path, None)
        if not create:
            return None
        directory.mkdir(parents=True, exist_ok=True)
        _remove_stale(directory)
        if shutil.disk_usage(directory).free < MIN_FREE_BYTES or not os.access(directory, os.W_OK):
            return None
    except OSError:
        return None
    return ClassArchive(path, directory / f"spark-driver-{key}.creating-{os.getpid()}.jsa")


def _remove_stale(directory: Path) -> None:
    now = time.time()
    for tmp in directory.glob("spark-driver-*.creating-*.jsa"):
        with contextlib.suppress(OSError):
            if now - tmp.stat().st_mtime > STALE_SECONDS:
                tmp.unlink()


def _remove_least_used(directory: Path, keep: Path) -> None:
    """Delete the archives beyond the `KEEP_ARCHIVES` most recently used (`keep` is one of those kept); a
    JVM that has one mapped keeps reading it (the file goes when it is unmapped)."""
    archives = []
    for path in directory.glob("spark-driver-*.jsa"):
        if ".creating-" in path.name or path == keep:
            continue
        with contextlib.suppress(OSError):
            archives.append((path.stat().st_mtime, path))
    archives.sort(reverse=True)
    for _, path in archives[KEEP_ARCHIVES - 1 :]:
        with contextlib.suppress(OSError):
            path.unlink()


def stop_jvm(timeout: float = 120.0) -> bool:
    """End this process's Spark JVM and wait for it (the archive is written as it exits). The next session
    in this process starts a new JVM. False when it was still running after `timeout` seconds."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    if gateway is None:
        return True
    proc = getattr(gateway, "proc", None)
    with contextlib.suppress(Exception):  # py4j raises all kinds of errors on a connection going away
        gateway.shutdown()
    SparkContext._gateway = None
    SparkContext._jvm = None
    if proc is None:
        return True
    try:
        if proc.stdin is not None:
            proc.stdin.close()  # the gateway server exits on EOF of its stdin
        proc.wait(timeout)
    except Exception:
        return False
    return True
