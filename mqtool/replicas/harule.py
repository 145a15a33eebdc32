"""What the HA of RocketMQ 5.3.3 does with a slave whose commitlog is not a byte prefix of its master's, when
the pair is started as it is now: the classic `DefaultHAService` (`classic_verdict`, below) and, in
controller mode, `AutoSwitchHAService`'s epoch rule (`controller_verdict`: the slave truncates to the end of
the newest epoch both hold with the same start offset, `store.ha.epochcache`).

The rule, read in rocketmq-all-5.3.3 store/src/main/java/org/apache/rocketmq/store/ha/:

* The slave reports its max physical offset on connecting (DefaultHAClient.java:264, :350-351); the
  master takes the first report as where to ship from (DefaultHAConnection.java:231-232, :301), or, when
  the slave is empty (offset 0), the start of its own last commitlog file (DefaultHAConnection.java:288-299).
* The master ships bytes from there (`getCommitLogData`, DefaultHAConnection.java:334-362); at an offset
  past its own end it finds none and sends heartbeats carrying that offset (DefaultHAConnection.java:319).
* The slave checks only that a pushed block starts at its own max offset (DefaultHAClient.java:193-199;
  otherwise it drops the connection and reconnects) and appends it (DefaultHAClient.java:207).

Nothing compares content: classic HA never truncates a slave and never refuses one. A slave that is a
byte prefix catches up; a slave that diverged keeps its own bytes and gets the master's bytes from its
own end on, a log no broker wrote (a record may even be cut where the two meet); a slave ahead of its
master waits until the master's log passes its end, then gets the master's bytes from there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mqtool.replicas.logdiff import LogDiff
from store.ha.epochcache import Epochs, consistent_point, reanchored

SOURCE = "rocketmq-all-5.3.3 store/src/main/java/org/apache/rocketmq/store/ha/"
WHERE = {
    "report": "DefaultHAClient.java:264,350-351; DefaultHAConnection.java:231-232,301",
    "empty": "DefaultHAConnection.java:288-299",
    "beyond": "DefaultHAConnection.java:319,334-362",
    "check": "DefaultHAClient.java:193-199,207",
}


@dataclass
class HaVerdict:
    """What a restarted pair does, for one choice of master."""

    master: str  # "A" or "B"
    outcome: str  # in-sync | catch-up | slave-ahead | diverged | not-compared
    truncates: bool
    refuses: bool
    text: str
    cites: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "master": self.master,
            "outcome": self.outcome,
            "truncates": self.truncates,
            "refuses": self.refuses,
            "text": self.text,
            "cites": SOURCE + " " + self.cites,
        }


def classic_verdict(diff: LogDiff, master: str) -> HaVerdict:
    """The classic HA rule applied to `diff` with `master` ("A" or "B") as the master."""
    slave = "B" if master == "A" else "A"
    m_end, s_end = diff.max_offsets if master == "A" else diff.max_offsets[::-1]
    if diff.identical:
        return HaVerdict(
            master, "in-sync", False, False, "the logs are identical: nothing to ship", WHERE["report"]
        )
    if s_end == 0:
        return HaVerdict(
            master,
            "catch-up",
            False,
            False,
            f"the slave {slave} is empty: the master ships from the start of its last commitlog file",
            WHERE["empty"],
        )
    if diff.first_difference is None and s_end < m_end:
        return HaVerdict(
            master,
            "catch-up",
            False,
            False,
            f"the slave {slave} is a byte prefix of the master: it reports {s_end} and the master ships "
            f"{m_end - s_end} bytes from there; nothing is truncated",
            f"{WHERE['report']}; {WHERE['check']}",
        )
    if diff.first_difference is None:
        return HaVerdict(
            master,
            "slave-ahead",
            False,
            False,
            f"the slave {slave} is longer than the master ({s_end} > {m_end}) and the master is its "
            f"prefix: classic HA does not truncate it; the master has nothing at {s_end} and sends "
            "heartbeats until its own log passes that offset, then ships its bytes from there - after the "
            f"slave's own {s_end - m_end} bytes that the master never had",
            f"{WHERE['beyond']}; {WHERE['check']}",
        )
    d = diff.record_start
    tail = (
        f"the master ships its bytes from {s_end} on, after the slave's own"
        if s_end <= m_end
        else f"the master has nothing at {s_end} and ships its bytes from there once its log passes it, "
        "after the slave's own"
    )
    return HaVerdict(
        master,
        "diverged",
        False,
        False,
        f"the logs diverge at {d}: classic HA compares offsets only, so it neither truncates nor refuses the "
        f"slave {slave}: it keeps [{d}, {s_end}) as it is and {tail} - a log no broker wrote (stop both, "
        "decide which side's tail to keep, and salvage the other's messages)",
        f"{WHERE['report']}; {WHERE['beyond']}; {WHERE['check']}",
    )


CONTROLLER_WHERE = (
    "autoswitch/AutoSwitchHAClient.java:435-474 (doTruncate); autoswitch/EpochFileCache.java:123-135, 227-245"
)


def _same_epoch_restart(
    slave_epochs: Epochs,
    master_epochs: Epochs,
    ends: tuple[int, int],
    slave: str,
    point: int,
    prefix_end: int | None,
) -> str:
    """What changes when the master restarts at the epoch it already holds (`reanchored`): "" when nothing."""
    m_end, s_end = ends
    if not master_epochs.entries:
        return ""
    epoch = master_epochs.entries[-1].epoch
    if slave_epochs.entries and slave_epochs.entries[-1].epoch > epoch:
        return ""  # the controller's epoch is past the master's: it can only elect it at a new one
    again = consistent_point(slave_epochs, reanchored(master_epochs, m_end))
    if again == point:
        return ""
    head = (
        f"; but if the master restarts at its same epoch {epoch} (the controller had not seen it down and "
        "answers CONTROLLER_MASTER_STILL_EXIST), its changeToMaster re-anchors epoch "
        f"{epoch} at its end {m_end} (AutoSwitchHAService.java:136-141) and "
    )
    if again < 0:
        return head + "the slave finds no consistent point and does not sync"
    if again < s_end:
        return head + f"the consistent point becomes {again}: the slave {slave} truncates to {again} instead"
    if prefix_end is not None and prefix_end < s_end:
        return head + (
            f"the consistent point becomes {again}: nothing is truncated, the slave {slave} keeps its "
            f"diverged bytes [{prefix_end}, {s_end}) and receives the master's bytes from {s_end} on, a log "
            "no broker wrote (restart the master only once the controller elected it at a new epoch)"
        )
    return head + f"the consistent point becomes {again}: nothing is truncated"


def controller_verdict(
    slave_epochs: Epochs,
    master_epochs: Epochs,
    ends: tuple[int, int],
    master: str,
    prefix_end: int | None = None,
) -> HaVerdict:
    """The controller mode's rule (AutoSwitchHAClient.doTruncate) with `master` ("A"/"B") as the master,
    elected at a new epoch: `ends` are (master's, slave's) max physical offsets, which end their last epochs;
    `prefix_end` is where their logs stop agreeing (the text then says what a restart of the master at the
    epoch it holds would do instead, `_same_epoch_restart`)."""
    slave = "B" if master == "A" else "A"
    m_end, s_end = ends
    if not slave_epochs.entries:
        return HaVerdict(
            master,
            "new-replica",
            False,
            False,
            f"the slave {slave} has no epoch entries: AutoSwitchHAClient takes it for a new replica, "
            "truncates nothing and reports offset 0",
            CONTROLLER_WHERE,
        )
    point = consistent_point(slave_epochs, master_epochs)
    if point < 0:
        return HaVerdict(
            master,
            "no-consistent-point",
            False,
            True,
            f"no epoch of the slave {slave} is the master's with the same start offset: doTruncate finds no "
            "consistent point and the slave does not sync (stop both; decide which side's log to keep)",
            CONTROLLER_WHERE,
        )
    if point < s_end:
        return HaVerdict(
            master,
            "truncate",
            True,
            False,
            f"the newest epoch both hold with the same start ends at {point}: the slave {slave} truncates "
            f"its commitlog to {point}, dropping [{point}, {s_end}), then receives the master's bytes from "
            "there (salvage the dropped messages first)"
            + _same_epoch_restart(slave_epochs, master_epochs, ends, slave, point, prefix_end),
            CONTROLLER_WHERE,
        )
    outcome = "in-sync" if s_end == m_end else "catch-up"
    return HaVerdict(
        master,
        outcome,
        False,
        False,
        f"the slave {slave}'s log ends at the consistent point {point}: nothing is truncated"
        + ("" if outcome == "in-sync" else f"; the master ships {m_end - s_end} bytes from there")
        + _same_epoch_restart(slave_epochs, master_epochs, ends, slave, point, prefix_end),
        CONTROLLER_WHERE,
    )
