"""fastjson 1.x's JSON dialect: parse the broker's config files and write them back byte for byte.

The broker writes `config/*.json` with `JSON.toJSONString(obj, prettyFormat)` of fastjson 1.2.83
(`RemotingSerializable.toJson(obj, prettyFormat)`). That output is not standard JSON: maps with Integer/Long
keys are written with bare number keys (`{0:231,1:232\n\t\t}`). This module reads that dialect (and compact
JSON, which slaves and the metrics files use) and writes it exactly as fastjson does.

Python shapes, chosen so that a parse keeps everything the writer needs:

* object -> `dict`, in file order. A bare number key becomes an `int` key, a quoted key stays a `str`
  (`{"0":1}` and `{0:1}` stay distinguishable). The writer puts each `str`-keyed entry on its own line
  and `int`-keyed entries inline, entry by entry, as fastjson's MapSerializer does, so a bean and a
  String-keyed map look the same and need no marker.
* array -> `list` when it was written one element per line (a Java `List` in pretty format), `tuple`
  when written inline (`Set`, Java arrays, and every array of a compact document). An empty array
  parses as `[]`; both types write it as `[]`.
* string -> `str`, integer -> `int` (Java long range enforced), other numbers -> `float`, `true`/`false`
  -> `bool`, `null` -> `None`.

Whether a whole document is pretty or compact is the one layout fact not carried by the value:
`is_pretty(text)` tells, and `dumps(value, pretty=...)` takes it back.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any, NoReturn

from formats.errors import FormatError

JAVA_LONG_MIN = -(2**63)
JAVA_LONG_MAX = 2**63 - 1
# Config files nest at most 7 levels; the bound keeps hostile input away from Python's recursion limit.
MAX_DEPTH = 64

Path = tuple[str | int, ...]

_WHITESPACE = " \t\n\r"
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")
_PLAIN_CHARS = re.compile(r'[^"\\]*')
_HEX4 = re.compile(r"[0-9a-fA-F]{4}")
_SIMPLE_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def line_col(text: str, offset: int) -> tuple[int, int]:
    """1-based line and column (in characters) of a character offset."""
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def located_error(text: str, offset: int, message: str, file: str | None = None) -> FormatError:
    """A FormatError at a character offset of `text`, with line:column in the message."""
    line, col = line_col(text, offset)
    return FormatError(f"line {line}, column {col}: {message}", file, offset)


def is_pretty(text: str) -> bool:
    """Whether a document was written with fastjson's PrettyFormat (compact output has no raw newline)."""
    return "\n" in text


def parse(text: str, *, file: str | None = None, positions: dict[Path, int] | None = None) -> Any:
    """Parse one fastjson document; `positions`, if given, receives path -> character offset of every value.

    Raises FormatError (with the character offset and line:column) for anything else: empty input,
    truncation, trailing data, bad tokens, nesting deeper than MAX_DEPTH, integers outside Java's long.
    """
    return _Parser(text, file, positions).document()


class _Parser:
    def __init__(self, text: str, file: str | None, positions: dict[Path, int] | None) -> None:
        self.text = text
        self.file = file
        self.positions = positions
        self.pos = 0

    def fail(self, message: str, offset: int | None = None) -> NoReturn:
        raise located_error(self.text, self.pos if offset is None else offset, message, self.file)

    def where(self, offset: int) -> str:
        line, col = line_col(self.text, offset)
        return f"line {line}, column {col}"

    def skip_ws(self) -> None:
        text, pos, n = self.text, self.pos, len(self.text)
        while pos < n and text[pos] in _WHITESPACE:
            pos += 1
        self.pos = pos

    def describe(self, offset: int) -> str:
        if offset >= len(self.text):
            return "end of input"
        ch = self.text[offset]
        return repr(ch) if ch.isprintable() else f"character U+{ord(ch):04X}"

    def document(self) -> Any:
        # Java keeps a UTF-8 byte order mark in the string and fastjson's lexer skips it.
        if self.text.startswith("\ufeff"):
            self.pos = 1
        self.skip_ws()
        if self.pos >= len(self.text):
            self.fail("empty document: no JSON value")
        value = self.value(0, ())
        self.skip_ws()
        if self.pos < len(self.text):
            self.fail(f"unexpected {self.describe(self.pos)} after the end of the JSON value")
        return value

    def value(self, depth: int, path: Path) -> Any:
        text, pos = self.text, self.pos
        if pos >= len(text):
            self.fail("unexpected end of input: a value is missing")
        if self.positions is not None:
            self.positions[path] = pos
        ch = text[pos]
        if ch == "{":
            return self.object(depth + 1, path)
        if ch == "[":
            return self.array(depth + 1, path)
        if ch == '"':
            return self.string()
        if ch == "-" or "0" <= ch <= "9":
            return self.number()
        for literal, result in (("true", True), ("false", False), ("null", None)):
            if text.startswith(literal, pos):
                end = pos + len(literal)
                if end < len(text) and (text[end].isalnum() or text[end] == "_"):
                    break
                self.pos = end
                return result
        word = re.match(r"[A-Za-z_][A-Za-z0-9_]*", text[pos : pos + 40])
        if word:
            self.fail(f"unexpected word {word.group()!r}: expected a value")
        self.fail(f"unexpected {self.describe(pos)}: expected a value")

    def check_depth(self, depth: int, start: int) -> None:
        if depth > MAX_DEPTH:
            self.fail(f"nesting deeper than {MAX_DEPTH} levels", start)

    def object(self, depth: int, path: Path) -> dict[str | int, Any]:
        start = self.pos
        self.check_depth(depth, start)
        self.pos += 1
        result: dict[str | int, Any] = {}
        self.skip_ws()
        if self.pos < len(self.text) and self.text[self.pos] == "}":
            self.pos += 1
            return result
        text = self.text
        while True:
            self.skip_ws()
            if self.pos >= len(text):
                self.fail(f"unexpected end of input: object opened at {self.where(start)} is not closed")
            ch = text[self.pos]
            key: str | int
            if ch == '"':
                key = self.string()
            elif ch == "-" or "0" <= ch <= "9":
                key_start = self.pos
                key = self.number()
                if not isinstance(key, int):
                    self.fail("an unquoted object key must be an integer", key_start)
            elif ch == "}":
                self.fail("trailing comma before '}'")
            else:
                self.fail(f"unexpected {self.describe(self.pos)}: expected a quoted or integer object key")
            self.skip_ws()
            if self.pos >= len(text):
                self.fail(f"unexpected end of input: object opened at {self.where(start)} is not closed")
            if text[self.pos] != ":":
                self.fail(f"unexpected {self.describe(self.pos)}: expected ':' after the object key")
            self.pos += 1
            self.skip_ws()
            result[key] = self.value(depth, (*path, key) if self.positions is not None else path)
            self.skip_ws()
            if self.pos >= len(text):
                self.fail(f"unexpected end of input: object opened at {self.where(start)} is not closed")
            ch = text[self.pos]
            self.pos += 1
            if ch == "}":
                return result
            if ch != ",":
                self.fail(f"unexpected {self.describe(self.pos - 1)}: expected ',' or '}}'", self.pos - 1)

    def array(self, depth: int, path: Path) -> list[Any] | tuple[Any, ...]:
        start = self.pos
        self.check_depth(depth, start)
        self.pos += 1
        self.skip_ws()
        # fastjson writes a List one element per line and Sets/arrays inline (fastjson 1.2.83
        # `JSONSerializer`).
        one_per_line = "\n" in self.text[start + 1 : self.pos]
        items: list[Any] = []
        text = self.text
        if self.pos < len(text) and text[self.pos] == "]":
            self.pos += 1
            return items
        while True:
            self.skip_ws()
            if self.pos >= len(text):
                self.fail(f"unexpected end of input: array opened at {self.where(start)} is not closed")
            if text[self.pos] == "]":
                self.fail("trailing comma before ']'")
            items.append(self.value(depth, (*path, len(items)) if self.positions is not None else path))
            self.skip_ws()
            if self.pos >= len(text):
                self.fail(f"unexpected end of input: array opened at {self.where(start)} is not closed")
            ch = text[self.pos]
            self.pos += 1
            if ch == "]":
                return items if one_per_line else tuple(items)
            if ch != ",":
                self.fail(f"unexpected {self.describe(self.pos - 1)}: expected ',' or ']'", self.pos - 1)

    def number(self) -> int | float:
        text, start = self.text, self.pos
        match = _NUMBER.match(text, start)
        if match is None:
            self.fail(f"malformed number: {text[start : start + 20]!r}")
        end = match.end()
        if end < len(text) and (text[end].isalnum() or text[end] in "._+-"):
            if match.group() in ("0", "-0") and text[end].isdigit():
                self.fail("malformed number: leading zeros are not allowed", start)
            self.fail(f"malformed number: {text[start : end + 1]!r}", start)
        self.pos = end
        token = match.group()
        if match.group(1) is None and match.group(2) is None:
            # More than 19 digits can never fit; checking first also keeps int() away from huge strings.
            if len(token.lstrip("-")) > 19 or not JAVA_LONG_MIN <= int(token) <= JAVA_LONG_MAX:
                shown = token if len(token) <= 40 else token[:37] + "..."
                self.fail(f"integer {shown} overflows Java long (int64)", start)
            return int(token)
        value = float(token)
        if math.isinf(value):
            self.fail(f"number {token[:40]} is out of the range of a Java double", start)
        return value

    def string(self) -> str:
        text, start = self.text, self.pos
        pos = start + 1
        parts: list[str] = []
        n = len(text)
        while True:
            chunk = _PLAIN_CHARS.match(text, pos)
            assert chunk is not None
            parts.append(chunk.group())
            pos = chunk.end()
            if pos >= n:
                self.fail(f"unexpected end of input: string opened at {self.where(start)} is not closed", n)
            if text[pos] == '"':
                self.pos = pos + 1
                return "".join(parts)
            # a backslash escape
            if pos + 1 >= n:
                self.fail(f"unexpected end of input: string opened at {self.where(start)} is not closed", n)
            esc = text[pos + 1]
            if esc in _SIMPLE_ESCAPES:
                parts.append(_SIMPLE_ESCAPES[esc])
                pos += 2
                continue
            if esc != "u":
                self.fail(f"invalid escape sequence '\\{esc}' in string", pos)
            unit = self.hex4(pos)
            pos += 6
            if 0xD800 <= unit <= 0xDBFF and text.startswith("\\u", pos) and _HEX4.match(text, pos + 2):
                low = int(text[pos + 2 : pos + 6], 16)
                if 0xDC00 <= low <= 0xDFFF:
                    unit = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                    pos += 6
            parts.append(chr(unit))

    def hex4(self, pos: int) -> int:
        digits = _HEX4.match(self.text, pos + 2)
        if digits is None:
            self.fail("invalid \\u escape: four hex digits expected", pos)
        return int(digits.group(), 16)


# ---------------------------------------------------------------------------------------------------
# Writer


def _needs_unicode_escape(code: int) -> bool:
    # IOUtils.specicalFlags_doubleQuotes == 4 (0-7, 11, 14-31, 127-159) plus U+2028/U+2029, which
    # SerializeWriter escapes too; lone surrogates are our addition: Java would write '?' for them.
    return (
        code <= 7
        or code == 11
        or 14 <= code <= 31
        or 127 <= code <= 159
        or code in (0x2028, 0x2029)
        or 0xD800 <= code <= 0xDFFF
    )


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}
for _code in range(0xA0):
    if _needs_unicode_escape(_code):
        _ESCAPES[chr(_code)] = f"\\u{_code:04X}"
_ESCAPE_RE = re.compile("[" + "".join(re.escape(c) for c in _ESCAPES) + "\u2028\u2029\ud800-\udfff]")


def _escape_char(match: re.Match[str]) -> str:
    ch = match.group()
    return _ESCAPES.get(ch) or f"\\u{ord(ch):04X}"


def quote(text: str) -> str:
    """A string literal as fastjson's SerializeWriter writes it (non-ASCII stays raw, '/' unescaped)."""
    return '"' + _ESCAPE_RE.sub(_escape_char, text) + '"'


def format_double(value: float) -> str:
    """A double as fastjson writes it (RyuDouble: shortest digits, Java's `1.0E10` notation)."""
    if not math.isfinite(value):
        raise FormatError(f"cannot write {value!r}: fastjson writes NaN and infinities as null")
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign, digit_tuple, exponent = Decimal(repr(value)).as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple)).rstrip("0") or "0"
    exponent += len("".join(map(str, digit_tuple))) - len(digits)
    sci = len(digits) - 1 + exponent  # value = d.ddd * 10**sci
    prefix = "-" if sign else ""
    if -3 <= sci < 7:
        if sci >= 0:
            whole = digits[: sci + 1].ljust(sci + 1, "0")
            frac = digits[sci + 1 :] or "0"
        else:
            whole = "0"
            frac = "0" * (-sci - 1) + digits
        return f"{prefix}{whole}.{frac}"
    return f"{prefix}{digits[0]}.{digits[1:] or '0'}E{sci}"


def dumps(value: Any, pretty: bool = True) -> str:
    """Write a value as fastjson does, with PrettyFormat (`pretty=True`) or compact."""
    out: list[str] = []
    _write(value, out, 0, pretty)
    return "".join(out)


def dumps_pretty(value: Any) -> str:
    """fastjson's PrettyFormat output: TAB indents, no spaces, no trailing newline
    (`RemotingSerializable.toJson`)."""
    return dumps(value, pretty=True)


def dumps_compact(value: Any) -> str:
    """fastjson's default compact output (used by timermetrics/transactionMetrics and slaves)."""
    return dumps(value, pretty=False)


def _write(value: Any, out: list[str], indent: int, pretty: bool) -> None:
    # `indent` is JSONSerializer.indentCount: maps, beans and Lists raise it, Sets/arrays do not.
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        if not JAVA_LONG_MIN <= value <= JAVA_LONG_MAX:
            raise FormatError(f"cannot write {value}: it overflows Java long (int64)")
        out.append(str(value))
    elif isinstance(value, float):
        out.append(format_double(value))
    elif isinstance(value, str):
        out.append(quote(value))
    elif isinstance(value, Mapping):
        _write_map(value, out, indent, pretty)
    elif isinstance(value, list):
        _write_list(value, out, indent, pretty)
    elif isinstance(value, tuple | set | frozenset):
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _write(item, out, indent, pretty)
        out.append("]")
    else:
        raise FormatError(f"cannot write a value of type {type(value).__name__} as fastjson JSON")


def _write_map(value: Mapping[Any, Any], out: list[str], indent: int, pretty: bool) -> None:
    if not value:
        out.append("{}")
        return
    out.append("{")
    inner = indent + 1
    for i, (key, item) in enumerate(value.items()):
        if i:
            out.append(",")
        if isinstance(key, str):
            if pretty:
                out.append("\n" + "\t" * inner)
            out.append(quote(key))
        elif isinstance(key, int) and not isinstance(key, bool):
            if not JAVA_LONG_MIN <= key <= JAVA_LONG_MAX:
                raise FormatError(f"cannot write map key {key}: it overflows Java long (int64)")
            out.append(str(key))
        else:
            raise FormatError(f"cannot write map key {key!r}: keys must be str or int")
        out.append(":")
        _write(item, out, inner, pretty)
    if pretty:
        out.append("\n" + "\t" * indent)
    out.append("}")


def _write_list(value: list[Any], out: list[str], indent: int, pretty: bool) -> None:
    if not value:
        out.append("[]")
        return
    out.append("[")
    inner = indent + 1
    for i, item in enumerate(value):
        if i:
            out.append(",")
        if pretty:
            out.append("\n" + "\t" * inner)
        _write(item, out, inner, pretty)
    if pretty:
        out.append("\n" + "\t" * indent)
    out.append("]")
