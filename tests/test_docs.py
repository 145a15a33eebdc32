"""Docs are generated from, or checked against, the CLI itself: man pages and README cannot drift."""

from __future__ import annotations

from pathlib import Path

import typer.main

from mqtool.cli import app
from mqtool.manpages import generate

ROOT = Path(__file__).resolve().parent.parent


def _command_paths() -> list[str]:
    root = typer.main.get_command(app)
    paths = []
    for name, sub in root.commands.items():
        if hasattr(sub, "commands"):
            paths += [f"mqtool {name} {child}" for child in sub.commands]
        else:
            paths.append(f"mqtool {name}")
    return paths


def test_committed_man_pages_match_the_cli() -> None:
    expected = generate()
    committed = {p.name: p.read_text(encoding="utf-8") for p in (ROOT / "man").glob("mqtool*.1")}
    assert set(committed) == set(expected), "run: python -m mqtool.manpages man"
    for name, text in expected.items():
        assert committed[name] == text, f"man/{name} is stale: run python -m mqtool.manpages man"


def test_readme_documents_every_command() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    missing = [path for path in _command_paths() if path not in readme]
    assert not missing, f"README.md does not mention: {missing}"
