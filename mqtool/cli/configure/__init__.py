"""CLI commands that edit the broker's topic and group configs offline: topic (update, delete), group
(update, delete), and their renderer."""
