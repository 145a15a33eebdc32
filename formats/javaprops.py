"""Java `.properties` text (`java.util.Properties.load`), the subset brokers and DLedger write: broker.conf,
DLedger's `checkpoint` and `currterm` (`IOUtils.properties2String`: `key=value` lines)."""

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
