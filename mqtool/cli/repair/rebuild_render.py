"""How `mqtool rebuild` shows what `mqtool.rebuild` returns: tables for people, JSON for scripts."""

from __future__ import annotations

from typing import Any

from mqtool.rebuild import CompactionCqReport, DLedgerIndexReport, RebuildReport, index_row, queue_row
from mqtool.render.output import Column, RenderContext, emit_document, emit_fields, emit_table

QUEUE_COLUMNS = [
    Column("topic", kind="name", max_width=48),
    Column("queueId", "queue", "int"),
    Column("status"),
    Column("minOffset", "min", "int"),
    Column("maxOffset", "max", "int"),
    Column("newMinOffset", "new min", "int"),
    Column("newMaxOffset", "new max", "int"),
    Column("files", "files", "int"),
    Column("newFiles", "new files", "int"),
    Column("firstDifference", "first diff at", "int"),
]


INDEX_COLUMNS = [
    Column("file", kind="token", priority=0),
    Column("beginTimestamp", "begin", "time"),
    Column("endTimestamp", "end", "time"),
    Column("beginPhyOffset", "begin offset", "int"),
    Column("endPhyOffset", "end offset", "int"),
    Column("indexCount", "indexCount", "int"),
]


def render_report(report: RebuildReport, ctx: RenderContext) -> None:
    doc = report.to_json()

    def human() -> None:
        b = report.build
        if report.executed:
            verdict = "rebuilt and swapped in"
        elif report.execute:
            verdict = "nothing to do: the current files are what the rebuild gives"
        elif report.changes:
            verdict = "dry run: would rewrite (use --execute)"
        else:
            verdict = "dry run: the current files match the rebuild"
        pairs: list[tuple[str, Any, str]] = [
            ("store", str(report.root), "text"),
            ("rebuild", report.target, "text"),
            ("result", verdict, "text"),
            ("broker version", report.version, "text"),
            ("commitlog", f"[{b.commitlog_min_offset}, {b.valid_end}) {b.messages} messages", "text"),
            ("commitlog end", f"{b.stop_kind} {b.stop_reason}".strip(), "text"),
        ]
        if b.cq:
            changed = sum(1 for q in report.queues if q.status != "same")
            pairs.append(
                (
                    "mappedFileSizeConsumeQueue",
                    f"{report.cq_file_size.value} ({report.cq_file_size.source})",
                    "text",
                )
            )
            pairs.append(
                ("consume queues", f"{len(report.queues)} ({changed} change), {b.cq_units} units", "text")
            )
        if report.index is not None:
            pairs.append(
                ("maxHashSlotNum", f"{report.hash_slot_num.value} ({report.hash_slot_num.source})", "text")
            )
            pairs.append(("maxIndexNum", f"{report.index_num.value} ({report.index_num.source})", "text"))
            diff = report.index.status + (
                f" ({report.index.first_difference})" if report.index.first_difference else ""
            )
            pairs.append(
                ("index", f"{diff}; {len(report.index.new_files)} files, {b.index_keys} keys", "text")
            )
        for text in report.warnings:
            pairs.append(("warning", text, "text"))
        emit_fields(pairs, ctx, title="Rebuild plan" if not report.executed else "Rebuild")
        if b.cq:
            emit_table([queue_row(q) for q in report.queues], QUEUE_COLUMNS, ctx, title="ConsumeQueues")
        if report.index is not None:
            emit_table(
                [index_row(n, h) for n, h in report.index.new_files],
                INDEX_COLUMNS,
                ctx,
                title="Rebuilt index files",
            )

    emit_document(doc, ctx, human)


def render_dledger_index(report: DLedgerIndexReport, ctx: RenderContext) -> None:
    doc = report.to_json()

    def human() -> None:
        p = report.plan
        if report.executed:
            verdict = f"rewrote {', '.join(report.written)}"
        elif not p.changes:
            verdict = "the index units are what the entries give"
        else:
            verdict = "dry run: would rewrite (use --execute)" if not report.execute else "nothing written"
        pairs: list[tuple[str, Any, str]] = [
            ("store", str(report.root), "text"),
            ("rebuild", "dledger-index", "text"),
            ("result", verdict, "text"),
            ("entries", f"{p.entries} (index {p.first_index} .. {p.last_index})", "text"),
        ]
        if p.rewrite_from is not None:
            pairs.append(
                ("DLedger's recovery", f"rewrites the units from entry {p.rewrite_from} itself", "text")
            )
        emit_fields(pairs, ctx, title="Rebuild of DLedger's index")
        emit_table(
            doc["files"],
            [Column("file"), Column("status"), Column("firstDifference", "first diff at", "int"),
             Column("units", kind="int")],
            ctx,
            title="Index files",
        )  # fmt: skip

    emit_document(doc, ctx, human)


COMPACTION_FILE_COLUMNS = [
    Column("topic", kind="name", max_width=48),
    Column("queueId", "queue", "int"),
    Column("file", kind="token"),
    Column("status"),
    Column("units", kind="int"),
    Column("endUnit", "end unit"),
    Column("firstDifference", "first diff at", "int"),
    Column("firstDifferenceQueueOffset", "at queue offset", "int"),
]


def render_compaction_cq(report: CompactionCqReport, ctx: RenderContext) -> None:
    doc = report.to_json()

    def human() -> None:
        p = report.plan
        if report.executed:
            verdict = f"rewrote {len(report.written)} file(s)"
        elif not p.changes:
            verdict = "the CQ files are what the compaction logs give"
        else:
            verdict = "dry run: would rewrite (use --execute)" if not report.execute else "nothing written"
        pairs: list[tuple[str, Any, str]] = [
            ("store", str(report.root), "text"),
            ("rebuild", "compaction-cq", "text"),
            ("result", verdict, "text"),
            ("compaction CQ file size", f"{p.cq_file_size} ({p.cq_file_size_source})", "text"),
            ("queues", f"{len(p.queues)} ({sum(q.status == 'changes' for q in p.queues)} change)", "text"),
        ]
        pairs += [("refused", q.refused, "text") for q in p.refused]
        pairs += [("warning", w, "text") for w in doc["warnings"]]
        emit_fields(pairs, ctx, title="Rebuild of the compaction CQ")
        rows = [
            {"topic": q["topic"], "queueId": q["queueId"], **f} for q in doc["queues"] for f in q["files"]
        ]
        emit_table(rows, COMPACTION_FILE_COLUMNS, ctx, title="Compaction CQ files")

    emit_document(doc, ctx, human)
