"""Where a store's tiered tree is, and which cluster and broker directories in it are this broker's.

The plugin's settings come from broker.conf (`TieredMessageStore` registers its `MessageStoreConfig` with the
broker's `Configuration`): `tieredStoreFilePath`, `tieredBackendServiceProvider`,
`tieredMetadataServiceProvider`, `brokerClusterName`, `brokerName`. Segments of queue topic/q are under
`<tieredStoreFilePath>/<hash>_<brokerClusterName>/<brokerName>/<topic>/<q>/` (`formats.tiered`). mqtool
reads the POSIX provider with the default metadata store only; any other provider is named and refused
(fail closed). The broker's default brokerName is the host name, unknown offline: without an explicit one
mqtool takes the one broker directory of the tree, and names the candidates when there are several.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from formats.errors import MqtoolError
from formats.tiered import DEFAULT_METADATA_PROVIDER, POSIX_PROVIDER, cluster_directory, short_hash
from store.config.brokerconf import BrokerConfig

STORAGE_LEVELS = ("DISABLE", "NOT_IN_DISK", "NOT_IN_MEM", "FORCE")  # MessageStoreConfig.TieredStorageLevel


def storage_level(cfg: BrokerConfig) -> str:
    """tieredStorageLevel as the broker sets it from broker.conf: `MixAll.properties2Object` tries each of
    the three setters it can convert to (`setTieredStorageLevel(int)`: `TieredStorageLevel.valueOf(int)`,
    any number but 1-3 is DISABLE; `(String)`: the enum's name, exactly, after trim) and ignores the one
    that throws; a value neither accepts leaves the default NOT_IN_DISK (5.3.3 `MixAll.java:381-418`,
    tieredstore `MessageStoreConfig.java:38-64, 162-172`)."""
    value = cfg.tieredStorageLevel.strip()
    if value in STORAGE_LEVELS:
        return value
    if value.lstrip("+-").isdigit() and -(2**31) <= int(value) < 2**31:
        number = int(value)
        return STORAGE_LEVELS[number] if 1 <= number <= 3 else "DISABLE"
    return "NOT_IN_DISK"


class TieredLayoutError(MqtoolError):
    """A tiered layout mqtool does not read (or cannot place)."""


@dataclass(frozen=True)
class TieredSettings:
    root: Path  # tieredStoreFilePath
    cluster: str
    broker: str
    source: str  # how the tree was named: "--tiered" or "broker-config"
    broker_source: str  # "broker-config" or "the tree" (the one broker directory found)

    @property
    def cluster_dir(self) -> Path:
        return self.root / cluster_directory(self.cluster)

    @property
    def broker_dir(self) -> Path:
        return self.cluster_dir / self.broker

    def as_dict(self) -> dict[str, str]:
        return {
            "path": str(self.root),
            "clusterDirectory": cluster_directory(self.cluster),
            "brokerName": self.broker,
            "pathFrom": self.source,
            "brokerNameFrom": self.broker_source,
        }


def _check_providers(cfg: BrokerConfig, source: str) -> None:
    backend = cfg.tieredBackendServiceProvider
    if source == "broker-config" and "tieredBackendServiceProvider" not in cfg.explicit:
        raise TieredLayoutError(
            "broker.conf sets tieredStoreFilePath but no tieredBackendServiceProvider: the plugin's "
            "default (MemoryFileSegment) keeps segments in memory, so there is no tree to read; name it "
            "with --tiered",
            cfg.source,
        )
    if "tieredBackendServiceProvider" in cfg.explicit and backend != POSIX_PROVIDER:
        raise TieredLayoutError(
            f"tieredBackendServiceProvider={backend}: mqtool reads only the POSIX provider "
            f"({POSIX_PROVIDER})",
            cfg.source,
        )
    meta = cfg.tieredMetadataServiceProvider
    if "tieredMetadataServiceProvider" in cfg.explicit and meta != DEFAULT_METADATA_PROVIDER:
        raise TieredLayoutError(
            f"tieredMetadataServiceProvider={meta}: mqtool reads only {DEFAULT_METADATA_PROVIDER} "
            "(config/tieredStoreMetadata.json)",
            cfg.source,
        )


def _cluster_dirs(root: Path) -> list[str]:
    """The `<hash>_<cluster>` directories whose hash is their cluster's."""
    found = []
    for entry in sorted(root.iterdir()) if root.is_dir() else []:
        head, sep, cluster = entry.name.partition("_")
        if sep and entry.is_dir() and short_hash(cluster) == head:
            found.append(cluster)
    return found


def resolve_tiered(cfg: BrokerConfig, tiered: Path | None) -> TieredSettings | None:
    """The tiered tree of a broker: `tiered` (--tiered) else broker.conf's tieredStoreFilePath; None when
    neither names one."""
    if tiered is not None:
        root, source = Path(tiered), "--tiered"
    elif cfg.tieredStoreFilePath:
        root, source = Path(cfg.tieredStoreFilePath), "broker-config"
    else:
        return None
    _check_providers(cfg, source)
    if not root.is_dir():
        raise TieredLayoutError("the tiered store path is not a directory", str(root))
    cluster = cfg.brokerClusterName
    if not (root / cluster_directory(cluster)).is_dir():
        others = _cluster_dirs(root)
        if "brokerClusterName" in cfg.explicit or len(others) != 1:
            raise TieredLayoutError(
                f"no directory {cluster_directory(cluster)} for cluster {cluster!r} "
                f"(cluster directories here: {', '.join(map(repr, others)) or 'none'}); "
                "give the broker's brokerClusterName with --broker-config",
                str(root),
            )
        cluster = others[0]
    cluster_dir = root / cluster_directory(cluster)
    if cfg.brokerName is not None:
        return TieredSettings(root, cluster, cfg.brokerName, source, "broker-config")
    brokers = sorted(p.name for p in cluster_dir.iterdir() if p.is_dir())
    if len(brokers) != 1:
        raise TieredLayoutError(
            f"brokerName is not set and the tree has {len(brokers)} broker directories "
            f"({', '.join(brokers) or 'none'}): give the broker's brokerName with --broker-config",
            str(cluster_dir),
        )
    return TieredSettings(root, cluster, brokers[0], source, "the tree")
