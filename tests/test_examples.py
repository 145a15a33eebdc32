"""Every example of `--help` and the man pages (`mqtool.cli.manual.examples`) runs as written on the sample
store it names (`samples/store-a`; the timer and POP ones on the fixtures that have a timer wheel and POP
traffic), in one process where PySpark cannot be imported: no command but `audit` needs it (the `spark`
extra)."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys

import click
import typer.main

from mqtool.cli import app
from mqtool.cli.manual.examples import EXAMPLES
from tests.golden import ROOT, child_env, store_path

# runs each command line of stdin's JSON list in this process, as the console script would, and prints
# [exit status, stdout, stderr, pyspark modules it tried to import] per line; `import pyspark` fails here
# as on a machine without the extra
RUNNER = """
import contextlib, io, json, sys

class NoPySpark:  # a machine without the spark extra, noting every attempt to import it
    attempts = []

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "pyspark":
            self.attempts.append(name)
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)

sys.meta_path.insert(0, NoPySpark())
import click
from mqtool.cli import app
from formats.errors import MqtoolError
results = []
for argv in json.load(sys.stdin):
    NoPySpark.attempts.clear()
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = app(argv, prog_name="mqtool", standalone_mode=False) or 0
        except MqtoolError as exc:
            code, _ = 1, err.write(f"mqtool: error: {exc}\\n")
        except click.ClickException as exc:  # a usage error
            code, _ = exc.exit_code, err.write(exc.format_message())
        except click.exceptions.Exit as exc:
            code = exc.exit_code
    results.append([code, out.getvalue(), err.getvalue(), list(NoPySpark.attempts)])
print(json.dumps(results))
"""

# the fixtures the examples of these commands are written for (all others: samples/store-a)
OTHER_STORES = {
    "dump timerlog": "store-timer5",
    "dump timerwheel": "store-timer5",
    "dump timercheck": "store-timer5",
    "pop list": "store-pop",
    "pop stats": "store-pop",
    "dump trace": "store-trace-a",
    "trace": "store-trace-a",
    "offsets prune": "store-trace-b",
    "dlq list": "store-trace-b",
    "dlq stats": "store-trace-b",
    "dump compactionlog": "store-compaction",
    "dlq export": "store-trace-b",
    "dlq resend": "store-trace-b",
}
TIMER_EXAMPLE = "mqtool delay list --timer"
COMPACTION_EXAMPLE = "mqtool rebuild compaction-cq --execute"
# the replica commands' two stores (master, slave): two copies of the sample store
REPLICA_PATHS = ("/data/broker-a", "/data/broker-a-slave")
# the tiered examples' tree (`--tiered /data/tiered`): they run on the tiered fixture's store and tree
TIERED_PATH = "/data/tiered"


def _argv(command: str, store, replicas: dict) -> list[str]:
    """The example's arguments, on `store`: its own --store replaced, else one given before the command;
    the replica paths (`REPLICA_PATHS`) replaced by `replicas`' copies."""
    argv = [str(replicas.get(a, a)) for a in shlex.split(command)[1:]]
    if "--store" in argv:
        argv[argv.index("--store") + 1] = str(store)
        return argv
    return ["--store", str(store), *argv]


def test_every_command_and_group_has_examples():
    root = typer.main.get_command(app)
    paths = {""}
    for name, sub in root.commands.items():
        paths |= {f"{name} {child}" for child in sub.commands} if isinstance(sub, click.Group) else {name}
    assert set(EXAMPLES) == paths
    assert all(EXAMPLES[path] for path in paths)


def test_every_example_runs_without_pyspark(tmp_path):
    stores = {"samples": shutil.copytree(ROOT / "samples" / "store-a", tmp_path / "store-a")}
    for name in set(OTHER_STORES.values()) | {"store-compaction"}:
        stores[name] = shutil.copytree(store_path(name), tmp_path / name)
    replicas = {p: shutil.copytree(stores["samples"], tmp_path / p.rsplit("/", 1)[1]) for p in REPLICA_PATHS}
    tiered = shutil.copytree(ROOT / "tests" / "data" / "store-tiered", tmp_path / "store-tiered")
    replicas[TIERED_PATH] = tiered / "tiered"
    work = tmp_path / "work"
    work.mkdir()
    lines, commands = [], []
    for path, examples in EXAMPLES.items():
        if path == "audit":
            continue  # Spark: parsed below
        for example in examples:
            store = stores[OTHER_STORES.get(path, "samples")]
            if example.command == TIMER_EXAMPLE:
                store = stores["store-timer5"]
            if example.command == COMPACTION_EXAMPLE:
                store = stores["store-compaction"]
            if TIERED_PATH in example.command:
                store = tiered / "store"
            lines.append(_argv(example.command, store, replicas))
            commands.append(example.command)
    done = subprocess.run(
        [sys.executable, "-c", RUNNER],
        input=json.dumps(lines),
        capture_output=True,
        text=True,
        cwd=work,
        env=child_env(),
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout)
    failed = [(c, r[0], r[2][-500:]) for c, r in zip(commands, results, strict=True) if r[0] != 0]
    assert not failed
    empty = [c for c, r in zip(commands, results, strict=True) if not r[1].strip()]
    assert not empty, "examples that print nothing"
    nothing_found = [c for c, r in zip(commands, results, strict=True) if "no message found" in r[2]]
    assert not nothing_found, "examples that find nothing on the store they are written for"
    tried = [(c, r[3]) for c, r in zip(commands, results, strict=True) if r[3]]
    assert not tried, "commands other than audit that import pyspark"


def test_the_audit_examples_parse():
    audit = typer.main.get_command(app).commands["audit"]
    for example in EXAMPLES["audit"]:
        argv = shlex.split(example.command)[2:]
        ctx = audit.make_context("audit", argv)  # a usage error raises here
        assert ctx.params
