"""How `mqtool verify` shows what `mqtool.verify` returns: tables for people, JSON for scripts."""

from __future__ import annotations

from typing import Any

from mqtool.render.output import Column, RenderContext, emit_fields, emit_rows, emit_table, to_json_text
from mqtool.verify import VerifyReport
from store.checks.problems import ERROR, INFO, WARNING

PROBLEM_COLUMNS = [
    Column("severity"),
    Column("kind"),
    Column("file", kind="name", max_width=60),
    Column("offset", kind="int"),
    Column("detail"),
]


def render_verify(report: VerifyReport, ctx: RenderContext, *, min_severity: str = INFO) -> None:
    rows = report.problem_rows(min_severity)
    if ctx.fmt == "json":
        ctx.out.write(to_json_text(report.to_json(min_severity)) + "\n")
        return
    if ctx.fmt in ("jsonl", "csv"):
        emit_rows(rows, PROBLEM_COLUMNS, ctx)
        return
    verdict = "clean" if report.clean else "NOT clean"
    title = (
        f"verify {report.store}: {verdict} - {report.counts.get(ERROR, 0)} errors, "
        f"{report.counts.get(WARNING, 0)} warnings, {report.counts.get(INFO, 0)} infos"
    )
    emit_table(rows, PROBLEM_COLUMNS, ctx, title=title, empty="no problems found")
    cl = report.summary.get("commitlog", {})
    cq = report.summary.get("consumeQueues", {})
    ix = report.summary.get("index", {})
    pairs: list[tuple[str, Any, str]] = [
        ("commitlog files", cl.get("files"), "int"),
        ("commitlog bytes", cl.get("bytes"), "int"),
        ("messages", cl.get("messages"), "int"),
        ("valid end (phy)", cl.get("validEnd"), "int"),
        ("consume queues", cq.get("queues"), "int"),
        ("consume queue units", cq.get("units"), "int"),
        ("index files", ix.get("files"), "int"),
        ("index entries", ix.get("entries"), "int"),
    ]
    bcq = report.summary.get("batchConsumeQueues")
    if bcq:  # BatchCQ topics: one unit per batch record
        pairs[6:6] = [
            ("batch consume queues", bcq["queues"], "int"),
            ("batch queue units", bcq["units"], "int"),
        ]
    if ix.get("keysChecked") is not None:
        pairs.append(("index keys checked (--deep)", ix.get("keysChecked"), "int"))
    pairs.append(("seconds", report.summary.get("seconds", {}).get("total"), "text"))
    emit_fields(pairs, ctx, title="Checked")


_REASON_COLUMNS = [
    Column("effect"),
    Column("code", kind="name"),
    Column("file", kind="name", max_width=50),
    Column("message", max_width=100),
    Column("source", "decided by", max_width=50),
]


def startup_text(doc: dict[str, Any]) -> str:
    """One line: the verdict and what the recovery does."""
    rec = doc["recovery"]
    text = {"start": "starts", "refuse": "refuses to start (exit -3)", "exit": "exits (-1)"}[doc["verdict"]]
    line = f"a {doc['broker']} broker started now {text}"
    if doc["verdict"] == "start" and rec:
        line += f"; {rec['mode']} recovery ends the commitlog at {rec['commitlogEnd']}"
        if rec.get("truncatedBytes"):
            line += f", dropping {rec['truncatedBytes']} bytes"
        if dledger := rec.get("dledger"):
            end, data_end = dledger["ledgerEndIndex"], dledger["dataEnd"]
            line += f"; DLedger keeps entries to index {end} (data end {data_end})"
        if timer := rec.get("timer"):
            line += f"; the timer's recovery ends the timerlog at {timer['timerLogEnd']}"
            if timer.get("truncatedBytes"):
                line += f", dropping {timer['truncatedBytes']} bytes"
    return line


def render_startup(doc: dict[str, Any], ctx: RenderContext) -> None:
    def human() -> None:
        emit_fields(
            [("store", doc["store"], "text"), ("verdict", startup_text(doc), "text")], ctx, title="Start-up"
        )
        emit_rows(
            doc["reasons"], _REASON_COLUMNS, ctx, title="Reasons", empty="(nothing to say: a clean start)"
        )

    from mqtool.render.output import emit_document

    emit_document(doc, ctx, human)
