"""The audit's plan: which stores, which commitlog files, which byte ranges of them one Spark task each
scans (`open_stores`, `plan_splits`, `auto_split_size`), and the width of the rate buckets
(`estimate_span`, `choose_bucket`). A store that cannot be opened is a `StoreFailure`; the others are
audited.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from formats.errors import MqtoolError
from mqtool.audit.executor.scan import close_map
from mqtool.exitstatus import StoreUnreadableError
from store.io.filereads import map_readonly
from store.io.remote import is_url, placeholder, redact
from store.storedir import Store

if TYPE_CHECKING:
    import pyarrow as pa

    from store.checks.storefiles import IndexRead

MiB = 1 << 20
MIN_SPLIT = 4 * MiB
MAX_SPLIT = 128 * MiB
TASKS_PER_CORE = 4
BUCKETS = (  # from 1 ms: a store written in a second still gets a curve, not one bucket
    1,
    2,
    5,
    10,
    20,
    50,
    100,
    200,
    500,
    1_000,
    5_000,
    10_000,
    30_000,
    60_000,
    300_000,
    600_000,
    900_000,
    1_800_000,
    3_600_000,
    10_800_000,
    21_600_000,
    43_200_000,
    86_400_000,
    604_800_000,
)
TARGET_BUCKETS = 240


class AuditError(MqtoolError):
    """An audit that cannot run as asked (bad options, an output directory in the way)."""


@dataclass
class AuditOptions:
    """What `run_audit` audits and how."""

    stores: list[str | Path]
    master: str = "local[*]"
    split_size: int | None = None  # None: several ranges per core, 4-128 MiB
    check_crc: bool = True
    output: Path | str | None = None  # a str only for a URL (store.remote)
    top: int = 20
    bucket_ms: int | None = None  # None: chosen from the stores' time span (~240 buckets)
    broker_config: Path | None = None
    now: int | None = None
    checks: bool = True  # run the verify checks (store/checks/)
    deep: bool = False  # and every message key's reachability through the index (verify --deep)
    max_rows: int = 1000  # per check call, as `verify`
    # groups of stores that are replicas of one broker (each among `stores`, as given): compared pairwise
    replicas: list[list[str]] = field(default_factory=list)
    tiered: Path | None = None  # the tiered store tree of the one store audited (else broker.conf's)


@dataclass(frozen=True)
class CommitLogFile:
    path: Path
    name: str
    start_offset: int
    size: int
    entries: bool = False  # a DLedger data file: entries with their messages at +48, decoded whole


@dataclass
class StorePlan:
    index: int
    label: str
    root: Path
    files: list[CommitLogFile]
    store: Store
    index_read: IndexRead | None = None  # read while planning (--deep)
    index_problems: pa.Table | None = None  # the problems that read found

    @property
    def file_bytes(self) -> int:
        return sum(f.size for f in self.files)


@dataclass(frozen=True)
class Split:
    """One task: the records that start in [start, end) of one commitlog file."""

    seq: int
    store: int
    file_index: int
    file: CommitLogFile
    start: int
    end: int


# --- planning ---------------------------------------------------------------------------------------


def audit_labels(stores: list[str | Path]) -> list[str]:
    """Each store's name in the result: as given (a URL without its credentials), `#2`... for a repeat."""
    seen: dict[str, int] = {}
    out = []
    for s in stores:
        label = redact(s) if is_url(s) else str(s)
        seen[label] = seen.get(label, 0) + 1
        out.append(label if seen[label] == 1 else f"{label}#{seen[label]}")
    return out


@dataclass
class StoreFailure:
    """A store the audit could not open (missing, not a store, unreadable): reported, the others go on."""

    store: str
    error: str

    def problem(self) -> dict[str, Any]:
        return {
            "store": self.store,
            "file": "",
            "offset": None,
            "kind": "store",
            "severity": "error",
            "detail": f"not audited: {self.error}",
        }


def open_stores(opts: AuditOptions) -> tuple[list[StorePlan], list[StoreFailure]]:
    """Open every store and list its commitlog files (a zero-length last file is left out, as 5.x does).

    A store that cannot be opened is a StoreFailure and the others are audited; when none can be, the
    error is raised (a single store's error as it is)."""
    from store.config.brokerconf import load_broker_config

    if not opts.stores:
        raise AuditError("no store to audit")
    if opts.deep and not opts.checks:
        raise AuditError("--deep is part of the checks: it cannot go with --no-checks")
    given = {str(s) for s in opts.stores}
    for group in opts.replicas:
        if len(group) < 2:
            raise AuditError(f"--replicas {','.join(group)}: a replica group names two stores or more")
        outside = [m for m in group if m not in given]
        if outside:
            raise AuditError(f"--replicas: {', '.join(outside)} is not among the audited stores")
    config = load_broker_config(opts.broker_config) if opts.broker_config else None
    if opts.tiered is not None and len(opts.stores) > 1:
        raise AuditError("--tiered names the tiered tree of one store: audit one store with it")
    plans: list[StorePlan] = []
    failures: list[StoreFailure] = []
    errors: list[MqtoolError] = []
    for given, label in zip(opts.stores, audit_labels(opts.stores), strict=True):
        try:
            store = Store.open_location(given, config)
            store.tiered_path = opts.tiered
            entries = getattr(store.commitlog, "is_dledger_offset", lambda _offset: False)
            files = [
                CommitLogFile(f.path.resolve(), f.name, f.start_offset, f.size, entries(f.start_offset))
                for f in store.commitlog.queue.files
            ]
        except MqtoolError as exc:
            errors.append(exc)
            failures.append(StoreFailure(label, str(exc)))
            continue
        plans.append(StorePlan(len(plans), label, store.root.resolve(), files, store))
    if not plans:  # exit status UNREADABLE (mqtool.exitstatus)
        if len(errors) == 1:
            raise StoreUnreadableError.of(errors[0])
        raise StoreUnreadableError(
            "no store could be audited: " + "; ".join(f"{f.store}: {f.error}" for f in failures)
        )
    return plans, failures


def auto_split_size(total_bytes: int, parallelism: int) -> int:
    """Several ranges per core: total / (cores * 4), within 4-128 MiB, rounded up to a MiB."""
    target = total_bytes // max(1, parallelism * TASKS_PER_CORE)
    size = min(MAX_SPLIT, max(MIN_SPLIT, target))
    return -(-size // MiB) * MiB


def plan_splits(plans: list[StorePlan], split_size: int) -> list[Split]:
    """Cut every file into ceil(size / split_size) ranges of equal length (the last one may be shorter)."""
    if split_size <= 0:
        raise AuditError("--split-size must be positive")
    splits: list[Split] = []
    for plan in plans:
        for file_index, f in enumerate(plan.files):
            if f.size == 0:
                continue  # a zero-length (last) file: 5.x deletes it on load; nothing to decode
            # a DLedger data file is one range: its walk checks each entry's index against the previous
            pieces = 1 if f.entries else max(1, -(-f.size // split_size))
            step = -(-f.size // pieces)
            for k in range(pieces):
                start, end = k * step, min(f.size, (k + 1) * step)
                splits.append(Split(len(splits), plan.index, file_index, f, start, end))
    return splits


def _first_time(f: CommitLogFile, start: int, window: int) -> list[int]:
    from formats.columnar.decoder import decode_resync

    if f.size == 0:
        return []
    if entry := placeholder(f.path):  # a store read by URL: ranged reads
        from mqtool.audit.session.remote import first_times

        return first_times(entry[0], f.size, f.start_offset, start, window)
    buf = map_readonly(f.path)
    try:
        batch = decode_resync(buf, f.start_offset, start, min(f.size, start + window))
        status = batch.column("status").indices.to_numpy(zero_copy_only=False)
        times = batch.column("storeTimestamp").to_numpy()[status == 0]
        return [int(t) for t in times[:1]] + [int(t) for t in times[-1:]]
    finally:
        close_map(buf)


def estimate_span(plans: list[StorePlan]) -> tuple[int, int] | None:
    """First and (roughly) last store time of the stores, from a few records: the first file's start
    and sampled positions of the last file, plus the index headers' end time."""
    times: list[int] = []
    for plan in plans:
        if not any(f.size for f in plan.files):
            continue
        times += _first_time(next(f for f in plan.files if f.size), 0, MiB)
        last = [f for f in plan.files if f.size][-1]
        for k in range(8):
            times += _first_time(last, last.size * k // 8, 256 * 1024)
        try:
            headers = plan.store.index_service.headers()
            times += [h.end_timestamp for _, h in headers[-1:] if h.end_timestamp > 0]
        except MqtoolError:
            pass
    times = [t for t in times if t > 0]
    return (min(times), max(times)) if times else None


def choose_bucket(span: tuple[int, int] | None) -> int:
    """The smallest bucket width that covers the span in at most ~240 buckets."""
    if span is None:
        return 60_000
    width = max(1, span[1] - span[0])
    for bucket in BUCKETS:
        if width / bucket <= TARGET_BUCKETS:
            return bucket
    return BUCKETS[-1]


def relative_path(plan: StorePlan, f: CommitLogFile) -> str:
    try:
        return str(f.path.relative_to(plan.root))
    except ValueError:
        return str(f.path)
