"""How `mqtool retention` shows what `mqtool.oncall.retention` returns: the decision, the files, the losses
and the forecast for people; the document for scripts."""

from __future__ import annotations

from typing import Any

from mqtool.render.output import Column, RenderContext, emit_document, emit_fields, emit_rows, size_text
from mqtool.timeparse import human_duration

_FILE_COLUMNS = [
    Column("file", kind="name"),
    Column("size", kind="int"),
    Column("lastModified", "last modified", kind="time"),
    Column("expiresAt", "expires", kind="time"),
    Column("when", "deleted"),
    Column("deletedAt", "deleted at", kind="time"),
]
_QUEUE_COLUMNS = [
    Column("topic", kind="name", max_width=40),
    Column("queueId", "queue", kind="int"),
    Column("minOffsetBefore", "min now", kind="int"),
    Column("minOffsetAfter", "min after", kind="int"),
    Column("maxOffset", "max", kind="int"),
    Column("messagesDeleted", "messages deleted", kind="int"),
]
_GROUP_COLUMNS = [
    Column("group", kind="name", max_width=40),
    Column("topic", kind="name", max_width=40),
    Column("queueId", "queue", kind="int"),
    Column("committedOffset", "committed", kind="int"),
    Column("minOffsetAfter", "min after", kind="int"),
    Column("unconsumedDeleted", "unconsumed deleted", kind="int"),
]


def _decision_text(run: dict[str, Any]) -> str:
    if run["error"]:
        return f"the run fails ({run['error']}): nothing is deleted, whatever the disk says"
    if not run["deletes"]:
        return "nothing to do: not a deleteWhen hour and the disk below diskMaxUsedSpaceRatio"
    how = "every file but the last, whatever its age" if run["cleanAtOnce"] else "expired files only"
    return f"deletes {how} ({'; '.join(run['why'])})"


def summary_fields(doc: dict[str, Any]) -> list[tuple[str, Any, str]]:
    settings, disk = doc["settings"], doc["disk"]["commitlog"]
    first = doc["runs"][0] if doc["runs"] else None
    deleted = sum(len(r["commitlogDeleted"]) for r in doc["runs"])
    pairs: list[tuple[str, Any, str]] = [
        ("store", doc["store"], "text"),
        ("now", doc["nowMs"], "time"),
        ("rules of", f"broker {doc['brokerVersion']}.x", "text"),
        ("deleteWhen", f"{settings['deleteWhen']!r} (hours of the broker's day)", "text"),
        ("fileReservedTime", f"{settings['fileReservedTime']} h", "text"),
        ("disk used", f"{disk['ratio']:.2f}" + ("" if disk["measured"] else " (given)"), "text"),
        (
            "ratios",
            f"reclaim > {settings['diskMaxUsedSpaceRatioInEffect']}, forced clean > "
            f"{settings['diskSpaceCleanForciblyRatioInEffect']} (cleanFileForciblyEnable "
            f"{str(settings['cleanFileForciblyEnable']).lower()}), disk full > "
            f"{settings['diskSpaceWarningLevelRatioInEffect']}",
            "text",
        ),
    ]
    if first is not None:
        pairs.append(("next run", _decision_text(first), "text"))
    pairs.append(
        (
            "commitlog files deleted",
            f"{deleted} in {len(doc['runs'])} run(s); min offset "
            f"{doc['commitlogMinOffset']['before']} -> {doc['commitlogMinOffset']['after']}",
            "text",
        )
    )
    rate = doc["forecast"]["writeRate"]
    if rate["bytesPerHour"] is not None:
        span = human_duration(rate["toMs"] - rate["fromMs"])
        pairs.append(("write rate", f"{size_text(rate['bytesPerHour'])}/h over the last {span}", "text"))
    for t in doc["forecast"]["thresholds"]:
        if t["ratio"] is None:
            pairs.append((t["name"], t["meaning"], "text"))
        elif t["reachedMs"] is None:
            why = (
                "not reached at this rate"
                if disk["measured"]
                else "not forecast (--disk-used gives no bytes)"
            )
            pairs.append((t["name"], f"> {t['ratio']:.2f}: {why} ({t['meaning']})", "text"))
        elif t["reachedMs"] <= doc["nowMs"]:
            pairs.append((t["name"], f"> {t['ratio']:.2f}: now ({t['meaning']})", "text"))
        else:
            eta = human_duration(t["reachedMs"] - doc["nowMs"])
            pairs.append((t["name"], f"> {t['ratio']:.2f} in {eta} ({t['meaning']})", "text"))
    return pairs


def render_retention(doc: dict[str, Any], ctx: RenderContext) -> None:
    def human() -> None:
        emit_fields(summary_fields(doc), ctx, title="Retention")
        files = []
        for f in doc["files"]:
            row = dict(f)
            if f["last"]:
                row["when"] = "never (last file)"
            elif f["deletedInRun"]:
                row["when"] = f"run {f['deletedInRun']}"
            elif f["deletedAt"] is not None:
                row["when"] = f"in {human_duration(f['deletedAt'] - doc['nowMs'])}"
            else:
                row["when"] = "not within 48 h"
            files.append(row)
        emit_rows(files, _FILE_COLUMNS, ctx, title="Commitlog files", empty="(no commitlog files)")
        emit_rows(doc["queues"], _QUEUE_COLUMNS, ctx, title="Messages the next runs delete", empty="(none)")
        emit_rows(
            doc["groups"],
            _GROUP_COLUMNS,
            ctx,
            title="Unconsumed messages the next runs delete",
            empty="(none)",
        )
        for note in doc["notes"]:
            ctx.out.write(f"note: {note}\n")

    emit_document(doc, ctx, human)
