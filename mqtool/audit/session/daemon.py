"""The audit's Python daemon on each executor (`spark.python.daemon.module`): PySpark's own daemon, which
forks one Python worker per task slot, with what an audit task needs loaded once, before the forks.

PySpark's daemon forks each worker bare, and each worker then imports numpy, pyarrow and our modules and
loads the compiled kernels (the ahead-of-time extension, or numba's cache): seconds of CPU per worker,
paid again by every worker of the scan and of the duplicates merge — most of a small store's audit on two
cores. Loaded here, the forked workers inherit it all. The kernels are called once on a few bytes so that
their machine code is in memory too.

PySpark loads nothing before its fork because a library might start threads at import; the ones loaded
here start at most idle pool threads that they re-create after a fork (OpenBLAS, Arrow), and the kernels
run on the forking thread alone. `MQTOOL_SPARK_PRELOAD=0` in the driver's environment leaves the
daemon as PySpark's.
"""

from __future__ import annotations

import contextlib


def preload() -> None:
    """Import what an audit task runs and bring the compiled kernels into memory."""
    import numpy as np
    import pandas  # noqa: F401  (PySpark's Arrow serializers, pyarrow's to_pandas)
    import pyarrow.acero  # noqa: F401  (Table.group_by in the split aggregates)
    import pyarrow.dataset  # noqa: F401
    import pyspark.worker  # noqa: F401

    import mqtool.audit.executor.checks  # noqa: F401  (the per-split checks)
    import mqtool.audit.executor.scan  # noqa: F401  (the split scan)
    import mqtool.audit.sections.duplicates  # noqa: F401  (the duplicates merge)
    from formats.columnar.decoder import decode_resync

    with contextlib.suppress(Exception):  # a worker that finds no kernels loads them itself, as before
        decode_resync(np.frombuffer(bytes(4096), dtype=np.uint8), 0, 0, 4096, check_crc=True)


if __name__ == "__main__":
    with contextlib.suppress(Exception):
        preload()
    from pyspark.daemon import manager

    manager()
