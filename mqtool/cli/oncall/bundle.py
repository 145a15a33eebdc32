"""`mqtool bundle`: one archive with everything needed to look at a store elsewhere (a thin wrapper over
`mqtool.oncall.bundle`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from mqtool.cli.options import (
    BrokerConfigOpt,
    FormatOpt,
    JobsOpt,
    RecordOpt,
    StoreOpt,
    TzOpt,
    WideOpt,
    jobs_count,
    session,
    skip_pandas_probe,
)
from mqtool.cli.scheduled.delay import NowOpt, resolve_now


def bundle(
    output: Annotated[Path, typer.Option("--output", "-o", help="The archive to write (FILE.tar.gz).")],
    with_bodies: Annotated[
        bool, typer.Option("--with-bodies", help="Include the bodies of the last records (base64).")
    ] = False,
    records: Annotated[
        int, typer.Option("--records", help="How many of the commitlog's last records to include.")
    ] = 20,
    force: Annotated[
        bool,
        typer.Option(
            "--force", help="Replace an existing file that is not an earlier bundle (a store's files never)."
        ),
    ] = False,
    now: NowOpt = None,
    disk_used: Annotated[
        float | None,
        typer.Option("--disk-used", metavar="RATIO", help="Retention part: assume the disk this used."),
    ] = None,
    broker_config: BrokerConfigOpt = None,
    jobs: JobsOpt = None,
    store: StoreOpt = None,
    fmt: FormatOpt = None,
    tz: TzOpt = None,
    wide: WideOpt = False,
    record: RecordOpt = False,
) -> None:
    """Write a support bundle of the store, as `rpk debug bundle` does: the info, verify --startup, verify
    and retention JSON documents, an inventory of every file (size, time, SHA-256 of its first 4 KiB),
    broker.conf with every secret-looking value (access keys, secret keys, passwords, tokens, credentials,
    auth users) replaced, the config files, the checkpoint and other state files, and the last records of
    the commitlog without their bodies (--with-bodies adds them); a README inside says what it holds. The
    commitlog is read once, in byte ranges over --jobs worker processes, for every document. The archive
    is written atomically, never inside a store, and replaces an existing file only when it is an earlier
    bundle, or with --force."""
    from formats.errors import UsageError
    from mqtool.oncall import bundle as ops
    from mqtool.render.output import emit_document, emit_fields

    if records < 0:
        raise UsageError("--records must be 0 or more")
    skip_pandas_probe()  # before the workers fork: none of them imports pandas either
    workers = jobs_count(jobs)
    s = session(store, fmt, tz, wide, record, csv=False)
    when = resolve_now(now, s.ctx.zone)
    with s.open_store(broker_config) as st:
        summary = ops.write_bundle(
            st,
            output,
            now_ms=when,
            zone=s.ctx.zone,
            with_bodies=with_bodies,
            records=records,
            force=force,
            disk_used=disk_used,
            jobs=workers,
        )
    doc = summary.to_json()

    def human() -> None:
        pairs = [
            ("bundle", doc["bundle"], "text"),
            ("bytes", doc["bytes"], "int"),
            ("members", ", ".join(doc["members"]), "text"),
            ("secret values redacted", doc["secretValuesRedacted"], "int"),
        ]
        pairs += [("note", note, "text") for note in doc["notes"]]
        emit_fields(pairs, s.ctx, title="Support bundle")

    emit_document(doc, s.ctx, human)


__all__ = ["bundle"]
