"""`mqtool trace --spark` and `mqtool query key --spark`: the per-store lookups as Spark tasks, one task per
store, for fleets whose stores one machine cannot hold. The session is the audit's
(`mqtool.audit.session.spark.start_session`: reuse the active one, take spark-submit's, or start one on
`--master`); a task opens its store by path or URL as the audit's executors do (`store.io.remote`: the small
files fetched, the commitlog read by ranged reads) and returns what one store answers
(`mqtool.trace.fleet.run_lookup`, `mqtool.trace.keys.run_key_lookup`), which the driver joins as without
Spark.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from mqtool.trace.fleet import Runner


@contextmanager
def spark_runner(master: str = "local[*]", app_name: str = "mqtool trace") -> Iterator[Runner]:
    """A runner whose rounds run on one Spark session (started on first use, stopped at the end when it was
    started here)."""
    state: dict = {}

    def run(fn: Callable[[Any], Any], tasks: list[Any]) -> list[Any]:
        if not tasks:
            return []
        if "session" not in state:
            from mqtool.audit.session.spark import start_session

            state["session"], state["started"] = start_session(master, app_name=app_name)
        sc = state["session"].sparkContext
        return sc.parallelize(tasks, len(tasks)).map(fn).collect()

    try:
        yield run
    finally:
        if state.get("started"):
            from mqtool.audit.session.spark import stop_session

            stop_session(state["session"])
