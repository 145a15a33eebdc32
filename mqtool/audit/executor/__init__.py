"""What the audit's Spark tasks run on the executors: one commitlog byte range scanned, and the verify checks
of its split."""
