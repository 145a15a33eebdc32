"""`mqtool rebuild compaction-cq --execute` on named damages of copies of tests/data/store-compaction, each
result judged by the real 5.3.3 classes (`run.sh compaction-read`): the store must load and its
CompactionStore serve every queue exactly as on the undamaged fixture (expect.json's `compactionQueues`: what
a consumer gets at every offset, min/max, sanityCheck).

Writes tests/data/store-compaction/rebuilt.json: per damage, the digest of the rebuilt compactionCq/ and the
verdict, and the real classes' reading of the damaged copy before it (`damaged`: whether it loaded and
served as the fixture); tests/test_compaction_rebuild.py rebuilds each damage again and checks it gives
the judged bytes.
Run from the repository root: `PYTHONPATH=. .venv/bin/python tests/oracle/compaction_rebuild.py` (needs the
oracle built).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from store.config.brokerconf import BrokerConfig

HERE = Path(__file__).resolve().parent
FIXTURE = HERE.parent / "data" / "store-compaction"
LOG = "compaction/compactionLog"
CQ = "compaction/compactionCq"

# the fixture's settings (its README): what an operator gives with --broker-config when no CQ file is left
SETTINGS = {"compactionCqMappedFileSize": 552, "compactionMappedFileSize": 2760}
FIXTURE_CONFIG = BrokerConfig(**SETTINGS, explicit=frozenset(SETTINGS))


def _remove(rel: str) -> Callable[[Path], None]:
    return lambda root: os.remove(root / rel)


def _rmtree(rel: str) -> Callable[[Path], None]:
    return lambda root: shutil.rmtree(root / rel)


def _copy_as(rel: str, new: str) -> Callable[[Path], None]:
    return lambda root: shutil.copyfile(root / rel, root / new)


def _overwrite(rel: str, position: int, data: bytes) -> Callable[[Path], None]:
    def apply(root: Path) -> None:
        with open(root / rel, "r+b") as fh:
            fh.seek(position)
            fh.write(data)

    return apply


# name -> (what, apply, broker config the rebuild needs)
DAMAGES: dict[str, tuple[str, Callable[[Path], None], BrokerConfig | None]] = {
    "cq-file-missing": (
        "a CQ file removed (sanityCheck fails the broker's start)",
        _remove(f"{CQ}/CompactTopicB/0/00000000000000006624"),
        None,
    ),
    "cq-unit-zeroed": (
        "the third unit of a CQ file zeroed (the queue's units stop there)",
        _overwrite(f"{CQ}/CompactTopicA/0/00000000000000000000", 2 * 46, bytes(46)),
        None,
    ),
    "cq-unit-garbage": (
        "a unit's physical offset overwritten (it points into another record)",
        _overwrite(f"{CQ}/CompactTopicA/1/00000000000000006624", 46, (40).to_bytes(8, "big")),
        None,
    ),
    "cq-end-unit-missing": (
        "the end unit of a closed CQ file zeroed",
        _overwrite(f"{CQ}/CompactTopicB/0/00000000000000006624", 11 * 46, bytes(46)),
        None,
    ),
    "cq-dir-missing": (
        "a queue's compactionCq directory removed (the broker skips the queue)",
        _rmtree(f"{CQ}/CompactTopicA/1"),
        None,
    ),
    "cq-extra-file": (
        "a CQ file with no log file of its name (sanityCheck fails the start)",
        _copy_as(f"{CQ}/CompactTopicA/0/00000000000000009936", f"{CQ}/CompactTopicA/0/00000000000000013248"),
        None,
    ),
    "cq-delete-leftover": (
        "a `.delete` leftover of replaceCqFiles beside the CQ files (the load fails on its name)",
        _copy_as(
            f"{CQ}/CompactTopicB/0/00000000000000000000", f"{CQ}/CompactTopicB/0/00000000000000000000.delete"
        ),
        None,
    ),
    "cq-dir-missing-all": (
        "compactionCq/ removed whole (the size comes from --broker-config)",
        _rmtree(CQ),
        FIXTURE_CONFIG,
    ),
}


DAMAGED_READ_TIMEOUT = 120


def cq_digest(root: Path) -> str:
    """SHA-256 over compactionCq/'s files: each relative path and its bytes, in path order."""
    h = hashlib.sha256()
    base = root / CQ
    for p in sorted(base.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(base)).encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


def _read(root: Path, timeout: float | None = None) -> dict:
    out = subprocess.run(
        [str(HERE / "run.sh"), "compaction-read", str(root)],
        capture_output=True,
        text=True,
        check=True,
        timeout=timeout,
    )
    return json.loads(out.stdout)


def main() -> int:
    expect = json.loads((FIXTURE / "expect.json").read_text())
    mqtool = [sys.executable, "-m", "mqtool.cli"]
    result: dict = {"damages": {}}
    for name, (what, apply, config) in DAMAGES.items():
        with tempfile.TemporaryDirectory(prefix="mqtool-compaction-rebuild-") as tmp:
            root = Path(tmp) / "store"
            shutil.copytree(FIXTURE, root)
            apply(root)
            try:
                before = _read(root, DAMAGED_READ_TIMEOUT)
                served = before.get("compactionQueues") == expect["compactionQueues"]
                damaged = {"loaded": before["loaded"], "served": served}
            except subprocess.CalledProcessError as exc:  # the load threw: the broker does not start
                thrown = [line for line in exc.stderr.splitlines() if "Exception" in line or "Error" in line]
                damaged = {"loaded": False, "served": False, "error": (thrown or ["(no exception line)"])[0]}
            except subprocess.TimeoutExpired:  # the real read never ends on it (a pull loops)
                damaged = {"loaded": None, "served": False, "error": f"no answer in {DAMAGED_READ_TIMEOUT} s"}
            cmd = [*mqtool, "rebuild", "compaction-cq", "--store", str(root), "--execute", "--format", "json"]
            if config is not None:
                conf = Path(tmp) / "broker.conf"
                conf.write_text("".join(f"{k}={getattr(config, k)}\n" for k in sorted(config.explicit)))
                cmd += ["--broker-config", str(conf)]
            done = subprocess.run(cmd, capture_output=True, text=True)
            if done.returncode:
                raise SystemExit(f"{name}: mqtool rebuild failed ({done.returncode}): {done.stderr.strip()}")
            read = _read(root)
            result["damages"][name] = {
                "what": what,
                "damaged": damaged,
                "cqDigest": cq_digest(root),
                "loaded": read["loaded"],
                "servedAsUndamaged": read["compactionQueues"] == expect["compactionQueues"],
            }
            print(name, result["damages"][name], file=sys.stderr)
    (FIXTURE / "rebuilt.json").write_text(json.dumps(result, indent=2) + "\n")
    return 0 if all(d["loaded"] and d["servedAsUndamaged"] for d in result["damages"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
