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

One name alone proves little (`/tmp` may hold a `lock` file, or a directory some test named
`dledger-x`), so a store root is a directory holding at least two of the broker's parts, each of the
right kind: the directories `commitlog/`, `consumequeue/`, `consumequeue_ext/`, `batchconsumequeue/`,
`index/`, `timerlog/`; the files `checkpoint`, `lock`, `abort`, `timerwheel`, `epochFileCheckpoint`,
`brokerIdentity`; a `config/` holding a file the broker's config managers write; a `dledger-<id>/` holding
DLedger's `data/` or `currterm`. Every store the broker has started on holds several.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

STORE_DIRS = frozenset(
    {"commitlog", "consumequeue", "consumequeue_ext", "batchconsumequeue", "index", "timerlog"}
)
STORE_FILES = frozenset(
    {"checkpoint", "lock", "abort", "timerwheel", "epochFileCheckpoint", "brokerIdentity"}
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


def _parts(directory: Path) -> list[str]:
    """The store parts `directory` holds, each as a name for a message (`commitlog/`, `lock`, ...)."""
    parts = []
    try:
        entries = list(os.scandir(directory))
    except OSError:  # not a directory, or not listable: nothing can be told from it
        return []
    for entry in entries:
        try:
            is_dir, is_file = entry.is_dir(), entry.is_file()
        except OSError:
            continue
        if is_dir and entry.name in STORE_DIRS:
            parts.append(f"{entry.name}/")
        elif is_file and entry.name in STORE_FILES:
            parts.append(entry.name)
        elif is_dir and entry.name == "config":
            written = sorted(
                n for n in _names(Path(entry.path)) if n.removesuffix(".bak") in BROKER_CONFIG_FILES
            )
            if written:
                parts.append(f"config/{written[0]}")
        elif is_dir and entry.name.startswith("dledger-") and _names(Path(entry.path)) & {"data", "currterm"}:
            parts.append(f"{entry.name}/")
    return sorted(parts)


def store_evidence(directory: Path) -> str | None:
    """What shows that `directory` is a store root or one of its mapped-file directories (a few words
    for an error message), or None when nothing does."""
    parts = _parts(directory)
    if len(parts) >= 2:
        return f"a RocketMQ store root (it holds {parts[0]} and {parts[1]})"
    mapped = sorted(n for n in _names(directory) if _MAPPED_FILE_NAME.fullmatch(n))
    if mapped:
        return f"a store's mapped-file directory (it holds {mapped[0]})"
    return None


__all__ = ["BROKER_CONFIG_FILES", "STORE_DIRS", "STORE_FILES", "store_evidence"]
