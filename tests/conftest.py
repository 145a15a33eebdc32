"""Shared test setup: each test starts with the CLI's global options unset (they live in a module-level
object that in-process CliRunner invocations would otherwise carry from one test to the next); `spark`,
the local[2] SparkSession the audit tests of one test process share."""

import pytest

from mqtool.cli.options import GLOBALS


@pytest.fixture(autouse=True)
def _fresh_cli_globals():
    GLOBALS.store = GLOBALS.fmt = GLOBALS.tz = GLOBALS.broker_config = None
    GLOBALS.wide = GLOBALS.record = False
    yield
    GLOBALS.store = GLOBALS.fmt = GLOBALS.tz = GLOBALS.broker_config = None
    GLOBALS.wide = GLOBALS.record = False


@pytest.fixture(scope="session")
def spark():
    from mqtool.audit.session.spark import start_session

    session, started = start_session("local[2]")
    yield session
    if started:
        session.stop()
