"""Every layout a broker writes is named (`store.kind`), and every write refuses on a layout it cannot be
trusted on: each write command, dry run and --execute, on a copy of a real-code store given each part's
evidence, exits 1 naming the part and leaves every byte of the store as it was. On a DLedger store (the
real-code fixture store-dledger) the writes that append to the log refuse the same way; config writes and
rebuilds of ConsumeQueues and index from the log go on."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from mqtool.cli import app
from store.kind import UnsupportedLayoutError
from store.storedir import Store
from tests.golden import copy_store, run_mqtool, snapshot, unpack_store


def _multi_path(root: Path) -> None:
    (root / "broker.conf").write_text(f"storePathCommitLog={root}/commitlog;{root}/commitlog2\n")


def _controller(root: Path) -> None:
    (root / "epochFileCheckpoint").write_text("1\n0-0\n")


def _compaction(root: Path) -> None:
    (root / "compaction" / "compactionLog" / "TopicTest").mkdir(parents=True)


def _tiered(root: Path) -> None:
    (root / "config" / "tieredStoreMetadata.json").write_text("{}")


LAYOUTS = {
    "multi-path commitlog": _multi_path,
    "controller-mode replica": _controller,
    "compaction topic": _compaction,
    "tiered storage": _tiered,
}

WRITES = [
    ["offsets", "reset", "--group", "groupA", "--topic", "TopicTest", "--to-earliest"],
    ["consume-mode", "set", "--topic", "TopicTest", "--group", "groupA", "--mode", "POP"],
    ["delay", "replay"],
    ["delay", "replay", "--timer"],
    ["txn", "commit", "0"],
    ["txn", "rollback", "0"],
    ["txn", "resolve", "--policy", "commit"],
    ["rebuild", "cq"],
    ["rebuild", "index"],
    ["rebuild", "all"],
]


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> dict[str, Path]:
    out = {}
    for name, make in LAYOUTS.items():
        root = copy_store("store-a", tmp_path_factory.mktemp("kind") / "store")
        make(root)
        out[name] = root
    return out


def _run(root: Path, argv: list[str]):
    extra = ["--broker-config", str(root / "broker.conf")] if (root / "broker.conf").exists() else []
    return CliRunner().invoke(app, ["--store", str(root), *extra, *argv])


@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_layout_is_named(stores, layout: str) -> None:
    root = stores[layout]
    config = None
    if (root / "broker.conf").exists():
        from store.config.brokerconf import load_broker_config

        config = load_broker_config(root / "broker.conf")
    with Store.open(root, config) as st:
        kind = st.layout.kind
    assert [p.name for p in kind.unsupported_writes("config")] == [layout]
    assert "broker.conf" not in kind.unknown or layout == "multi-path commitlog"


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize(
    "argv", WRITES, ids=[" ".join(w[:2]) + (" --timer" if "--timer" in w else "") for w in WRITES]
)
@pytest.mark.parametrize("execute", [False, True], ids=["dry-run", "execute"])
def test_every_write_refuses_on_a_layout_it_cannot_follow(
    stores, layout: str, argv: list[str], execute: bool
) -> None:
    root = stores[layout]
    before = snapshot(root)
    result = _run(root, argv + (["--execute"] if execute else []))
    assert isinstance(result.exception, UnsupportedLayoutError), result.output
    assert f"this store has a {layout}" in str(result.exception)
    assert snapshot(root) == before


# --- DLedger: appends refuse, config writes and rebuilds go on --------------------------------------------

APPENDS = [w for w in WRITES if w[0] in ("delay", "txn")]
NOT_APPENDS = [w for w in WRITES if w[0] not in ("delay", "txn")]


@pytest.fixture(scope="module")
def dledger(tmp_path_factory) -> Path:
    return unpack_store("store-dledger", tmp_path_factory.mktemp("dledger"))


def _dledger_run(root: Path, argv: list[str]):
    return CliRunner().invoke(
        app, ["--store", str(root), "--broker-config", str(root / "broker.conf"), *argv]
    )


@pytest.mark.parametrize(
    "argv", APPENDS, ids=[" ".join(w[:2]) + (" --timer" if "--timer" in w else "") for w in APPENDS]
)
@pytest.mark.parametrize("execute", [False, True], ids=["dry-run", "execute"])
def test_every_append_refuses_on_a_dledger_store(dledger: Path, argv: list[str], execute: bool) -> None:
    before = snapshot(dledger)
    result = _dledger_run(dledger, argv + (["--execute"] if execute else []))
    assert isinstance(result.exception, UnsupportedLayoutError), result.output
    assert "this store has a DLedger commitlog (dledger-n0/)" in str(result.exception)
    assert "diverges from the other peers" in str(result.exception)
    assert snapshot(dledger) == before


@pytest.mark.parametrize("argv", NOT_APPENDS, ids=[" ".join(w[:3]) for w in NOT_APPENDS])
def test_config_writes_and_rebuilds_plan_on_a_dledger_store(dledger: Path, argv: list[str]) -> None:
    argv = [a.replace("TopicTest", "TopicA").replace("groupA", "GID_dledger") for a in argv]
    before = snapshot(dledger)
    result = _dledger_run(dledger, argv)
    assert result.exit_code == 0, result.output
    assert snapshot(dledger) == before


def test_the_refusal_is_one_line_and_exit_1(dledger: Path) -> None:
    done = run_mqtool("delay", "replay", "--execute", "-s", str(dledger))
    assert done.returncode == 1
    errors = [line for line in done.stderr.splitlines() if line.startswith("mqtool: error:")]
    assert len(errors) == 1 and done.stderr.splitlines()[-1] == errors[0]
    assert "DLedger commitlog (dledger-n0/): mqtool does not write on this layout" in errors[0]


def test_an_empty_dledger_directory_beside_a_classic_commitlog_reads_the_classic_log(tmp_path: Path) -> None:
    """Before a broker's first start with DLedger: no data files yet, the classic files are the log."""
    root = copy_store("store-a", tmp_path / "store")
    (root / "dledger-n0" / "data").mkdir(parents=True)
    with Store.open(root) as st:
        kind = st.layout.kind
        assert kind.commitlog == "dledger-mixed"
        assert [p.name for p in kind.parts] == ["DLedger commitlog"] and kind.unsupported_reads() == []
        assert [p.name for p in kind.unsupported_writes("log")] == ["DLedger commitlog"]
        assert kind.unsupported_writes("config") == kind.unsupported_writes("queues") == []
        classic = Store.open(copy_store("store-a", tmp_path / "plain"))
        assert st.commitlog.max_offset == classic.commitlog.max_offset
        assert st.commitlog.divided_offset == classic.commitlog.files[-1].end_offset


def test_a_classic_store_has_no_unsupported_part_and_lists_what_no_layout_explains(tmp_path: Path) -> None:
    root = copy_store("store-a", tmp_path / "store")
    (root / "my-backup").mkdir()
    with Store.open(root) as st:
        kind = st.layout.kind
    assert kind.label == "classic commitlog, consume queues in files, config in json"
    assert kind.parts == ()
    assert (
        "my-backup" in kind.unknown and "commitlog" not in kind.unknown and "compaction" not in kind.unknown
    )


def test_the_extension_allows_config_and_index_writes_only(tmp_path: Path) -> None:
    root = copy_store("store-a", tmp_path / "store")
    (root / "consumequeue_ext").mkdir()
    with Store.open(root) as st:
        kind = st.layout.kind
    assert [p.name for p in kind.unsupported_writes("log")] == ["ConsumeQueue extension"]
    assert kind.unsupported_writes("config") == kind.unsupported_writes("index") == []


def test_info_and_verify_name_a_layout_mqtool_does_not_read(stores) -> None:
    import json

    # tiered storage: mqtool does not read the segments outside the store (compaction topics it reads since
    # issue 31, store.kv.compaction: their part reads, and every write still refuses)
    root = stores["tiered storage"]
    info = run_mqtool("info", "-s", str(root), "-f", "json")
    assert info.returncode == 0
    layout = json.loads(info.stdout)["layout"]
    assert layout["commitlog"] == "classic"
    # only `tiered rebuild-metadata` writes there (its metadata file, rebuilt from the tiered tree)
    want_tiered = [("tiered storage", False, ["tiered"])]
    assert [(p["name"], p["reads"], p["writes"]) for p in layout["parts"]] == want_tiered
    assert "warning: this store has a tiered storage" in info.stderr
    verify = run_mqtool("verify", "-s", str(root), "-f", "json")
    assert verify.returncode == 1
    rows = [p for p in json.loads(verify.stdout)["problems"] if p["kind"] == "layout_unsupported"]
    assert len(rows) == 1 and rows[0]["severity"] == "error" and "tiered" in rows[0]["detail"]
    compaction = run_mqtool("info", "-s", str(stores["compaction topic"]), "-f", "json")
    parts = json.loads(compaction.stdout)["layout"]["parts"]
    # only the rebuild of the compaction CQ from the compaction logs writes there (and the tiered metadata's)
    want = [("compaction topic", True, ["compaction", "tiered"])]
    assert [(p["name"], p["reads"], p["writes"]) for p in parts] == want


def test_a_dledger_store_is_read_and_named(dledger: Path) -> None:
    import json

    info = run_mqtool("info", "-s", str(dledger), "-f", "json")
    assert info.returncode == 0 and "warning" not in info.stderr
    layout = json.loads(info.stdout)["layout"]
    assert layout["commitlog"] == "dledger"
    assert [(p["name"], p["reads"], p["writes"]) for p in layout["parts"]] == [
        ("DLedger commitlog", True, ["config", "index", "queues", "compaction", "tiered"])
    ]
    verify = run_mqtool("verify", "-s", str(dledger), "-f", "json")
    assert verify.returncode == 0, verify.stdout


def test_a_deeply_nested_topics_json_is_no_internal_error(tmp_path) -> None:
    """store.kind looks for compaction topics in topics.json before every command: 5,000 nested objects (a
    fuzz input on store-compaction) made Python's json recurse past its limit, an internal error (exit 70)."""
    root = copy_store("store-a", tmp_path / "s")
    (root / "config" / "topics.json").write_text('{"a":' * 5000)
    info = run_mqtool("info", "-s", str(root), "-f", "json")
    assert info.returncode in (0, 1) and "internal error" not in info.stderr, info.stderr
