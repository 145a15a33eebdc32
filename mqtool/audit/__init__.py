"""`mqtool audit`: whole stores audited on Apache Spark.

`run` is the entry point (`run_audit`); `plan` cuts the stores into byte ranges; `spark` starts the
session; `scan` is what an executor runs on one range, `schema` the rows it gets and returns,
`duplicates` the duplicate-key hashes and their merge, `checks` the verify checks (per range and for the
whole store); `recovery` finds where the broker's recovery would end; `job` runs the Spark job and SQL,
`driver_sections` the lag, delay and transaction facts, `assemble` builds the result document; `output`
writes the output directory (Parquet tables, audit.json), `report` the self-contained report.html, `cds`
the driver JVM's class-data archive. See docs/SPARK.md.
"""
