"""tests/data/autoswitch-pair: a controller-mode pair under the real AutoSwitchHAService of 5.3.3, a failover at
epoch 2 and the old master's rejoin, truncated by the real AutoSwitchHAClient (`run.sh autoswitch-pair`, class
AutoSwitchPair). Run from the repository root: `PYTHONPATH=. .venv/bin/python tests/oracle/autoswitch_pair.py`
(needs the oracle built; rewrites the fixture, keeps its README)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIXTURE = HERE.parent / "data" / "autoswitch-pair"
SEED = 20261128


def main() -> int:
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
