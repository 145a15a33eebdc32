"""How `mqtool offsets prune` shows what `mqtool.offsets.prune` returns: the rows it removes and why."""

from __future__ import annotations

from mqtool.cli.consumers.offset_reset_render import say
from mqtool.offsets.apply import ApplyResult
from mqtool.offsets.prune import PrunePlan
from mqtool.render.output import Column, RenderContext, emit_rows
from mqtool.safety import warn

COLUMNS = [
    Column("group", kind="name", priority=0),
    Column("topic", kind="name", priority=0),
    Column("queueId", "queue", "int", priority=0),
    Column("offset", kind="int", priority=1),
    Column("reason", priority=0),
    Column("detail", priority=2),
]


def render_plan(plan: PrunePlan, ctx: RenderContext) -> None:
    """The rows (or their JSON/CSV), warnings on stderr, notes after the table."""
    for w in plan.warnings:
        warn(w)
    title = f"Offset prune plan ({plan.file}): {len(plan.rows)} row(s) to remove, {plan.kept} kept"
    emit_rows(
        (r.to_dict() for r in plan.rows),
        COLUMNS,
        ctx,
        title=None if ctx.machine else title,
        empty="(no offset row to prune)",
    )
    for text in plan.notes:
        say(ctx, "Note: " + text if not ctx.machine else text)


def render_apply(result: ApplyResult, plan: PrunePlan, ctx: RenderContext, execute: bool) -> None:
    if not execute:
        say(
            ctx,
            f"Dry run: nothing was written. {len(plan.rows)} offset row(s) would be removed; add --execute "
            f"to write {result.path} (the broker must be stopped).",
        )
        return
    if not result.executed:
        say(ctx, "Nothing to write: no offset row to prune.")
        return
    version = ""
    before, after = result.data_version_before, result.data_version_after
    if before is not None and after is not None:
        version = f"; dataVersion counter {before.counter} -> {after.counter}"
    say(
        ctx,
        f"Wrote {result.path}: {result.changed} offset row(s) removed{version}; previous content kept in "
        f"{result.bak_path.name}.",
        "done",
    )
