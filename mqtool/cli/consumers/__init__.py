"""CLI commands about consumer groups: offsets (show, reset, clone, prune, merge), consume-mode, pop, dlq (and
their renderers)."""
