"""Man pages generated from the CLI's own definitions: `python -m mqtool.cli.manual.manpages man/`.

One page for `mqtool` and one per command group or top-level command (`mqtool-dump.1`, ...), each with
its commands' options, EXIT STATUS, ENVIRONMENT and FILES (`mqtool.cli.manual.manual_sections`) and EXAMPLES
(the same ones --help shows: `mqtool.cli.manual.examples`). A test regenerates them and fails when the
committed pages drift from the CLI. `pip install` puts them in share/man/man1 (pyproject's data-files).
"""

from __future__ import annotations

import sys
from pathlib import Path

from mqtool import __version__
from mqtool.cli.manual.examples import EXAMPLES, Example
from mqtool.cli.manual.manual_sections import ENVIRONMENT, EXIT_STATUS, FILES, Entry, for_page

DATE = "mqtool " + __version__


def _escape(text: str) -> str:
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\n".join(("\\&" + line) if line.startswith((".", "'")) else line for line in text.splitlines())


def _option_synopsis(param) -> str:
    names = ", ".join(f"\\fB{_escape(o)}\\fR" for o in param.opts)
    if not getattr(param, "is_flag", False) and param.param_type_name == "option":
        names += f" \\fI{_escape(param.name.upper())}\\fR"
    return names


def _params(command, heading: str, sub: bool) -> list[str]:
    """ARGUMENTS and OPTIONS of one command, as .SH sections (or .SS-level lists inside COMMANDS)."""
    lines: list[str] = []
    arguments = [p for p in command.params if p.param_type_name == "argument"]
    options = [p for p in command.params if p.param_type_name == "option"]
    for title, params in (("Arguments", arguments), ("Options", options)):
        if not params:
            continue
        lines.append(f".PP\n\\fI{title}:\\fR" if sub else f".SH {heading}{title.upper()}")
        for p in params:
            help_text = getattr(p, "help", None) or ""
            default = p.default
            if (
                p.param_type_name == "option"
                and getattr(p, "show_default", True) is not False
                and default not in (None, False, (), "")
                and not callable(default)
            ):
                help_text += f" [default: {default}]"
            label = (
                f"\\fI{_escape(p.name.upper())}\\fR"
                if p.param_type_name == "argument"
                else _option_synopsis(p)
            )
            lines += [".TP", label, _escape(" ".join(help_text.split()))]
    return lines


def _usage(path: list[str], command) -> str:
    parts = [" ".join(path)]
    if hasattr(command, "commands"):
        parts.append("COMMAND")
    parts.append("[OPTIONS]")
    parts += [
        (p.name.upper() if p.required else f"[{p.name.upper()}]")
        for p in command.params
        if p.param_type_name == "argument"
    ]
    return " ".join(parts)


def _page(path: list[str], command, sections: list[tuple[list[str], object]], *, detailed: bool) -> str:
    title = "-".join(path).upper()
    help_text = (command.help or "").strip()
    short = " ".join(help_text.split("\n\n")[0].split())
    lines = [
        f'.TH {title} 1 "" "{DATE}" "mqtool manual"',
        ".ad l",  # ragged right and no hyphenation: names, options and ids stay whole
        ".nh",
        ".SH NAME",
        f"{'-'.join(path)} \\- {_escape(short)}",
        ".SH SYNOPSIS",
        f"\\fB{_escape(_usage(path, command))}\\fR",
        ".SH DESCRIPTION",
        _escape(" ".join(help_text.split())),
    ]
    lines += _params(command, "", sub=False)
    if sections:
        lines.append(".SH COMMANDS")
        for sub_path, sub in sections:
            lines += [".SS " + _escape(_usage(sub_path, sub)), _escape(" ".join((sub.help or "").split()))]
            if detailed:
                lines += _params(sub, "", sub=True)
    audit_page = path in (["mqtool"], ["mqtool", "audit"])
    lines += _entries("EXIT STATUS", EXIT_STATUS, audit_page)
    lines += _entries("ENVIRONMENT", ENVIRONMENT, audit_page)
    lines += _entries("FILES", FILES, audit_page)
    lines += _examples(_page_examples(path))
    lines += [".SH SEE ALSO", ", ".join(f"\\fB{name}\\fR(1)" for name in _see_also(path))]
    return "\n".join(lines) + "\n"


def _entries(heading: str, entries: tuple[Entry, ...], audit_page: bool) -> list[str]:
    lines = [f".SH {heading}"]
    for entry in for_page(entries, audit_page):
        lines += [".TP", f"\\fB{_escape(entry.name)}\\fR", _escape(entry.meaning)]
    return lines


def _page_examples(path: list[str]) -> list[Example]:
    """mqtool(1): its own; a group's page: those of each of its commands; a command's page: its own."""
    key = " ".join(path[1:])
    if key in EXAMPLES:
        return list(EXAMPLES[key])
    return [e for name, examples in EXAMPLES.items() if name.startswith(key + " ") for e in examples]


def _examples(examples: list[Example]) -> list[str]:
    # each command as typed (never filled or hyphenated), what it does indented below, as --help shows them
    lines = [".SH EXAMPLES"]
    for example in examples:
        command = f"\\fB{_escape(example.command)}\\fR"
        lines += [".PP", ".nf", command, ".fi", ".RS 4", _escape(example.what), ".RE"]
    return lines


_ALL: list[str] = []


def _see_also(path: list[str]) -> list[str]:
    return [name for name in _ALL if name != "-".join(path)]


def generate() -> dict[str, str]:
    """File name -> groff text for every page."""
    import typer.main

    from mqtool.cli import app

    root = typer.main.get_command(app)
    pages: dict[str, tuple[list[str], object, list]] = {}
    top_sections = []
    for name in sorted(root.commands):
        sub = root.commands[name]
        top_sections.append((["mqtool", name], sub))
        if hasattr(sub, "commands"):
            children = [(["mqtool", name, child], sub.commands[child]) for child in sorted(sub.commands)]
            pages[f"mqtool-{name}.1"] = (["mqtool", name], sub, children)
        else:
            pages[f"mqtool-{name}.1"] = (["mqtool", name], sub, [])
    pages["mqtool.1"] = (["mqtool"], root, top_sections)
    _ALL[:] = sorted(file_name[:-2] for file_name in pages)
    return {
        file_name: _page(path, cmd, sections, detailed=file_name != "mqtool.1")
        for file_name, (path, cmd, sections) in sorted(pages.items())
    }


def write(directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for stale in directory.glob("mqtool*.1"):
        stale.unlink()
    for file_name, text in generate().items():
        target = directory / file_name
        target.write_text(text, encoding="utf-8")
        written.append(target)
    return written


if __name__ == "__main__":
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "man")
    for path in write(out):
        print(path)
