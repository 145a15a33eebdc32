"""Would a broker started on this store now come up? The verdict of `BrokerStartup` and its reasons.

`BrokerStartup.createBrokerController` (5.3.3 BrokerStartup.java:244-258; 4.9.8 :218-250) calls
`BrokerController.initialize()`, which loads the metadata managers (5.3.3 BrokerController.java:805-817:
topics, topic queue mapping, consumer offsets, subscription groups, consumer filters, consumer order info;
4.9.8 :242-246), then `DefaultMessageStore.load()` (the commitlog, ConsumeQueue and index files, the
recovery) and the schedule service's delayOffset.json (5.3.3 :886-894). When any returns false the broker
calls `System.exit(-3)`: the verdict is **refuse**. `controller.start()` then takes the store lock
(`DefaultMessageStore.start`, 5.3.3 DefaultMessageStore.java:408-411, "Lock failed,MQ already started"); a
throw there is `System.exit(-1)`: **exit**. Otherwise **start**, and the reasons say what its recovery does.

The checks, one module each: `classic` (metadata files, commitlog, ConsumeQueues, the commitlog recovery),
`dledger`, `compaction`, `timer`, `pop`, `controller`; `verdict` holds the vocabulary they share. Each
reason names the real code that decides it; tests/data/startup/expect.json records the real `load`
on stores mutated each way (tests/oracle/startup_cases.py).
"""

from __future__ import annotations

from formats.errors import MqtoolError
from store.log.confirm import PART_NAME
from store.startup.classic import commitlog_checks, config_checks, queue_checks, recovery
from store.startup.compaction import judge_compaction
from store.startup.controller import judge_controller
from store.startup.dledger import judge_dledger
from store.startup.pop import judge_pop
from store.startup.timer import judge_timer
from store.startup.verdict import REFUSE, START, StartupVerdict


def startup_verdict(store, major: int | None = None) -> StartupVerdict:
    """What a broker of version `major` (default: the store's) does when started on `store` now.

    A layout part none of the modules judges (store.kind: a commitlog elsewhere or on several paths, tiered
    storage, a controller-mode broker.conf, the KV POP service) is named as not judged."""
    major = major or store.layout.broker_version().major
    verdict = StartupVerdict(major)
    judged = {PART_NAME}
    if not judge_controller(store, verdict):
        _not_judged(
            verdict, f"a {PART_NAME} (broker.conf enableControllerMode=true: its start needs the controller)"
        )
    for part in store.layout.kind.unsupported_reads():
        if part.name not in judged:
            _not_judged(verdict, f"a {part.name} ({part.evidence})")
    config_checks(store, verdict)
    if not judge_pop(store, verdict):
        _not_judged(verdict, "the KV POP service (broker.conf popConsumerKVServiceInit=true)")
    files = commitlog_checks(store, verdict)
    queue_checks(store, verdict)
    recovery(store, verdict, files)
    for part, judge in (("dledger", judge_dledger), ("compaction", judge_compaction), ("timer", judge_timer)):
        try:
            judge(store, verdict)
        except MqtoolError as exc:
            # a file the part's load reads and mqtool cannot (a FIFO, a damaged header): named, fail closed
            verdict.add(f"{part}_unreadable", REFUSE, f"{exc.message}: the {part} start-up cannot be judged",
                        exc.file, f"store.startup.{part}")  # fmt: skip
    return verdict


def _not_judged(verdict: StartupVerdict, what: str) -> None:
    verdict.add("layout_unsupported", START, f"{what}: its own start-up conditions are not judged here", None,
                "store.kind")  # fmt: skip
