"""Docs are generated from, or checked against, the CLI itself: man pages and README cannot drift."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import click
import typer.main

from mqtool.cli import app
from mqtool.cli.manual.manpages import generate

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
    assert set(committed) == set(expected), "run: python -m mqtool.cli.manual.manpages man"
    for name, text in expected.items():
        assert committed[name] == text, f"man/{name} is stale: run python -m mqtool.cli.manual.manpages man"


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


def _help_of(path: str) -> str:
    """`mqtool PATH --help` as click renders it."""
    command = typer.main.get_command(app)
    ctx = click.Context(command, info_name="mqtool")
    for name in path.split():
        command = command.commands[name]
        ctx = click.Context(command, info_name=name, parent=ctx)
    return command.get_help(ctx)


def _man_text(page: str) -> str:
    """A man page's source with groff's escapes of `-` and `\\` undone, whitespace collapsed."""
    text = (ROOT / "man" / page).read_text(encoding="utf-8").replace("\\-", "-").replace("\\e", "\\")
    return " ".join(text.split())


def test_help_and_man_pages_show_each_command_s_examples() -> None:
    from mqtool.cli.manual.examples import EXAMPLES, group_examples

    for path, examples in EXAMPLES.items():
        page = f"mqtool-{path.split()[0]}.1" if path else "mqtool.1"
        help_text, man = " ".join(_help_of(path).split()), _man_text(page)
        for example in examples:
            for text in (example.command, example.what):
                assert " ".join(text.split()) in help_text, f"mqtool {path} --help lacks {text!r}"
                assert " ".join(text.split()) in man, f"man/{page} lacks {text!r}"
    for group in {path.split()[0] for path in EXAMPLES if " " in path}:
        shown = " ".join(_help_of(group).split())
        assert all(e.command in shown for e in group_examples(group)), f"mqtool {group} --help"


def test_every_man_page_has_exit_status_environment_files_and_examples() -> None:
    from mqtool.cli.manual.manual_sections import ENVIRONMENT, EXIT_STATUS

    for page in (ROOT / "man").glob("mqtool*.1"):
        text = page.read_text(encoding="utf-8")
        headings = re.findall(r"^\.SH (.+)$", text, flags=re.M)
        assert headings[-5:] == ["EXIT STATUS", "ENVIRONMENT", "FILES", "EXAMPLES", "SEE ALSO"], page.name
        for entry in EXIT_STATUS:
            assert f"\\fB{entry.name}\\fR" in text
    top = _man_text("mqtool.1")
    assert all(entry.name in top for entry in ENVIRONMENT)
    # mqtool --help names the exit statuses and the variables every command reads
    root_help = " ".join(_help_of("").split())
    assert all(f"{e.name} {e.short}" in root_help for e in EXIT_STATUS)
    assert "MQTOOL_STORE" in root_help and "MQTOOL_DEBUG" in root_help


# os.environ["X"], os.environ.get("X"), os.getenv("X"), "X" in os.environ; and NAME_ENV/NAME_SWITCH = "X"
_ENV_READ = re.compile(r"""(?:environ(?:\.get|\.setdefault)?\(?\[?|getenv\()\s*["']([A-Z][A-Z0-9_]+)["']""")
_ENV_IN = re.compile(r"""["']([A-Z][A-Z0-9_]+)["']\s+(?:not\s+)?in\s+os\.environ""")
_ENV_CONST = re.compile(r"""^[A-Z0-9_]*(?:ENV|SWITCH)\s*=\s*["']([A-Z][A-Z0-9_]+)["']""", re.M)
_ENV_TUPLE = re.compile(r"""^_SECRET_ENV\s*=\s*\(([^)]*)\)""", re.M)


def test_every_environment_variable_the_code_reads_is_documented() -> None:
    from mqtool.cli.manual.manual_sections import ENVIRONMENT

    documented = {name.strip() for entry in ENVIRONMENT for name in entry.name.split(",")}
    read: dict[str, str] = {}
    for package in ("formats", "store", "mqtool"):
        for path in (ROOT / package).rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            names = _ENV_READ.findall(text) + _ENV_IN.findall(text) + _ENV_CONST.findall(text)
            for group in _ENV_TUPLE.findall(text):
                names += re.findall(r"""["']([A-Z][A-Z0-9_]+)["']""", group)
            read.update((name, str(path.relative_to(ROOT))) for name in names)
    # mqtool's own start-up sets these for PySpark's workers; they are not read from the user's environment
    read.pop("PYSPARK_DRIVER_PYTHON", None)
    assert {"MQTOOL_STORE", "MQTOOL_DEBUG", "MQTOOL_SPARK_C1", "JAVA_HOME"} <= set(read)  # the scan works
    missing = {name: where for name, where in read.items() if name not in documented}
    assert not missing, f"environment variables read but not in manual_sections.ENVIRONMENT: {missing}"


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
