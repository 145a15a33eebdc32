"""The retention settings as the broker reads them from broker.conf, and the ratio getters that clamp them.

broker.conf reaches `MessageStoreConfig` through `MixAll.properties2Object` (5.3.3 MixAll.java:381-420):
an int setting is `Integer.parseInt(value)`, a boolean `Boolean.parseBoolean`, a String is trimmed, and a
value the parser throws on is silently ignored: the default stays (`catch (Throwable ignored)`). Defaults:
5.3.3 MessageStoreConfig.java:135-165, 228 (4.9.8 MessageStoreConfig.java:74-87, 140).

The disk ratios differ by version:

* 5.3.3 (DefaultMessageStore.java:2203-2254): `diskSpaceWarningLevelRatio` (90) and
  `diskSpaceCleanForciblyRatio` (85) are MessageStoreConfig ints in percent, unless the system properties
  `rocketmq.broker.diskSpaceWarningLevelRatio` / `...CleanForciblyRatio` (ratios) are set; either way the
  getters clamp the warning ratio to [0.35, 0.90] and the forced-clean ratio to [0.30, 0.85].
* 4.9.8 (DefaultMessageStore.java:1648-1652): only the system properties, default 0.90 and 0.85, no clamp.
* Both: `getDiskMaxUsedSpaceRatio` clamps to [10, 95] percent (5.3.3 MessageStoreConfig.java:792-800).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from formats.javaprops import parse_properties
from formats.message.commitlog import java_parse_int
from store.config.brokerconf import BrokerConfig

WARNING_PROPERTY = "rocketmq.broker.diskSpaceWarningLevelRatio"
FORCIBLY_PROPERTY = "rocketmq.broker.diskSpaceCleanForciblyRatio"
DELETE_FILES_BATCH_MAX_49 = 10  # 4.9.8 MappedFileQueue.DELETE_FILES_BATCH_MAX

INT_DEFAULTS = {
    "fileReservedTime": 72,  # hours
    "diskMaxUsedSpaceRatio": 75,
    "diskSpaceWarningLevelRatio": 90,  # 5.x only
    "diskSpaceCleanForciblyRatio": 85,  # 5.x only
    "deleteFileBatchMax": 10,  # 5.x only (4.9.8: the constant 10)
    "destroyMapedFileIntervalForcibly": 120_000,
    "deleteCommitLogFilesInterval": 100,
    "cleanResourceInterval": 10_000,
    "replicasPerDiskPartition": 1,  # 5.x only
}
ONLY_5X = {
    "diskSpaceWarningLevelRatio",
    "diskSpaceCleanForciblyRatio",
    "deleteFileBatchMax",
    "replicasPerDiskPartition",
}


def _java_double(text: str) -> float | None:
    """`Double.parseDouble` for the plain decimal forms a system property holds (None where Java throws)."""
    try:
        return float(text.strip())
    except ValueError:
        return None


@dataclass(frozen=True)
class CleanSettings:
    """The settings the clean services read, for broker `major` (4 or 5)."""

    major: int
    delete_when: str = "04"
    ints: dict[str, int] = field(default_factory=lambda: dict(INT_DEFAULTS))
    clean_file_forcibly_enable: bool = True
    system_properties: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()  # values the broker ignores, and why
    sources: dict[str, str] = field(default_factory=dict)  # setting -> "broker.conf" or "default"

    @property
    def file_reserved_ms(self) -> int:
        """fileReservedTime (hours) * 60 * 60 * 1000, a Java long (DefaultMessageStore.java:2298)."""
        return self.ints["fileReservedTime"] * 3_600_000

    @property
    def disk_max_used_space_ratio(self) -> float:
        value = min(95, max(10, self.ints["diskMaxUsedSpaceRatio"]))
        return value / 100.0

    @property
    def delete_file_batch_max(self) -> int:
        return self.ints["deleteFileBatchMax"] if self.major >= 5 else DELETE_FILES_BATCH_MAX_49

    def _ratio(self, key: str, prop: str, default_49: float, low: float, high: float) -> float:
        """Raises ValueError where the broker's Double.parseDouble of the system property throws (5.x: each
        clean run fails; 4.9.x: the store cannot even be built)."""
        text = self.system_properties.get(prop)
        if self.major < 5:
            if text is None:
                return default_49
            value = _java_double(text)
            if value is None:
                raise ValueError(f"-D{prop}={text!r} is not a number")
            return value
        if text in (None, ""):
            value = self.ints[key] / 100.0
        else:
            value = _java_double(text)
            if value is None:
                raise ValueError(f"-D{prop}={text!r} is not a number")
        return min(high, max(low, value))

    @property
    def warning_ratio(self) -> float:
        """The disk ratio above which the store marks the disk full (writes refused) and cleans at once."""
        return self._ratio("diskSpaceWarningLevelRatio", WARNING_PROPERTY, 0.90, 0.35, 0.90)

    @property
    def forcibly_ratio(self) -> float:
        """The disk ratio above which the store deletes files whatever their age (cleanFileForciblyEnable)."""
        return self._ratio("diskSpaceCleanForciblyRatio", FORCIBLY_PROPERTY, 0.85, 0.30, 0.85)

    def as_dict(self) -> dict[str, object]:
        return {
            "deleteWhen": self.delete_when,
            **{k: v for k, v in self.ints.items() if self.major >= 5 or k not in ONLY_5X},
            "cleanFileForciblyEnable": self.clean_file_forcibly_enable,
            "diskMaxUsedSpaceRatioInEffect": self.disk_max_used_space_ratio,
            "diskSpaceWarningLevelRatioInEffect": _or_none(lambda: self.warning_ratio),
            "diskSpaceCleanForciblyRatioInEffect": _or_none(lambda: self.forcibly_ratio),
            "deleteFileBatchMaxInEffect": self.delete_file_batch_max,
            "systemProperties": dict(self.system_properties),
            "sources": dict(self.sources),
        }


def _or_none(get):
    try:
        return get()
    except ValueError:
        return None


def clean_settings(
    major: int,
    properties: dict[str, str] | None = None,
    system_properties: dict[str, str] | None = None,
) -> CleanSettings:
    """The settings a broker of `major` takes from broker.conf `properties` (as properties2Object does)
    and the JVM's `system_properties` (-Dkey=value)."""
    properties = properties or {}
    ints = dict(INT_DEFAULTS)
    notes: list[str] = []
    sources = {key: "default" for key in (*ints, "deleteWhen", "cleanFileForciblyEnable")}
    for key in INT_DEFAULTS:
        if key not in properties:
            continue
        if major < 5 and key in ONLY_5X:
            notes.append(f"{key}={properties[key]!r}: a 4.9.x broker has no such setting")
            continue
        value = java_parse_int(properties[key])
        if value is None:
            notes.append(
                f"{key}={properties[key]!r} is not a Java int: the broker ignores it and keeps {ints[key]}"
            )
            continue
        ints[key] = value
        sources[key] = "broker.conf"
    delete_when = "04"
    if "deleteWhen" in properties:
        delete_when = properties["deleteWhen"].strip()
        sources["deleteWhen"] = "broker.conf"
    forcibly = True
    if "cleanFileForciblyEnable" in properties:
        forcibly = properties["cleanFileForciblyEnable"].lower() == "true"  # Boolean.parseBoolean
        sources["cleanFileForciblyEnable"] = "broker.conf"
    return CleanSettings(
        major=major,
        delete_when=delete_when,
        ints=ints,
        clean_file_forcibly_enable=forcibly,
        system_properties=dict(system_properties or {}),
        notes=tuple(notes),
        sources=sources,
    )


def broker_conf_properties(config: BrokerConfig) -> dict[str, str]:
    """Every key=value of the broker.conf behind `config` (empty when none was given)."""
    if not config.source:
        return {}
    return parse_properties(Path(config.source).read_text(encoding="utf-8", errors="replace"))
