"""How every command prints: `output` (rich tables on a terminal, tabulate text, JSON/JSONL/CSV, the record
view, progress bars), `fit` (columns fitted to the terminal's width), `pages` (output streamed page by
page)."""
