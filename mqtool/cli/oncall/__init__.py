"""CLI commands for the on-call operator and incidents across stores: retention, bundle, replicas (and their
renderers)."""
