"""How `mqtool offsets merge` shows what `mqtool.offsets.merge` returns: a table with a column per store
for people, the rows with each side's offset for scripts."""

from __future__ import annotations

import sys

from mqtool.offsets.apply import ApplyResult
from mqtool.offsets.merge import MergePlan, MergeRow
from mqtool.render.output import Column, RenderContext, emit_rows
from mqtool.safety import warn


def _say(ctx: RenderContext, text: str, label: str = "note") -> None:
    """Human formats: stdout after the table; machine formats keep stdout clean (stderr)."""
    if ctx.machine:
        sys.stderr.write(f"mqtool: {label}: {text}\n")
    else:
        ctx.out.write(text + "\n")


def _change_text(row: MergeRow) -> str:
    r = row.reset
    if r.current_offset is None:
        return "new"
    delta = r.new_offset - r.current_offset
    return "=" if delta == 0 else f"{delta:+d}"


def _flags_text(row: MergeRow) -> str:
    clamped = row.reset.clamped_to
    return "" if clamped is None else f"clamped to {clamped} (served from there)"


def render_merge(plan: MergePlan, ctx: RenderContext) -> None:
    """The plan table (or its JSON/CSV rows), warnings on stderr, notes after the table."""
    for w in plan.warnings:
        warn(w)
    if ctx.machine:
        emit_rows(iter(plan.to_json()), _columns(plan), ctx)
    else:
        rows = []
        for row in plan.rows:
            shown = {**row.to_dict(plan.labels), "change": _change_text(row), "flags": _flags_text(row)}
            shown.update({f"side{i}": o for i, o in enumerate(row.sides)})
            rows.append(shown)
        how = (
            "the max of each queue" if plan.prefer == "max" else f"{plan.prefer}'s offsets where it has them"
        )
        title = f"Offsets merge into {plan.labels[plan.into]}: {how}"
        emit_rows(rows, _columns(plan), ctx, title=title, empty="(no committed offset on any side)")
    for text in plan.notes:
        _say(ctx, "Note: " + text if not ctx.machine else text)


def _columns(plan: MergePlan) -> list[Column]:
    columns = [
        Column("group", kind="name", priority=2),
        Column("topic", kind="name", priority=0),
        Column("queueId", "queue", "int", priority=0),
    ]
    columns += [Column(f"side{i}", label, "int", priority=0) for i, label in enumerate(plan.labels)]
    columns += [
        Column("chosenFrom", "chosen from", kind="name", priority=1),
        Column("why", priority=2),
        Column("newOffset", "new", "int", priority=0),
        Column("change", priority=1),
        Column("maxOffset", "max", "int", priority=3),
        Column("flags"),
    ]
    return columns


def render_merge_apply(result: ApplyResult, plan: MergePlan, ctx: RenderContext, execute: bool) -> None:
    target = plan.labels[plan.into]
    if not execute:
        _say(
            ctx,
            f"Dry run: nothing was written. {len(plan.changes)} of {len(plan.rows)} offsets of {target} "
            f"would change; add --execute to write {result.path} (its broker must be stopped).",
        )
        return
    if not result.executed:
        _say(ctx, f"Nothing to write: {target} already holds every chosen offset.")
        return
    _say(
        ctx,
        f"Wrote {result.path}: {result.changed} offsets changed; previous content kept in "
        f"{result.bak_path.name}. Start the broker to use them.",
        "done",
    )
