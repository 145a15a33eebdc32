"""How mqtool touches files: crash-safe writes (whole pwrites, fsyncs, atomic replaces) and stores named by
URL (pyarrow.fs ranged reads)."""
