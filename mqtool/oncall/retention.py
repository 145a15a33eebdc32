"""`mqtool retention`: what the broker's clean services delete on their next runs, what that costs each
topic and consumer group, and when retention acts next.

The runs come from `store.clean.plan` (the broker's rules, with the settings of `--broker-config`, the
disk's real usage or `--disk-used`, and `--now`); the message loss is read from the consume queues (the
queue offsets between each queue's min offset before and after) and the groups' committed offsets
(consumerOffset.json, as the broker loads it): a group whose committed offset is below a queue's new min
offset loses the messages between the two unconsumed. The forecast is `store.clean.forecast`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import tzinfo
from typing import Any

from formats.errors import MqtoolError, UsageError
from mqtool.offsets.progress import committed_offsets
from store.clean.disk import disk_usage, given_usage
from store.clean.forecast import (
    DEFAULT_WINDOW_MS,
    delete_schedule,
    threshold_eta,
    write_rate,
)
from store.clean.plan import CleanPlan, plan_clean
from store.clean.settings import broker_conf_properties, clean_settings
from store.queue.lmq import is_lmq
from store.storedir import Store


@dataclass
class RetentionReport:
    """The document `mqtool retention` prints (`to_json`), built by `retention_report`."""

    document: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return self.document


def _refuse_layouts(store: Store) -> None:
    """A commitlog mqtool does not read as the broker does has other retention rules: named, refused."""
    for part in store.layout.kind.unsupported_reads():
        if part.name.startswith(("DLedger", "multi-path", "relocated")) or "commitlog" in part.name:
            raise MqtoolError(
                f"this store has a {part.name} ({part.evidence}): its retention follows other rules "
                "(DLedger's own, or several paths), which mqtool does not forecast",
                str(store.root),
            )


def _rate_points(store: Store) -> list[tuple[int, int]]:
    """(physical offset, store time) of each file's first record and of the end of the newest record a
    ConsumeQueue points at (the dispatched end: found from the queues' last units without walking a
    1 GiB file; LMQ queues left out, as `info` leaves them), else of the commitlog's last record. A
    crashed broker's undispatched tail is left out: the rate is that of the writes the broker dispatched."""
    log = store.commitlog
    points = []
    for f in log.files:
        stamp = log.store_time_at(f.start_offset)
        if stamp is not None:
            points.append((f.start_offset, stamp))
    newest = None
    if not store.layout.consume_queues_in_rocksdb:
        for topic, queue_id in store.consume_queues.queues():
            if is_lmq(topic):
                continue
            queue = store.consume_queues.open(topic, queue_id)
            try:
                unit = queue.unit(queue.max_offset - 1) if queue.max_offset > queue.min_offset else None
            finally:
                queue.close()
            if unit is not None and not unit.is_filler and (newest is None or unit.phy_offset > newest[0]):
                newest = (unit.phy_offset, unit.size)
    stamp = log.store_time_at(*newest) if newest is not None else None
    if newest is not None and stamp is not None:
        points.append((newest[0] + newest[1], stamp))
    else:  # no queue to ask (none written, or kept in RocksDB): walk the last file
        last = log.last_record()
        if last is not None:
            points.append((last.physical_offset + last.total_size, last.store_timestamp))
    return sorted(points)


def retention_report(
    store: Store,
    *,
    now_ms: int,
    zone: tzinfo,
    disk_used: float | None = None,
    rounds: int | None = None,
    broker_version: int | None = None,
    system_properties: dict[str, str] | None = None,
    rate_window_ms: int = DEFAULT_WINDOW_MS,
) -> RetentionReport:
    """What the next clean runs from `now_ms` delete (read-only). `disk_used`: the partition's used ratio
    to assume (0-1) instead of measuring it; `rounds`: exactly that many runs (default: until one deletes
    nothing)."""
    if disk_used is not None and not 0 <= disk_used <= 1:
        raise UsageError(f"--disk-used must be a ratio between 0 and 1, not {disk_used}")
    _refuse_layouts(store)
    version = store.layout.broker_version(broker_version)
    settings = clean_settings(version.major, broker_conf_properties(store.broker_config), system_properties)
    commitlog_dir, cq_dir = str(store.commitlog_dir), str(store.consumequeue_dir)
    if disk_used is None:
        physic, logics = disk_usage(commitlog_dir), disk_usage(cq_dir)
    else:
        physic, logics = given_usage(commitlog_dir, disk_used), given_usage(cq_dir, disk_used)
    plan = plan_clean(store, settings, now_ms=now_ms, zone=zone, physic=physic, logics=logics, rounds=rounds)
    first = plan.rounds[0].decision if plan.rounds else None
    deleted_in = {f.name: r.number for r in plan.rounds for f in r.commitlog_deleted}
    remaining = [f for f in plan.files if f.name not in deleted_in]
    schedule = delete_schedule(
        remaining, settings, now_ms=now_ms, zone=zone, space_to_delete=bool(first and first.space_to_delete)
    )
    rate = write_rate(_rate_points(store), rate_window_ms)
    frees = [(s.deleted_ms, s.file.size) for s in schedule if s.deleted_ms is not None]
    thresholds = []
    for name, getter, meaning in (
        (
            "diskMaxUsedSpaceRatio",
            lambda: settings.disk_max_used_space_ratio,
            "expired files are deleted at any hour, not only at deleteWhen",
        ),
        (
            "forcedClean",
            lambda: settings.forcibly_ratio,
            "files are deleted whatever their age"
            if settings.clean_file_forcibly_enable
            else "cleanFileForciblyEnable=false: still only expired files",
        ),
        (
            "diskFull",
            lambda: settings.warning_ratio,
            "the store marks the disk full and refuses writes; files are deleted whatever their age",
        ),
    ):
        try:
            ratio = getter()
        except ValueError as exc:
            thresholds.append({"name": name, "ratio": None, "reachedMs": None, "meaning": str(exc)})
            continue
        eta = threshold_eta(physic, rate.per_ms, ratio, frees, now_ms)
        thresholds.append({"name": name, "ratio": ratio, "reachedMs": eta, "meaning": meaning})
    by_file = {s.file.name: s for s in schedule}
    files = []
    for f in plan.files:
        scheduled = by_file.get(f.name)
        files.append(
            {
                "file": f.name,
                "startOffset": f.start,
                "size": f.size,
                "lastModified": f.mtime_ms,
                "expiresAt": f.mtime_ms + settings.file_reserved_ms,
                "deletedInRun": deleted_in.get(f.name),
                "deletedAt": plan.rounds[deleted_in[f.name] - 1].at_ms
                if f.name in deleted_in
                else (scheduled.deleted_ms if scheduled else None),
                "last": f is plan.files[-1],
            }
        )
    queues, groups = _losses(store, plan)
    return RetentionReport(
        {
            "store": store.location,
            "brokerVersion": version.major,
            "nowMs": now_ms,
            "settings": settings.as_dict(),
            "disk": {"commitlog": physic.as_dict(), "consumeQueue": logics.as_dict()},
            "runs": [_run_json(r, settings) for r in plan.rounds],
            "files": files,
            "commitlogMinOffset": {
                "before": plan.commitlog_min_before,
                "after": plan.rounds[-1].commitlog_min_after if plan.rounds else plan.commitlog_min_before,
            },
            "queues": queues,
            "groups": groups,
            "forecast": {"writeRate": rate.as_dict(), "thresholds": thresholds},
            "notes": plan.notes,
        }
    )


def _run_json(r, settings) -> dict[str, Any]:
    return {
        "run": r.number,
        "atMs": r.at_ms,
        **r.decision.as_dict(settings),
        "commitlogDeleted": [f.name for f in r.commitlog_deleted],
        "commitlogMinOffsetAfter": r.commitlog_min_after,
        "queuesCleaned": r.queues_ran,
        "consumeQueueFilesDeleted": sum(len(v) for v in r.cq_deleted.values()),
        "indexFilesDeleted": list(r.index_deleted),
    }


def _losses(store: Store, plan: CleanPlan) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Per queue the messages the runs remove (min offset before -> after); per group and queue the
    messages it never consumed among them."""
    queues = []
    for key, before in sorted(plan.queue_min_before.items()):
        after = plan.queue_min_after[key]
        if after > before:
            queues.append(
                {
                    "topic": key[0],
                    "queueId": key[1],
                    "minOffsetBefore": before,
                    "minOffsetAfter": after,
                    "maxOffset": plan.queue_max[key],
                    "messagesDeleted": after - before,
                }
            )
    groups = []
    offsets = committed_offsets(store)
    plan.notes.extend(offsets.notes)
    for row in queues:
        key = (row["topic"], row["queueId"])
        for group, committed in sorted(offsets.by_queue.get(key, {}).items()):
            lost = row["minOffsetAfter"] - max(committed, row["minOffsetBefore"])
            if lost > 0:
                groups.append(
                    {
                        "group": group,
                        "topic": key[0],
                        "queueId": key[1],
                        "committedOffset": committed,
                        "minOffsetAfter": row["minOffsetAfter"],
                        "unconsumedDeleted": lost,
                    }
                )
    return queues, groups


__all__ = ["RetentionReport", "retention_report"]
