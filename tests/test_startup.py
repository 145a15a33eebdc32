"""The startup verdict (`store.startup`, `mqtool verify --startup`) against the real broker's load.

tests/data/startup/expect.json holds what the real `DefaultMessageStore.load()` and
`ConsumerOffsetManager.load()` of 5.3.3 and 4.9.8 did on golden stores mutated as tests/startup_mutations.py
says (recorded by tests/oracle/startup_cases.py). `initialize()` returns false when either does, and
BrokerStartup exits (-3): mqtool's verdict must be "refuse" exactly then, "start" otherwise, and the
recovery must end the commitlog where the real one did.
"""

from __future__ import annotations

import json

import pytest
from golden import GOLDEN, copy_store, run_main, unpack_store
from startup_mutations import MUTATIONS

from store.config.brokerconf import load_broker_config
from store.startup import startup_verdict
from store.storedir import Store

CASES = json.loads((GOLDEN / "startup" / "expect.json").read_text(encoding="utf-8"))["cases"]


def _mutated(case: dict, tmp_path):
    if (GOLDEN / case["store"] / "store.tar.gz").exists():
        root = unpack_store(case["store"], tmp_path)
    else:
        root = copy_store(case["store"], tmp_path / "s")
    MUTATIONS[case["mutation"]](root)
    return root


@pytest.mark.parametrize("case", CASES, ids=[f"{c['version']}-{c['store']}-{c['mutation']}" for c in CASES])
def test_verdict_is_what_the_real_load_did(case, tmp_path):
    root = _mutated(case, tmp_path)
    # the settings the store was written with, as the broker is started with them (the oracle reads them)
    conf = load_broker_config(root / "broker.conf") if (root / "broker.conf").exists() else None
    with Store.open(root, conf) as store:
        verdict = startup_verdict(store, int(case["version"][0]))
    # consumerOffsetLoaded is None when a store part's constructor threw first (nothing else loaded); the
    # JVM's own exit inside the load (DLedger's System.exit(-1)) left only an exit status
    if case.get("exitStatus") is not None:
        real = "exit"
    else:
        metadata = (
            case["consumerOffsetLoaded"] is not False and case.get("consumerOrderInfoLoaded") is not False
        )
        real = "start" if case["loaded"] and metadata else "refuse"
    assert verdict.verdict == real, verdict.as_dict()
    if real == "start":
        assert verdict.recovery["mode"] == case["recovery"]
        assert verdict.recovery["commitlogEnd"] == case["maxPhyOffsetAfter"]
    if real == "start" and not case.get("dledger"):
        assert ("truncatedBytes" in verdict.recovery) == bool(case["truncated"])
    if real == "start" and case.get("dledger"):
        real_dledger, ours = case["dledger"], verdict.recovery["dledger"]
        for key in ("ledgerEndIndex", "committedIndex", "committedPos"):
            assert ours[key] == real_dledger[key], (key, ours)
    if real == "start" and case["timerLogMaxOffset"] is not None:
        timer = verdict.recovery["timer"]
        assert timer["timerLogEnd"] == case["timerLogMaxOffset"]
        assert timer["enqueueFrom"] == case["timerCommitQueueOffset"]
    codes = {r.code for r in verdict.reasons}
    expected_code = {
        "commitlog-middle-missing": "commitlog_gap",
        "offsets-corrupt-bak-good": "config_bak",
        "timermetrics-corrupt-bak-good": "config_bak",
        "timer-wheel-short": "timer_wheel_length",
        "timerlog-second-file-short": "timerlog_file_size",
        "timerlog-empty-last-file": "timerlog_empty_last_file",
        "timermetrics-and-bak-corrupt": "timer_metrics_unloadable",
        "timerlog-unit-bad-magic": "timer_log_truncated",
        "timerlog-split-bad-late-unit": "timer_log_truncated",
        "dledger-data-file-short": "dledger_file_size",
        "dledger-data-middle-missing": "dledger_check_self",
        "dledger-entry-bad-magic": "dledger_truncated",
        "dledger-third-last-file-bad": "dledger_recovery",
        "dledger-checkpoint-not-a-number": "dledger_recovery",
        "dledger-currterm-not-a-number": "dledger_currterm",
        "controller-files": "controller_files_ignored",
        "request-mode-corrupt": "pop_request_modes_lost",
        "request-mode-and-bak-corrupt": "pop_request_modes_lost",
        "order-info-and-bak-corrupt": "config_unloadable",
        "offsets-corrupt-no-bak": "config_lost",
        "offsets-and-bak-corrupt": "config_unloadable",
        "crash-abort": "abnormal_recovery",
    }.get(case["mutation"])
    if case["version"] == "4.9.8":  # no timer wheel, no compaction store: their files are left alone
        expected_code = {
            "timer-wheel-short": "timer_ignored",
            "compaction-delete-leftover": "compaction_ignored",
        }.get(case["mutation"], expected_code)
    assert expected_code is None or expected_code in codes, verdict.as_dict()
    if case["mutation"] == "offsets-corrupt-bak-good":
        assert case["consumerOffsetSource"] == "bak"
    assert "layout_unsupported" not in codes  # every part of these stores is judged
    if case["mutation"] == "timerlog-split-bad-early-unit":
        assert "timer_log_truncated" not in codes
    if expected_code in ("pop_request_modes_lost",):
        assert case["messageRequestModeTableSize"] == 0  # the real manager holds no switch after its load
    if expected_code == "config_lost":
        assert case["consumerOffsetTableSize"] == 0  # the real manager holds no offset after its load
    if case["mutation"] == "timer-wheel-short" and case["version"] == "5.3.3":
        assert "Timer wheel length" in case["initError"]


def test_the_cases_cover_each_outcome():
    outcomes = {(c["version"], c["mutation"]): (c["loaded"], c.get("consumerOffsetLoaded")) for c in CASES}
    assert outcomes[("5.3.3", "commitlog-file-short")][0] is False
    assert outcomes[("5.3.3", "cq-last-file-zero-length")][0] is True  # 5.x deletes the empty last file
    assert outcomes[("4.9.8", "cq-last-file-zero-length")][0] is False  # 4.9.8 refuses it
    assert outcomes[("5.3.3", "offsets-and-bak-corrupt")][1] is False
    assert outcomes[("5.3.3", "commitlog-middle-missing")][0] is True
    assert outcomes[("5.3.3", "timer-wheel-short")][0] is False
    assert outcomes[("5.3.3", "timerlog-empty-last-file")][0] is True
    assert outcomes[("5.3.3", "timermetrics-and-bak-corrupt")][0] is False
    # the real recovery walks from the file holding timercheck's flush position less a file size: a bad unit
    # before it is never read, one after it cuts the log
    early = next(c for c in CASES if c["mutation"] == "timerlog-split-bad-early-unit")
    late = next(c for c in CASES if c["mutation"] == "timerlog-split-bad-late-unit")
    assert (early["timerLogMaxOffset"], late["timerLogMaxOffset"]) == (337 * 52, 300 * 52)
    cut = next(c for c in CASES if c["mutation"] == "timerlog-unit-bad-magic")
    assert cut["loaded"] and cut["timerLogMaxOffset"] == 100 * 52  # the real recovery cut the timerlog there


def test_a_held_lock_is_exit(tmp_path):
    import subprocess
    import sys

    from golden import LOCK_HOLDER

    root = copy_store("store-a", tmp_path / "s")
    holder = subprocess.Popen(
        [sys.executable, "-c", LOCK_HOLDER, str(root / "lock")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        with Store.open(root) as store:
            verdict = startup_verdict(store)
        assert verdict.verdict == "exit"
    finally:
        holder.stdin.close()
        holder.wait(10)


def test_verify_startup_cli(tmp_path, capsys):
    case = next(c for c in CASES if c["mutation"] == "commitlog-file-short" and c["version"] == "5.3.3")
    root = _mutated(case, tmp_path)
    code, out, err = run_main(["verify", "--startup", "-s", str(root), "--format", "json"], capsys)
    doc = json.loads(out)
    assert doc["verdict"] == "refuse" and code == 1, err
    root2 = copy_store("store-a", tmp_path / "ok")
    code, out, _ = run_main(["verify", "--startup", "-s", str(root2), "--format", "json"], capsys)
    assert json.loads(out)["verdict"] == "start" and code == 0


def test_dledger_abnormal_recovery_redispatches_from_where_the_real_one_did(tmp_path):
    # tests/data/store-dledger-crash/README.md: the real 5.3.3 abnormal recovery of this store re-dispatched
    # from data file 8388608 (seen in its log when the fixture was written; `load` does not report it)
    readme = (GOLDEN / "store-dledger-crash" / "README.md").read_text(encoding="utf-8")
    assert "re-dispatched from data file 8388608" in readme
    root = unpack_store("store-dledger-crash", tmp_path)
    with Store.open(root) as store:
        verdict = startup_verdict(store)
    assert verdict.recovery["dledger"]["redispatchFrom"] == 8388608
    assert "abnormal_recovery" in {r.code for r in verdict.reasons}


DLEDGER_DAMAGED = json.loads((GOLDEN / "store-dledger" / "damaged.json").read_text(encoding="utf-8"))[
    "damages"
]


@pytest.mark.parametrize("name", sorted(DLEDGER_DAMAGED))
def test_verdict_on_dledger_damages_the_real_recovery_read(name, tmp_path):
    """tests/data/store-dledger/damaged.json: the real 5.3.3 DLedger recovery of each damage
    (tests/oracle/dledger_damaged.py): exit status 255 is DLedger's System.exit(-1) inside the load."""
    damage = DLEDGER_DAMAGED[name]
    root = unpack_store("store-dledger", tmp_path)
    for rel, position, data in damage["writes"]:
        with open(root / rel, "r+b") as fh:
            fh.seek(position)
            fh.write(bytes.fromhex(data))
    with Store.open(root) as store:
        verdict = startup_verdict(store)
    if damage["exitStatus"] == 255:
        assert verdict.verdict == "exit", verdict.as_dict()
        return
    assert verdict.verdict == ("start" if damage["loaded"] else "refuse"), verdict.as_dict()
    after, ours = damage["afterLoad"], verdict.recovery["dledger"]
    assert (ours["ledgerEndIndex"], ours["committedIndex"], ours["committedPos"]) == (
        after["ledgerEndIndex"],
        after["committedIndex"],
        after["committedPos"],
    )


COMPACTION_DAMAGED = json.loads((GOLDEN / "store-compaction" / "damaged.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", sorted(COMPACTION_DAMAGED))
def test_verdict_on_compaction_damages_the_real_load_read(name, tmp_path):
    """tests/data/store-compaction/damaged.json: the real 5.3.3 `DefaultMessageStore.load()` with
    enableCompaction of each damage (tests/oracle/compaction_damaged.py): whether it loaded, which queues its
    CompactionStore serves."""
    import tests.oracle.compaction_damaged as damaged

    root = copy_store("store-compaction", tmp_path / "s")
    damaged.DAMAGES[name][1](root)
    want = COMPACTION_DAMAGED[name]
    with Store.open(root) as store:
        verdict = startup_verdict(store)
        queues = [f"{t}/{q}" for t, q in store.compaction.queues()]
    assert verdict.verdict == ("start" if want["loaded"] else "refuse"), verdict.as_dict()
    if want["loaded"]:
        not_served = {r.message.split(":")[0] for r in verdict.reasons if r.code == "compaction_not_served"}
        assert sorted(set(queues) - not_served) == want["served"]


@pytest.mark.parametrize(
    ("setting", "named"),
    [
        ("enableControllerMode=true", "controller-mode replica"),
        ("popConsumerKVServiceInit=true", "KV POP service"),
    ],
)
def test_what_is_not_judged_is_named(setting, named, tmp_path):
    root = copy_store("store-pop", tmp_path / "s")
    conf = tmp_path / "broker.conf"
    conf.write_text(setting + "\n", encoding="utf-8")
    with Store.open(root, load_broker_config(conf)) as store:
        verdict = startup_verdict(store)
    notes = [r.message for r in verdict.reasons if r.code == "layout_unsupported"]
    assert any(named in n and "not judged" in n for n in notes), verdict.as_dict()


def test_a_part_mqtool_cannot_read_is_named_not_a_traceback(tmp_path):
    import os

    root = unpack_store("store-dledger", tmp_path)
    (root / "dledger-n0" / "checkpoint").unlink()
    os.mkfifo(root / "dledger-n0" / "checkpoint")  # a read would block forever
    with Store.open(root) as store:
        verdict = startup_verdict(store)
    assert verdict.verdict == "refuse"
    assert "dledger_unreadable" in {r.code for r in verdict.reasons}, verdict.as_dict()

    timer = copy_store("store-timer5", tmp_path / "t")
    import shutil

    shutil.rmtree(timer / "timerlog")
    (timer / "timerlog").write_bytes(b"not a directory")
    with Store.open(timer) as store:
        verdict = startup_verdict(store)
    assert "timer_unreadable" in {r.code for r in verdict.reasons}, verdict.as_dict()
