"""The CLI's documentation generated from its own definitions: examples, man pages and their fixed sections,
the options table."""
