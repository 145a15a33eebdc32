"""How full the disk under a path is, as the broker measures it (`UtilAll.getDiskPartitionSpaceUsedPercent`,
5.3.3 UtilAll.java:237-270, 4.9.8 UtilAll.java:204-236): used = total - free, and the ratio is
used / (used + usable), rounded up to a whole percent; -1 when the path does not exist."""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class DiskUsage:
    """One partition as `File.getTotalSpace/getFreeSpace/getUsableSpace` see it (bytes), and the ratio."""

    path: str
    ratio: float  # -1 when the path does not exist
    used: int = 0
    entire: int = 0  # used + usable: what the ratio divides by
    device: int | None = None  # st_dev, to tell whether two paths share a partition
    measured: bool = True

    def after_freeing(self, freed: int) -> DiskUsage:
        """The usage once `freed` bytes are deleted on this partition (a given ratio stays as given)."""
        if not self.measured or self.entire <= 0:
            return self
        used = max(0, self.used - freed)
        return DiskUsage(self.path, used_ratio(used, self.entire), used, self.entire, self.device)

    def as_dict(self) -> dict[str, object]:
        return {
            "path": self.path,
            "ratio": self.ratio,
            "usedBytes": self.used if self.measured else None,
            "entireBytes": self.entire if self.measured else None,
            "measured": self.measured,
        }


def used_ratio(used: int, entire: int) -> float:
    """`usedSpace * 100 / entireSpace`, plus 1 when not exact, divided by 100 (Java long arithmetic)."""
    if entire <= 0:
        return -1.0
    whole, rest = divmod(used * 100, entire)
    return (whole + (1 if rest else 0)) / 100.0


def disk_usage(path: str | os.PathLike[str]) -> DiskUsage:
    """The broker's reading of the partition holding `path` (statvfs: blocks, free, available)."""
    try:
        st = os.statvfs(path)
        device = os.stat(path).st_dev
    except OSError:
        return DiskUsage(str(path), -1.0)
    total = st.f_blocks * st.f_frsize
    if total <= 0:
        return DiskUsage(str(path), -1.0)
    used = total - st.f_bfree * st.f_frsize
    entire = used + st.f_bavail * st.f_frsize
    return DiskUsage(str(path), used_ratio(used, entire), used, entire, device)


def given_usage(path: str, ratio: float) -> DiskUsage:
    """A usage given instead of measured (`--disk-used`): the ratio only."""
    return DiskUsage(str(path), ratio, measured=False)
