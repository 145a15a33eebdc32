"""How `mqtool info` shows what `mqtool.info` returns: tables for people, JSON for scripts."""

from __future__ import annotations

from typing import Any

from mqtool.render.output import Column, RenderContext, emit_document, emit_fields, emit_table


def layout_fields(layout: dict[str, Any]) -> list[tuple[str, Any, str]]:
    """The store's layout (`store.kind`) as info lines: its kind, each part and what mqtool does with it,
    and the root's entries no layout explains."""
    if "error" in layout:
        return [("layout", layout["error"], "text")]
    pairs: list[tuple[str, Any, str]] = [
        ("layout", f"{layout['commitlog']} commitlog, consume queues in {layout['consumeQueues']}, "
                   f"config in {layout['config']}", "text"),
    ]  # fmt: skip
    for part in layout["parts"]:
        writes = ", ".join(part["writes"]) or "none"
        reads = "read exactly" if part["reads"] else "NOT read exactly"
        pairs.append(
            (part["name"], f"{part['evidence']}: {reads}; writes allowed: {writes}. {part['note']}", "text")
        )
    if layout["unknown"]:
        pairs.append(("not in any layout", ", ".join(layout["unknown"]) + " (left alone)", "text"))
    return pairs


def render_dledger(dl: dict[str, Any] | None, ctx: RenderContext) -> None:
    """The DLedger commitlog section (`mqtool.info.dledger_info`)."""
    if not dl:
        return
    if "error" in dl:
        emit_fields([("DLedger", dl["error"], "text")], ctx)
        return
    why = "a pad in the last data file" if dl["dataEndReason"] == "last_pad" else dl["dataEndReason"]
    units = f"{dl['indexUnitsOnDisk']} on disk"
    if dl["indexRewriteFrom"] is not None:
        units += f"; recovery rewrites them from entry {dl['indexRewriteFrom']}"
    entries = f"index {dl['ledgerBeginIndex']} .. {dl['ledgerEndIndex']} (term {dl['ledgerEndTerm']})"
    pairs: list[tuple[str, Any, str]] = [
        ("self id", dl["selfId"], "text"),
        ("data directories", ", ".join(dl["dataDirectories"]), "text"),
        ("data files", f"{dl['dataFiles']} × {dl['dataFileSize']} bytes", "text"),
        ("dividedCommitlogOffset", dl["dividedCommitlogOffset"], "int"),
        ("entries", entries, "text"),
        (
            "recovery",
            f"walks from {dl['recoveryStartFile']}, ends the data at {dl['dataEnd']} ({why})",
            "text",
        ),
        ("index units", units, "text"),
        ("committed", f"index {dl['committedIndex']}, data offset {dl['committedPos']} (checkpoint)", "text"),
        ("current term", f"{dl['currTerm']} (voted for {dl['voteLeader']})", "text"),
    ]
    for problem in dl["loadProblems"]:
        pairs.append(("load fails", problem, "text"))
    if dl["brokerDoesNotStart"]:
        pairs.append(("broker does not start", dl["brokerDoesNotStart"], "text"))
    emit_fields(pairs, ctx, title="DLedger commitlog")


def controller_fields(ctl: dict[str, Any] | None) -> list[tuple[str, Any, str]]:
    """Controller mode's lines (`mqtool.info.controller_info`)."""
    if not ctl:
        return []
    if "error" in ctl:
        return [("controller mode", ctl["error"], "text")]
    clamp = f"; {ctl['confirmOffsetClamp']}" if ctl["confirmOffsetClamp"] else ""
    pairs: list[tuple[str, Any, str]] = [
        ("controller mode", f"{ctl['mode']} ({ctl['evidence']}): {ctl['reading']}", "text"),
        (
            "confirm offset",
            f"{ctl['confirmOffset']} after the {ctl['recovery']} recovery (checkpoint confirmPhyOffset "
            f"{ctl['checkpointConfirmPhyOffset']}{clamp})",
            "text",
        ),
        ("max physical offset", ctl["maxPhyOffset"], "text"),
    ]
    if ctl["unconfirmedBytes"]:
        topics = ", ".join(f"{t} {n}" for t, n in ctl["unconfirmedByTopic"].items())
        served = ctl.get("servedEnd") or 0
        if served > ctl["confirmOffset"]:  # units the reput wrote while the live confirm offset was ahead
            fate = f"already dispatched up to {served} (served): both recoveries keep those units" + (
                ""
                if served >= ctl["maxPhyOffset"]
                else "; the reput does not dispatch the rest until confirmed"
            )
        else:
            fate = (
                "the reput does not dispatch them until they are confirmed (a normal restart's recovery "
                "dispatches all but the first, an abnormal one none)"
            )
        pairs.append((
            "unconfirmed tail",
            f"{ctl['unconfirmedBytes']} bytes, {ctl['unconfirmedMessages']} message(s) past the confirm "
            f"offset ({topics}): {fate}; HA may truncate them",
            "text",
        ))  # fmt: skip
    if ctl["loadFails"]:
        pairs.append(("broker load", ctl["loadFails"], "text"))
    return pairs


TIERED_COLUMNS = [
    Column("topic", kind="name", max_width=60),
    Column("queueId", "queue", "int"),
    Column("localMinOffset", "local min", "int"),
    Column("localMaxOffset", "local max", "int"),
    Column("tieredMinOffset", "tiered min", "int"),
    Column("tieredMaxOffset", "tiered max", "int"),
    Column("minOffset", "min", "int"),
    Column("maxOffset", "max", "int"),
    Column("commitLogSegments", "log segs", "int"),
    Column("consumeQueueSegments", "cq segs", "int"),
]


def render_tiered(tiered: dict[str, Any] | None, ctx: RenderContext) -> None:
    """The tiered store's section (`mqtool.tiered.ranges.tiered_info`)."""
    if not tiered:
        return
    if "error" in tiered:
        emit_fields([("tiered store", tiered["error"], "text")], ctx)
        return
    meta = tiered["metadata"]
    emit_fields(
        [
            ("tiered store", f"{tiered['path']}/{tiered['clusterDirectory']}/{tiered['brokerName']}", "text"),
            ("metadata", f"{meta['file']}: {meta['note']}", "text"),
        ],
        ctx,
        title="Tiered store",
    )
    rows = tiered["queues"]
    columns = TIERED_COLUMNS + ([Column("error")] if any("error" in r for r in rows) else [])
    emit_table(
        rows, columns, ctx, title="Tiered queues (local and tiered ranges; min/max: what the broker answers)"
    )


def render_info(doc: dict[str, Any], ctx: RenderContext) -> None:
    def human() -> None:
        cl = doc["commitlog"]
        pairs: list[tuple[str, Any, str]] = [
            ("store", doc["store"], "text"),
            ("broker", doc["broker"]["status"], "text"),
        ]
        pairs += layout_fields(doc["layout"])
        if "error" in cl:
            pairs.append(("commitlog", cl["error"], "text"))
        else:
            pairs += [
                ("commitlog files", f"{len(cl['files'])} × {cl['fileSize']} bytes", "text"),
                ("physical offsets", f"[{cl['minOffset']}, {cl['maxOffset']})", "text"),
                ("first store time", cl["firstStoreTimestamp"], "time"),
                ("last store time", cl["lastStoreTimestamp"], "time"),
                ("valid data ends", f"{cl['end']['kind']}: {cl['end']['reason']}", "text"),
            ]
            if cl["end"]["kind"] not in ("end",):
                pairs.append(
                    (
                        "recovery",
                        f"the broker's recovery would truncate at {cl['end']['physicalOffset']}",
                        "text",
                    )
                )
        pairs += controller_fields(doc.get("controller"))
        dispatch = doc["dispatch"]
        if "error" not in dispatch:
            pairs.append(("ConsumeQueues cover", f"up to {dispatch['consumeQueueEnd']}", "text"))
            if dispatch.get("undispatchedUnconfirmedBytes"):
                pairs.append(
                    (
                        "not confirmed",
                        f"{dispatch['undispatchedUnconfirmedBytes']} bytes after {dispatch['servedEnd']} are "
                        "the unconfirmed tail (the controller-mode broker's reput does not dispatch them)",
                        "text",
                    )
                )
            if dispatch["undispatchedBytes"]:
                pairs.append(
                    (
                        "not dispatched",
                        f"{dispatch['undispatchedBytes']} bytes after {dispatch['consumeQueueEnd']} "
                        "are in no ConsumeQueue (written but never dispatched)",
                        "text",
                    )
                )
        lmq = doc.get("lmq")
        if lmq and "error" in lmq:
            pairs.append(("LMQ queues", lmq["error"], "text"))
        elif lmq:
            pairs.append(
                (
                    "LMQ queues",
                    f"{lmq['queues']} %LMQ% queues (enableLmq "
                    f"{str(lmq['enableLmq']).lower()}, enableMultiDispatch "
                    f"{str(lmq['enableMultiDispatch']).lower()}: {lmq['settingsFrom']})",
                    "text",
                )
            )
        startup = doc.get("startup")
        if startup and "error" in startup:
            pairs.append(("start-up", startup["error"], "text"))
        elif startup:
            from mqtool.cli.examine.verify_render import startup_text

            pairs.append(("start-up", startup_text(startup), "text"))
            for reason in startup["reasons"]:
                pairs.append((f"  {reason['effect']}", f"{reason['code']}: {reason['message']}", "text"))
        emit_fields(pairs, ctx, title="Store")
        render_dledger(doc.get("dledger"), ctx)
        queues = doc["queues"]
        if isinstance(queues, dict):
            emit_fields([("queues", queues["error"], "text")], ctx)
        else:
            emit_table(
                queues,
                [
                    Column("topic", kind="name", max_width=60),
                    Column("queueId", "queue", "int"),
                    Column("minOffset", "min", "int"),
                    Column("maxOffset", "max", "int"),
                    Column("messages", kind="int"),
                    Column("error"),
                ]
                if any("error" in q for q in queues)
                else [
                    Column("topic", kind="name", max_width=60),
                    Column("queueId", "queue", "int"),
                    Column("minOffset", "min", "int"),
                    Column("maxOffset", "max", "int"),
                    Column("messages", kind="int"),
                ],
                ctx,
                title="ConsumeQueues",
            )
        render_batch_queues(doc.get("batchQueues"), ctx)
        render_compaction(doc.get("compaction"), ctx)
        render_tiered(doc.get("tiered"), ctx)
        index = doc["index"]
        if "error" in index:
            emit_fields([("index", index["error"], "text")], ctx)
        else:
            title = f"Index files (hashSlotNum {index['hashSlotNum']}, indexNum {index['indexNum']})"
            emit_table(index["files"], INDEX_HEADER_COLUMNS, ctx, title=title)
        checkpoint = doc["checkpoint"]
        if checkpoint and "error" not in checkpoint:
            emit_fields(
                [(k, v, "time" if "Timestamp" in k else "int") for k, v in checkpoint.items()],
                ctx,
                title="Checkpoint",
            )
        elif checkpoint:
            emit_fields([("checkpoint", checkpoint["error"], "text")], ctx)
        configs = doc["configFiles"]
        if isinstance(configs, list):
            emit_table(
                configs,
                [
                    Column("file", kind="name"),
                    Column("size", kind="int"),
                    Column("bak"),
                    Column("loadedFrom"),
                    Column("note"),
                ],
                ctx,
                title="Config files",
            )
        timer = doc.get("timer")
        if timer and "error" in timer:
            emit_fields([("timer wheel", timer["error"], "text")], ctx)
        elif timer:
            pending = None
            if timer["enqueuePosition"] is not None and timer["timerTopicMaxOffset"] is not None:
                pending = timer["timerTopicMaxOffset"] - timer["enqueuePosition"]
            emit_fields(
                [
                    ("precision", f"{timer['precisionMs']} ms", "text"),
                    ("timerlog units", timer["units"], "int"),
                    ("timerlog ends", f"{timer['logEnd']} ({timer['logStop']})", "text"),
                    ("non-empty slots", f"{timer['slots']} ({timer['slotsToRead']} still to read)", "text"),
                    ("wheel read time", timer["lastReadTimeMs"], "time"),
                    ("timer topic messages", timer["timerTopicMessages"], "int"),
                    ("still to enqueue", pending, "int"),
                ],
                ctx,
                title="Timer wheel (TimerMessageStore)",
            )

    emit_document(doc, ctx, human)


INDEX_HEADER_COLUMNS = [
    Column("file", kind="token", priority=0),
    Column("beginTimestamp", "begin", "time"),
    Column("endTimestamp", "end", "time"),
    Column("beginPhyOffset", "beginPhyOffset", "int"),
    Column("endPhyOffset", "endPhyOffset", "int"),
    Column("hashSlotCount", "slots used", "int"),
    Column("indexCount", "indexCount", "int"),
]


def render_batch_queues(rows: Any, ctx: RenderContext) -> None:
    """The BatchCQ topics' queues (only when the store has any)."""
    if not rows:
        return
    if isinstance(rows, dict):
        emit_fields([("batch queues", rows["error"], "text")], ctx)
        return
    columns = [
        Column("topic", kind="name", max_width=60),
        Column("queueId", "queue", "int"),
        Column("minOffset", "min", "int"),
        Column("maxOffset", "max", "int"),
        Column("messages", kind="int"),
        Column("units", kind="int"),
    ]
    if any("error" in r for r in rows):
        columns.append(Column("error"))
    emit_table(rows, columns, ctx, title="BatchConsumeQueues (BatchCQ topics: one unit per batch)")


def render_compaction(section: Any, ctx: RenderContext) -> None:
    """The compaction topics' queues: the range a consumer is served (compaction/) beside the
    ConsumeQueue's (only when the store has compaction topics or compaction/)."""
    if not section:
        return
    if "error" in section:
        emit_fields([("compaction", section["error"], "text")], ctx)
        return
    rows = [
        {**r, "logFiles": len(r.get("logFiles") or []), "problems": "; ".join(r.get("problems") or [])}
        for r in section["queues"]
    ]
    columns = [
        Column("topic", kind="name", max_width=60),
        Column("queueId", "queue", "int"),
        Column("minOffset", "served min", "int"),
        Column("maxOffset", "served max", "int"),
        Column("records", kind="int"),
        Column("compactedTo", "compacted to", "int"),
        Column("consumeQueueMinOffset", "CQ min", "int"),
        Column("consumeQueueMaxOffset", "CQ max", "int"),
        Column("logFiles", "log files", "int"),
    ]
    if any(r["problems"] or "error" in r for r in rows):
        columns += [Column("problems"), Column("error")]
    title = "Compaction topics (consumers are served from compaction/, not the CQ)"
    emit_table(rows, columns, ctx, title=title)
    if section.get("problems"):
        emit_fields([("compaction", "; ".join(section["problems"]), "text")], ctx)
