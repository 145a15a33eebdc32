"""How `mqtool offset_reset` shows what `mqtool.offsets.reset` returns: tables for people, JSON for
scripts."""

from __future__ import annotations

import sys

from mqtool.offsets.apply import ApplyResult
from mqtool.offsets.plan import ResetPlan, ResetRow
from mqtool.render import Column, RenderContext, emit_rows
from mqtool.safety import warn


def _lag_text(row: ResetRow) -> str:
    before = "-" if row.lag_before is None else str(row.lag_before)
    return f"{before} -> {row.lag_after}"


def _change_text(row: ResetRow) -> str:
    if row.current_offset is None:
        return "new"
    delta = row.new_offset - row.current_offset
    return "=" if delta == 0 else f"{delta:+d}"


def _flags_text(row: ResetRow) -> str:
    """`forward` (the group skips messages), `clamped to min|max` (it cannot go where it was asked)."""
    flags = ["forward"] if row.forward else []
    if row.clamped_to is not None:
        flags.append(f"clamped to {row.clamped_to}")
    return ", ".join(flags)


def _say(ctx: RenderContext, text: str, label: str = "note") -> None:
    """Human formats: stdout after the table; machine formats keep stdout clean (stderr)."""
    if ctx.machine:
        sys.stderr.write(f"mqtool: {label}: {text}\n")
    else:
        ctx.out.write(text + "\n")


def render_plan(plan: ResetPlan, ctx: RenderContext) -> None:
    """The plan table (or its JSON/CSV rows), warnings on stderr, notes after the table."""
    for w in plan.warnings:
        warn(w)
    if ctx.machine:
        emit_rows((r.to_dict() for r in plan.rows), plan_columns(plan), ctx)
    else:
        rows = [
            {**r.to_dict(), "lag": _lag_text(r), "change": _change_text(r), "flags": _flags_text(r)}
            for r in plan.rows
        ]
        groups = ", ".join(plan.groups) or "-"
        what = f"from {plan.source}" if plan.target is None else plan.target.describe(ctx.zone)
        title = f"Offset reset plan for group {groups}: {what}"
        emit_rows(rows, plan_columns(plan), ctx, title=title, empty="(no queue to reset)")
    for text in plan.notes:
        _say(ctx, "Note: " + text if not ctx.machine else text)


def render_apply(result: ApplyResult, plan: ResetPlan, ctx: RenderContext, execute: bool) -> None:
    if not execute:
        _say(
            ctx,
            f"Dry run: nothing was written to the store. {len(plan.changes)} of {len(plan.rows)} offsets "
            f"would change; add --execute to write {result.path} (the broker must be stopped).",
        )
        return
    if not result.executed:
        _say(ctx, "Nothing to write: every offset already has its target.")
        return
    version = ""
    before, after = result.data_version_before, result.data_version_after
    if before is not None and after is not None:
        version = f"; dataVersion counter {before.counter} -> {after.counter}"
    _say(
        ctx,
        f"Wrote {result.path}: {result.changed} offsets changed{version}; previous content kept in "
        f"{result.bak_path.name}. Start the broker to use them; consumers still online may commit their "
        "own offsets over them.",
        "done",
    )


def plan_columns(plan: ResetPlan) -> list[Column]:
    columns = [
        Column("group", kind="name", priority=2),
        Column("topic", kind="name", priority=0),
        Column("queueId", "queue", "int", priority=0),
        Column("currentOffset", "current", "int", priority=0),
        Column("newOffset", "new", "int", priority=0),
        Column("change"),
        Column("minOffset", "min", "int", priority=3),
        Column("maxOffset", "max", "int", priority=2),
        Column("lag", "lag before -> after"),
        Column("skippedMessages", "skips unconsumed", "int"),
    ]
    if plan.target is None or plan.target.kind == "time":
        columns.append(Column("newOffsetStoreTimestamp", "new offset stored at", "time"))
    columns.append(Column("flags"))
    return columns
