"""The kernel loader (formats/columnar/kernels.py): the ahead-of-time extension and numba's JIT give the same
results, the loader takes the extension only when it was built from the sources beside it, every call
checks its arguments, a long first compile says so once, and commands that need no kernel import
neither numba nor pyarrow nor pyspark nor rocksdict."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from golden import ROOT, STORES, store_path, unpack_store

from formats.columnar import kernels

# decode every golden commitlog file (and the hosts, properties and POP bodies on the way) and print a
# digest of all the results: run once with each way of loading the kernels
_DIGEST = """
import dataclasses, hashlib, sys
import numpy as np
import pyarrow as pa
from pathlib import Path
from formats.columnar.decoder import decode_range, decode_resync, walk_chain
from formats.columnar.kernels import using_aot
from store.storedir import Store
from store.pop.columns import pop_columns
from store.timer.columns import timer_columns
from store.timer.timerstore import TimerStore

h = hashlib.sha256()

def put(value):
    if isinstance(value, np.ndarray):
        h.update(str(value.dtype).encode() + value.tobytes())
    elif isinstance(value, (pa.Array, pa.ChunkedArray, pa.RecordBatch, pa.Table)):
        h.update(repr(value.to_pylist()).encode())
    elif dataclasses.is_dataclass(value):
        for f in dataclasses.fields(value):
            put(getattr(value, f.name))
    elif isinstance(value, dict):
        for k, v in value.items():
            put(k)
            put(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            put(v)
    else:
        h.update(repr(value).encode())

for root in sys.argv[1:]:
    dledger = sorted(Path(root).glob("dledger-*/data/*"))
    if dledger:
        from formats.columnar.entries import decode_entries, entry_chain

        for path in dledger:
            data = path.read_bytes()
            for crc in (False, True):
                put(decode_entries(data, int(path.name), check_crc=crc, with_body=True))
            put(entry_chain(data, int(path.name)))
        continue
    for path in sorted(Path(root, "commitlog").iterdir()):
        data = path.read_bytes()
        for crc in (False, True):
            put(decode_range(data, int(path.name), check_crc=crc, with_body=True))
            put(decode_resync(data, int(path.name), len(data) // 3, check_crc=crc))
            put(walk_chain(data, int(path.name), 0, check_crc=crc))
            put(walk_chain(data, int(path.name), len(data) // 3, resync=True, check_crc=crc))
    with Store.open(Path(root)) as store:
        put(pop_columns(store, now=1_800_000_000_000))
        if (Path(root) / "timerlog").exists():
            put(timer_columns(store, TimerStore.open(store), now=1_800_000_000_000))
print(using_aot(), h.hexdigest())
"""


def _run(code: str, *args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, **env},
        check=False,
    )


@pytest.mark.skipif(not kernels.using_aot(), reason="the ahead-of-time kernels are not built here")
def test_the_extension_and_the_jit_decode_alike(tmp_path):
    """Every golden store, and a store with a born host per message (IPv6 ones too), through both."""
    from mqtool.sample.create import create_sample
    from mqtool.sample.options import SampleOptions

    hosts = tmp_path / "hosts"
    create_sample(SampleOptions(hosts, messages=3000, producers=0, ipv6_per_mille=50))
    extra = ("store-pop", "store-timer-states", "store-timer5", "store-lmq", "store-batchcq")
    stores = [str(store_path(s)) for s in (*STORES, *extra)] + [str(hosts)]
    # DLedger data files: the entry walk and the headers-only chain
    stores += [str(unpack_store(name, tmp_path)) for name in ("store-dledger-mixed", "store-dledger-crash")]
    aot = _run(_DIGEST, *stores, MQTOOL_KERNELS="aot")
    jit = _run(_DIGEST, *stores, MQTOOL_KERNELS="jit")
    assert aot.returncode == 0, aot.stderr
    assert jit.returncode == 0, jit.stderr
    assert aot.stdout.split()[0] == "True" and jit.stdout.split()[0] == "False"
    assert aot.stdout.split()[1] == jit.stdout.split()[1]


def test_a_stale_extension_is_not_used(monkeypatch):
    """Sources edited after the build: the digests differ, the JIT kernels run (MQTOOL_KERNELS=aot fails)."""
    monkeypatch.setattr(kernels, "source_digest", lambda: 12345)
    kernels._aot.cache_clear()
    try:
        assert kernels._aot() is None
        monkeypatch.setenv("MQTOOL_KERNELS", "aot")
        kernels._aot.cache_clear()
        with pytest.raises(ImportError):
            kernels._aot()
    finally:
        kernels._aot.cache_clear()


def test_every_call_checks_its_arguments():
    walk_chain = kernels.kernel("walk_chain")
    crc, fn, digits = kernels.tables()
    data = np.zeros(64, np.uint8)
    assert walk_chain(data, 0, 0, 64, False, True, True, crc, fn, digits)[:3] == (2, 0, -1)  # END at 0
    with pytest.raises(TypeError, match="argument 0"):
        walk_chain(data.astype(np.int8), 0, 0, 64, False, True, True, crc, fn, digits)
    with pytest.raises(TypeError, match="argument 0"):
        walk_chain(np.zeros(128, np.uint8)[::2], 0, 0, 64, False, True, True, crc, fn, digits)  # strided
    gather = kernels.kernel("gather")
    read_only = np.zeros(4, np.int32)
    read_only.flags.writeable = False
    with pytest.raises(TypeError, match="argument 3"):
        gather(data, np.zeros(3, np.int64), np.zeros(3, np.int64), read_only, np.zeros(8, np.uint8))


def test_a_long_first_compile_says_so_once(monkeypatch, capsys):
    monkeypatch.setattr(kernels, "COMPILE_NOTE_AFTER_S", 0.05)
    monkeypatch.setattr(kernels, "_NOTED", [])
    slow = kernels._jit(lambda x: time.sleep(0.3) or x)
    assert slow(7) == 7 and slow(8) == 8
    again = kernels._jit(lambda x: time.sleep(0.3) or x)
    assert again(9) == 9
    assert capsys.readouterr().err.count("compiling the decoder") == 1
    quick = kernels._jit(lambda x: x)
    monkeypatch.setattr(kernels, "_NOTED", [])
    assert quick(1) == 1
    assert capsys.readouterr().err == ""


_IMPORTS = """
import contextlib, io, json, runpy, sys
sys.argv = ["mqtool", *sys.argv[1:]]
with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
    runpy.run_module("mqtool.cli", run_name="__main__")
print(json.dumps([m for m in ("numba", "pyarrow", "pyspark", "rocksdict", "pandas") if m in sys.modules]))
"""


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["info", "--store", "samples/store-a", "-f", "json"],
        ["query", "key", "TopicTest", "order-548", "--store", "samples/store-a", "-f", "json"],
        ["dump", "checkpoint", "--store", "samples/store-a", "-f", "json"],
        ["consume-mode", "show", "--store", "samples/store-a", "-f", "json"],
    ],
)
def test_commands_that_scan_nothing_import_no_heavy_library(args):
    done = _run(_IMPORTS, *args)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == []


@pytest.mark.skipif(not kernels.using_aot(), reason="the ahead-of-time kernels are not built here")
@pytest.mark.parametrize("store", ["store-a", "store-dledger-mixed"])
def test_a_scanning_command_runs_without_numba(store, tmp_path):
    """A classic commitlog and a DLedger one (its entry walk is compiled ahead of time too)."""
    root = store_path(store) if store == "store-a" else unpack_store(store, tmp_path)
    done = _run(_IMPORTS, "verify", "--store", str(root), "-f", "json")
    assert done.returncode == 0, done.stderr
    assert "numba" not in json.loads(done.stdout.splitlines()[-1])


def test_the_digit_table_is_java_character_digit():
    """The table the properties check takes: every BMP code point's decimal value (Unicode Nd, what
    `Character.digit(c, 10)` answers), built from one regex pass; the same as asking unicodedata for each."""
    import unicodedata

    table = kernels.make_digit_table()
    assert table.dtype == np.int8 and table.shape == (0x10000,)
    assert table.tolist() == [unicodedata.decimal(chr(c), -1) for c in range(0x10000)]


def test_the_extension_is_ignored_by_git():
    listed = subprocess.run(["git", "ls-files", "formats/columnar"], capture_output=True, text=True, cwd=ROOT)
    assert not [p for p in listed.stdout.split() if Path(p).name.startswith("_aot_kernels")]


@pytest.mark.parametrize("command", [["verify"], ["bundle", "-o", "{tmp}/b.tar.gz"]])
def test_commands_that_scan_with_pyarrow_import_no_pandas(command, tmp_path):
    """pyarrow's first array probes for pandas (~0.45 s, again in every forked worker): these commands
    never hand it pandas objects and skip the probe (`mqtool.cli.options.skip_pandas_probe`)."""
    args = [a.format(tmp=tmp_path) for a in command]
    done = _run(_IMPORTS, *args, "--store", "samples/store-a", "-f", "json")
    assert done.returncode == 0, done.stderr
    assert "pandas" not in json.loads(done.stdout.splitlines()[-1])


def test_workers_fork_with_what_they_import():
    """pyarrow's pa.array(ndarray) imports numpy.ma (~60 ms) in a process that has not: verify's range
    workers are forked after it, so it is imported once, not once more in each worker."""
    code = (
        "import runpy, sys, store.log.ranges as r; r.PARALLEL_MIN_BYTES = 0; "
        "sys.argv = ['mqtool', *sys.argv[1:]]; runpy.run_module('mqtool.cli', run_name='__main__')"
    )
    done = subprocess.run(
        [
            sys.executable,
            "-X",
            "importtime",
            "-c",
            code,
            "verify",
            "--jobs",
            "2",
            "-s",
            "samples/store-a",
            "-f",
            "json",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert len([line for line in done.stderr.splitlines() if line.endswith("| numpy.ma")]) == 1


_HUGEPAGES = (
    "import mqtool.cli, numpy; from numpy._core import multiarray; print(multiarray._set_madvise_hugepage(0))"
)


def test_the_command_line_asks_numpy_for_plain_pages():
    """The CLI sets NUMPY_MADVISE_HUGEPAGE=0 before numpy loads (a scan's sparse output arrays and its
    temporaries were zeroed 2 MiB at a time), unless the user set it."""
    env = {k: v for k, v in os.environ.items() if k != "NUMPY_MADVISE_HUGEPAGE"}
    done = subprocess.run(
        [sys.executable, "-c", _HUGEPAGES], capture_output=True, text=True, cwd=ROOT, env=env
    )
    assert done.stdout.split() == ["False"], done.stderr
    kept = _run(_HUGEPAGES, NUMPY_MADVISE_HUGEPAGE="1")
    assert kept.stdout.split() == ["True"], kept.stderr
