"""`mqtool tiered rebuild-metadata`: config/tieredStoreMetadata.json rebuilt from the tiered tree
(`mqtool.tiered.rebuild`), with its plan rendered: a table per part for people, one document for scripts."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from mqtool.cli.options import (
    BrokerConfigOpt,
    DryRunOpt,
    FormatOpt,
    RecordOpt,
    StoreOpt,
    TieredOpt,
    TzOpt,
    WideOpt,
    execute_flag,
    new_app,
    session,
)

tiered_app = new_app(
    "The tiered store plugin's tree (5.3.3 tieredstore, POSIX provider) and its metadata file."
)

_ExecuteOpt = Annotated[
    bool,
    typer.Option(
        "--execute", help="Write config/tieredStoreMetadata.json (default: dry run, print the plan)."
    ),
]


@tiered_app.command("rebuild-metadata")
def rebuild_metadata(
    execute: _ExecuteOpt = False,
    dry_run: DryRunOpt = False,
    tiered: TieredOpt = None,
    broker_config: BrokerConfigOpt = None,
    store: StoreOpt = None,
    fmt: FormatOpt = None,
    tz: TzOpt = None,
    wide: WideOpt = False,
    record: RecordOpt = False,
) -> None:
    """Write config/tieredStoreMetadata.json again from the tiered tree (--tiered, else broker.conf's
    tieredStoreFilePath), for a broker that lost or corrupted it and no longer sees its tiered data: a
    topic per topic directory, a queue per queue directory, a segment per file with the size, and the
    begin/end timestamps the plugin would have recorded (from the messages, units and index headers);
    topicIds from the tiered index's items. Fields nothing on disk records (createTimestamp,
    updateTimestamp) are kept from the current file when it has the entry. A tree it does not understand
    (a file name offset2FileName never writes, a gap or overlap between segments, an unknown segment type)
    is named and nothing is written. Dry run by default: every row and how it differs from the current
    file; --execute writes atomically, the previous file kept in .bak, with the broker stopped."""
    from mqtool.tiered.rebuild import rebuild_metadata as run

    execute = execute_flag(execute, dry_run)
    s = session(store, fmt, tz, wide, record)
    with s.open_store(broker_config, tiered=tiered) as st:
        plan = run(st, st.tiered.settings if st.tiered is not None else None, execute)
        _render(plan, s.ctx, execute)


def _render(plan: Any, ctx: Any, execute: bool) -> None:
    from mqtool.render.output import Column, emit_document, emit_fields, emit_table

    doc = plan.as_dict()

    def human() -> None:
        if plan.executed:
            verdict = f"written ({plan.metadata_file}; the previous file kept in .bak)"
        elif not plan.changed:
            verdict = "nothing to change: the current file is what the tree gives"
        elif execute:
            verdict = "not written"
        else:
            verdict = "dry run: would write (use --execute)"
        emit_fields(
            [
                ("metadata file", str(plan.metadata_file), "text"),
                ("current", f"{plan.current_source}: {plan.current_note}", "text"),
                ("topicSerialNumber", plan.metadata.topic_serial_number, "int"),
                ("result", verdict, "text"),
            ],
            ctx,
        )
        emit_table(
            doc["topics"],
            [Column("topic", kind="name"), Column("topicId", "id", "int"), Column("topicIdFrom", "id from")],
            ctx,
            title="topics",
        )
        emit_table(
            doc["segments"],
            [
                Column("type"),
                Column("path", kind="name"),
                Column("baseOffset", "base", "int"),
                Column("size", "size", "int"),
                Column("beginTimestamp", "begin", "int"),
                Column("endTimestamp", "end", "int"),
            ],
            ctx,
            title="segments",
        )
        emit_table(
            doc["changes"],
            [
                Column("table"),
                Column("name", kind="name"),
                Column("field"),
                Column("before"),
                Column("after"),
                Column("why"),
            ],
            ctx,
            title="changes against the current file",
            empty="(no change)",
        )

    change_columns = [Column(n) for n in ("table", "name", "field", "before", "after", "why")]
    emit_document(doc, ctx, human, csv_rows=(doc["changes"], change_columns))
