"""Java text: `.properties` (`java.util.Properties.load`, the subset brokers and DLedger write: broker.conf,
DLedger's `checkpoint` and `currterm`, `IOUtils.properties2String`'s `key=value` lines), `Long.parseLong`."""

from __future__ import annotations

import re

_KEY_END = re.compile(r"[=: \t\f]")


def parse_properties(text: str) -> dict[str, str]:
    """A Java .properties file, the subset brokers use: `key=value`, `key: value` or `key value` (the key
    ends at the first `=`, `:` or blank, as in java.util.Properties), # and ! comments."""
    result: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        end = _KEY_END.search(line)
        if end is None:
            result[line] = ""
            continue
        rest = line[end.start() :].lstrip(" \t\f")
        if rest[:1] in ("=", ":"):
            rest = rest[1:]
        result[line[: end.start()]] = rest.strip()
    return result


def java_parse_long(text: str) -> int | None:
    """`Long.parseLong`: the value, or None where Java throws (not a decimal, or out of range)."""
    body = text[1:] if text[:1] in "+-" else text
    if not body or not body.isascii() or not body.isdigit():
        return None
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None
