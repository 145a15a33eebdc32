"""Rendering command results: rich tables for people, tabulate text when piped, one field a line
(`--format record`), JSON/JSONL/CSV for scripts.

Operations return plain dicts with machine values (epoch ms, ints, `ip:port` strings) under the field
names of notes/json-output.md; a `Column` list says how a person sees them. JSON, JSONL and CSV always
carry the machine values, tables show times in the chosen zone and say which zone that is.
"""

from __future__ import annotations

import base64
import csv
import json
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import tzinfo
from typing import Any, TextIO

from mqtool.timeparse import format_time, zone_label

FORMATS = ("table", "plain", "markdown", "record", "json", "jsonl", "csv")


@dataclass
class Column:
    """One column of a table: the row key it shows and how."""

    key: str
    header: str | None = None
    kind: str = "text"  # text | int | time | bool
    max_width: int | None = None

    def title(self, zone: tzinfo) -> str:
        base = self.header or self.key
        return f"{base} ({zone_label(zone)})" if self.kind == "time" else base


@dataclass
class RenderContext:
    """Where and how to print: the output format, the time zone, the stream."""

    fmt: str
    zone: tzinfo
    out: TextIO = field(default_factory=lambda: sys.stdout)

    @property
    def machine(self) -> bool:
        return self.fmt in ("json", "jsonl", "csv")


def default_format(requested: str | None, out: TextIO | None = None) -> str:
    """`table` on a terminal, `plain` when piped, unless asked otherwise."""
    if requested:
        return requested
    stream = out or sys.stdout
    return "table" if stream.isatty() else "plain"


def json_default(value: Any) -> Any:
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    if hasattr(value, "to_json"):
        return value.to_json()
    raise TypeError(f"cannot render {type(value).__name__} as JSON")


def to_json_text(document: Any, *, indent: int | None = 2) -> str:
    if indent is None:
        return _LINE_ENCODER.encode(document)
    return json.dumps(document, default=json_default, ensure_ascii=False, indent=indent)


# what json.dumps(default=json_default, ensure_ascii=False) builds per call: JSONL writes one per row
_LINE_ENCODER = json.JSONEncoder(default=json_default, ensure_ascii=False)


def size_text(n: int | None) -> str:
    """A byte count for people: `1.3 GiB`, `512.0 KiB`, `90 B`."""
    if n is None:
        return ""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def _display(value: Any, column: Column, zone: tzinfo) -> str:
    if value is None:
        return ""
    if column.kind == "time" and isinstance(value, int):
        return format_time(value, zone)
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict):
        text = " ".join(f"{k}={v}" for k, v in value.items())
    elif isinstance(value, list | tuple):
        text = ", ".join(str(v) for v in value)
    else:
        text = str(value)
    text = "".join(ch if ch.isprintable() else f"\\x{ord(ch):02x}" for ch in text)
    if column.max_width and len(text) > column.max_width:
        text = text[: column.max_width - 1] + "…"
    return text


def _csv_value(value: Any) -> Any:
    if isinstance(value, dict | list):
        return to_json_text(value, indent=None)
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(bytes(value)).decode("ascii")
    return "" if value is None else value


def emit_rows(
    rows: Iterable[dict[str, Any]],
    columns: list[Column],
    ctx: RenderContext,
    *,
    title: str | None = None,
    empty: str = "(nothing)",
) -> int:
    """Print rows in ctx.fmt; returns the number of rows. JSONL streams; other formats collect."""
    out = ctx.out
    if ctx.fmt == "jsonl":
        count = 0
        for row in rows:
            out.write(to_json_text(row, indent=None) + "\n")
            count += 1
        return count
    if ctx.fmt == "csv":
        writer: csv.DictWriter | None = None
        count = 0
        for row in rows:
            if writer is None:
                writer = csv.DictWriter(out, fieldnames=list(row), extrasaction="ignore", lineterminator="\n")
                writer.writeheader()
            writer.writerow({k: _csv_value(v) for k, v in row.items()})
            count += 1
        if writer is None:
            out.write(",".join(c.key for c in columns) + "\n")
        return count
    materialised = list(rows)
    if ctx.fmt == "json":
        out.write(to_json_text(materialised) + "\n")
        return len(materialised)
    emit_table(materialised, columns, ctx, title=title, empty=empty)
    return len(materialised)


def emit_table(
    rows: list[dict[str, Any]],
    columns: list[Column],
    ctx: RenderContext,
    *,
    title: str | None = None,
    empty: str = "(nothing)",
) -> None:
    if ctx.fmt == "record":
        emit_records(rows, columns, ctx, title=title, empty=empty)
        return
    headers = [c.title(ctx.zone) for c in columns]
    cells = [[_display(row.get(c.key), c, ctx.zone) for c in columns] for row in rows]
    if ctx.fmt == "table":
        from rich.console import Console
        from rich.table import Table

        console = Console(file=ctx.out, soft_wrap=False)
        if not rows:
            console.print(f"[bold]{title}[/bold]: {empty}" if title else empty)
            return
        table = Table(title=title, title_justify="left", show_lines=False)
        for column, header in zip(columns, headers, strict=True):
            justify = "right" if column.kind == "int" else "left"
            table.add_column(header, justify=justify, overflow="fold")
        for line in cells:
            table.add_row(*line)
        console.print(table)
        return
    from tabulate import tabulate

    if title:
        ctx.out.write(f"## {title}\n\n" if ctx.fmt == "markdown" else f"{title}\n")
    if not rows:
        ctx.out.write(empty + "\n\n")
        return
    tablefmt = "github" if ctx.fmt == "markdown" else "simple"
    ctx.out.write(tabulate(cells, headers=headers, tablefmt=tablefmt, disable_numparse=True) + "\n\n")


def emit_records(
    rows: list[dict[str, Any]],
    columns: list[Column],
    ctx: RenderContext,
    *,
    title: str | None = None,
    empty: str = "(nothing)",
) -> None:
    """One field a line, a block per row, nothing cut short (psql's `\\x`, mqadmin's queryMsgById): the
    `record` format. A dict value (properties, a reason per group) gets a line per key, indented."""
    out = ctx.out
    if title:
        out.write(f"{title}\n")
    if not rows:
        out.write(empty + "\n\n")
        return
    labels = [c.title(ctx.zone) for c in columns]
    nested = [k for row in rows for v in row.values() if isinstance(v, dict) for k in v]
    width = max(len(label) + 2 for label in labels)
    width = max([width, *(len(str(k)) + 4 for k in nested)])
    for n, row in enumerate(rows, 1):
        out.write(f"-[ RECORD {n} ]{'-' * max(4, width - 9)}\n")
        for column, label in zip(columns, labels, strict=True):
            whole = Column(column.key, kind=column.kind)  # no max_width: a record shows all of a value
            value = row.get(column.key)
            if isinstance(value, dict):
                out.write(f"{label}:{'' if value else ' (none)'}\n")
                for key, item in value.items():
                    out.write(f"  {str(key) + ':':<{width - 2}}{_display(item, whole, ctx.zone)}\n")
            else:
                out.write(f"{label + ':':<{width}}{_display(value, whole, ctx.zone)}\n")
    out.write("\n")


def emit_fields(pairs: list[tuple[str, Any, str]], ctx: RenderContext, *, title: str | None = None) -> None:
    """A two-column key/value table (for summaries); pairs are (label, value, kind)."""
    rows = [
        {"field": label, "value": _display(value, Column("value", kind=kind), ctx.zone)}
        for label, value, kind in pairs
    ]
    has_times = any(kind == "time" for _, _, kind in pairs)
    value_header = f"value (times in {zone_label(ctx.zone)})" if has_times else "value"
    emit_table(rows, [Column("field"), Column("value", value_header)], ctx, title=title)


def emit_document(document: Any, ctx: RenderContext, render_human: Callable[[], None]) -> None:
    """JSON prints the document; jsonl prints it on one line; other formats call render_human()."""
    if ctx.fmt == "json":
        ctx.out.write(to_json_text(document) + "\n")
    elif ctx.fmt == "jsonl":
        ctx.out.write(to_json_text(document, indent=None) + "\n")
    else:
        render_human()


@contextmanager
def progress(total: int | None, description: str) -> Iterator[Callable[[int], None]]:
    """A rich progress bar on a terminal (stderr), nothing when piped; yields advance(n)."""
    if not sys.stderr.isatty():
        yield lambda _n: None
        return
    from rich.progress import BarColumn, Progress, TaskProgressColumn, TimeRemainingColumn

    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        TaskProgressColumn(),
        TimeRemainingColumn(),
        transient=True,
    ) as bar:
        task = bar.add_task(description, total=total)
        yield lambda n: bar.advance(task, n)
