"""CLI commands that rebuild a store's derived files or create one: rebuild, sample (and renderers)."""
