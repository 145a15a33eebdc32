"""One option vocabulary across commands: no short flag or option name means two things, one concept has
one spelling, docs/OPTIONS.md is what the CLI defines, Kafka's spellings are accepted where operators know
them, and every usage error exits 2 with one line (a mistyped command is suggested once)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from golden import ROOT, copy_store, run_mqtool, snapshot, store_path

from mqtool.cli.manual.options_table import generate, uses

STORE = str(store_path("store-a"))


def test_a_short_flag_stands_for_one_option_everywhere() -> None:
    """Each option name (long or short) belongs to one set of names wherever it appears: `-q` cannot be
    --queue here and --pop-share-queue-num there."""
    names_of: dict[str, set[tuple[str, ...]]] = {}
    for use in uses():
        for name in use.names:
            names_of.setdefault(name, set()).add(use.names)
    clashes = {name: sets for name, sets in names_of.items() if len(sets) > 1}
    assert not clashes, clashes


def test_an_option_name_means_one_thing() -> None:
    """One option name, one parameter and one kind (a flag or a value) everywhere: `--version` cannot
    print the version here and take a broker version there, `--format` cannot be the output format here
    and a file format there."""
    seen: dict[str, set[tuple[str | None, bool]]] = {}
    for use in uses():
        for name in use.names:
            seen.setdefault(name, set()).add((use.option.name, use.option.is_flag))
    clashes = {name: kinds for name, kinds in seen.items() if len(kinds) > 1}
    assert not clashes, clashes


def test_one_concept_has_one_spelling() -> None:
    """A parameter (what the code calls the concept) is spelled with the same option names everywhere."""
    spellings: dict[str | None, set[tuple[str, ...]]] = {}
    for use in uses():
        spellings.setdefault(use.option.name, set()).add(use.names)
    clashes = {name: names for name, names in spellings.items() if len(names) > 1}
    assert not clashes, clashes


def test_committed_options_table_matches_the_cli() -> None:
    committed = (ROOT / "docs" / "OPTIONS.md").read_text(encoding="utf-8")
    assert committed == generate(), "run: python -m mqtool.cli.manual.options_table docs/OPTIONS.md"


def test_every_command_that_writes_takes_dry_run() -> None:
    by_command: dict[str, set[str]] = {}
    for use in uses():
        by_command.setdefault(use.command, set()).update(use.names)
    writers = {c for c, names in by_command.items() if "--execute" in names}
    assert writers == {c for c, names in by_command.items() if "--dry-run" in names}
    # 10, topic update|delete, group update|delete, replicas salvage, dlq resend, tiered rebuild-metadata
    assert len(writers) == 17


# --- Kafka's spellings ------------------------------------------------------------------------------


def reset(*args: str) -> subprocess.CompletedProcess[str]:
    return run_mqtool("offsets", "reset", "--store", STORE, "--format", "json", *args)


def test_dry_run_is_the_explicit_default_and_excludes_execute(tmp_path: Path) -> None:
    base = ["-g", "groupA", "-t", "TopicTest", "--to-earliest"]
    dry = reset(*base, "--dry-run")
    assert dry.returncode == 0 and json.loads(dry.stdout) == json.loads(reset(*base).stdout)
    root = copy_store("store-a", tmp_path / "s")
    before = snapshot(root)
    for command in (
        ["offsets", "reset", *base],
        ["consume-mode", "set", "-t", "OrderTopic", "-g", "groupA", "--mode", "POP"],
        ["topic", "update", "NewTopic"],
        ["group", "delete", "groupB"],
        ["delay", "replay", "--now", "2026-11-21T12:00:00Z"],
        ["txn", "rollback", "2"],
        ["txn", "resolve", "--policy", "commit"],
        ["rebuild"],
    ):
        both = run_mqtool(*command, "--store", str(root), "--execute", "--dry-run")
        assert both.returncode == 2, (command, both.stderr)
        assert both.stderr == "mqtool: error: --execute and --dry-run exclude each other\n"
    assert snapshot(root) == before


@pytest.mark.parametrize("duration", ["PT2H", "P1DT2H", "1d2h", "90m", "pt30m"])
def test_by_duration_takes_iso_8601_and_compact_durations(duration: str) -> None:
    done = reset("-g", "groupA", "-t", "TopicTest", "--by-duration", duration)
    assert done.returncode == 0, done.stderr


def test_to_current_keeps_committed_offsets_and_takes_the_latest_where_there_is_none(tmp_path: Path) -> None:
    root = copy_store("store-a", tmp_path / "s")
    config = root / "config" / "consumerOffset.json"
    text = config.read_text().replace('"TopicTest@groupA":{0:231,', '"TopicTest@groupA":{')
    assert text != config.read_text()
    config.write_text(text)
    done = run_mqtool(
        "offsets",
        "reset",
        "--store",
        str(root),
        "-f",
        "json",
        "-g",
        "groupA",
        "-t",
        "TopicTest",
        "--to-current",
    )
    assert done.returncode == 0, done.stderr
    rows = {r["queueId"]: r for r in json.loads(done.stdout)}
    assert rows[0]["currentOffset"] is None and rows[0]["newOffset"] == rows[0]["maxOffset"] == 462
    assert [(rows[q]["currentOffset"], rows[q]["newOffset"]) for q in (1, 2, 3)] == [
        (232, 232),
        (209, 209),
        (245, 245),
    ]


def test_all_groups_plans_every_group_on_the_topics_it_consumes() -> None:
    done = reset("--all-groups", "-t", "TopicTest", "--to-latest")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert sorted({r["group"] for r in rows}) == ["groupA", "groupB"]
    assert all(r["topic"] == "TopicTest" for r in rows) and len(rows) == 8
    # OrderTopic: only groupA has offsets there, so groupB gets none created
    order = json.loads(reset("--all-groups", "-t", "OrderTopic", "--to-latest").stdout)
    assert {r["group"] for r in order} == {"groupA"}
    both = reset("--all-groups", "-g", "groupA", "-t", "TopicTest", "--to-latest")
    assert both.returncode == 2 and "not both" in both.stderr
    shown = run_mqtool("offsets", "show", "--store", STORE, "-f", "json", "--all-groups")
    assert json.loads(shown.stdout) == json.loads(
        run_mqtool("offsets", "show", "--store", STORE, "-f", "json").stdout
    )


def test_topic_with_queues_as_kafka_names_partitions() -> None:
    done = reset("-g", "groupA", "-t", "TopicTest:1,3", "-t", "OrderTopic:0", "--to-earliest")
    assert done.returncode == 0, done.stderr
    assert [(r["topic"], r["queueId"]) for r in json.loads(done.stdout)] == [
        ("TopicTest", 1),
        ("TopicTest", 3),
        ("OrderTopic", 0),
    ]
    mixed = reset("-g", "groupA", "-t", "TopicTest:1", "-q", "2", "--to-earliest")
    assert mixed.returncode == 2 and "exclude each other" in mixed.stderr
    shown = run_mqtool("offsets", "show", "--store", STORE, "-f", "json", "-t", "TopicTest:2")
    assert [(r["group"], r["topic"], r["queueId"]) for r in json.loads(shown.stdout)] == [
        ("groupA", "TopicTest", 2),
        ("groupB", "TopicTest", 2),
    ]


# --- usage errors -----------------------------------------------------------------------------------

USAGE_ERRORS = [
    ["info", "--format", "yaml"],
    ["info", "--bogus"],
    ["info", "-f", "csv"],
    ["dump", "checkpoint", "-x", "-f", "json"],
    ["dump", "index", "--entries"],
    ["dump", "commitlog", "-f", "parquet"],
    ["dump", "commitlog", "--count", "-1"],
    ["query", "time", "TopicTest", "-b", "yesterday", "-e", "now"],
    ["query", "key", "TopicTest", "k", "--max", "0"],
    ["offsets", "reset", "-g", "groupA", "-t", "TopicTest", "--to-earliest", "--to-latest"],
    ["offsets", "reset", "-g", "groupA", "-t", "TopicTest", "--by-duration", "2 hours"],
    ["offsets", "reset", "-g", "groupA", "-t", "TopicTest", "-q", "x", "--to-latest"],
    ["offsets", "reset", "-t", "TopicTest", "--to-latest"],
    ["delay", "list", "--due", "--pending"],
    ["delay", "stats", "--stuck-after", "soon"],
    ["delay", "replay", "--real-topic", "T"],
    ["txn", "resolve", "--policy", "maybe"],
    ["txn", "list", "--now", "tomorrow"],
    ["pop", "list", "--state", "lost"],
    ["verify", "--show", "everything"],
    ["verify", "--broker-version", "3"],
    ["audit", "--split-size", "0"],
    ["export", "--output", "/nonexistent-dir-for-mqtool", "--file-format", "csv"],
    ["consume-mode", "set", "-t", "OrderTopic", "-g", "groupA", "--mode", "POP", "-q", "1"],
    ["sample", "create", "/nonexistent/x", "--version", "4"],
    ["info", "--tz", "Mars/Olympus"],
]


@pytest.mark.parametrize("argv", USAGE_ERRORS, ids=lambda a: " ".join(a))
def test_usage_errors_exit_2(argv: list[str]) -> None:
    done = run_mqtool("--store", STORE, *argv)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""


def test_a_mistyped_command_is_suggested_once() -> None:
    done = run_mqtool("--store", STORE, "offset", "show")
    assert done.returncode == 2
    assert done.stderr.count("Did you mean 'offsets'?") == 1, done.stderr
    sub = run_mqtool("--store", STORE, "offsets", "shw")
    assert sub.returncode == 2 and sub.stderr.count("Did you mean") == 1, sub.stderr
