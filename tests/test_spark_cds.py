"""The Spark driver's class-data archive (mqtool/audit/session/cds.py): where it lives, when it is made, that
a real JVM writes it as it exits and that the next JVM loads Spark's classes from it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mqtool.audit.session import cds as spark_cds

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv(spark_cds.ENV_SWITCH, raising=False)
    return tmp_path / "cache" / "mqtool"


def test_no_archive_is_made_unless_asked(cache) -> None:
    assert spark_cds.class_archive(create=False) is None
    assert not cache.exists()


def test_a_new_archive_is_written_under_a_temporary_name(cache) -> None:
    archive = spark_cds.class_archive(create=True)
    assert archive is not None and archive.creating is not None
    assert archive.creating.parent == archive.path.parent == cache
    assert str(os.getpid()) in archive.creating.name and not archive.path.exists()
    assert f"-XX:ArchiveClassesAtExit={archive.creating}" in archive.java_options()
    assert "SharedArchiveFile" not in archive.java_options()
    # what the JVM wrote moves into place; the next start maps it
    archive.creating.write_bytes(b"x" * 10)
    assert archive.finish() and archive.path.read_bytes() == b"x" * 10 and not archive.creating.exists()
    again = spark_cds.class_archive(create=True)
    assert again is not None and again.creating is None and again.path == archive.path
    assert f"-XX:SharedArchiveFile={archive.path}" in again.java_options()


def test_an_empty_or_missing_dump_is_no_archive(cache) -> None:
    archive = spark_cds.class_archive(create=True)
    assert archive is not None and archive.creating is not None
    assert not archive.finish()  # the JVM never wrote it (killed, or a JVM without the flag)
    archive.creating.write_bytes(b"")
    assert not archive.finish() and not archive.creating.exists() and not archive.path.exists()


def test_switched_off(cache, monkeypatch) -> None:
    for value in ("0", "off", "no"):
        monkeypatch.setenv(spark_cds.ENV_SWITCH, value)
        assert spark_cds.class_archive(create=True) is None


def test_key_follows_the_jvm_and_the_jars(tmp_path) -> None:
    java = tmp_path / "java"
    java.write_bytes(b"jvm")
    jars = tmp_path / "jars"
    jars.mkdir()
    (jars / "spark-core.jar").write_bytes(b"a")
    first = spark_cds.archive_key(java, jars)
    assert spark_cds.archive_key(java, jars) == first
    (jars / "extra.jar").write_bytes(b"b")
    assert spark_cds.archive_key(java, jars) != first
    (jars / "extra.jar").unlink()
    java.write_bytes(b"another jvm")
    assert spark_cds.archive_key(java, jars) != first


def test_stale_temporary_archives_are_removed(cache) -> None:
    cache.mkdir(parents=True)
    stale = cache / "spark-driver-abc.creating-1.jsa"
    fresh = cache / "spark-driver-abc.creating-2.jsa"
    stale.write_bytes(b"x")
    fresh.write_bytes(b"x")
    old = os.stat(stale).st_mtime - spark_cds.STALE_SECONDS - 10
    os.utime(stale, (old, old))
    spark_cds.class_archive(create=True)
    assert not stale.exists() and fresh.exists()


def _fake_archives(cache: Path, ages: dict[str, int]) -> dict[str, Path]:
    """Archives of other JVMs / venvs, last used `ages[name]` seconds ago."""
    cache.mkdir(parents=True, exist_ok=True)
    now = time.time()
    paths = {}
    for name, age in ages.items():
        paths[name] = cache / f"spark-driver-{name}.jsa"
        paths[name].write_bytes(b"x")
        os.utime(paths[name], (now - age, now - age))
    return paths


def test_writing_an_archive_keeps_only_the_most_recently_used(cache) -> None:
    old = _fake_archives(cache, {"a": 500, "b": 400, "c": 300, "d": 200, "e": 100})
    other_run = cache / "spark-driver-f.creating-1.jsa"  # another audit writing its own: not ours to judge
    other_run.write_bytes(b"x")
    archive = spark_cds.class_archive(create=True)
    assert archive is not None and archive.creating is not None
    assert all(p.exists() for p in old.values())  # nothing goes before a new archive is in place
    archive.creating.write_bytes(b"new")
    assert archive.finish()
    kept = sorted(p.name for p in cache.glob("spark-driver-*.jsa") if ".creating-" not in p.name)
    assert kept == sorted([archive.path.name, old["d"].name, old["e"].name])
    assert len(kept) == spark_cds.KEEP_ARCHIVES and other_run.exists()


def test_using_an_archive_makes_it_recent(cache) -> None:
    archive = spark_cds.class_archive(create=True)
    assert archive is not None and archive.creating is not None
    archive.creating.write_bytes(b"mine")
    assert archive.finish()
    old = time.time() - 1000
    os.utime(archive.path, (old, old))
    others = _fake_archives(cache, {"a": 300, "b": 200})
    assert spark_cds.class_archive(create=False) == spark_cds.ClassArchive(archive.path, None)
    # a newer JVM writes its archive: the one just used stays, the least recently used goes
    newer = spark_cds.ClassArchive(cache / "spark-driver-new.jsa", cache / "spark-driver-new.creating-9.jsa")
    newer.creating.write_bytes(b"newer")
    assert newer.finish()
    assert archive.path.exists() and newer.path.exists() and others["b"].exists()
    assert not others["a"].exists()


SESSION = """
import sys
from mqtool.audit.session.spark import start_session, stop_session
spark, started = start_session("local[1]", create_class_archive=True)
assert started
assert spark.range(10).count() == 10
stop_session(spark)
"""


@pytest.mark.xdist_group("spark")
def test_a_real_jvm_writes_the_archive_and_the_next_one_uses_it(tmp_path) -> None:
    """Two fresh processes: the first JVM dumps its classes at exit, the second maps them (its class-load
    log says Spark's classes came from the "shared objects file (top)", i.e. the dynamic archive)."""
    pytest.importorskip("pyspark")
    java = spark_cds.java_binary()
    if java is None or subprocess.run([java, "-Xshare:on", "-version"], capture_output=True).returncode:
        pytest.skip("this JVM has no base CDS archive to layer a dynamic one on (mqtool then runs without)")
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"), PYTHONPATH=str(ROOT))
    env.pop(spark_cds.ENV_SWITCH, None)
    first = subprocess.run(
        [sys.executable, "-c", SESSION], env=env, check=True, timeout=300, capture_output=True, text=True
    )
    assert "incubator" not in first.stderr  # the JVM's notice for Spark 4's vector module is dropped
    made = list((tmp_path / "cache" / "mqtool").glob("spark-driver-*.jsa"))
    assert len(made) == 1 and ".creating-" not in made[0].name and made[0].stat().st_size > 1 << 20

    log = tmp_path / "classload.log"
    env["JAVA_TOOL_OPTIONS"] = f"-Xlog:class+load=info:file={log}"
    second = subprocess.run(
        [sys.executable, "-c", SESSION], env=env, check=True, timeout=300, capture_output=True, text=True
    )
    assert "Picked up JAVA_TOOL_OPTIONS" in second.stderr  # what else the JVM says still gets through
    assert "incubator" not in second.stderr
    lines = log.read_text().splitlines()
    spark_classes = [line for line in lines if " org.apache.spark.SparkContext " in line]
    assert spark_classes and "shared objects file (top)" in spark_classes[0]
    assert list((tmp_path / "cache" / "mqtool").glob("*.jsa")) == made  # used, not rewritten


@pytest.mark.xdist_group("spark")
def test_the_driver_jvm_compiles_with_c1_only(spark, monkeypatch) -> None:
    """The session's JVM runs with -XX:TieredStopAtLevel=1 (no C2 threads taking the workers' cores);
    MQTOOL_SPARK_C1=0 leaves the option out."""
    from mqtool.audit.session import spark as audit_spark

    bean = spark.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
    assert "-XX:TieredStopAtLevel=1" in list(bean.getInputArguments())
    monkeypatch.setenv(audit_spark.C1_SWITCH, "0")
    assert audit_spark._driver_jit_option() == ""
