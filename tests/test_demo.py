"""`make demo`'s tour (samples/demo.sh) runs end to end on the sample store, shows what the real broker wrote,
leaves the store untouched and writes the audit report where it says."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path

from golden import expect

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "samples" / "store-a"


def tree_digest(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_demo_tour(tmp_path: Path) -> None:
    before = tree_digest(SAMPLE)
    mqtool = Path(sys.executable).parent / "mqtool"
    out = tmp_path / "demo"
    proc = subprocess.run(
        ["bash", str(ROOT / "samples" / "demo.sh"), str(mqtool), str(SAMPLE), str(out)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=dict(os.environ, TZ="UTC"),
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    headings = re.findall(r"==> (\d)\. ", proc.stdout)
    assert headings == [str(n) for n in range(1, 10)]

    # Step 2 finds every TopicTest message the real broker stored with the key order-548, and no other.
    step2 = proc.stdout.split("==> 2.")[1].split("$ mqtool query id")[0]
    shown = {int(line.split()[0]) for line in step2.splitlines() if re.match(r"\d+\s+TopicTest\s", line)}
    real = {
        m["physicalOffset"]
        for m in expect("store-a")["messages"]
        if m.get("topic") == "TopicTest" and "order-548" in (m.get("keys") or "").split(" ")
    }
    assert real and shown == real

    # Step 9 names the report it wrote.
    report = Path(re.search(r"The audit report: (\S+)", proc.stdout).group(1))
    assert report == (out / "audit" / "report.html").resolve()
    assert report.stat().st_size > 0 and (out / "audit" / "audit.json").is_file()

    assert tree_digest(SAMPLE) == before
