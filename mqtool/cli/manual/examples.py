"""Each command's examples, written once: the "Examples" of its `--help` and the EXAMPLES of its man page.

The names (TopicTest, groupA, order-548, ...) are those of the sample store `samples/store-a`, so every
example runs as written there (`export MQTOOL_STORE=samples/store-a`; tests/test_examples.py runs them;
the replica commands' /data/broker-a and /data/broker-a-slave are two copies of it there).
`add_examples` hangs them on the typer app as epilogs; `mqtool.cli.manual.manpages` reads `EXAMPLES`.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

import typer


@dataclass(frozen=True)
class Example:
    command: str  # as typed at a shell prompt, starting with `mqtool`
    what: str  # what it shows or does, one or two sentences


E = Example

# key: the command's path after `mqtool` ("" is `mqtool` itself, "query key" a command of a group)
EXAMPLES: dict[str, tuple[Example, ...]] = {
    "": (
        E("mqtool --store /var/lib/rocketmq/store info", "What a store holds (--store, else $MQTOOL_STORE)."),
        E("mqtool query key TopicTest order-548", "Find a customer's message by its key."),
        E("mqtool offsets show --group groupA", "How far a consumer group got, queue by queue."),
        E("mqtool -f json verify", "Check the whole store; JSON for a script (exit status 1 on an error)."),
    ),
    "info": (
        E(
            "mqtool info",
            "Commitlog range and times, every topic/queue, index files, checkpoint, config files.",
        ),
        E("mqtool -f json info", "The same as one JSON document."),
        E(
            "mqtool info --tiered /data/tiered",
            "Also each tiered queue's local and tiered offset ranges side by side.",
        ),
    ),
    "dump commitlog": (
        E("mqtool dump commitlog --count 5", "The first five records in physical order."),
        E(
            "mqtool dump commitlog --topic OrderTopic --body --count 3",
            "Three messages of OrderTopic, bodies included.",
        ),
        E(
            "mqtool dump commitlog --format parquet --output messages.parquet",
            "Every record's metadata as Parquet, through the columnar decoder.",
        ),
    ),
    "dump cq": (
        E(
            "mqtool dump cq TopicTest 2 --from-offset 200 --count 10",
            "ConsumeQueue units 200-209 of TopicTest/2.",
        ),
    ),
    "dump compactionlog": (
        E(
            "mqtool dump compactionlog CompactTopicA 0",
            "The compacted records of CompactTopicA/0: served, tombstones, what the next compaction drops.",
        ),
    ),
    "dump index": (
        E("mqtool dump index", "The header of every index file."),
        E("mqtool dump index 20261121113756693 --entries", "One index file's hash entries."),
    ),
    "dump checkpoint": (E("mqtool dump checkpoint", "The StoreCheckpoint: flush times and offsets."),),
    "dump timerlog": (
        E("mqtool dump timerlog --count 20", "The first 20 units of the 5.x timer wheel's log."),
    ),
    "dump timerwheel": (E("mqtool dump timerwheel", "The timer wheel's non-empty slots and their chains."),),
    "dump timercheck": (
        E("mqtool dump timercheck", "config/timercheck: the wheel's read time and flush position."),
    ),
    "dump config": (
        E("mqtool dump config consumerOffset", "consumerOffset.json as the broker loads it."),
        E("mqtool dump config topics --bak", "The .bak copy the broker falls back to."),
    ),
    "dump trace": (
        E(
            "mqtool dump trace --type Pub",
            "Every Pub record of the message trace topic: who sent what, when.",
        ),
        E("mqtool -f json dump trace --group GID_ok", "A consumer group's trace records as JSON."),
    ),
    "trace": (
        E(
            "mqtool trace FD00000000000000000000000000000212CA4E0E2F2A88D24E0A0000",
            "One message's whole history (sent, delayed, consumed, retried, dead-lettered) on this store.",
        ),
        E(
            "mqtool trace --key order-1 --topic TraceTopic",
            "The messages with a key, each with its history (--store repeated: every broker of a cluster).",
        ),
    ),
    "query key": (
        E("mqtool query key TopicTest order-548", "Every message of TopicTest with the key order-548."),
        E(
            "mqtool query key TopicTest shared-key --begin 2026-11-21 --max 10",
            "The ten newest stored since a day (no cap of 64 as in the broker).",
        ),
        E("mqtool -f json query key TopicTest order-548", "The whole message as JSON, for a script."),
    ),
    "query id": (
        E(
            "mqtool query id C0A8000A00002A9F000000000000010E",
            "The message an offsetMsgId names, a field a line, and whether each group consumed it.",
        ),
        E(
            "mqtool query id FD0000000000000000000000000000024BA95FFD2B27697E2C830511 --topic TopicTest",
            "Every record carrying this UNIQ_KEY (the client's msgId) in TopicTest: retries and re-puts too.",
        ),
    ),
    "query offset": (
        E("mqtool query offset TopicTest 2 208", "The message at queue offset 208 of TopicTest/2."),
        E(
            "mqtool query offset TopicTest 2 208 --count 3 --export bodies",
            "Three messages; their bodies to bodies/.",
        ),
        E(
            "mqtool query offset TieredTopicA 0 0 --tiered /data/tiered",
            "Below the local minimum: the message the broker serves from its tiered store.",
        ),
    ),
    "query time": (
        E(
            "mqtool query time TopicTest --begin 2026-11-21T11:37:56Z --end 2026-11-21T11:37:57Z --tag tag1",
            "Messages of TopicTest with tag tag1 stored in that second (a time without a zone is in --tz).",
        ),
        E(
            "mqtool query time TopicTest -b 2026-11-21 -e now --skip 100 --max 100",
            "The second page of 100 messages stored since a day.",
        ),
    ),
    "offsets show": (
        E("mqtool offsets show", "Every group's committed offset, lag and last consumed time per queue."),
        E(
            "mqtool offsets show --group groupA --topic TopicTest",
            "One group on one topic (and its retry topics).",
        ),
    ),
    "offsets reset": (
        E(
            "mqtool offsets reset --group groupA --topic TopicTest --to-time 2026-11-21T11:37:56.600Z",
            "The plan of a rewind to a point in time (a dry run: nothing is written).",
        ),
        E(
            "mqtool offsets reset --group groupA --all-topics --to-latest --export plan.csv",
            "Plan a skip to the end of every topic of the group, and save the plan.",
        ),
        E(
            "mqtool offsets reset --group groupA --from-file plan.csv --execute",
            "Apply a saved plan, the broker stopped (consumerOffset.json replaced atomically, .bak kept).",
        ),
    ),
    "offsets merge": (
        E(
            "mqtool offsets merge /data/broker-a /data/broker-a-slave --into /data/broker-a",
            "Per queue the largest offset master and slave committed, planned for the master (a dry run).",
        ),
        E(
            "mqtool offsets merge /data/broker-a /data/broker-a-slave --into /data/broker-a "
            "--prefer /data/broker-a-slave --group groupA",
            "groupA's offsets as the slave holds them, where it has them.",
        ),
    ),
    "offsets clone": (
        E(
            "mqtool offsets clone --from-group groupA --to-group groupC --allow-new-group",
            "The plan of a new group starting where groupA is (a dry run: nothing is written).",
        ),
        E(
            "mqtool offsets clone --from-group groupA --to-group groupB --topic TopicTest --execute",
            "Give groupB groupA's offsets on TopicTest, the broker stopped (.bak kept).",
        ),
    ),
    "offsets prune": (
        E(
            "mqtool offsets prune",
            "Offset rows of deleted groups and topics and of queues past a topic's readQueueNums, each with "
            "its reason (a dry run).",
        ),
        E("mqtool offsets prune --execute", "Remove them, the broker stopped (.bak kept)."),
    ),
    "dlq list": (
        E("mqtool dlq list", "Every dead letter: when it died, its original topic and queue, keys."),
        E(
            "mqtool -f json dlq list --group GID_retry --begin 2026-11-01",
            "One group's dead letters since a date, as JSON.",
        ),
    ),
    "dlq stats": (E("mqtool dlq stats", "Dead letters per group and original topic, by age."),),
    "tiered rebuild-metadata": (
        E(
            "mqtool tiered rebuild-metadata --tiered /data/tiered",
            "What config/tieredStoreMetadata.json the tiered tree calls for, and how it differs (a dry run).",
        ),
        E(
            "mqtool tiered rebuild-metadata --tiered /data/tiered --execute",
            "Write it (the broker stopped; the previous file kept in .bak).",
        ),
        E(
            "mqtool -f json tiered rebuild-metadata --tiered /data/tiered",
            "The plan as one JSON document: topics, queues, segments and the changes, for a script.",
        ),
    ),
    "topic update": (
        E(
            "mqtool topic update NewTopic --read-queues 4 --write-queues 4 --attr +message.type=NORMAL",
            "The topic mqadmin updateTopic would create (a dry run; --execute writes topics.json).",
        ),
        E(
            "mqtool topic update TopicTest --write-queues 2",
            "Stop producers writing queues 2 and 3, before --read-queues can drop them (updateTopic -w).",
        ),
    ),
    "topic delete": (
        E(
            "mqtool topic delete OrderTopic",
            "What mqadmin deleteTopic would remove: the config, the offsets on it, its consume queues.",
        ),
    ),
    "group update": (
        E(
            "mqtool group update groupA --retry-max-times 3",
            "Change a group's retries as mqadmin updateSubGroup -q would (a dry run; --execute writes it).",
        ),
        E("mqtool group update GID_NEW --no-consume-enable", "Create a group that may not consume yet."),
    ),
    "group delete": (
        E(
            "mqtool group delete groupB --clean-offset",
            "What mqadmin deleteSubGroup -r would remove: the group and its consumer offsets.",
        ),
    ),
    "dlq export": (
        E("mqtool dlq export -o dead.jsonl", "Every dead letter (dlq list's fields, properties) as JSONL."),
        E(
            "mqtool dlq export --group GID_retry --begin -1d --bodies -o dead.parquet",
            "One group's dead letters of the last day, with bodies, to Parquet (format from the suffix).",
        ),
    ),
    "dlq resend": (
        E(
            "mqtool dlq resend --group GID_retry",
            "What resending the group's dead letters into %RETRY%GID_retry writes (a dry run).",
        ),
        E(
            "mqtool dlq resend --group GID_retry --key order-2 --execute",
            "Resend the dead letters with key order-2; a second run finds them resent and writes nothing.",
        ),
        E(
            "mqtool dlq resend --group GID_retry --origin-topic TraceTopic --to origin",
            "Plan putting them back into their original queues of TraceTopic (every group gets them).",
        ),
    ),
    "consume-mode show": (
        E("mqtool consume-mode show", "PULL or POP per group, and what waits in its retry topics."),
    ),
    "consume-mode set": (
        E(
            "mqtool consume-mode set --topic TopicTest --group groupA --mode POP",
            "The change mqadmin setConsumeMode would make (a dry run; --execute writes it).",
        ),
    ),
    "pop list": (
        E("mqtool pop list", "Every popped message not acked yet: in flight, overdue or revived."),
        E(
            "mqtool pop list --group GID_OVERDUE --state overdue",
            "The group's messages past their invisible time.",
        ),
    ),
    "pop stats": (
        E("mqtool pop stats", "Per POP group and revive queue: popped, acked, in flight, overdue, revived."),
    ),
    "delay list": (
        E("mqtool delay list --due", "Delay-queue messages due now and not delivered yet."),
        E("mqtool delay list --timer", "The 5.x timer wheel's messages, each with its state."),
    ),
    "delay stats": (
        E("mqtool delay stats", "Backlog per delay level, how late the oldest due message is, stuck levels."),
    ),
    "delay replay": (
        E("mqtool delay replay", "What the broker's ScheduleMessageService would deliver now (a dry run)."),
        E(
            "mqtool delay replay --level 3 --execute",
            "Deliver level 3's due messages, with the broker stopped.",
        ),
    ),
    "txn list": (
        E("mqtool txn list", "Pending half messages: producer group, transaction id, age, checks."),
        E("mqtool txn list --state all", "Committed, rolled back and discarded ones too."),
    ),
    "txn commit": (
        E(
            "mqtool txn commit 2",
            "What committing half queue offset 2 writes (a dry run; --execute does it).",
        ),
    ),
    "txn rollback": (
        E("mqtool txn rollback 5 8", "What rolling back half queue offsets 5 and 8 writes (a dry run)."),
    ),
    "txn resolve": (
        E(
            "mqtool txn resolve --policy rollback --older-than 1h",
            "Roll back every pending half older than an hour (a dry run; --execute does it).",
        ),
    ),
    "verify": (
        E(
            "mqtool verify",
            "Check every record, ConsumeQueue, index file and the checkpoint (exit 1 on an error).",
        ),
        E(
            "mqtool verify --deep --show warning",
            "Also prove every key reachable through the index; hide infos.",
        ),
        E(
            "mqtool verify --startup",
            "Would a 5.3.3 / 4.9.8 broker started on the store now start, and what its recovery would do.",
        ),
    ),
    "retention": (
        E(
            "mqtool retention --disk-used 0.9",
            "What the clean services delete next on a disk 90% full, which groups lose unconsumed "
            "messages, and when the forced clean starts.",
        ),
        E(
            "mqtool -f json retention --runs 1 --now '2026-12-31 04:00'",
            "The clean run at 4 a.m. (deleteWhen's default hour) on that day alone, as JSON.",
        ),
    ),
    "bundle": (
        E(
            "mqtool bundle -o support.tar.gz",
            "Everything needed to look at the store (reports, inventory, configs with secrets removed, "
            "the last records without bodies) in one archive.",
        ),
    ),
    "export": (
        E("mqtool export --output out", "Every message's metadata to out/messages.parquet."),
        E(
            "mqtool export --output out-jsonl --format jsonl --topic TopicTest --bodies",
            "TopicTest's messages with their bodies, one JSON object a line.",
        ),
    ),
    "rebuild": (
        E(
            "mqtool rebuild",
            "Rebuild ConsumeQueues and index into a scratch directory and compare (a dry run).",
        ),
        E(
            "mqtool rebuild cq --execute",
            "Replace the ConsumeQueues with rebuilt ones, with the broker stopped.",
        ),
        E(
            "mqtool rebuild cq --prune-orphans",
            "Plan a rebuild without the queues of deleted topics (and queues past a topic's counts).",
        ),
        E(
            "mqtool rebuild compaction-cq --execute",
            "Rewrite compaction topics' CQ files that differ from what their compaction logs give.",
        ),
    ),
    "replicas diff": (
        E(
            "mqtool replicas diff /data/broker-a /data/broker-a-slave",
            "Where the two commitlogs part, who is ahead, what HA would do, config rows that differ.",
        ),
        E(
            "mqtool -f json replicas diff /data/broker-a /data/broker-a-slave",
            "The same as one JSON document (exit status 0: identical, 1: they differ).",
        ),
    ),
    "replicas salvage": (
        E(
            "mqtool replicas salvage --from /data/broker-a-slave --into /data/broker-a",
            "Plan: the messages only the slave holds, each to copy or skip (UNIQ_KEY already on the master).",
        ),
        E(
            "mqtool replicas salvage --from /data/broker-a-slave --into /data/broker-a --execute",
            "Append them to the master, with both brokers stopped; a second run copies nothing.",
        ),
    ),
    "sample create": (
        E("mqtool sample create demo-store --count 2000 --seed 7", "A realistic store to try mqtool on."),
    ),
    "audit": (
        E("mqtool audit --output audit-out", "Audit the store on Spark; tables, audit.json and report.html."),
        E(
            "mqtool audit /data/broker-a /data/broker-b --master 'local[4]' -f json",
            "Audit two stores in one run, as one JSON document.",
        ),
        E(
            "mqtool audit --replicas /data/broker-a,/data/broker-a-slave",
            "Audit a master and its slave, and compare them as `replicas diff` does (the Replicas table).",
        ),
    ),
}


def examples_text(examples: tuple[Example, ...], width: int = 78) -> str:
    """Examples as --help shows them: each command, then what it does, indented below it."""
    lines: list[str] = []
    for example in examples:
        lines.append(example.command)
        lines += textwrap.wrap(
            example.what, width - 4, initial_indent="    ", subsequent_indent="    ", break_on_hyphens=False
        )
    return "\n".join(lines)


def _epilog(examples: tuple[Example, ...]) -> str:
    # click rewraps an epilog's paragraphs except one that starts with \b
    return "Examples:\n\n\b\n" + examples_text(examples)


def group_examples(group: str) -> tuple[Example, ...]:
    """A command group's examples: the first of each of its commands."""
    return tuple(
        examples[0] for path, examples in EXAMPLES.items() if path.split(" ")[0] == group and " " in path
    )


def add_examples(app: typer.Typer) -> None:
    """Put each command's examples into its --help (as the epilog, before one the command has); the root
    and groups get theirs too."""
    from typer.main import get_command_name

    app.info.epilog = _epilog(EXAMPLES[""])
    for info in app.registered_commands:
        name = info.name or get_command_name(info.callback.__name__)
        own = f"\n\n{info.epilog}" if info.epilog else ""  # verify's and audit's exit statuses
        info.epilog = _epilog(EXAMPLES[name]) + own
    for group in app.registered_groups:
        group.epilog = _epilog(group_examples(group.name))
        for info in group.typer_instance.registered_commands:
            name = info.name or get_command_name(info.callback.__name__)
            info.epilog = _epilog(EXAMPLES[f"{group.name} {name}"])
