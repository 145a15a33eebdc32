"""CLI commands for what the broker holds back: delay (schedule and timer) and txn (half messages)."""
