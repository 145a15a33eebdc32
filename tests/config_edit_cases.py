"""The topic and group edits whose files tests/test_configedit.py compares with the real managers' (recorded
by tests/oracle/config_edit_cases.py into tests/data/config-edits/expect.json).

Each case runs its ops in order on a fresh copy of a golden store. An op is one mqtool plan function and its
keyword arguments; `oracle_op` turns it into the request the broker would get from mqadmin for the same edit
(every topic property given explicitly, so that mqtool's keep-the-current-value rule plays no part; a group's
body is its current entry, or a new one, with the options set and no attribute change).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Op:
    kind: str  # "topic-update", "topic-delete", "group-update", "group-delete"
    name: str
    args: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Case:
    name: str
    store: str
    ops: tuple[Op, ...]


def topic(name: str, rq: int, wq: int, perm: int = 6, order: bool | None = False, attrs=()) -> Op:
    args: dict[str, Any] = {"read_queues": rq, "write_queues": wq, "perm": perm, "attributes": list(attrs)}
    if order is not None:
        args["order"] = order
    return Op("topic-update", name, args)


CASES = (
    Case(
        "create-topic",
        "store-a",
        (topic("NewTopic", 4, 4, attrs=["+queue.type=SimpleCQ", "+message.type=NORMAL"]),),
    ),
    Case("create-batchcq-topic", "store-a", (topic("NewBatch", 2, 2, attrs=["+queue.type=BatchCQ"]),)),
    Case("create-five-topics", "store-a", tuple(topic(f"Topic{i}", i, i) for i in range(1, 6))),
    Case("update-perm-write-queues", "store-a", (topic("TopicTest", 4, 2, perm=4),)),
    Case("grow-queues", "store-a", (topic("TopicTest", 8, 8),)),
    Case(
        "attributes-add-change-delete",
        "store-a",
        (
            topic("OrderTopic", 2, 2, order=True, attrs=["+message.type=FIFO", "+reserve.time=3600"]),
            topic("OrderTopic", 2, 2, order=True, attrs=["-reserve.time", "+message.type=NORMAL"]),
        ),
    ),
    Case("delete-topic", "store-a", (Op("topic-delete", "TopicTest"),)),
    Case("delete-retry-topic", "store-a", (Op("topic-delete", "%RETRY%groupA"),)),
    Case(
        "create-group",
        "store-a",
        (
            Op(
                "group-update",
                "groupC",
                {"retry_max_times": 3, "retry_queue_nums": 2, "consume_enable": False},
            ),
        ),
    ),
    Case(
        "update-group",
        "store-a",
        (
            Op(
                "group-update",
                "groupA",
                {"which_broker_when_consume_slowly": 0, "consume_broadcast_enable": False},
            ),
        ),
    ),
    Case("delete-group-clean-offset", "store-a", (Op("group-delete", "groupB", {"clean_offset": True}),)),
    Case("delete-group", "store-a", (Op("group-delete", "groupA"),)),
    Case(
        "create-then-delete",
        "store-a",
        (
            topic("Temp", 1, 1),
            Op("group-update", "GID_TEMP", {"retry_max_times": 1}),
            Op("topic-delete", "Temp"),
            Op("group-delete", "GID_TEMP"),
        ),  # fmt: skip
    ),
    # topics with attributes the edit leaves (queue.type=BatchCQ): written in the broker's HashMap order
    Case("create-topic-batchcq-store", "store-batchcq", (topic("NewTopic", 2, 2),)),
    Case("delete-batchcq-topic", "store-batchcq", (Op("topic-delete", "BatchTopicA"),)),
    Case("delete-pop-topic", "store-pop", (Op("topic-delete", "PopTopicB"),)),
    Case("delete-pop-group", "store-pop", (Op("group-delete", "GID_REVIVE_V2", {"clean_offset": True}),)),
    Case("create-topic-49", "store-49a", (topic("NewTopic", 4, 4, order=None),)),
    Case(
        "create-five-topics-49", "store-49a", tuple(topic(f"Topic{i}", i, i, order=None) for i in range(1, 6))
    ),
    Case("update-perm-49", "store-49a", (topic("TopicTest", 4, 2, perm=4, order=None),)),
    Case("delete-topic-49", "store-49a", (Op("topic-delete", "OrderTopic"),)),
    Case("create-group-49", "store-49a", (Op("group-update", "groupC", {"retry_max_times": 5}),)),
    Case("update-group-49", "store-49a", (Op("group-update", "groupB", {"consume_enable": False}),)),
    Case(
        "delete-group-clean-offset-49", "store-49a", (Op("group-delete", "groupA", {"clean_offset": True}),)
    ),
)

# SubscriptionGroupConfig's JSON names of the plan's group options
GROUP_FIELDS = {
    "retry_max_times": "retryMaxTimes",
    "retry_queue_nums": "retryQueueNums",
    "consume_enable": "consumeEnable",
    "consume_broadcast_enable": "consumeBroadcastEnable",
    "which_broker_when_consume_slowly": "whichBrokerWhenConsumeSlowly",
}


def oracle_op(store_root: Path, op: Op) -> dict[str, Any]:
    """The request of `op` as the broker would get it (see the module docstring)."""
    if op.kind == "topic-update":
        a = op.args
        return {
            "op": "topic-update",
            "topic": op.name,
            "readQueueNums": a["read_queues"],
            "writeQueueNums": a["write_queues"],
            "perm": a["perm"],
            "order": bool(a.get("order")),
            "topicFilterType": "SINGLE_TAG",
            "topicSysFlag": 0,
            "attributes": ",".join(a["attributes"]) or None,
        }
    if op.kind == "topic-delete":
        return {"op": "topic-delete", "topic": op.name}
    if op.kind == "group-delete":
        return {"op": "group-delete", "group": op.name, "cleanOffset": bool(op.args.get("clean_offset"))}
    groups = json.loads((store_root / "config" / "subscriptionGroup.json").read_text())[
        "subscriptionGroupTable"
    ]
    body = dict(groups.get(op.name, {"groupName": op.name}))
    for key, value in op.args.items():
        body[GROUP_FIELDS[key]] = value
    if "attributes" in body:
        body["attributes"] = {}
    return {"op": "group-update", "body": json.dumps(body)}
