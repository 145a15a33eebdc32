"""Rendering command results: tables for people, JSON/JSONL/CSV for scripts, every format streamed.

Operations return plain dicts with machine values (epoch ms, ints, `ip:port` strings) under the field
names of notes/json-output.md; a `Column` list says how a person sees them. JSON, JSONL and CSV always
carry the machine values, tables show times in the chosen zone and say which zone that is.

Rows are written as they are produced, in every format: JSONL and CSV a row at a time, JSON as one array
written element by element, the human formats a page at a time (`mqtool.render.pages`: tables fitted to
the terminal by `mqtool.render.fit`, tabulate text, the vertical record view). Memory holds one page.
"""

from __future__ import annotations

import base64
import csv
import json
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import tzinfo
from typing import Any, TextIO

from formats.errors import UsageError
from mqtool.render.fit import display
from mqtool.render.pages import WRITERS, RecordPages, pages
from mqtool.timeparse import zone_label

HUMAN_FORMATS = ("table", "plain", "markdown", "record")
MACHINE_FORMATS = ("json", "jsonl", "csv")
FORMATS = HUMAN_FORMATS + MACHINE_FORMATS


@dataclass
class Column:
    """One column of a table: the row key it shows and how.

    kind: `int`, `time`, `bool`, `token` (never shortened: a token is text read whole, like an index
    file's name), `id` and `name` (abbreviated in the middle when the terminal is narrow), `text`
    (wraps). priority: 0 = always shown; on a narrow terminal the highest numbers are hidden first (the
    rightmost first among equals).
    """

    key: str
    header: str | None = None
    kind: str = "text"  # text | int | time | bool | token | id | name
    max_width: int | None = None
    priority: int = 1

    def title(self, zone: tzinfo) -> str:
        base = self.header or self.key
        return f"{base} ({zone_label(zone)})" if self.kind == "time" else base


@dataclass
class RenderContext:
    """Where and how to print: the output format, the time zone, the stream, and for `table` the width
    to fit in (None: every column at its natural width, as --wide asks)."""

    fmt: str
    zone: tzinfo
    out: TextIO = field(default_factory=lambda: sys.stdout)
    width: int | None = None

    @property
    def machine(self) -> bool:
        return self.fmt in MACHINE_FORMATS


def default_format(requested: str | None, out: TextIO | None = None) -> str:
    """`table` on a terminal, `plain` when piped, unless asked otherwise."""
    if requested:
        return requested
    stream = out or sys.stdout
    return "table" if stream.isatty() else "plain"


def terminal_width(out: TextIO | None = None) -> int | None:
    """The width a table must fit in: $COLUMNS, else the terminal's; None when neither is known."""
    import os
    import shutil

    if os.environ.get("COLUMNS", "").isdigit():
        return int(os.environ["COLUMNS"]) or None
    stream = out or sys.stdout
    if not stream.isatty():
        return None
    width = shutil.get_terminal_size((0, 0)).columns
    return width or None


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


def csv_value(value: Any) -> Any:
    """A value in a CSV cell: booleans `true`/`false` (as in JSON), nested values as compact JSON."""
    if isinstance(value, bool):
        return "true" if value else "false"
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
    csv_fields: Sequence[str] = (),
) -> int:
    """Print rows in ctx.fmt as they come; returns the number of rows. CSV's header is the first row's
    fields, then `csv_fields` it lacks (fields only later rows have)."""
    if ctx.fmt == "jsonl":
        return _write_jsonl(rows, ctx.out)
    if ctx.fmt == "csv":
        return _write_csv(rows, columns, ctx.out, csv_fields)
    if ctx.fmt == "json":
        return _write_json_array(rows, ctx.out)
    return emit_table(rows, columns, ctx, title=title, empty=empty)


def _write_jsonl(rows: Iterable[dict[str, Any]], out: TextIO) -> int:
    count = 0
    for page in pages(rows):
        out.write("".join(to_json_text(row, indent=None) + "\n" for row in page))
        out.flush()
        count += len(page)
    return count


def _write_json_array(rows: Iterable[dict[str, Any]], out: TextIO) -> int:
    """One JSON array written element by element: the text of json.dumps(list(rows), indent=2)."""
    count = 0
    for page in pages(rows):
        for row in page:
            element = to_json_text(row).replace("\n", "\n  ")
            out.write(("[\n  " if count == 0 else ",\n  ") + element)
            count += 1
        out.flush()
    out.write("\n]\n" if count else "[]\n")
    return count


def _write_csv(
    rows: Iterable[dict[str, Any]], columns: list[Column], out: TextIO, extra: Sequence[str] = ()
) -> int:
    """A header row (the first row's fields, then the `extra` ones it lacks) and a line per row; with no
    row, the columns' keys."""
    writer: csv.DictWriter | None = None
    count = 0
    for page in pages(rows):
        for row in page:
            if writer is None:
                names = list(row) + [k for k in extra if k not in row]
                writer = csv.DictWriter(out, fieldnames=names, extrasaction="ignore", lineterminator="\n")
                writer.writeheader()
            writer.writerow({k: csv_value(v) for k, v in row.items()})
            count += 1
        out.flush()
    if writer is None:
        out.write(",".join(c.key for c in columns) + "\n")
    return count


def emit_table(
    rows: Iterable[dict[str, Any]],
    columns: list[Column],
    ctx: RenderContext,
    *,
    title: str | None = None,
    empty: str = "(nothing)",
) -> int:
    """Rows in the human format ctx.fmt (table, plain, markdown, record), a page at a time."""
    if ctx.fmt not in HUMAN_FORMATS:
        raise UsageError(f"--format {ctx.fmt} has no table form here")
    writer = WRITERS[ctx.fmt](columns, ctx, title)
    for page in pages(rows):
        writer.page(page)
    writer.finish(empty)
    return writer.rows


def emit_fields(pairs: list[tuple[str, Any, str]], ctx: RenderContext, *, title: str | None = None) -> None:
    """A summary of labelled values, pairs (label, value, kind): a field/value table, or in the record
    view one block of `label | value` lines."""
    if ctx.fmt == "record":
        columns = [Column(f"f{i}", label, kind) for i, (label, _, kind) in enumerate(pairs)]
        writer = RecordPages(columns, ctx, title, numbered=False)
        writer.page([{f"f{i}": value for i, (_, value, _) in enumerate(pairs)}])
        writer.finish("(nothing)")
        return
    rows = [
        {"field": label, "value": display(value, Column("value", kind=kind), ctx.zone)}
        for label, value, kind in pairs
    ]
    has_times = any(kind == "time" for _, _, kind in pairs)
    value_header = f"value (times in {zone_label(ctx.zone)})" if has_times else "value"
    emit_table(
        rows, [Column("field", priority=0), Column("value", value_header, priority=0)], ctx, title=title
    )


def emit_document(
    document: Any,
    ctx: RenderContext,
    render_human: Callable[[], None],
    *,
    csv_rows: tuple[Iterable[dict[str, Any]], list[Column]] | None = None,
) -> None:
    """JSON prints the document; jsonl prints it on one line; csv the rows the document has in one table
    (`csv_rows`: rows and columns), refused when it has none; the human formats call render_human()."""
    if ctx.fmt == "json":
        ctx.out.write(to_json_text(document) + "\n")
    elif ctx.fmt == "jsonl":
        ctx.out.write(to_json_text(document, indent=None) + "\n")
    elif ctx.fmt == "csv":
        if csv_rows is None:
            raise UsageError("--format csv: this output is not one table; use --format json or jsonl")
        _write_csv(csv_rows[0], csv_rows[1], ctx.out)
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
