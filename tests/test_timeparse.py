"""Time arguments: every accepted form, the zone rules, and one-line errors for the rest."""

from datetime import UTC, datetime

import pytest

from mqtool.timeparse import TimeArgumentError, format_time, parse_duration, parse_time, resolve_zone

SHANGHAI = resolve_zone("Asia/Shanghai")
NOW = 1_795_261_075_997


def ms(*args: int, tz=UTC) -> int:
    return int(datetime(*args, tzinfo=tz).timestamp() * 1000)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1700000000000", 1_700_000_000_000),
        ("0", 0),
        ("now", NOW),
        ("-2h", NOW - 7_200_000),
        ("now-30m", NOW - 1_800_000),
        ("now+1d", NOW + 86_400_000),
        ("2026-11-21T12:00:00", ms(2026, 11, 21, 4)),  # naive: Asia/Shanghai is UTC+8
        ("2026-11-21 12:00:00", ms(2026, 11, 21, 4)),
        ("2026-11-21T12:00:00+00:00", ms(2026, 11, 21, 12)),
        ("2026-11-21T12:00:00Z", ms(2026, 11, 21, 12)),
        ("2026-11-21#12:00:00:250", ms(2026, 11, 21, 4) + 250),
    ],
)
def test_accepted_forms(text: str, expected: int) -> None:
    assert parse_time(text, SHANGHAI, now=NOW) == expected


@pytest.mark.parametrize("text", ["", "yesterday", "2026-13-01#00:00:00:000", "12:00", "now-2x", "--"])
def test_bad_times_raise_one_clear_error(text: str) -> None:
    with pytest.raises(TimeArgumentError):
        parse_time(text, SHANGHAI, now=NOW)


def test_durations() -> None:
    assert parse_duration("500ms") == 500
    assert parse_duration("1.5h") == 5_400_000
    with pytest.raises(TimeArgumentError):
        parse_duration("2 hours")


def test_unknown_zone() -> None:
    with pytest.raises(TimeArgumentError):
        resolve_zone("Mars/Olympus")


def test_format_time_in_zone() -> None:
    assert format_time(ms(2026, 11, 21, 4) + 7, SHANGHAI) == "2026-11-21 12:00:00.007"
    assert format_time(0, SHANGHAI) == "0"


def test_durations_for_people():
    from mqtool.timeparse import duration_text, human_duration

    assert [duration_text(ms) for ms in (None, 7_200_000, 90_000, 1500, 86_400_000 * 3)] == [
        "",
        "2h",
        "90s",
        "1500ms",
        "3d",
    ]
    assert [human_duration(ms) for ms in (None, 850, 97_385_000, 1_625_000, -61_000, 3_600_000)] == [
        "",
        "850ms",
        "1d 3h",
        "27m 5s",
        "-1m 1s",
        "1h",
    ]
