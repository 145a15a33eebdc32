"""CLI commands that find messages: query (key, id, offset, time) and trace (and their renderers)."""
