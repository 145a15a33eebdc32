"""Controller mode's part of the start-up verdict: `epochFileCheckpoint` and `brokerIdentity` in the root.

A 5.x broker with `enableControllerMode` (BrokerConfig.java:349, default false) runs the AutoSwitchHAService
(5.3.3 DefaultMessageStore.java:244-247), whose `init` at the store's start reads the epoch file
(AutoSwitchHAService.java:82-84, EpochFileCache.initCacheFromFile), keeps the recovery's confirm offset within
the valid records (CommitLog.java:388-395), registers with the controller and truncates the commitlog to the
epoch's offsets when its role is decided (AutoSwitchHAService.truncateInvalidMsg, :495); ReplicasManager
reads `brokerIdentity` (ReplicasManager.java:118-119). That start needs the controller: it is not judged here.

A broker started without it (no broker.conf, or one that does not set it) runs the DefaultHAService
(DefaultMessageStore.java:248-252): neither file is read, and its recovery sets the confirm offset to the last
valid record (CommitLog.java:396-398), so records a controller-mode master had not yet confirmed are served.
A 4.x broker has no controller mode.
"""

from __future__ import annotations

from store.log.confirm import ON
from store.startup.verdict import REFUSE, START, StartupVerdict


def judge_controller(store, verdict: StartupVerdict) -> bool:
    """Add the reasons of a start without controller mode; False (not judged) when broker.conf enables it
    (then only a confirm offset the load fails on is judged: refuse)."""
    mode = store.layout.controller_mode  # the one decision (store.log.confirm)
    if mode.mode == ON:
        # the load runs before the broker talks to the controller (BrokerController.java:879-887): a
        # confirm offset it fails on refuses the start whatever the controller says
        state = store.confirm
        if state is not None and state.load_fails:
            why = f"confirmPhyOffset {state.confirm_offset}: {state.load_fails}"
            source = "ConsumeQueueStore.compensateForHA (5.3.3 :474-475, 481-520)"
            verdict.add("controller_load_fails", REFUSE, why, "checkpoint", source)
        return False
    found = list(mode.files)
    if not found:
        return True
    if verdict.major < 5:
        why = "a 4.x broker has no controller mode"
        source = "4.9.8 has no store/ha/autoswitch"
    else:
        why = (
            "a broker started without enableControllerMode runs the DefaultHAService: the files are not "
            "read, and its recovery serves every valid record, also those a controller-mode master had not "
            "confirmed"
        )
        source = "DefaultMessageStore.java:244-252, CommitLog.java:388-398"
    verdict.add("controller_files_ignored", START, f"{', '.join(found)}: {why}", found[0], source)
    return True
