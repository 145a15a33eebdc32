"""EpochFileCache: the controller mode's epochs of a store, and the truncation point of a slave.

`load_epochs` reads `epochFileCheckpoint` as `EpochFileCache.initCacheFromFile` does through
`CheckpointFile.read()` (5.3.3 CheckpointFile.java:143-153): the file, or its `.bak` when the file is
missing, empty of entries or fails with an IOException (count or CRC); a NumberFormatException fails the
broker's start (`formats.epoch`). Each entry's end offset is the next one's start; the last one's is the
store's max physical offset (`setLastEpochEntryEndOffset`, EpochFileCache.java:123-135).

`consistent_point` is `EpochFileCache.findConsistentPoint` (:227-245) as AutoSwitchHAClient.doTruncate
uses it (AutoSwitchHAClient.java:435-474): the slave's newest epoch that the master has with the same start
offset, and the smaller of the two end offsets; -1 when there is none (the slave cannot sync). The slave
then truncates its commitlog there (`truncateFiles`); a slave with no epoch entries is a new replica and
truncates nothing.

`reanchored` is what `AutoSwitchHAService.changeToMaster(epoch)` leaves in a master's cache when the
controller hands it the epoch it already holds last (a master restarted before the controller saw it down: it
answers CONTROLLER_MASTER_STILL_EXIST with the same epoch, 5.3.3 controller ReplicasInfoManager.java:225-236):
`truncateSuffixByEpoch` drops that entry and `appendEntry` adds it again at the master's max offset
(AutoSwitchHAService.java:136-141; EpochFileCache.java:101-114, 250-253): the previous epoch now ends there.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from formats.epoch import EPOCH_FILE, EpochEntry, EpochFileIOError, decode_epoch_file
from store.config.configfile import read_config_text


@dataclass(frozen=True)
class Epochs:
    """A store's epoch entries with their end offsets, and which file gave them."""

    entries: tuple[EpochEntry, ...]
    ends: tuple[int, ...]
    source: str  # file | bak | none

    def entry(self, epoch: int) -> tuple[EpochEntry, int] | None:
        for e, end in zip(self.entries, self.ends, strict=True):
            if e.epoch == epoch:
                return e, end
        return None


def load_epochs(root: Path, max_phy_offset: int) -> Epochs:
    """The store's epochs as the broker's AutoSwitchHAService loads them (FormatError: its start fails)."""
    path = root / EPOCH_FILE
    entries: list[EpochEntry] = []
    source = "none"
    for candidate, name in ((path, "file"), (path.with_name(EPOCH_FILE + ".bak"), "bak")):
        text, _ = read_config_text(candidate)
        if text is None:
            continue
        try:
            entries = decode_epoch_file(text, str(candidate))
        except EpochFileIOError:
            if name == "bak":
                raise
            continue
        if entries:
            source = name
            break
    ends = [e.start_offset for e in entries[1:]]
    if entries:
        last = entries[-1]
        ends.append(max_phy_offset if last.start_offset <= max_phy_offset else 2**63 - 1)
    return Epochs(tuple(entries), tuple(ends), source)


def consistent_point(slave: Epochs, master: Epochs) -> int:
    """`findConsistentPoint` of the slave's cache against the master's: -1 when none."""
    for entry, end in sorted(zip(slave.entries, slave.ends, strict=True), key=lambda x: -x[0].epoch):
        found = master.entry(entry.epoch)
        if found is not None and found[0].start_offset == entry.start_offset:
            return min(end, found[1])
    return -1


__all__ = ["Epochs", "consistent_point", "load_epochs"]


def reanchored(master: Epochs, max_phy_offset: int) -> Epochs:
    """`master` after `changeToMaster` with its own last epoch again, its log ending at `max_phy_offset`."""
    if not master.entries:
        return master
    last = master.entries[-1]
    kept = list(master.entries[:-1])
    if not kept or kept[-1].start_offset < max_phy_offset:  # appendEntry refuses an entry not past the last
        kept.append(EpochEntry(last.epoch, max_phy_offset))
    ends = [e.start_offset for e in kept[1:]] + [max_phy_offset]
    return Epochs(tuple(kept), tuple(ends), master.source)
