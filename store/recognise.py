"""Whether a directory is a RocketMQ store root, or a directory of one, by the names the broker gives
what it writes there — for refusing to put anything else inside a store (`mqtool.outputs`).

The names are the broker's: `StorePathConfigHelper` (rocketmq-all-5.3.3
store/src/main/java/org/apache/rocketmq/store/config/StorePathConfigHelper.java:23-59: consumequeue,
consumequeue_ext, batchconsumequeue, index, checkpoint, abort, lock, config/delayOffset.json),
`MessageStoreConfig` (config/MessageStoreConfig.java:745-775: commitlog, epochFileCheckpoint,
brokerIdentity), `TimerMessageStore` (timer/TimerMessageStore.java:247-251: timerwheel, timerlog),
DLedger's `dledger-<selfId>` directory, and the config managers' files under `config/`. A file the
broker's mapped-file queues write (commitlog, ConsumeQueue, timerlog files) is named by its 20-digit
start offset, so a directory holding one is a store directory wherever it is mounted.

Names like `config/`, `index/` or `checkpoint` are common elsewhere, so alone they prove nothing: a
`config/` directory counts when it holds a file the broker writes there, and `checkpoint` when it sits
next to `lock`, `abort` or `index/`.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

# names no other program gives a directory entry of the same directory
STORE_ONLY_NAMES = frozenset(
    {
        "commitlog",
        "consumequeue",
        "consumequeue_ext",
        "batchconsumequeue",
        "timerlog",
        "timerwheel",
        "epochFileCheckpoint",
        "brokerIdentity",
    }
)
# what the broker's config managers write under config/ (and their .bak)
BROKER_CONFIG_FILES = frozenset(
    {
        "topics.json",
        "subscriptionGroup.json",
        "consumerOffset.json",
        "lmqConsumerOffset.json",
        "delayOffset.json",
        "messageRequestMode.json",
        "consumerFilter.json",
        "consumerOrderInfo.json",
        "timercheck",
        "rdb",
    }
)
_MAPPED_FILE_NAME = re.compile(r"\d{20}")


def _names(directory: Path) -> set[str]:
    try:
        return {entry.name for entry in os.scandir(directory)}
    except OSError:  # not a directory, or not listable: nothing can be told from it
        return set()


def store_evidence(directory: Path) -> str | None:
    """What shows that `directory` is a store root or one of its directories (a few words for an error
    message), or None when nothing does."""
    names = _names(directory)
    if not names:
        return None
    specific = sorted(names & STORE_ONLY_NAMES) + sorted(n for n in names if n.startswith("dledger-"))
    if specific:
        return f"a RocketMQ store root (it holds {specific[0]})"
    if "config" in names:
        written = sorted(
            n for n in _names(directory / "config") if n.removesuffix(".bak") in BROKER_CONFIG_FILES
        )
        if written:
            return f"a RocketMQ store root (it holds config/{written[0]})"
    beside = sorted(names & {"lock", "abort", "index"})
    if "checkpoint" in names and beside:
        return f"a RocketMQ store root (it holds checkpoint and {beside[0]})"
    mapped = sorted(n for n in names if _MAPPED_FILE_NAME.fullmatch(n))
    if mapped:
        return f"a store's mapped-file directory (it holds {mapped[0]})"
    return None


__all__ = ["BROKER_CONFIG_FILES", "STORE_ONLY_NAMES", "store_evidence"]
