"""The audit's result written out: the --output directory's Parquet tables and audit.json, and the
self-contained report.html."""
