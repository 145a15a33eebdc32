"""Transaction queue (`mqtool txn`): classification against the golden stores (both op body forms),
records byte-equal to what the real EndTransactionProcessor wrote, check-back copies, discards, and
commit/rollback/resolve --execute (idempotent, crash-safe, consistent with a rebuild)."""

from __future__ import annotations

import json
import shutil
import signal
from dataclasses import replace
from pathlib import Path

import pytest
from golden import copy_store as _copy_store
from golden import expect, rebuild_matches, recover_like_the_broker, snapshot, store_path
from golden import run_mqtool as mqtool

from formats.message.commitlog import encode_message
from formats.message.properties import decode_properties, encode_properties
from formats.structs import TRANSACTION_COMMIT_TYPE
from mqtool.transactions.end_transaction import (
    EndPlan,
    execute_end,
    plan_end,
    select_for_resolve,
    select_halves,
)
from mqtool.transactions.listing import TxnReport, list_transactions
from store.broker.messagerebuild import WriteNotAvailableError, rebuild_properties
from store.broker.transaction import (
    TransactionError,
    end_message_transaction,
    op_bodies,
    op_message,
    parse_op_body,
)
from store.storedir import Store

NOW = 1_900_000_000_000
COPIED = ("commitlog", "consumequeue", "config", "checkpoint", "lock", "abort", "abort.bak", "index")
ROOT = Path(__file__).resolve().parents[1]
HALF = "RMQ_SYS_TRANS_HALF_TOPIC"
OP = "RMQ_SYS_TRANS_OP_HALF_TOPIC"


def copy_store(name: str, dest: Path) -> Path:
    return _copy_store(name, dest, parts=COPIED)


def events(name: str, kind: str) -> dict[int, int]:
    """halfQueueOffset -> halfPhyOffset of the golden commit / rollback events."""
    return {e["halfQueueOffset"]: e["halfPhyOffset"] for e in expect(name)["events"] if e["event"] == kind}


def report(root: Path, now: int = NOW) -> TxnReport:
    with Store.open(root) as st:
        return list_transactions(st, now=now)


def states(rep: TxnReport) -> dict[int, str]:
    return {t.half_queue_offset: t.state for t in rep.transactions}


def end(root: Path, action: str, halves: list[int] | None, execute: bool = True, **resolve) -> EndPlan:
    def make(st: Store) -> EndPlan:
        rep = list_transactions(st, now=NOW)
        chosen = select_for_resolve(rep, **resolve) if halves is None else select_halves(rep, halves)
        return plan_end(st, rep, chosen, action)

    with Store.open(root) as st:
        plan = make(st)
        result = execute_end(st, plan, execute, replan=make)
    plan.result = result  # type: ignore[attr-defined]
    return plan


# --- reading ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["store-a", "store-49a"])
def test_the_twelve_transactions_are_classified_exactly(name: str) -> None:
    rep = report(store_path(name))
    committed, rolled_back = events(name, "commit"), events(name, "rollback")
    got = states(rep)
    assert {h for h, s in got.items() if s == "committed"} == set(committed)
    assert {h for h, s in got.items() if s == "rolled-back"} == set(rolled_back)
    assert {h for h, s in got.items() if s == "pending"} == {2, 5, 8, 11}
    messages = {m["physicalOffset"]: m for m in expect(name)["messages"] if m["kind"] == "MESSAGE"}
    commit_copies = {
        m["preparedTransactionOffset"]: m
        for m in messages.values()
        if m["sysFlag"] & 0xC == TRANSACTION_COMMIT_TYPE
    }
    for t in rep.transactions:
        row = t.to_json()
        half = messages[row["phyOffset"]]
        assert row["realTopic"] == half["properties"]["REAL_TOPIC"]
        assert row["realQueueId"] == int(half["properties"]["REAL_QID"])
        assert row["producerGroup"] == "txProducerGroup"
        assert row["transactionId"] == half["uniqKey"] and row["keys"] == half["keys"]
        assert row["bornTimestamp"] == half["bornTimestamp"] and row["checkTimes"] == 0
        assert row["ageMs"] == NOW - half["bornTimestamp"]
        if t.state == "committed":
            assert committed[row["halfQueueOffset"]] == row["phyOffset"]
            assert row["commit"]["phyOffset"] == commit_copies[row["phyOffset"]]["physicalOffset"]
        else:
            assert row["commit"] is None
        if t.state == "pending":
            assert row["opQueueOffset"] is None
    assert rep.queues[0].ops == {"store-a": 1, "store-49a": 8}[name]


def test_op_bodies_of_both_forms() -> None:
    assert parse_op_body(b"0,1,3,4,6,7,9,10,") == ([0, 1, 3, 4, 6, 7, 9, 10], [])
    assert parse_op_body(b"1234") == ([1234], [])
    assert parse_op_body(b"1,x,,2") == ([1, 2], ["x"])
    assert op_bodies([1, 2, 30], 4) == [b"1", b"2", b"30"]
    assert op_bodies([1, 2, 30], 5) == [b"1,2,30,"]
    assert op_bodies(list(range(10)), 5, max_size=6) == [b"0,1,2,", b"3,4,5,", b"6,7,8,", b"9,"]


@pytest.mark.parametrize(("name", "major"), [("store-a", 5), ("store-49a", 4)])
def test_commit_copy_and_op_are_byte_exact_with_the_broker(name: str, major: int) -> None:
    messages = [m for m in expect(name)["messages"] if m["kind"] == "MESSAGE"]
    copies = {
        m["preparedTransactionOffset"]: m for m in messages if m["sysFlag"] & 0xC == TRANSACTION_COMMIT_TYPE
    }
    ops = [m for m in messages if m["topic"] == OP]
    with Store.open(store_path(name)) as st:
        for half_phy, golden in copies.items():
            half = st.commitlog.read_message_at(half_phy)
            record = end_message_transaction(half, major)
            record = replace(
                record,
                store_timestamp=golden["storeTimestamp"],
                queue_offset=golden["queueOffset"],
                physical_offset=golden["physicalOffset"],
            )
            assert encode_message(record) == st.commitlog.read_raw(
                golden["physicalOffset"], golden["totalSize"]
            )
        done = sorted(set(events(name, "commit")) | set(events(name, "rollback")))
        host = (half.store_host, half.store_port)
        for body, golden in zip(op_bodies(done, major), ops, strict=True):
            record = op_message(0, body, major, host, golden["bornTimestamp"], golden["queueOffset"])
            record = replace(
                record, store_timestamp=golden["storeTimestamp"], physical_offset=golden["physicalOffset"]
            )
            assert encode_message(record) == st.commitlog.read_raw(
                golden["physicalOffset"], golden["totalSize"]
            )


# --- commit / rollback / resolve --------------------------------------------------------------------


@pytest.mark.parametrize(("name", "major"), [("store-a", 5), ("store-49a", 4)])
def test_commit_and_rollback_execute(tmp_path: Path, name: str, major: int) -> None:
    root = copy_store(name, tmp_path / "s")
    with Store.open(root) as st:
        max_before = {
            key: st.consume_queue(*key).max_offset for key in [("TopicTest", 2), ("OrderTopic", 1), (OP, 0)]
        }
        halves = {h: st.commitlog.read_message_at(p) for h, p in [(2, 111015 if major == 5 else 109488)]}
    plan = end(root, "commit", [2, 5])
    assert plan.result.executed
    written = plan.result.written
    commits = [w for w in written if w.topic != OP]
    ops = [w for w in written if w.topic == OP]
    assert [(c.topic, c.queue_id) for c in commits] == [("TopicTest", 2), ("OrderTopic", 1)]
    assert [o.body for o in ops] == ([b"2,5,"] if major == 5 else [b"2", b"5"])
    if major == 4:
        assert [w.topic for w in written] == ["TopicTest", OP, "OrderTopic", OP]  # op right after its commit
    with Store.open(root) as st:
        first = st.commitlog.read_message_at(commits[0].physical_offset)
        expected = end_message_transaction(halves[2], major)
        expected = replace(
            expected,
            store_timestamp=first.store_timestamp,
            queue_offset=first.queue_offset,
            physical_offset=first.physical_offset,
        )
        assert encode_message(first) == encode_message(expected)
        assert first.queue_offset == max_before[("TopicTest", 2)]
        assert first.prepared_transaction_offset == halves[2].physical_offset
        assert st.consume_queue(OP, 0).max_offset == max_before[(OP, 0)] + len(ops)
    rep = report(root)
    assert states(rep)[2] == states(rep)[5] == "committed"
    rb = end(root, "rollback", [8, 11])
    assert [o.body for o in rb.result.written] == ([b"8,11,"] if major == 5 else [b"8", b"11"])
    assert {h: s for h, s in states(report(root)).items() if h in (8, 11)} == {
        8: "rolled-back",
        11: "rolled-back",
    }
    rebuild_matches(root)
    # idempotent: the same requests again write nothing
    before = snapshot(root)
    again = end(root, "commit", [2, 5, 0])
    assert [r.status for r in again.requests] == ["done"] * 3 and not again.result.executed
    assert not end(root, "rollback", [8]).result.executed
    assert snapshot(root) == before


def test_conflicting_ends_are_refused(tmp_path: Path) -> None:
    root = copy_store("store-a", tmp_path / "s")
    before = snapshot(root)
    with pytest.raises(TransactionError, match="already committed"):
        end(root, "rollback", [2, 0])
    with pytest.raises(TransactionError, match="already rolled-back"):
        end(root, "commit", [1])
    with pytest.raises(TransactionError, match="no half message"):
        end(root, "commit", [99])
    assert snapshot(root) == before


def test_a_half_the_broker_cannot_commit_is_refused_naming_its_record(tmp_path: Path) -> None:
    """A REAL_QID that Integer.parseInt refuses: nothing is written, and the one error line names the
    commitlog file and the half's position in it (found by the long fuzz run, which asks every error
    for its file)."""
    root = copy_store("store-a", tmp_path / "s")
    pending = next(t for t in report(root).transactions if t.state == "pending")
    half = pending.target.message
    with Store.open(root) as st:
        path, position = st.commitlog.locate(half.physical_offset)
    raw = Path(path).read_bytes()
    at = raw.index(b"REAL_QID\x01" + half.properties["REAL_QID"].encode(), position) + len(b"REAL_QID\x01")
    Path(path).write_bytes(raw[:at] + b"-" + raw[at + 1 :])  # one digit -> '-', same length
    before = snapshot(root)
    with pytest.raises(TransactionError, match="Integer.parseInt") as err:
        end(root, "commit", [pending.half_queue_offset])
    assert (err.value.file, err.value.offset) == (path, position)
    assert snapshot(root) == before


def test_resolve_older_than(tmp_path: Path) -> None:
    root = copy_store("store-49a", tmp_path / "s")
    born = {t.half_queue_offset: t.original.message.born_timestamp for t in report(root).transactions}
    with Store.open(root) as st:
        rep = list_transactions(st, now=born[8] + 1000)
        assert [t.half_queue_offset for t in select_for_resolve(rep, older_than_ms=1000)] == [
            h for h in (2, 5, 8) if born[h] <= born[8]
        ]
        assert select_for_resolve(rep, producer_group="other") == []
    plan = end(root, "rollback", None)
    assert [r.transaction.half_queue_offset for r in plan.requests] == [2, 5, 8, 11]
    assert set(states(report(root)).values()) == {"committed", "rolled-back"}


def test_dry_run_changes_nothing(tmp_path: Path) -> None:
    root = copy_store("store-a", tmp_path / "s")
    before = snapshot(root)
    plan = end(root, "commit", [2, 5, 8], execute=False)
    assert len(plan.records) == 4 and not plan.result.executed
    assert snapshot(root) == before


# --- check-back copies, immunity, discards ----------------------------------------------------------


def _append_copies(root: Path) -> None:
    """What the check service leaves: half 2 re-put (checked once), half 5 an immunity copy, half 8 given up
    and copied to TRANS_CHECK_MAX_TIME_TOPIC, check progress at 12 (past 11, which has no op)."""
    from store.appender import CommitLogAppender, NewMessage

    with Store.open(root) as st:
        halves = {
            h: st.commitlog.read_message_at(st.consume_queue(HALF, 0).unit(h).phy_offset) for h in (2, 5, 8)
        }

    def copy(h: int, topic: str, extra: dict[str, str]) -> NewMessage:
        m = halves[h]
        props = dict(decode_properties(m.properties_raw), **extra)
        raw = rebuild_properties(encode_properties(props), 5)
        return NewMessage(
            topic=topic,
            body=m.body,
            properties=raw,
            flag=m.flag,
            sys_flag=m.sys_flag,
            born_timestamp=m.born_timestamp,
            born_host=(m.born_host, m.born_port),
        )

    with CommitLogAppender(root) as app:
        app.append(copy(2, HALF, {"TRANSACTION_CHECK_TIMES": "1"}))  # half offset 12
        app.append(copy(5, HALF, {"TRANSACTION_CHECK_TIMES": "1", "TRAN_PREPARED_QUEUE_OFFSET": "5",
                                  "CHECK_IMMUNITY_TIME_IN_SECONDS": "60"}))  # fmt: skip
        app.append(copy(8, "TRANS_CHECK_MAX_TIME_TOPIC", {"TRANSACTION_CHECK_TIMES": "15"}))
    with Store.open(root) as st:
        model = st.config("consumerOffset.json").load().model
        model.offset_table[f"{HALF}@CID_RMQ_SYS_TRANS"] = {0: 12}
        st.config("consumerOffset.json").save(model)


def test_check_copies_immunity_and_discards(tmp_path: Path) -> None:
    root = copy_store("store-a", tmp_path / "s")
    _append_copies(root)
    rep = report(root)
    by = {t.half_queue_offset: t for t in rep.transactions}
    assert len(rep.transactions) == 12  # copies join their original
    assert [m.queue_offset for m in by[2].members] == [2, 12] and by[2].check_times == 1
    assert [m.queue_offset for m in by[5].members] == [5, 13] and by[5].latest.is_immunity_copy
    assert by[5].immunity_ms == 60_000 and by[5].immune is False
    assert (by[2].state, by[5].state, by[8].state, by[11].state) == (
        "pending",
        "pending",
        "discarded",
        "discarded",
    )
    assert by[8].to_json()["discardedTo"]["topic"] == "TRANS_CHECK_MAX_TIME_TOPIC"
    assert any("behind the check progress" in n for n in by[11].notes)
    assert rep.queues[0].check_offset == 12 and rep.discarded_records == 1
    with Store.open(root) as st:
        young = list_transactions(st, now=by[5].original.message.born_timestamp + 1000)
    assert {t.half_queue_offset: t.immune for t in young.transactions}[5] is True
    # commit: half 2 by its checked copy (what the producer answers), half 5 by its original offset
    plan = end(root, "commit", [2, 5])
    assert [(r.transaction.half_queue_offset, r.op_offsets) for r in plan.requests] == [(2, [12]), (5, [5])]
    commits = [w for w in plan.result.written if w.topic != OP]
    assert commits[0].prepared_transaction_offset == by[2].members[1].message.physical_offset
    assert "TRANSACTION_CHECK_TIMES" in decode_properties(commits[0].properties_raw)
    assert commits[1].prepared_transaction_offset == by[5].original.message.physical_offset
    after = states(report(root))
    assert (after[2], after[5]) == ("committed", "committed")
    rebuild_matches(root)


# --- crashes ----------------------------------------------------------------------------------------


def _commit_copies_of(root: Path, half_phys: set[int]) -> dict[int, int]:
    counts: dict[int, int] = {}
    with Store.open(root) as st:
        for topic in ("TopicTest", "OrderTopic"):
            for q in st.consume_queues.queue_ids(topic):
                for _, phy, size, _t in st.consume_queue(topic, q).units().tolist():
                    m = st.commitlog.read_message_at(phy, size)
                    if (
                        m.sys_flag & 0xC == TRANSACTION_COMMIT_TYPE
                        and m.prepared_transaction_offset in half_phys
                    ):
                        counts[m.prepared_transaction_offset] = (
                            counts.get(m.prepared_transaction_offset, 0) + 1
                        )
    return counts


def test_killed_between_commit_copy_and_op(tmp_path: Path) -> None:
    root = copy_store("store-a", tmp_path / "s")
    args = ("txn", "commit", "2", "5", "-s", str(root), "--now", str(NOW), "--execute")
    proc = mqtool(*args, MQTOOL_TEST_CRASH_AT="txn-commits-appended")
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    rep = report(root)
    assert states(rep)[2] == "pending" and rep.transactions[2].commit is not None
    assert any("only adds the op" in n for n in rep.transactions[2].notes)
    with pytest.raises(TransactionError, match="can only be committed"):
        end(root, "rollback", [2])
    proc = mqtool(*args, "-f", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert [r["commitRecord"] for r in doc["requests"]] == [None, None]
    assert [o["body"] for o in doc["opMessages"]] == ["2,5,"]
    assert states(report(root))[2] == "committed"
    phys = {t.original.message.physical_offset for t in report(root).transactions}
    assert set(_commit_copies_of(root, phys).values()) == {1}


def test_killed_inside_the_append_then_recovered(tmp_path: Path) -> None:
    """SIGKILL after the n-th write call (4.9.x: commit, op, commit, op): running the command again after
    recovery ends every transaction exactly once."""
    args = ("txn", "commit", "2", "5", "--now", str(NOW), "--execute")
    n = 1
    while True:
        root = copy_store("store-49a", tmp_path / f"k{n}")
        proc = mqtool(*args, "-s", str(root), MQTOOL_CRASH_AFTER_WRITES=str(n))
        if proc.returncode == 0:
            break
        assert proc.returncode == -signal.SIGKILL, proc.stderr
        if (root / "abort").exists():
            if "pending" in (states(report(root))[2], states(report(root))[5]):
                with pytest.raises(WriteNotAvailableError, match="abort"):
                    end(root, "commit", [2, 5])
            recover_like_the_broker(root)
        end(root, "commit", [2, 5])
        rep = report(root)
        assert (states(rep)[2], states(rep)[5]) == ("committed", "committed")
        phys = {t.original.message.physical_offset for t in rep.transactions}
        assert set(_commit_copies_of(root, phys).values()) == {1}
        with Store.open(root) as st:
            assert st.consume_queue(OP, 0).max_offset == 10  # 8 ops before, one per half now
        shutil.rmtree(root)
        n += 1 if n < 8 else 3  # every early write call, then a sample of the rest
    assert n > 8


# --- command line -----------------------------------------------------------------------------------


def test_cli_list_json_rows_and_state_filter() -> None:
    src = str(store_path("store-a"))
    proc = mqtool("txn", "list", "-s", src, "--now", str(NOW), "-f", "json", "--state", "pending")
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    required = {"halfQueueOffset", "phyOffset", "state", "realTopic", "realQueueId", "producerGroup",
                "transactionId", "checkTimes", "bornTimestamp"}  # fmt: skip
    assert [r["halfQueueOffset"] for r in rows] == [2, 5, 8, 11]
    assert all(required <= set(r) and r["state"] == "pending" for r in rows)
    bad = mqtool("txn", "list", "-s", src, "--state", "weird")
    assert bad.returncode == 2 and "unknown --state" in bad.stderr  # a usage error
    table = mqtool("txn", "list", "-s", src, "--now", str(NOW), "--tz", "UTC")
    assert "4 pending, 4 committed, 4 rolled-back" in table.stdout


def test_cli_commit_dry_run_and_resolve_policy() -> None:
    src = str(store_path("store-a"))
    dry = mqtool("txn", "commit", "2", "-s", src, "--now", str(NOW))
    assert dry.returncode == 0 and "dry run: would write 1 commit copy(ies) and 1 op message(s)" in dry.stdout
    bad = mqtool("txn", "resolve", "--policy", "maybe", "-s", src)
    assert bad.returncode == 2 and "--policy" in bad.stderr  # a usage error
    conflict = mqtool("txn", "rollback", "0", "-s", src)
    assert conflict.returncode == 1 and "already committed" in conflict.stderr


def test_a_property_order_mqtool_cannot_reproduce_is_a_refusal_not_a_crash() -> None:
    """Nine property names in one Java HashMap bucket make a tree bin, whose order mqtool does not
    reproduce: the commit copy is refused as a TransactionError (which the planner reports with the
    half's file and position), not a bare FormatError."""
    import itertools

    half = next(t for t in report(store_path("store-a")).transactions if t.state == "pending").target.message
    colliding = ["".join(p) for p in itertools.product(["Aa", "BB"], repeat=4)]  # same String.hashCode
    pairs = [*decode_properties(half.properties_raw).items(), *((k, "x") for k in colliding)]
    crowded = replace(half, properties_raw=encode_properties(pairs, trailing_separator=True))
    with pytest.raises(TransactionError, match=f"phy {half.physical_offset}.*tree bin"):
        end_message_transaction(crowded, 5)
