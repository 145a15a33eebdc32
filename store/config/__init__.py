"""Config files the broker loads: config/*.json with the .bak fallback and atomic writes, and broker.conf."""
