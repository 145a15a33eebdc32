"""Fitting a table to a terminal: which columns to show, how wide each is, and how its cells are shortened.

Numbers, times, yes/no and tokens (an index file's name) are never shortened nor broken across lines;
ids and names are abbreviated in the middle (`FD0000…A4E0001`), free text wraps between words. When even
the narrowest columns do not fit, columns are hidden, the highest `priority` number first and the
rightmost first among equals; a column of priority 0 is never hidden. A time column whose times all fall
on one date shows only the time of day and names the date in its header. The first page of a stream sets
the layout; a later page that does not fit it (a longer number, another date) starts a new one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import tzinfo
from typing import TYPE_CHECKING, Any

from rich.cells import cell_len

from mqtool.timeparse import format_time

if TYPE_CHECKING:
    from mqtool.render.output import Column

GAP = 2  # columns between two table columns (rich SIMPLE_HEAD, padding collapsed, no edge)
ELLIPSIS = "…"
_FIXED = ("int", "time", "bool", "token")  # kinds never shortened
_MIDDLE = ("id", "name")  # kinds abbreviated in the middle
_MIN_WIDTH = {"id": 15, "name": 12, "text": 10}
_DATED = re.compile(r"^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2}\.\d{3})$")


def display(value: Any, column: Column, zone: tzinfo) -> str:
    """A row value as a person reads it in a cell: times in `zone`, yes/no, lists joined, control
    characters escaped, text cut at the column's max_width."""
    if value is None:
        return ""
    if column.kind == "time" and isinstance(value, int) and not isinstance(value, bool):
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
        if column.kind in _MIDDLE:
            return abbreviate_middle(text, column.max_width)
        text = text[: column.max_width - 1] + ELLIPSIS
    return text


def abbreviate_middle(text: str, width: int) -> str:
    """`text` in at most `width` cells, its middle replaced by an ellipsis: both ends of an id stay."""
    if cell_len(text) <= width:
        return text
    if width <= 1:
        return ELLIPSIS[:width]
    keep = width - 1
    head, tail = "", ""
    left, right = 0, len(text)
    while left < right:  # alternate ends, the head getting the extra cell
        take_head = cell_len(head) <= cell_len(tail)
        ch = text[left] if take_head else text[right - 1]
        if cell_len(head) + cell_len(tail) + cell_len(ch) > keep:
            break
        if take_head:
            head, left = head + ch, left + 1
        else:
            tail, right = ch + tail, right - 1
    return head + ELLIPSIS + tail


def _longest_word(text: str) -> int:
    return max((cell_len(w) for w in text.split()), default=0)


@dataclass
class Fitted:
    """A shown column: its width and, for a time column, the date every cell of it shares."""

    column: Column
    index: int  # of the column in the table's columns (and of its text in each row)
    width: int
    date: str | None = None

    def header(self, zone: tzinfo) -> str:
        title = self.column.title(zone)
        if self.date is None:
            return title
        return title[:-1] + f", {self.date})" if title.endswith(")") else f"{title} ({self.date})"

    def cell(self, text: str) -> str:
        """A display text as this column shows it."""
        if self.date is not None and (m := _DATED.match(text)):
            return m.group(2)
        if self.column.kind in _MIDDLE:
            return abbreviate_middle(text, self.width)
        return text


@dataclass
class Layout:
    """The columns a table shows (with widths) and the ones it hides; `limit` is the width it fits in."""

    shown: list[Fitted]
    hidden: list[Column]
    limit: int | None

    @property
    def total_width(self) -> int:
        return sum(f.width for f in self.shown) + GAP * max(0, len(self.shown) - 1)

    def cells(self, texts: Sequence[Sequence[str]]) -> list[list[str]]:
        """Rows of display texts (one per column of the table, in `columns` order) as shown."""
        return [[f.cell(row[f.index]) for f in self.shown] for row in texts]

    def accepts(self, texts: Sequence[Sequence[str]]) -> bool:
        """Whether a later page shows right in this layout: no fixed cell wider than its column, every
        time on the column's date."""
        for f in self.shown:
            for row in texts:
                text = row[f.index]
                if f.date is not None and text:
                    m = _DATED.match(text)
                    if m is None or m.group(1) != f.date:
                        return False
                if f.column.kind in _FIXED and cell_len(f.cell(text)) > f.width:
                    return False
        return True


def fit(columns: Sequence[Column], texts: Sequence[Sequence[str]], zone: tzinfo, limit: int | None) -> Layout:
    """The layout of a table with these display texts (rows x `columns`) in `limit` cells (None: no
    limit: every column at its natural width, times with their dates)."""
    dates = [
        _shared_date(c, [row[i] for row in texts]) if limit is not None else None
        for i, c in enumerate(columns)
    ]
    natural, minimum = [], []
    for i, c in enumerate(columns):
        probe = Fitted(c, i, 0, dates[i])
        header = probe.header(zone)
        values = [
            cell_len(probe.cell(row[i])) if c.kind not in _MIDDLE else cell_len(row[i]) for row in texts
        ]
        widest = max(values, default=0)
        nat = max(widest, cell_len(header), 1)  # the header on one line when there is room
        if c.kind in _FIXED:
            low = max(widest, _longest_word(header), 1)
        else:
            low = max(min(widest, _MIN_WIDTH.get(c.kind, 10)), _longest_word(header), 1)
        natural.append(nat)
        minimum.append(low)
    order = list(range(len(columns)))
    hidden: list[int] = []
    if limit is not None:
        while len(order) > 1 and _width(minimum, order) > limit:
            candidates = [i for i in order if columns[i].priority > 0]
            if not candidates:
                break
            drop = max(candidates, key=lambda i: (columns[i].priority, i))
            order.remove(drop)
            hidden.append(drop)
    widths = {i: natural[i] for i in order}
    if limit is not None:
        excess = _width(natural, order) - limit
        while excess > 0:  # narrow the widest shortenable column, one cell at a time
            shrinkable = [i for i in order if widths[i] > minimum[i]]
            if not shrinkable:
                break
            widest = max(shrinkable, key=lambda i: (widths[i] - minimum[i], widths[i]))
            widths[widest] -= 1
            excess -= 1
    shown = [Fitted(columns[i], i, widths[i], dates[i]) for i in order]
    return Layout(shown, [columns[i] for i in sorted(hidden)], limit)


def _width(widths: Sequence[int], order: Sequence[int]) -> int:
    return sum(widths[i] for i in order) + GAP * max(0, len(order) - 1)


def _shared_date(column: Column, texts: Sequence[str]) -> str | None:
    """The date every time of a time column falls on, if one (and at least one time is shown)."""
    if column.kind != "time":
        return None
    dates = set()
    for text in texts:
        if not text:
            continue
        m = _DATED.match(text)
        if m is None:
            return None
        dates.add(m.group(1))
        if len(dates) > 1:
            return None
    return dates.pop() if dates else None
