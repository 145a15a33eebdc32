"""PySpark is an extra (`pip install 'mqtool[spark]'`): only `mqtool audit` needs it, and without it the audit
says in one line how to get it. Each test runs mqtool in a new process where `import pyspark` fails, as on
a machine where it is not installed."""

from __future__ import annotations

import subprocess
import sys
import tomllib

from tests.golden import ROOT, child_env, store_path

# `sys.modules["pyspark"] = None` makes every `import pyspark...` raise ImportError, as a missing package
WITHOUT_PYSPARK = """
import sys
sys.modules["pyspark"] = None
sys.argv[0] = "mqtool"
from mqtool.cli import main
main()
"""


def run_without_pyspark(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_PYSPARK, *args],
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=120,
    )


def test_audit_without_pyspark_says_how_to_get_it_in_one_line(tmp_path):
    out = tmp_path / "audit"
    done = run_without_pyspark("audit", str(store_path("store-a")), "--output", str(out))
    assert done.returncode == 1, done.stderr
    assert done.stderr == "mqtool: error: mqtool audit needs PySpark: pip install 'mqtool[spark]'\n"
    assert done.stdout == ""
    assert not out.exists()  # refused before anything was planned or written


def test_pyspark_and_pandas_are_the_spark_extra_only():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    names = {_name(d) for d in project["dependencies"]}
    assert not names & {"pyspark", "pandas"}
    assert {_name(d) for d in project["optional-dependencies"]["spark"]} == {"pyspark", "pandas"}
    # the README's two commands (make demo, make test) and CI install the extra, so the audit runs there
    assert "'.[test,spark]'" in (ROOT / "Makefile").read_text(encoding="utf-8")


def _name(requirement: str) -> str:
    return requirement.split(";")[0].split("[")[0].split("<")[0].split(">")[0].split("=")[0].strip()
