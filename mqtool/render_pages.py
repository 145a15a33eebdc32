"""Rows for people, written page by page as they are produced: rich tables fitted to the terminal, tabulate
text (plain, markdown), and the vertical record view (one field per line, as psql's `\\x`).

A page is a few hundred rows, or what arrived in the last second: the first page sets the column widths
and the ones that follow are written in them, so a dump of any size starts printing at once and holds one
page in memory. A page that does not fit the widths (a longer number, another date) starts a new block
under a repeated header.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from rich.cells import cell_len

from mqtool.render_fit import Layout, display, fit

if TYPE_CHECKING:
    from mqtool.render import Column, RenderContext

PAGE_ROWS = 256
PAGE_SECONDS = 1.0


def pages(
    rows: Iterable[dict[str, Any]], size: int = PAGE_ROWS, seconds: float = PAGE_SECONDS
) -> Iterator[list]:
    """`rows` in lists of up to `size`, a list cut early when its first row is `seconds` old."""
    page: list[dict[str, Any]] = []
    started = 0.0
    for row in rows:
        if not page:
            started = time.monotonic()
        page.append(row)
        if len(page) >= size or time.monotonic() - started >= seconds:
            yield page
            page = []
    if page:
        yield page


def _pad(text: str, width: int, right: bool = False) -> str:
    fill = " " * max(0, width - cell_len(text))
    return fill + text if right else text + fill


class PageWriter:
    """Writes one table's pages in one human format; `finish` ends it (the empty note, the footer)."""

    def __init__(self, columns: Sequence[Column], ctx: RenderContext, title: str | None) -> None:
        self.columns = list(columns)
        self.ctx = ctx
        self.title = title
        self.rows = 0

    def texts(self, page: Sequence[dict[str, Any]]) -> list[list[str]]:
        return [[display(row.get(c.key), c, self.ctx.zone) for c in self.columns] for row in page]

    def page(self, page: Sequence[dict[str, Any]]) -> None:
        self.write(page)
        self.rows += len(page)
        self.ctx.out.flush()

    def write(self, page: Sequence[dict[str, Any]]) -> None:
        raise NotImplementedError

    def finish(self, empty: str) -> None:
        raise NotImplementedError


class RichPages(PageWriter):
    """`table`: a rich table in the terminal's width (`ctx.width`), columns fitted by `render_fit`."""

    def __init__(self, columns: Sequence[Column], ctx: RenderContext, title: str | None) -> None:
        super().__init__(columns, ctx, title)
        self.layout: Layout | None = None
        self.hidden: dict[str, Column] = {}

    def write(self, page: Sequence[dict[str, Any]]) -> None:
        from rich import box
        from rich.table import Table
        from rich.text import Text

        zone = self.ctx.zone
        texts = self.texts(page)
        fresh = self.layout is None or not self.layout.accepts(texts)
        if fresh:
            self.layout = fit(self.columns, texts, zone, self.ctx.width)
            self.hidden.update({c.key: c for c in self.layout.hidden})
        layout = self.layout
        assert layout is not None
        console = self._console(layout.total_width)
        if self.title and self.rows == 0:
            console.print(Text(self.title, style="bold"))
        table = Table(
            box=box.SIMPLE_HEAD,
            show_edge=False,
            pad_edge=False,
            collapse_padding=True,
            show_header=fresh,
            header_style="bold",
        )
        for f in layout.shown:
            free = f.column.kind == "text"
            table.add_column(
                Text(f.header(zone), no_wrap=False, overflow="fold"),  # headers wrap between words
                width=f.width,
                no_wrap=not free,
                overflow="fold" if free else "ellipsis",
                justify="right" if f.column.kind == "int" else "left",
            )
        for cells in layout.cells(texts):
            table.add_row(*(Text(cell) for cell in cells))
        console.print(table)

    def _console(self, width: int):
        # a height too: rich takes a dumb terminal (TERM=dumb) as 80 columns unless given both
        return _console_class()(
            file=self.ctx.out, width=max(width, self.ctx.width or 0, 1), height=25, soft_wrap=False
        )

    def finish(self, empty: str) -> None:
        from rich.text import Text

        console = self._console(self.ctx.width or 80)
        if self.rows == 0:
            console.print(Text(f"{self.title}: {empty}" if self.title else empty))
            return
        if self.hidden:
            names = ", ".join(c.header or c.key for c in self.hidden.values())
            n = len(self.hidden)
            console.print(
                Text(
                    f"{n} column{'s' if n > 1 else ''} hidden to fit the terminal: {names} "
                    "(--wide shows every column, -x one field per line)",
                    style="dim",
                )
            )
        console.print()


class TextPages(PageWriter):
    """`plain` and `markdown`: tabulate text, every column at the widest of its first page."""

    def __init__(self, columns: Sequence[Column], ctx: RenderContext, title: str | None) -> None:
        super().__init__(columns, ctx, title)
        self.widths: list[int] | None = None

    def write(self, page: Sequence[dict[str, Any]]) -> None:
        from tabulate import tabulate

        headers = [c.title(self.ctx.zone) for c in self.columns]
        texts = self.texts(page)
        wanted = [max([cell_len(h), *(cell_len(row[i]) for row in texts)]) for i, h in enumerate(headers)]
        fresh = self.widths is None or any(w > have for w, have in zip(wanted, self.widths, strict=True))
        if fresh:
            old = self.widths or wanted
            self.widths = [max(a, b) for a, b in zip(wanted, old, strict=True)]
        widths = self.widths
        assert widths is not None
        out = self.ctx.out
        markdown = self.ctx.fmt == "markdown"
        if self.rows == 0:
            if self.title:
                out.write(f"## {self.title}\n\n" if markdown else f"{self.title}\n")
        elif fresh:
            out.write("\n")
        padded = [[_pad(t, w) for t, w in zip(row, widths, strict=True)] for row in texts]
        text = tabulate(
            padded,
            headers=[_pad(h, w) for h, w in zip(headers, widths, strict=True)],
            tablefmt="github" if markdown else "simple",
            disable_numparse=True,
            preserve_whitespace=True,
        )
        if not fresh:
            text = text.split("\n", 2)[2] if text.count("\n") >= 2 else ""
        if text:
            out.write(text + "\n")

    def finish(self, empty: str) -> None:
        out = self.ctx.out
        if self.rows == 0:
            if self.title:
                out.write(f"## {self.title}\n\n" if self.ctx.fmt == "markdown" else f"{self.title}\n")
            out.write(empty + "\n\n")
            return
        out.write("\n")


class RecordPages(PageWriter):
    """`record`: each row as a block of `label | value` lines under `-[ RECORD n ]-`, as psql's `\\x`."""

    def __init__(
        self, columns: Sequence[Column], ctx: RenderContext, title: str | None, *, numbered: bool = True
    ) -> None:
        super().__init__(columns, ctx, title)
        self.numbered = numbered

    def write(self, page: Sequence[dict[str, Any]]) -> None:
        out = self.ctx.out
        labels = [c.title(self.ctx.zone) for c in self.columns]
        label_width = max((cell_len(label) for label in labels), default=0)
        if self.title and self.rows == 0:
            out.write(self.title + "\n")
        texts = self.texts(page)
        value_width = max((cell_len(v) for values in texts for v in values), default=0)
        for n, values in enumerate(texts, start=self.rows + 1):
            if self.numbered:
                out.write(_record_rule(f"-[ RECORD {n} ]", label_width, value_width) + "\n")
            for label, value in zip(labels, values, strict=True):  # display() escapes line breaks
                out.write(f"{_pad(label, label_width)} | {value}".rstrip() + "\n")

    def finish(self, empty: str) -> None:
        if self.rows == 0:
            self.ctx.out.write(f"{self.title}: {empty}\n" if self.title else empty + "\n")
        self.ctx.out.write("\n")


def _record_rule(head: str, label_width: int, value_width: int) -> str:
    """`-[ RECORD 1 ]-----+-----`: the `+` over the bar between labels and values when the head leaves
    room for it."""
    if len(head) <= label_width + 1:
        return head + "-" * (label_width + 1 - len(head)) + "+" + "-" * (value_width + 1)
    return head + "-" * max(0, label_width + 3 + value_width - len(head))


WRITERS = {"table": RichPages, "plain": TextPages, "markdown": TextPages, "record": RecordPages}


@functools.cache
def _console_class():
    """rich's Console, except that a closed pipe is a BrokenPipeError: rich would end the process with
    status 1 itself, where mqtool.cli's main ends it with 0 (a reader like `head` has all it wanted)."""
    from rich.console import Console

    class PipeConsole(Console):
        def on_broken_pipe(self) -> None:
            raise BrokenPipeError()

    return PipeConsole
