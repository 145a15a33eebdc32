"""The audit's replica section (`audit --replicas A,B`): each group of stores that are replicas of one broker,
its first store compared with each other one by `mqtool.replicas.diff.diff_replicas` (what `mqtool replicas
diff` prints), one summary row per pair: where the commitlogs part, which side is ahead and by how many
messages, what the classic HA rule does with the pair, how many config rows and consume queues differ. A
pair that differs adds a problem on its first store: `replicas_diverged` (warning: the logs hold different
bytes at one offset), `replicas_lag` (info: one log is a prefix of the other), `replicas_config` (info:
config rows differ only), `replicas_queues` (info: the logs are the same, the queues are not, e.g. a deleted
topic's queues left on one side).
"""

from __future__ import annotations

from typing import Any

from formats.errors import MqtoolError
from mqtool.audit.plan import StorePlan
from mqtool.replicas.diff import ReplicaDiff, diff_replicas


def replica_rows(
    plans: list[StorePlan], groups: list[list[str]]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]:
    """(rows, problems, notes) for the replica `groups` (store labels, as the audit names its stores)."""
    by_label = {plan.label: plan for plan in plans}
    rows: list[dict[str, Any]] = []
    problems: list[dict[str, Any]] = []
    notes: list[str] = []
    for group in groups:
        name = ",".join(group)
        missing = [label for label in group if label not in by_label]
        if missing:
            notes.append(f"replicas {name}: not compared: {', '.join(missing)} could not be audited")
            continue
        first = by_label[group[0]]
        for other in group[1:]:
            plan = by_label[other]
            try:
                diff = diff_replicas(first.store, plan.store, (first.label, plan.label))
            except MqtoolError as exc:
                notes.append(f"replicas {first.label} / {plan.label}: not compared: {exc}")
                continue
            row = _row(name, first.label, plan.label, diff)
            rows.append(row)
            problem = _problem(row, diff)
            if problem is not None:
                problems.append(problem)
    return rows, problems, notes


def _row(group: str, a: str, b: str, diff: ReplicaDiff) -> dict[str, Any]:
    log = diff.log
    ahead = None if log is None or log.ahead is None else (a if log.ahead == "A" else b)
    past = (None, None) if log is None else tuple(sum(side.values()) for side in log.past_prefix)
    return {
        "group": group,
        "storeA": a,
        "storeB": b,
        "identical": diff.identical,
        "maxOffsetA": None if log is None else log.max_offsets[0],
        "maxOffsetB": None if log is None else log.max_offsets[1],
        "commonPrefixEnd": None if log is None else log.prefix_end,
        "firstDifference": None if log is None else log.first_difference,
        "ahead": ahead,
        "messagesPastPrefixA": past[0],
        "messagesPastPrefixB": past[1],
        "ha": "; ".join(f"{a if v.master == 'A' else b} as master: {v.outcome}" for v in diff.ha) or None,
        "notCompared": diff.log_not_compared or diff.ha_not_compared,
        "configRowsDiffering": len(diff.configs.rows),
        "queuesDiffering": len(diff.queues.rows),
        "notes": "; ".join(diff.notes) or None,
    }


def _problem(row: dict[str, Any], diff: ReplicaDiff) -> dict[str, Any] | None:
    pair = f"{row['storeA']} / {row['storeB']}"
    if row["firstDifference"] is not None:
        kind, severity = "replicas_diverged", "warning"
        detail = (
            f"replicas {pair}: the commitlogs hold different bytes from offset {row['firstDifference']} (the "
            f"record at {row['commonPrefixEnd']}); past it {row['messagesPastPrefixA']} / "
            f"{row['messagesPastPrefixB']} messages; {row['ha'] or row['notCompared']}"
        )
    elif row["ahead"] is not None:
        kind, severity = "replicas_lag", "info"
        detail = (
            f"replicas {pair}: {row['ahead']} is ahead ({row['messagesPastPrefixA']} / "
            f"{row['messagesPastPrefixB']} messages past the common prefix ending at "
            f"{row['commonPrefixEnd']})"
        )
    elif row["configRowsDiffering"]:
        kind, severity = "replicas_config", "info"
        tables = sorted({r.table for r in diff.configs.rows})
        detail = f"replicas {pair}: {row['configRowsDiffering']} config row(s) differ ({', '.join(tables)})"
    elif row["queuesDiffering"]:
        kind, severity = "replicas_queues", "info"
        states = sorted({r.state for r in diff.queues.rows})
        detail = f"replicas {pair}: {row['queuesDiffering']} consume queue(s) differ ({', '.join(states)})"
    else:
        return None
    return {
        "store": row["storeA"],
        "file": None,
        "offset": row["firstDifference"],
        "kind": kind,
        "severity": severity,
        "detail": detail,
    }


__all__ = ["replica_rows"]
