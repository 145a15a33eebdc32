"""The DLedger commitlog's part of the start-up verdict (enableDLegerCommitLog, `dledger-<selfId>/`).

Both 4.9.8 and 5.3.3 run DLedger 0.3.1.2 (facts and references: tests/oracle/DLEDGER.md; `D:` = DLedger,
`DMFS` = DLedgerMmapFileStore, `MFL` = MmapFileList, `R5:DLC` = 5.3.3 DLedgerCommitLog). Inside
`DefaultMessageStore.load()`, the commitlog's recovery (R5:DLC:291-330; R4:DLC:271-332) runs
`DLedgerMmapFileStore.load` and `recover`:

- every data file `mappedFileSizeCommitLog` bytes and every index file 160 MiB, else `MmapFileList.doLoad`
  fails and DLedger calls **System.exit(-1)** (D:MFL:291-300, D:DMFS:128-136): the broker process ends;
- adjacent files one file size apart (`checkSelf`, D:MFL:54-72, D:DMFS:142-143), and data files named by
  their offsets: else an exception that `DefaultMessageStore.load` catches (R5 DefaultMessageStore.java:
  371-374): the load fails, BrokerStartup exits (-3);
- the recovery walk (D:DMFS:150-313) keeps entries up to the first bad one, deletes data files wholly after
  it and rewrites index units from the first that disagrees; when the end it finds lies more than a file
  before the last data file it calls **System.exit(-1)** (:293-296);
- the checkpoint's committedIndex (`Long.valueOf`: a non-number throws, the load fails; D:DMFS:314-325,
  518-528) bounds the store's max offset until a leader commits its ledger end after the start
  (R5 DLedgerRoleChangeHandler.java:74-92);
- currterm is read when the DLedger server is built (D:MemberState.java:72-91): a broken one is logged and the
  term starts at 0; it never stops the start.
"""

from __future__ import annotations

from formats.dledger import BODY_OFFSET, ENTRY_REASONS
from formats.errors import MqtoolError
from store.startup.verdict import EXIT, REFUSE, START, StartupVerdict, data_end, rel

_EXIT_MARK = "System.exit"  # store.log.dledger words an exit of the JVM this way; other load problems fail it


def judge_dledger(store, verdict: StartupVerdict) -> None:
    """Add DLedger's start-up reasons to `verdict` and `recovery["dledger"]` (nothing for a classic store)."""
    from store.log.dledger import DLedgerCommitLog

    if not any(p.name == "DLedger commitlog" and p.reads for p in store.layout.kind.parts):
        return  # not DLedger, or its data is not found: named as not judged
    commitlog = store.commitlog
    if not isinstance(commitlog, DLedgerCommitLog):
        return
    log = commitlog.log
    try:
        problems = log.load_problems()
    except MqtoolError as exc:
        verdict.add("dledger_unreadable", REFUSE, exc.message, exc.file, "DLedgerMmapFileStore.load")
        return
    exits = [p for p in problems if _EXIT_MARK in p[2]]
    for path, _, why in exits or problems:
        effect, code, ref = (
            (EXIT, "dledger_file_size", "D:MFL:291-300, D:DMFS:128-136")
            if exits
            else (REFUSE, "dledger_check_self", "D:MFL:54-72, D:DMFS:142-143, DefaultMessageStore.java:371")
        )
        verdict.add(code, effect, why, rel(store, path), ref)
    if problems:
        return
    r = log.recovery
    if r.exits:
        effect = EXIT if _EXIT_MARK in r.exits else REFUSE
        where = log.paths.checkpoint if effect == REFUSE else None
        verdict.add(
            "dledger_recovery",
            effect,
            r.exits,
            where and rel(store, where),
            "D:DMFS:293-296" if effect == EXIT else "D:DMFS:314-325,518-528",
        )
        return
    verdict.recovery["commitlogEnd"] = commitlog_end_after_load(commitlog)
    verdict.recovery["dledger"] = {
        "walkFrom": log.data_files[r.start_file].start_offset if r.start_file is not None else None,
        "dataEnd": r.end,
        "ledgerEndIndex": r.last_index,
        "ledgerEnd": r.last_end,
        "committedIndex": r.committed_index,
        "committedPos": r.committed_pos,
    }
    _truncation(store, verdict, log, r)
    if verdict.recovery.get("mode") == "abnormal":
        _abnormal(store, verdict, commitlog, r)
    if r.index_rewrite_from is not None:
        verdict.add(
            "dledger_index_rewritten",
            START,
            f"the index unit of entry {r.index_rewrite_from} is missing "
            "or disagrees with its entry: DLedger's recovery rewrites the index from there",
            rel(store, log.paths.index_dir),
            "D:DMFS:250-282",
        )
    if 0 <= r.committed_index < r.last_index:
        verdict.add(
            "dledger_uncommitted",
            START,
            f"the checkpoint's committedIndex {r.committed_index} is "
            f"below the ledger end {r.last_index}: after the load the store serves up to "
            f"{r.committed_pos}; once elected the leader commits the rest (to {r.last_end})",
            rel(store, log.paths.checkpoint),
            "D:DMFS:314-325, R5 DLedgerRoleChangeHandler.java:74-92",
        )
    _currterm(store, verdict, log)


def commitlog_end_after_load(commitlog) -> int:
    """`DLedgerCommitLog.getMaxOffset` after the load (R5:DLC:150-159): DLedger's committedPos when above 0,
    else the data list's min offset, else 0 (the classic end while no data file exists)."""
    r = commitlog.log.recovery
    if r.committed_pos > 0:
        return r.committed_pos
    data = commitlog.log.data_files
    if data:
        return data[0].start_offset
    return commitlog.classic.max_offset


def _abnormal(store, verdict: StartupVerdict, commitlog, r) -> None:
    """`abort` present. 5.3.3 re-dispatches after DLedger's recovery (R5:DLC:317-395): from the last kept
    data file whose first message has a store time at or below the checkpoint's min time
    (`isMmapFileMatchedRecover`, :429-477; file 0 when none), every entry is checked and dispatched again.
    4.9.8 has one recovery for both cases (R4:DLC:271-332): DLedger's recover and the ConsumeQueue cut."""
    from store.log.recovery import recovery_start_abnormal

    if verdict.major < 5:
        verdict.add(
            "abnormal_recovery",
            START,
            "abort is present: 4.9.8's DLedgerCommitLog recovers as after a "
            "clean stop (DLedger's recover and the ConsumeQueue cut), no re-dispatch",
            "abort",
            "R4:DLC:271-332",
        )
        return
    files = [f for f in commitlog.log.data_files if f.start_offset <= r.end]
    cp = store.checkpoint()
    bound = cp.min_timestamp if cp is not None else 0
    firsts = []
    for f in files:
        stamp = commitlog.store_time_at(f.start_offset + BODY_OFFSET)
        firsts.append(None if stamp is None else (1, stamp))
    start = files[recovery_start_abnormal(firsts, bound)].start_offset if files else 0
    verdict.recovery["dledger"]["redispatchFrom"] = start
    verdict.add(
        "abnormal_recovery",
        START,
        f"abort is present: after DLedger's recovery the broker dispatches "
        f"again every entry from data file {start} (the last stored before the checkpoint's min time "
        f"{bound}) to the data end {r.end}, past the committed position too",
        "abort",
        "R5:DLC:317-395,429-477",
    )


def _truncation(store, verdict: StartupVerdict, log, r) -> None:
    files = log.data_files
    written = data_end(files)
    if written <= r.end or r.reason == "last_pad":
        return
    why = ENTRY_REASONS.get(r.reason, r.reason)
    deleted = f"; data files deleted: {', '.join(r.files_deleted)}" if r.files_deleted else ""
    stop_file = files[r.stop_file] if r.stop_file is not None else None
    verdict.add(
        "dledger_truncated",
        START,
        f"DLedger's recovery ends the data at {r.end} ({why}): the "
        f"{written - r.end} bytes written after it are dropped{deleted}",
        stop_file and rel(store, stop_file.path),
        "D:DMFS:206-313",
    )


def _currterm(store, verdict: StartupVerdict, log) -> None:
    path = log.paths.currterm
    try:
        term, _ = log.currterm()
    except MqtoolError as exc:
        term, bad = None, exc.message
    else:
        bad = None if term is not None or not path.exists() else "no readable currTerm"
    if bad:
        verdict.add(
            "dledger_currterm",
            START,
            f"{bad}: MemberState.loadTerm logs it and the term starts at 0",
            rel(store, path),
            "D:MemberState.java:72-91",
        )
