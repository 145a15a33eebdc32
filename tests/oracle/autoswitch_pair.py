"""tests/data/autoswitch-pair: a controller-mode pair under the real AutoSwitchHAService of 5.3.3, a
failover at epoch 2 and the old master's rejoin, truncated by the real AutoSwitchHAClient (`run.sh
autoswitch-pair`, class AutoSwitchPair); then `restarts.json`: the diverged pair restarted by the real code
(`run.sh autoswitch-restart` on copies of diverged/{b,a}), B elected at a new epoch (4: the controller's epoch
after it saw the master down and none to elect, 3, then B's election), at its same epoch 2 (a restart the
controller did not notice), at epoch 4 after `mqtool replicas salvage` put A's tail into B, and A elected
at epoch 4 with B its slave.
Run from the repository root: `PYTHONPATH=. .venv/bin/python tests/oracle/autoswitch_pair.py [restarts]`
(needs the oracle built; without `restarts` it rewrites the whole fixture, keeping its README; with it, only
expect.json's `reads`, through `run.sh autoswitch-read`, and restarts.json)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIXTURE = HERE.parent / "data" / "autoswitch-pair"
SEED = 20261128
RESTARTS = {"newEpoch": 4, "sameEpoch": 2}


def _json(out: str) -> dict:
    """The harness's JSON object (log4j may print a line before it)."""
    return json.loads(out[0 if out.startswith("{") else out.index("\n{") + 1 :])


def _log_bytes(root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted((root / "commitlog").iterdir()))


def _salvage(work: Path) -> list[str]:
    """`mqtool replicas salvage --from a --into b --execute`, the UNIQ_KEYs it copied. It refuses
    controller-mode stores, so it runs with a broker.conf without enableControllerMode (to learn what the
    real HA then does); b gets store-a's topics.json (the fixture's stores have none), whose queues cover
    the puts'."""
    (work / "b" / "config").mkdir()
    shutil.copy(HERE.parent / "data" / "store-a" / "config" / "topics.json", work / "b" / "config")
    conf = work / "plain.conf"
    conf.write_text("brokerName=broker-a\n")
    args = ["--from", str(work / "a"), "--into", str(work / "b"), "--broker-config", str(conf)]
    args += ["--broker-config", str(conf), "--execute", "-f", "json"]
    done = subprocess.run(
        [sys.executable, "-m", "mqtool.cli", "replicas", "salvage", *args],
        check=True,
        capture_output=True,
        text=True,
        cwd=HERE.parent.parent,
    )
    plan = json.loads(done.stdout)
    return [m["uniqKey"] for m in plan["messages"] if m["action"] == "copy"]


def restart(epoch: int, salvage: bool = False, master: str = "b") -> dict:
    """The real restart of copies of diverged/{b,a}: B (or `master`) master at `epoch`, the other its slave;
    where the slave's log differs. `salvage`: mqtool's salvage of A's tail into B first (`_salvage`)."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for side in ("a", "b"):
            shutil.copytree(FIXTURE / "diverged" / side, work / side)
            (work / side / "lock").unlink()
        copied = _salvage(work) if salvage else None
        slave = "a" if master == "b" else "b"
        done = subprocess.run(
            [str(HERE / "run.sh"), "autoswitch-restart", str(work / master), str(work / slave), str(epoch)]
            + (["--master-a"] if master == "a" else []),
            check=True,
            capture_output=True,
            text=True,
        )
        result = _json(done.stdout)
        end = result["master"]["maxPhyOffset"]
        m, s = _log_bytes(work / master)[:end], _log_bytes(work / slave)[:end]
        result["slaveFirstDifferingByte"] = next((i for i in range(end) if m[i] != s[i]), None)
        if copied is not None:
            result["salvagedUniqKeys"] = copied
    return result


def main() -> int:
    if sys.argv[1:] != ["restarts"]:
        readme = (FIXTURE / "README.md").read_text() if (FIXTURE / "README.md").exists() else None
        shutil.rmtree(FIXTURE, ignore_errors=True)
        subprocess.run(
            [str(HERE / "run.sh"), "autoswitch-pair", str(FIXTURE), str(SEED)],
            check=True,
            capture_output=True,
        )
        if readme is not None:
            (FIXTURE / "README.md").write_text(readme)
        expect = json.loads((FIXTURE / "expect.json").read_text())
        print(json.dumps(expect["rejoin"]["truncationsA"]))
    else:  # the pair as it is: its reads again (what a full run writes into expect.json)
        expect = json.loads((FIXTURE / "expect.json").read_text())
        for name in expect["reads"]:
            done = subprocess.run(
                [str(HERE / "run.sh"), "autoswitch-read", str(FIXTURE / name)],
                check=True,
                capture_output=True,
                text=True,
            )
            expect["reads"][name] = _json(done.stdout)
        (FIXTURE / "expect.json").write_text(json.dumps(expect, indent=1) + "\n")
    restarts = {name: restart(epoch) for name, epoch in RESTARTS.items()}
    restarts["salvagedNewEpoch"] = restart(RESTARTS["newEpoch"], salvage=True)
    restarts["masterANewEpoch"] = restart(RESTARTS["newEpoch"], master="a")
    (FIXTURE / "restarts.json").write_text(json.dumps(restarts, indent=1) + "\n")
    for name, r in restarts.items():
        print(name, json.dumps(r["truncationsSlave"]), r["slaveFirstDifferingByte"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
