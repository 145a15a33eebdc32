"""The CSV plan file of `mqtool offsets reset --export` and `--from-file`.

`export_plan` writes `group,topic,queue,offset` and informational columns (ignored on import);
`read_plan_file` reads that, a header naming the columns (also queueId, partition, newOffset), or
headerless rows, and checks every cell.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from formats.config.base import JAVA_INT_MAX
from mqtool.offsets.plan import JAVA_LONG_MAX, ResetPlan, ResetPlanError
from mqtool.outputs import OutputFile, output_file, replacing

PLAN_FILE_COLUMNS = ("group", "topic", "queue", "offset")


EXPORT_COLUMNS = (*PLAN_FILE_COLUMNS, "currentOffset", "minOffset", "maxOffset", "newOffsetStoreTimestamp")

_HEADER_ALIASES = {
    "group": "group",
    "consumergroup": "group",
    "topic": "topic",
    "queue": "queue",
    "queueid": "queue",
    "partition": "queue",
    "offset": "offset",
    "newoffset": "offset",
}


@dataclass(frozen=True)
class PlanFileRow:
    """One wanted offset of a plan file; `line` is its 1-based line number."""

    line: int
    group: str
    topic: str
    queue_id: int
    offset: int


def is_plan_file(path: Path) -> bool:
    """Whether `path` is a plan CSV `export_plan` wrote: its first line is the export header."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        return fh.readline(1024).rstrip("\r\n") == ",".join(EXPORT_COLUMNS)


def plan_output(
    path: Path | str, *, stores: Iterable[Path | str | None] = (), force: bool = False
) -> OutputFile:
    """Where `--export` may write the plan (mqtool.outputs): in no store, replacing only a plan CSV
    unless `force`."""
    return output_file(
        path, option="--export", what="a plan CSV", stores=stores, written_by=is_plan_file, force=force
    )


def export_plan(
    plan: ResetPlan,
    output: OutputFile | Path | str,
    *,
    stores: Iterable[Path | str | None] = (),
    force: bool = False,
) -> OutputFile:
    """Write the plan as CSV: `group,topic,queue,offset` (+ informational columns, ignored on import),
    to a path checked by `plan_output` (or checked here)."""
    target = output if isinstance(output, OutputFile) else plan_output(output, stores=stores, force=force)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(EXPORT_COLUMNS)
    for r in plan.rows:
        stamp = "" if r.new_offset_store_timestamp is None else r.new_offset_store_timestamp
        current = "" if r.current_offset is None else r.current_offset
        writer.writerow(
            [r.group, r.topic, r.queue_id, r.new_offset, current, r.min_offset, r.max_offset, stamp]
        )
    try:
        with replacing(target, "w") as fh:
            fh.write(out.getvalue())
    except BrokenPipeError:  # --export /dev/stdout into a reader that closed: mqtool.cli's to handle
        raise
    except OSError as exc:
        raise ResetPlanError(f"cannot write the plan: {exc.strerror or exc}", target.given) from exc
    return target


def read_plan_file(path: Path | str, default_group: str | None = None) -> list[PlanFileRow]:
    """Rows of a plan CSV: a header naming group/topic/queue/offset columns (also queueId, partition,
    newOffset), or headerless `group,topic,queue,offset` — or `topic,queue,offset` (Kafka's
    `topic,partition,offset`) with `default_group`. Blank lines and `#` comments are skipped."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise ResetPlanError(f"cannot read the plan: {exc.strerror or exc}", str(path)) from exc
    except UnicodeDecodeError as exc:
        raise ResetPlanError(f"the plan is not UTF-8 text (byte {exc.start})", str(path)) from exc
    file = str(path)
    lines = [
        (n, cells)
        for n, cells in enumerate(csv.reader(io.StringIO(text)), start=1)
        if cells and any(c.strip() for c in cells) and not cells[0].lstrip().startswith("#")
    ]
    if not lines:
        raise ResetPlanError("the plan has no rows", file)
    first = [c.strip() for c in lines[0][1]]
    if any(c.lower() in ("topic", "offset") for c in first):
        columns = {}
        for i, name in enumerate(first):
            key = _HEADER_ALIASES.get(name.lower())
            if key is not None and key not in columns:
                columns[key] = i
        lines = lines[1:]
    elif len(first) == 3:
        columns = {"topic": 0, "queue": 1, "offset": 2}
    elif len(first) >= 4:
        columns = {"group": 0, "topic": 1, "queue": 2, "offset": 3}
    else:
        raise ResetPlanError(f"line {lines[0][0]}: expected group,topic,queue,offset", file)
    missing = [c for c in ("topic", "queue", "offset") if c not in columns]
    if "group" not in columns and default_group is None:
        missing.insert(0, "group")
    if missing:
        hint = " (or give --group for a topic,queue,offset file)" if missing == ["group"] else ""
        raise ResetPlanError(f"the plan has no {'/'.join(missing)} column{hint}", file)
    rows: list[PlanFileRow] = []
    seen: dict[tuple[str, str, int], int] = {}
    for n, cells in lines:
        rows.append(_plan_file_row(n, cells, columns, default_group, file))
        key = (rows[-1].group, rows[-1].topic, rows[-1].queue_id)
        if key in seen:
            where = f"{key[0]} {key[1]}/{key[2]}"
            raise ResetPlanError(f"line {n}: {where} is already planned on line {seen[key]}", file)
        seen[key] = n
    if not rows:
        raise ResetPlanError("the plan has no rows", file)
    return rows


def _plan_file_row(
    n: int, cells: list[str], columns: dict[str, int], default_group: str | None, file: str
) -> PlanFileRow:
    def cell(name: str) -> str:
        i = columns[name]
        if i >= len(cells):
            raise ResetPlanError(f"line {n}: no {name} value", file)
        return cells[i].strip()

    def number(name: str, high: int) -> int:
        raw = cell(name)
        try:
            value = int(raw)
        except ValueError:
            raise ResetPlanError(f"line {n}: {name} {raw!r} is not a whole number", file) from None
        if not 0 <= value <= high:
            raise ResetPlanError(f"line {n}: {name} {value} is out of range (0..{high})", file)
        return value

    group = cell("group") if "group" in columns else ""
    group = group or (default_group or "")
    topic = cell("topic")
    if not group:
        raise ResetPlanError(f"line {n}: no group", file)
    if not topic:
        raise ResetPlanError(f"line {n}: no topic", file)
    return PlanFileRow(n, group, topic, number("queue", JAVA_INT_MAX), number("offset", JAVA_LONG_MAX))
