"""The option vocabulary of the CLI, read from its own definitions: every option, its short flag, whether it
takes a value, what it means, and the commands that take it. `python -m mqtool.cli.manual.options_table
docs/OPTIONS.md` writes the table; a test fails when the committed one drifts, and another when two
options clash (one short flag for two options, one option name for two meanings).
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import click

HEADER = """# mqtool options

Every option of every command, generated from the CLI (`python -m mqtool.cli.manual.options_table
docs/OPTIONS.md`; tests/test_options.py fails when this file drifts from the CLI or when two options clash).
An option means the same wherever it appears; a short flag always stands for the same long option. Options
marked *global* may also go before the command (`mqtool --store S info`), where they act as the default.

Kafka's spellings work where operators know them from `kafka-consumer-groups`: `--dry-run` (the default of
every command that writes; it excludes `--execute`), `--to-current`, `--all-groups`, `--topic T:0,1`,
`--by-duration PT2H` (ISO-8601, as Kafka parses it; `1d2h` and `90m` too). A usage error (an unknown
option, a bad value, options that exclude each other, a format a command cannot give) exits with
status 2. Shell completion: `mqtool --install-completion` (or `--show-completion` to copy it).
"""


# typer adds these only where it detects a shell (absent under CI); the header names them instead.
SHELL_COMPLETION = {"install_completion", "show_completion"}


@dataclass
class Use:
    """One option of one command."""

    command: str
    option: click.Option

    @property
    def long(self) -> str:
        longs = [o for o in self.option.opts if o.startswith("--")]
        return longs[0] if longs else self.option.opts[0]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(sorted(self.option.opts + self.option.secondary_opts))

    @property
    def longs(self) -> tuple[str, ...]:
        return tuple(sorted(o for o in self.names if o.startswith("--")))

    @property
    def shorts(self) -> list[str]:
        return [o for o in self.option.opts if not o.startswith("--") and o != self.long]

    @property
    def value(self) -> str:
        if self.option.is_flag:
            return ""
        metavar = self.option.metavar or (self.option.name or "").upper()
        return metavar + (" ..." if self.option.multiple else "")

    @property
    def help(self) -> str:
        return " ".join((self.option.help or "").split())


def uses(root: click.Command | None = None) -> Iterator[Use]:
    """Every option of every command (`mqtool` itself for the global ones), hidden ones left out."""
    if root is None:
        import typer.main

        from mqtool.cli import app

        root = typer.main.get_command(app)

    def walk(command: click.Command, path: list[str]) -> Iterator[Use]:
        for param in command.params:
            if isinstance(param, click.Option) and not param.hidden and param.name not in SHELL_COMPLETION:
                yield Use(" ".join(path), param)
        if isinstance(command, click.Group):
            for name in sorted(command.commands):
                yield from walk(command.commands[name], [*path, name])

    yield from walk(root, ["mqtool"])


def _cell(text: str) -> str:
    """A table cell: `|` escaped (GitHub reads `\\|` as a bar inside code spans too)."""
    return text.replace("|", "\\|")


def generate() -> str:
    """The Markdown of docs/OPTIONS.md."""
    by_option: dict[tuple[str, ...], list[Use]] = {}
    commands_of_cli: set[str] = set()
    for use in uses():
        by_option.setdefault(use.longs or (use.long,), []).append(use)
        commands_of_cli.add(use.command)
    leaves = {c for c in commands_of_cli if not any(o.startswith(c + " ") for o in commands_of_cli)}
    lines = [HEADER, "| option | short | value | meaning | commands |", "|---|---|---|---|---|"]
    for key in sorted(
        by_option,
        key=lambda names: Counter(u.long for u in by_option[names]).most_common(1)[0][0].lstrip("-").lower(),
    ):
        group = by_option[key]
        long = Counter(u.long for u in group).most_common(1)[0][0]
        shorts = sorted({s for u in group for s in u.shorts})
        aliases = [n for n in key if n != long]
        values = sorted({u.value for u in group if u.value})
        helps = Counter(u.help for u in group if u.help)
        meaning = helps.most_common(1)[0][0] if helps else ""
        if len(helps) > 1:
            meaning += " (each command's --help says what it does there)"
        commands = sorted({u.command for u in group})
        listed = ", ".join(f"`{c.removeprefix('mqtool ')}`" for c in commands if c != "mqtool")
        if "mqtool" not in commands:
            where = listed
        elif leaves <= set(commands):
            where = "*global*, every command"
        else:
            where = "*global*" + (f"; {listed}" if listed else "")
        name = f"`{long}`" + "".join(f", `{a}`" for a in aliases)
        lines.append(
            "| "
            + " | ".join(
                _cell(cell)
                for cell in (
                    name,
                    ", ".join(f"`{s}`" for s in shorts),
                    ", ".join(f"`{v}`" for v in values),
                    meaning,
                    where,
                )
            )
            + " |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/OPTIONS.md")
    target.write_text(generate(), encoding="utf-8")
    print(target)
