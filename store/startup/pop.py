"""POP's part of the start-up verdict (5.x): what a broker reads of POP state when it starts.

- `consumerOrderInfo.json` (orderly POP's locks): ConsumerOrderInfoManager.load in initializeMetadata
  (5.3.3 BrokerController.java:815): a file and .bak that cannot be decoded refuse the start - judged with
  the other metadata files (`store.startup`).
- `messageRequestMode.json` (the groups switched to POP): loaded by the QueryAssignmentProcessor
  constructor, built in BrokerController's constructor (:393; QueryAssignmentProcessor.java:74-75), which
  ignores the result: when neither it nor its .bak decodes the broker starts with no switch, every group in
  PULL mode.
- Revive offsets (the `%RETRY%`/revive topics' consume offsets) live in consumerOffset.json: judged there.
  Checkpoints and acks are messages in the commitlog, read by the revive service after the start.
- The KV POP service (`popConsumerKVServiceInit`, BrokerConfig.java:243, default false) opens a RocksDB store
  in its constructor (BrokerController.java:382, PopConsumerService.java:96): not judged here.
"""

from __future__ import annotations

from formats.errors import MqtoolError
from store.config.configfile import ConfigFile, ConfigLoadError
from store.startup.verdict import START, StartupVerdict

REQUEST_MODE = "messageRequestMode.json"


def judge_pop(store, verdict: StartupVerdict) -> bool:
    """Add POP's start-up reasons; False when the KV POP service is enabled (its store is not judged)."""
    if verdict.major < 5 or store.layout.config_backend != "json":
        return True
    try:
        loaded = ConfigFile(store.root, REQUEST_MODE).load()
    except (ConfigLoadError, MqtoolError) as exc:
        verdict.add(
            "pop_request_modes_lost",
            START,
            f"{exc.message}: MessageRequestModeManager.load returns "
            "false, which QueryAssignmentProcessor ignores: the broker starts with every group in "
            "PULL mode (the POP switches are lost until set again)",
            f"config/{REQUEST_MODE}",
            "QueryAssignmentProcessor.java:74-75, BrokerController.java:393",
        )
    else:
        if loaded.source == "bak":
            verdict.add(
                "config_bak",
                START,
                f"{loaded.reason}: the broker starts with the .bak's request modes",
                f"config/{REQUEST_MODE}",
                "ConfigManager.loadBak",
            )
        elif loaded.source == "none" and (store.config_dir / REQUEST_MODE).exists():
            verdict.add(
                "pop_request_modes_lost",
                START,
                f"{loaded.reason}: every group is in PULL mode (the POP switches are lost until set again)",
                f"config/{REQUEST_MODE}",
                "ConfigManager.loadBak, QueryAssignmentProcessor.java:74-75",
            )
    cfg = store.layout.broker_config
    return not ("popConsumerKVServiceInit" in cfg.explicit and cfg.popConsumerKVServiceInit)
