"""How `mqtool sample` shows what `mqtool.sample` returns: tables for people, JSON for scripts."""

from __future__ import annotations

from typing import Any

from mqtool.sample.create import SampleSummary


def render_summary(summary: SampleSummary, ctx) -> None:
    from mqtool.render.output import emit_document, emit_fields

    def human() -> None:
        pairs: list[tuple[str, Any, str]] = [
            ("store", str(summary.directory), "text"),
            ("broker version", f"{summary.version}.x", "text"),
            ("produced messages", summary.produced, "int"),
            ("commitlog records", summary.records, "int"),
            ("commitlog files", summary.commitlog_files, "int"),
            ("commitlog bytes", summary.commitlog_bytes, "int"),
            ("consume queues", summary.queues, "int"),
            ("index files", summary.index_files, "int"),
            ("first store time", summary.first_store_time, "time"),
            ("last store time", summary.last_store_time, "time"),
            ("seconds", round(summary.seconds, 2), "text"),
        ]
        for topic, n in summary.records_by_topic.items():
            pairs.append((f"records in {topic}", n, "int"))
        pairs.append(("broker.conf", " ".join(f"{k}={v}" for k, v in summary.broker_conf.items()), "text"))
        emit_fields(pairs, ctx, title="Sample store created")

    doc = summary.to_json()
    emit_document(doc, ctx, human, csv_rows=([doc], []))
