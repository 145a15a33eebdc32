"""CLI commands that look at a whole store: info, dump, verify, export (and their renderers)."""
