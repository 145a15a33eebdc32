"""Docs are generated from, or checked against, the CLI itself: man pages and README cannot drift."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import click
import typer.main

from mqtool.cli import app
from mqtool.cli.manpages import generate

ROOT = Path(__file__).resolve().parent.parent


# options every command takes, documented once in README's "Pointing it at a store" table
GLOBAL_OPTIONS = {"--store", "--format", "--tz", "--wide", "--broker-config", "--help"}


def _commands() -> Iterator[tuple[str, click.Command]]:
    root = typer.main.get_command(app)
    for name, sub in root.commands.items():
        if isinstance(sub, click.Group):
            for child, command in sub.commands.items():
                yield f"mqtool {name} {child}", command
        else:
            yield f"mqtool {name}", sub


def _command_paths() -> list[str]:
    return [path for path, _ in _commands()]


def test_committed_man_pages_match_the_cli() -> None:
    expected = generate()
    committed = {p.name: p.read_text(encoding="utf-8") for p in (ROOT / "man").glob("mqtool*.1")}
    assert set(committed) == set(expected), "run: python -m mqtool.cli.manpages man"
    for name, text in expected.items():
        assert committed[name] == text, f"man/{name} is stale: run python -m mqtool.cli.manpages man"


def test_readme_documents_every_command() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    missing = [path for path in _command_paths() if path not in readme]
    assert not missing, f"README.md does not mention: {missing}"


def _readme_text_of(readme: str, path: str) -> str:
    """The README bullets that document `path` (those naming it before their dash), and the sentences
    that speak for every command of its group ("Every `query` command ...")."""
    bullets = re.split(r"\n(?=- )", readme)
    group = path.split()[1]
    own = [b for b in bullets if f"`{path}" in b.split(" — ")[0]]
    shared = [b for b in bullets if f"Every `{group}` command" in b]
    return "\n".join(own + shared)


def test_readme_documents_every_option_of_every_command() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    missing = []
    for path, command in _commands():
        text = _readme_text_of(readme, path)
        for param in command.params:
            if not isinstance(param, click.Option) or param.hidden:
                continue
            names = [o for o in param.opts if o.startswith("--") and o not in GLOBAL_OPTIONS]
            # an option with several names (an alias of the broker's property name) needs one of them
            if names and not any(re.search(re.escape(n) + r"(?![\w-])", text) for n in names):
                missing.append(f"{path} {names[0]}")
    assert not missing, f"README.md does not document: {missing}"


def test_each_man_page_documents_every_option_of_its_commands() -> None:
    missing = []
    for path, command in _commands():
        page = (ROOT / "man" / f"mqtool-{path.split()[1]}.1").read_text(encoding="utf-8").replace("\\-", "-")
        for param in command.params:
            if isinstance(param, click.Option) and not param.hidden:
                missing += [f"{path} {o}" for o in param.opts if o.startswith("--") and o not in page]
    assert not missing, f"man pages do not document: {missing}"


def _import_graph():
    import importlib.util

    spec = importlib.util.spec_from_file_location("import_graph", ROOT / "docs" / "import_graph.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_architecture_picture_is_what_the_code_imports() -> None:
    graph = _import_graph()
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
    assert graph.current_block(text) == graph.block(), (
        "docs/ARCHITECTURE.md's graph drifted: run make architecture"
    )


def test_no_layer_imports_a_layer_above_it() -> None:
    assert _import_graph().upward_imports() == []


def test_every_package_is_described_in_the_architecture() -> None:
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
    nodes, _ = _import_graph().package_edges()
    for layer in nodes.values():
        for node in layer:
            if "." in node:
                assert f"`{node.replace('.', '/')}/`" in text, (
                    f"{node} has no paragraph in docs/ARCHITECTURE.md"
                )
