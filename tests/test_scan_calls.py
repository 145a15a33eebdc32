"""No per-row Python where a whole log is read: every scan path runs its rows through compiled kernels or
vectorised numpy, so the Python functions it calls (and the C functions each Python line calls) run a
number of times that does not grow with the records.

The store: 100,000 messages from `sample create` with a new born host per message, 0.5 % of them IPv6
clients (the shape that sent every row through a Python dict and `ipaddress`), in 16 MiB commitlog files
(so the recovery walks `info` makes cover tens of thousands of records) and the broker's ConsumeQueue
files. Each path runs once to import
and compile, then once under a profile hook that counts every call by (calling code, callee); a per-row
helper shows up N times or more, everything else stays at a few hundred (per file, per queue).
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest

from mqtool.sample.create import create_sample
from mqtool.sample.options import SampleOptions
from store.storedir import Store

MESSAGES = 100_000
NOW = 1_800_000_000_000
LIMIT = MESSAGES // 20  # calls of any one function per whole-log pass


@pytest.fixture(scope="module")
def store_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("calls") / "store"
    opts = SampleOptions(root, messages=MESSAGES, file_size=16 << 20, producers=0, ipv6_per_mille=5)
    opts.cq_file_size = 6_000_000  # the broker's: a file or two per queue
    create_sample(opts)
    return root


def calls_of(fn) -> Counter:
    """(caller, callee) -> how often, over one run of fn() (after a first run that imports and compiles)."""
    fn()
    counts: Counter = Counter()

    def hook(frame, event, arg):
        if event in ("call", "c_call"):
            code = frame.f_code
            callee = "" if event == "call" else getattr(arg, "__qualname__", str(arg))
            counts[(f"{Path(code.co_filename).name}:{code.co_name}", callee)] += 1

    sys.setprofile(hook)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return counts


def _verify(root: Path, deep: bool = False):
    from mqtool.verify import verify_store

    with Store.open(root) as store:
        report = verify_store(store, deep=deep)
    assert report.summary["commitlog"]["messages"] >= MESSAGES


def _export(root: Path, tmp: Path):
    from mqtool.export import export_range

    with Store.open(root) as store:
        assert export_range(store, tmp / "export").messages >= MESSAGES


def _dump_parquet(root: Path, tmp: Path):
    from mqtool.export import dump_commitlog_parquet

    with Store.open(root) as store:
        assert dump_commitlog_parquet(store, tmp / "dump.parquet").messages >= MESSAGES


def _info(root: Path):
    from mqtool.info import store_info

    with Store.open(root) as store:
        info = store_info(store)
    assert info["commitlog"]["maxOffset"] > 0


def _audit_executors(root: Path):
    """What the audit's executors run over every split of the store, with the checks."""
    from mqtool.audit.executor.checks import store_context
    from mqtool.audit.executor.scan import scan_split
    from mqtool.audit.job import _split_rows
    from mqtool.audit.plan import AuditOptions, open_stores, plan_splits
    from mqtool.audit.schema import SplitTask

    opts = AuditOptions([root])
    plans, _ = open_stores(opts)
    try:
        splits = plan_splits(plans, 8 << 20)
        context = store_context(plans[0], opts)
        for row in _split_rows(splits, plans, opts, 60_000):
            scan_split(SplitTask(**row), context)
    finally:
        for plan in plans:
            plan.store.close()


def _delay_stats(root: Path):
    from mqtool.delay.listing import delay_stats

    with Store.open(root) as store:
        delay_stats(store, now=NOW)


def _delay_backlog(root: Path) -> int:
    """The units delay stats reads: its rows are these, not the whole log's."""
    from mqtool.delay.listing import delay_stats

    with Store.open(root) as store:
        return sum(r.backlog for r in delay_stats(store, now=NOW, with_timer=False).rows)


def _pop_stats(root: Path):
    from mqtool.pop import pop_stats

    with Store.open(root) as store:
        pop_stats(store, now=NOW)


def _offsets_show(root: Path):
    from mqtool.offsets.progress import consumer_progress

    with Store.open(root) as store:
        consumer_progress(store)


PATHS = {
    "verify": _verify,
    "verify --deep": lambda root: _verify(root, deep=True),
    "info": _info,
    "audit executors": _audit_executors,
    "delay stats": _delay_stats,
    "pop stats": _pop_stats,
    "offsets show": _offsets_show,
}


@pytest.mark.parametrize("name", [*PATHS, "export", "dump --format parquet"])
def test_a_whole_log_pass_calls_no_python_per_row(store_root, tmp_path, name):
    if name == "export":
        counts = calls_of(lambda: _export(store_root, tmp_path / str(len(list(tmp_path.iterdir())))))
    elif name == "dump --format parquet":
        counts = calls_of(lambda: _dump_parquet(store_root, tmp_path / str(len(list(tmp_path.iterdir())))))
    else:
        counts = calls_of(lambda: PATHS[name](store_root))
    limit = LIMIT
    if name == "delay stats":
        backlog = _delay_backlog(store_root)
        assert backlog > 1000
        limit = backlog // 2
    per_row = {key: n for key, n in counts.items() if n >= limit}
    assert not per_row, f"{name}: called once per row or more: {per_row}"


def test_the_count_sees_a_per_row_helper(store_root):
    """The hook counts what a Python loop over the records calls, C functions included."""
    from formats.columnar.decoder import decode_range
    from formats.message.msgid import host_str

    path = sorted((store_root / "commitlog").iterdir())[0]

    def per_row():
        batch = decode_range(path.read_bytes(), 0)
        hosts = batch.column("bornHost").dictionary.to_pylist()
        return [host_str(b"\x00" * 4, len(h)) for h in hosts]

    counts = calls_of(per_row)
    assert counts[("msgid.py:host_str", "")] >= LIMIT
    assert counts[("test_scan_calls.py:<listcomp>", "len")] >= LIMIT
