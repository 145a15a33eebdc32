"""How `mqtool topic|group update|delete` show what `mqtool.configedit` plans and writes: a row per
change."""

from __future__ import annotations

import sys

from mqtool.configedit.edit import ConfigEdit
from mqtool.render.output import Column, RenderContext, emit_rows
from mqtool.safety import warn

COLUMNS = [
    Column("action", priority=0),
    Column("file", priority=1),
    Column("name", kind="name", priority=0),
    Column("field", priority=0),
    Column("before", priority=0),
    Column("after", priority=0),
]


def _say(ctx: RenderContext, text: str, label: str = "note") -> None:
    if ctx.machine:
        sys.stderr.write(f"mqtool: {label}: {text}\n")
    else:
        ctx.out.write(text + "\n")


def render_edit(edit: ConfigEdit, ctx: RenderContext, execute: bool) -> None:
    """The change rows (or their JSON/CSV), warnings on stderr, then what was or would be written."""
    for w in edit.warnings:
        warn(w)
    emit_rows(
        (r.to_dict() for r in edit.rows),
        COLUMNS,
        ctx,
        title=None if ctx.machine else f"{edit.command} {edit.target} ({edit.broker_version.describe()})",
        empty="(no change)",
    )
    for text in edit.notes:
        _say(ctx, text if ctx.machine else "Note: " + text)
    files = [f.name for f in edit.files] + [str(d) for d in edit.queue_dirs]
    if not edit.changed:
        _say(ctx, "Nothing to write.")
    elif not execute:
        _say(
            ctx,
            f"Dry run: nothing was written. --execute writes {', '.join(files)} (the broker must be stopped; "
            "it reads them at start-up).",
        )
    elif edit.executed:
        versions = [
            f"{f.name} dataVersion counter {f.data_version_before.counter} -> {f.data_version_after.counter}"
            for f in edit.files
            if f.data_version_before is not None
            and f.data_version_after is not None
            and f.data_version_before is not f.data_version_after
        ]
        done = f"Wrote {', '.join(files)} (previous config content kept in .bak)"
        _say(ctx, done + (f"; {'; '.join(versions)}" if versions else "") + ".", "done")
