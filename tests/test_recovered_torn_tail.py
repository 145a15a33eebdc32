"""Writing into a store whose crash-torn tail the real broker has recovered (store-c-recovered): the broker
leaves the torn bytes and overwrites them with its next append, and so does mqtool; where the broker has
not recovered (abort) or data follows the torn record, mqtool still refuses."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from golden import GOLDEN, expect, run_mqtool

TORN = expect("store-c")["asWritten"]["tornRecordOffset"]
TORN_FILE = "00000000000004194304"
FAR_FUTURE = "2030-01-01T00:00:00Z"  # every delayed message is due


def mqtool(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_mqtool("--store", str(root), *args)


@pytest.fixture
def recovered(tmp_path: Path) -> Path:
    root = tmp_path / "store"
    shutil.copytree(GOLDEN / "store-c-recovered", root)
    return root


def test_the_fixture_still_holds_the_torn_bytes(recovered: Path) -> None:
    data = (recovered / "commitlog" / TORN_FILE).read_bytes()
    position = TORN - int(TORN_FILE)
    assert not (recovered / "abort").exists()
    assert any(data[position : position + 2981]) and not any(data[position + 2981 :])


def test_delay_replay_appends_where_the_broker_would(recovered: Path) -> None:
    proc = mqtool(recovered, "delay", "replay", "--now", FAR_FUTURE, "--execute", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    delivered = [d for d in json.loads(proc.stdout)["deliveries"] if d.get("action") == "deliver"]
    assert delivered
    # the first delivered record starts where the broker's recovery ended the commitlog
    assert delivered[0]["record"]["physicalOffset"] == TORN
    check = mqtool(recovered, "verify", "--format", "json")
    assert check.returncode == 0, check.stdout[-2000:]
    report = json.loads(check.stdout)
    assert report["clean"] and report["errors"] == 0
    again = mqtool(recovered, "delay", "replay", "--now", FAR_FUTURE, "--execute", "--format", "json")
    assert again.returncode == 0 and not [
        d for d in json.loads(again.stdout)["deliveries"] if d.get("action") == "deliver"
    ]


def test_refused_while_abort_says_the_broker_has_not_recovered(recovered: Path) -> None:
    (recovered / "abort").write_bytes(b"")
    proc = mqtool(recovered, "delay", "replay", "--now", FAR_FUTURE, "--execute")
    errors = [line for line in proc.stderr.splitlines() if line.startswith("mqtool: error:")]
    assert proc.returncode == 1 and len(errors) == 1 and "abort" in errors[0]


def test_refused_when_data_follows_the_torn_record(recovered: Path) -> None:
    path = recovered / "commitlog" / TORN_FILE
    data = bytearray(path.read_bytes())
    data[TORN - int(TORN_FILE) + 8000] = 1  # a non-zero byte after the torn record's declared end
    path.write_bytes(bytes(data))
    before = path.read_bytes()
    proc = mqtool(recovered, "delay", "replay", "--now", FAR_FUTURE, "--execute")
    assert proc.returncode == 1 and "does not end cleanly" in proc.stderr
    assert path.read_bytes() == before
