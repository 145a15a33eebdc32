"""Secret-looking settings of a broker.conf, and their values stripped from anything mqtool hands out.

A key is secret-looking when its name holds (case-insensitively) access key, secret, password / passwd /
pwd, token, credential, private key, or names the auth users the 5.3.3 broker creates
(`AuthConfig.initAuthenticationUser`: a JSON user with its password; `innerClientAuthenticationCredentials`:
an access key and secret key; the tiered store's `objectStoreAccessKey` / `objectStoreSecretKey`); the
value is replaced, the key kept. A URL's user-info (`scheme://user:password@host`) in any value is
stripped too. `Scrubber` then removes every such value from any text or bytes (a value echoed elsewhere,
e.g. in a JSON document), so none leaves in a bundle.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

REDACTED = "<redacted>"
SECRET_KEY = re.compile(
    r"access[._-]?key|secret|passw(?:or)?d|pwd|token|credential|private[._-]?key|authenticationuser|"
    r"sasl|jaas|keystore|truststore",
    re.IGNORECASE,
)
URL_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<info>[^/@\s]+)@")
_KEY_END = re.compile(r"[=: \t\f]")


def is_secret_key(key: str) -> bool:
    return bool(SECRET_KEY.search(key))


@dataclass
class Scrubber:
    """The secret values found so far, and their removal from text and bytes."""

    values: set[str] = field(default_factory=set)

    def remember(self, value: str) -> None:
        """A secret value; a JSON object's or list's string leaves too (an auth user's password)."""
        value = value.strip()
        if len(value) >= 3:  # shorter values (e.g. "on") would blank unrelated text
            self.values.add(value)
        if value[:1] in "{[":
            try:
                parsed = json.loads(value)
            except ValueError:
                return
            for leaf in _string_leaves(parsed):
                self.remember(leaf)

    def text(self, text: str) -> str:
        for value in sorted(self.values, key=len, reverse=True):
            text = text.replace(value, REDACTED)
        return URL_USERINFO.sub(lambda m: f"{m['scheme']}{REDACTED}@", text)

    def data(self, data: bytes) -> bytes:
        for value in sorted(self.values, key=len, reverse=True):
            data = data.replace(value.encode("utf-8"), REDACTED.encode())
        return data


def _string_leaves(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _string_leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield from _string_leaves(item)


def sanitize_properties(text: str, scrubber: Scrubber) -> str:
    """broker.conf with every secret-looking value replaced (key kept), URL user-info stripped, and comment
    lines that name a secret-looking key emptied; every value removed is remembered by `scrubber`."""
    out = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            out.append(raw)
            continue
        if line[0] in "#!":
            out.append(
                f"{line[0]} (comment removed: it names a secret-looking key)" if is_secret_key(line) else raw
            )
            continue
        end = _KEY_END.search(line)
        key = line if end is None else line[: end.start()]
        rest = "" if end is None else line[end.start() :].lstrip(" \t\f")
        sep = "="
        if rest[:1] in ("=", ":"):
            sep, rest = rest[0], rest[1:]
        value = rest.strip()
        if is_secret_key(key):
            scrubber.remember(value)
            out.append(f"{key}{sep}{REDACTED}")
            continue
        for match in URL_USERINFO.finditer(value):
            scrubber.remember(match["info"])
        out.append(raw)
    return scrubber.text("\n".join(out)) + "\n"
