"""`make oracle-batchcq`: `mqtool rebuild cq --execute` of the BatchCQ queues of tests/data/store-batchcq,
judged by RocketMQ 5.3.3's own store (`tests/oracle/run.sh batchcq-load`): on a copy whose
batchconsumequeue/ was deleted (with broker.conf's mapperFileSizeBatchConsumeQueue as the fixture's, and
without: the broker default), the rebuilt store must load and start in the real broker, and every
BatchConsumeQueue must read back exactly as expect.json holds it (units, min/max, get at every offset,
getOffsetInQueueByTime, getMessage). Needs `make oracle-build`; never run by the test suite."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests" / "data" / "store-batchcq"
MQTOOL = REPO / ".venv" / "bin" / "mqtool"
RUN = REPO / "tests" / "oracle" / "run.sh"
SIZE_KEY = "mapperFileSizeBatchConsumeQueue"


def check(work: Path, file_size: int | None) -> list[str]:
    root = work / f"store-{file_size or 'default'}"
    shutil.copytree(FIXTURE, root)
    shutil.rmtree(root / "batchconsumequeue")
    args = [str(MQTOOL), "rebuild", "--store", str(root), "cq", "--execute"]
    if file_size is not None:
        conf = work / f"broker-{file_size}.conf"
        conf.write_text(f"mapperFileSizeBatchConsumeQueue={file_size}\n")
        args[2:2] = ["--broker-config", str(conf)]
    subprocess.run(args, check=True, capture_output=True)
    out = subprocess.run([str(RUN), "batchcq-load", str(root)], capture_output=True, text=True)
    judged = json.loads(out.stdout)
    want = json.loads((FIXTURE / "expect.json").read_text())["batchConsumeQueues"]
    problems = [] if judged.get("loaded") else [f"did not load: {judged.get('error')}"]
    got = judged.get("batchConsumeQueues", {})
    # a file-size change moves the per-file quirks of the time search and getMessage's per-file reads:
    # then only the size-independent fields are the fixture's, and mqtool's reader is judged on its own
    same_size = file_size == json.loads((FIXTURE / "expect.json").read_text())["config"][SIZE_KEY]
    for key, queue in want.items():
        fields = [f for f in queue if not f.startswith("files[")]
        if not same_size:
            fields = [f for f in fields if not f.startswith(("byTime[", "getMessage"))]
        diff = sorted(f for f in fields if queue[f] != got.get(key, {}).get(f))
        if diff:
            problems.append(f"{key}: {', '.join(diff)} differ")
    problems += reader_against(root, got)
    return problems


def reader_against(root: Path, judged: dict) -> list[str]:
    """mqtool's BatchConsumeQueue reader on the rebuilt store against the real class's answers there."""
    sys.path.insert(0, str(REPO))
    from store.queue.batchconsumequeue import BatchConsumeQueueStore

    problems = []
    queues = BatchConsumeQueueStore(root)
    for key, q in judged.items():
        cq = queues.open(q["topic"], q["queueId"])
        rows = next(v for k, v in q.items() if k.startswith("byTime["))
        for ts, cq_lower, cq_upper, lower, upper in rows:
            mine = (
                cq.offset_in_queue_by_time(ts, "lower"),
                cq.offset_in_queue_by_time(ts, "upper"),
                cq.offset_by_time(5, ts, None, "lower"),
                cq.offset_by_time(5, ts, None, "upper"),
            )
            if mine != (cq_lower, cq_upper, lower, upper):
                problems.append(
                    f"{key}: by time {ts}: mqtool {mine}, broker {(cq_lower, cq_upper, lower, upper)}"
                )
                break
    return problems


def main() -> int:
    size = json.loads((FIXTURE / "expect.json").read_text())["config"]["mapperFileSizeBatchConsumeQueue"]
    failed = 0
    with tempfile.TemporaryDirectory(prefix="mqtool-oracle-batchcq-") as tmp:
        for file_size in (size, None):
            problems = check(Path(tmp), file_size)
            label = f"mapperFileSizeBatchConsumeQueue={file_size or 'default'}"
            print(f"{label}: {'ok' if not problems else '; '.join(problems)}")
            failed += bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
