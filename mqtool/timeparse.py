"""Time arguments and time display: epoch ms, ISO-8601, mqadmin's `yyyy-MM-dd#HH:mm:ss:SSS`, `now`, `-2h`;
durations as `90m`, `1d2h` or ISO-8601 (`PT2H`, `P1DT2H`: what kafka-consumer-groups' --by-duration takes).

Naive times are read in the chosen zone (`--tz`, default the machine's local zone), and every answer
says which zone it used, so an operator never has to guess.
"""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from formats.errors import UsageError

_DURATION_PART = r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w)"
_COMPACT = re.compile(rf"^(?:{_DURATION_PART})+$")
_DURATION_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000}
# java.time.Duration.parse's grammar (Duration.PATTERN, what Kafka's --by-duration parses): PnDTnHnMn.nS,
# every number signed, seconds with up to 9 fraction digits; days are exactly 24 hours
_ISO = re.compile(
    r"^([-+]?)P(?:([-+]?\d+)D)?(T(?:([-+]?\d+)H)?(?:([-+]?\d+)M)?(?:([-+]?\d+)(?:[.,](\d{0,9}))?S)?)?$",
    re.IGNORECASE,
)
_RELATIVE = re.compile(r"^(?:now)?\s*([+-])\s*(.+)$")
_MQADMIN = re.compile(r"^(\d{4})-(\d{2})-(\d{2})#(\d{2}):(\d{2}):(\d{2}):(\d{3})$")


class TimeArgumentError(UsageError):
    """A time or duration argument that cannot be understood (a usage error: exit 2)."""


def resolve_zone(name: str | None) -> tzinfo:
    """The zone named by `--tz` (IANA name, `UTC`, `local`), or the machine's local zone."""
    if name is None or name.lower() == "local":
        return datetime.now().astimezone().tzinfo or UTC
    if name.upper() in ("UTC", "Z"):
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise TimeArgumentError(
            f"unknown time zone {name!r} (use an IANA name like Asia/Shanghai, or UTC)"
        ) from exc


def zone_label(zone: tzinfo, at_ms: int | None = None) -> str:
    when = datetime.fromtimestamp((at_ms if at_ms is not None else now_ms()) / 1000, tz=zone)
    key = getattr(zone, "key", None)
    name = when.tzname() or "?"
    return f"{key} ({name})" if key and key != name else name


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def parse_duration(text: str) -> int:
    """`90s`, `30m`, `2h`, `1.5d`, `500ms`, `1d2h30m`, or ISO-8601 `PT2H`, `P1DT2H30M`, `PT0.5S` ->
    milliseconds (truncated to whole ms)."""
    raw = text.strip()
    if _COMPACT.match(raw.lower()):
        total = sum(float(n) * _DURATION_MS[unit] for n, unit in re.findall(_DURATION_PART, raw.lower()))
        return int(total)
    iso = _ISO.match(raw)
    if iso and (iso.group(2) or iso.group(4) or iso.group(5) or iso.group(6)) and iso.group(3) != "T":
        sign, days, _, hours, minutes, seconds, fraction = iso.groups()
        ms = (int(days or 0) * 86_400 + int(hours or 0) * 3_600 + int(minutes or 0) * 60) * 1000
        secs = int(seconds or 0)
        ms += secs * 1000 + (-1 if secs < 0 or (seconds or "").startswith("-") else 1) * int(
            (fraction or "").ljust(3, "0")[:3]
        )
        return -ms if sign == "-" else ms
    raise TimeArgumentError(
        f"bad duration {text!r} (examples: 500ms, 90s, 30m, 2h, 1d2h, or ISO-8601 PT2H, P1DT2H30M)"
    )


def is_duration(text: str) -> bool:
    try:
        parse_duration(text)
    except TimeArgumentError:
        return False
    return True


def parse_time(text: str, zone: tzinfo, *, now: int | None = None) -> int:
    """A time argument -> epoch milliseconds. Naive date-times are taken in `zone`."""
    raw = text.strip()
    current = now if now is not None else now_ms()
    if not raw:
        raise TimeArgumentError("empty time argument")
    lowered = raw.lower()
    if lowered == "now":
        return current
    if re.fullmatch(r"-?\d+", raw):
        return int(raw)  # epoch milliseconds (mqadmin's -s form)
    relative = _RELATIVE.match(lowered)
    if relative and is_duration(relative.group(2)):
        delta = parse_duration(relative.group(2))
        return current + delta if relative.group(1) == "+" else current - delta
    mq = _MQADMIN.match(raw)
    if mq:
        y, mo, d, h, mi, s, ms = (int(g) for g in mq.groups())
        try:
            dt = datetime(y, mo, d, h, mi, s, ms * 1000, tzinfo=zone)
        except ValueError as exc:
            raise TimeArgumentError(f"bad time {text!r}: {exc}") from exc
        return _to_ms(dt)
    iso = raw.replace(" ", "T", 1) if re.match(r"^\d{4}-\d{2}-\d{2} \d", raw) else raw
    try:
        dt = datetime.fromisoformat(iso)
    except ValueError:
        raise TimeArgumentError(
            f"bad time {text!r} (use epoch ms, ISO-8601 like 2026-11-21T12:00:00[+08:00], "
            "yyyy-MM-dd#HH:mm:ss:SSS, now, -2h or now-30m)"
        ) from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=zone)
    return _to_ms(dt)


def _to_ms(dt: datetime) -> int:
    return int((dt - datetime(1970, 1, 1, tzinfo=UTC)) / timedelta(milliseconds=1))


def format_time(ms: int | None, zone: tzinfo) -> str:
    """Epoch ms -> `2026-11-21 12:00:00.123` in `zone` (the zone is named in table headers)."""
    if ms is None:
        return ""
    if ms <= 0:
        return str(ms)
    try:
        dt = datetime.fromtimestamp(ms / 1000, tz=zone)
    except (OverflowError, OSError, ValueError):
        return str(ms)
    return dt.strftime("%Y-%m-%d %H:%M:%S.") + f"{ms % 1000:03d}"


def human_duration(ms: int | None) -> str:
    """A duration for people: the two largest units, e.g. `1d 3h`, `27m 5s`, `850ms`."""
    if ms is None:
        return ""
    sign, ms = ("-", -ms) if ms < 0 else ("", ms)
    if ms < 1000:
        return f"{sign}{ms}ms"
    parts = []
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000)):
        if ms >= size:
            parts.append(f"{ms // size}{unit}")
            ms %= size
        elif parts:
            parts.append("")
        if len(parts) == 2:
            break
    return sign + " ".join(p for p in parts if p)


def duration_text(ms: int | None) -> str:
    """A duration exactly, in its largest whole unit: `2h`, `90s`, `1500ms` (the delay level style)."""
    if ms is None:
        return ""
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000)):
        if ms >= size and ms % size == 0:
            return f"{ms // size}{unit}"
    return f"{ms}ms"
