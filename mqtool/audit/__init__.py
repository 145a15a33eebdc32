"""`mqtool audit`: whole stores audited on Apache Spark.

`run` plans the byte ranges and drives the job and the driver-side facts, `spark` is what the session and
the executors run, `output` writes the Parquet tables and audit.json (and the terminal tables), `report`
the self-contained report.html, `cds` the driver JVM's class-data archive. See docs/SPARK.md.
"""

from mqtool.audit.run import (
    AuditError,
    AuditOptions,
    AuditResult,
    StoreFailure,
    auto_split_size,
    choose_bucket,
    estimate_span,
    group_of,
    open_stores,
    plan_splits,
    recovery_cut,
    run_audit,
)

__all__ = [
    "AuditError",
    "AuditOptions",
    "AuditResult",
    "StoreFailure",
    "auto_split_size",
    "choose_bucket",
    "estimate_span",
    "group_of",
    "open_stores",
    "plan_splits",
    "recovery_cut",
    "run_audit",
]
