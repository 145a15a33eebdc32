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
from golden import GOLDEN, copy_store, run_main
from startup_mutations import MUTATIONS

from store.startup import startup_verdict
from store.storedir import Store

CASES = json.loads((GOLDEN / "startup" / "expect.json").read_text(encoding="utf-8"))["cases"]


def _mutated(case: dict, tmp_path):
    root = copy_store(case["store"], tmp_path / "s")
    MUTATIONS[case["mutation"]](root)
    return root


@pytest.mark.parametrize("case", CASES, ids=[f"{c['version']}-{c['store']}-{c['mutation']}" for c in CASES])
def test_verdict_is_what_the_real_load_did(case, tmp_path):
    root = _mutated(case, tmp_path)
    with Store.open(root) as store:
        verdict = startup_verdict(store, int(case["version"][0]))
    # consumerOffsetLoaded is None when a store part's constructor threw first (nothing else loaded)
    real = "start" if case["loaded"] and case["consumerOffsetLoaded"] is not False else "refuse"
    assert verdict.verdict == real, verdict.as_dict()
    if real == "start":
        assert verdict.recovery["mode"] == case["recovery"]
        assert verdict.recovery["commitlogEnd"] == case["maxPhyOffsetAfter"]
        assert ("truncatedBytes" in verdict.recovery) == bool(case["truncated"])
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
    }.get(case["mutation"])
    assert expected_code is None or expected_code in codes, verdict.as_dict()
    if case["mutation"] == "offsets-corrupt-bak-good":
        assert case["consumerOffsetSource"] == "bak"
    if case["mutation"] == "timer-wheel-short":
        assert "Timer wheel length" in case["initError"]


def test_the_cases_cover_each_outcome():
    outcomes = {(c["version"], c["mutation"]): (c["loaded"], c["consumerOffsetLoaded"]) for c in CASES}
    assert outcomes[("5.3.3", "commitlog-file-short")][0] is False
    assert outcomes[("5.3.3", "cq-last-file-zero-length")][0] is True  # 5.x deletes the empty last file
    assert outcomes[("4.9.8", "cq-last-file-zero-length")][0] is False  # 4.9.8 refuses it
    assert outcomes[("5.3.3", "offsets-and-bak-corrupt")][1] is False
    assert outcomes[("5.3.3", "commitlog-middle-missing")][0] is True
    assert outcomes[("5.3.3", "timer-wheel-short")][0] is False
    assert outcomes[("5.3.3", "timerlog-empty-last-file")][0] is True
    assert outcomes[("5.3.3", "timermetrics-and-bak-corrupt")][0] is False
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
