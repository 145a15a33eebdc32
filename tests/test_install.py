"""What an installed mqtool brings besides its code: the man pages (in share/man/man1 of the wheel), the base
requirements without Spark, and shell completion (`--show-completion`, `--install-completion`)."""

from __future__ import annotations

import subprocess
import sys
import zipfile

from tests.golden import ROOT, child_env

MQTOOL = [sys.executable, "-c", "import sys; sys.argv[0] = 'mqtool'; from mqtool.cli import main; main()"]


def test_the_wheel_installs_the_man_pages_and_leaves_spark_to_the_extra(tmp_path):
    src = tmp_path / "src"
    files = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for name in (f.decode() for f in files if f):
        if name.startswith(("tests/", "bench/", "samples/")) or not (ROOT / name).is_file():
            continue
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_bytes((ROOT / name).read_bytes())
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path / "dist"), str(src)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = (tmp_path / "dist").glob("mqtool-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        pages = {n.rsplit("/", 1)[1]: zf.read(n) for n in zf.namelist() if ".data/data/share/man/man1/" in n}
        metadata = next(zf.read(n).decode() for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
    committed = {p.name: p.read_bytes() for p in (ROOT / "man").glob("mqtool*.1")}
    assert pages == committed
    requires = [
        line.split(":", 1)[1].strip() for line in metadata.splitlines() if line.startswith("Requires-Dist")
    ]
    spark = [r for r in requires if r.startswith(("pyspark", "pandas"))]
    assert len(spark) == 2 and all('extra == "spark"' in r for r in spark)


def test_show_completion_prints_a_bash_script_that_completes_commands_and_options():
    env = child_env(
        _TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION="1"
    )  # name the shell instead of detecting it
    script = subprocess.run([*MQTOOL, "--show-completion", "bash"], capture_output=True, text=True, env=env)
    assert script.returncode == 0, script.stderr
    assert "complete -o default -F _mqtool_completion mqtool" in script.stdout
    assert "_MQTOOL_COMPLETE=complete_bash" in script.stdout

    def complete(*words: str) -> list[str]:
        env = child_env(COMP_WORDS=" ".join(["mqtool", *words]), COMP_CWORD=str(len(words)))
        env["_MQTOOL_COMPLETE"] = "complete_bash"  # what the script sets when bash asks
        done = subprocess.run(MQTOOL, capture_output=True, text=True, env=env)
        assert done.returncode == 0, done.stderr
        return done.stdout.split()

    assert complete("qu") == ["query"]
    assert {"--begin", "--scan", "--export"} <= set(complete("query", "key", "--"))


def test_install_completion_writes_the_script_for_the_shell(tmp_path):
    env = child_env(HOME=str(tmp_path), _TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION="1")
    done = subprocess.run([*MQTOOL, "--install-completion", "bash"], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    script = tmp_path / ".bash_completions" / "mqtool.sh"
    assert "_mqtool_completion" in script.read_text()
    assert str(script) in (tmp_path / ".bashrc").read_text()
