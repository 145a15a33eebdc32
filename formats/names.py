"""The broker's reserved topic names, prefixes and built-in consumer groups (MixAll, TopicValidator), and
its rule for the names a store may hold.

Checked against rocketmq-all-5.3.3 `common/.../MixAll.java`, `common/.../topic/TopicValidator.java`,
`common/.../KeyBuilder.java`, `client/.../Validators.java` and
`broker/.../subscription/SubscriptionGroupManager.java` (4.9.8's TopicValidator has the same characters
and the same 127).
"""

from __future__ import annotations

import string

RETRY_PREFIX = "%RETRY%"  # MixAll.RETRY_GROUP_TOPIC_PREFIX
DLQ_PREFIX = "%DLQ%"  # MixAll.DLQ_GROUP_TOPIC_PREFIX
LMQ_PREFIX = "%LMQ%"  # MixAll.LMQ_PREFIX (light message queues, multi-dispatched)
LMQ_QUEUE_ID = 0  # MixAll.LMQ_QUEUE_ID: an LMQ has one queue
SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"  # TopicValidator.RMQ_SYS_SCHEDULE_TOPIC
SYSTEM_GROUP_PREFIX = "CID_RMQ_SYS_"  # MixAll.CID_RMQ_SYS_PREFIX (isSysConsumerGroup)
TRANS_HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"  # TopicValidator.RMQ_SYS_TRANS_HALF_TOPIC
TRANS_OP_HALF_TOPIC = "RMQ_SYS_TRANS_OP_HALF_TOPIC"  # TopicValidator.RMQ_SYS_TRANS_OP_HALF_TOPIC
TRANS_GROUP = "CID_RMQ_SYS_TRANS"  # MixAll.CID_SYS_RMQ_TRANS (the transaction check's group)
TIMER_TOPIC = "rmq_sys_wheel_timer"  # TimerMessageStore.TIMER_TOPIC (the 5.x timer wheel's topic)

# The groups the SubscriptionGroupManager constructor puts into subscriptionGroup.json (as the sample
# store writes them).
INIT_SUBSCRIPTION_GROUPS = (
    "SELF_TEST_C_GROUP",
    "CID_ONSAPI_OWNER",
    "CID_ONSAPI_PERMISSION",
    "CID_RMQ_SYS_TRANS",
    "TOOLS_CONSUMER",
    "CID_ONS-HTTP-PROXY",
    "FILTERSRV_CONSUMER",
    "CID_ONSAPI_PULL",
)

# Built-in groups the consumer-progress rows leave out unless asked for by name: MixAll.PREDEFINE_GROUP_SET
# without DEFAULT_CONSUMER, DEFAULT_PRODUCER, SCHEDULE_CONSUMER and SELF_TEST_P_GROUP (CID_RMQ_SYS_TRANS
# is covered by SYSTEM_GROUP_PREFIX). Kept as mqtool has always filtered.
BUILTIN_GROUPS = frozenset(
    {
        "TOOLS_CONSUMER",
        "FILTERSRV_CONSUMER",
        "__MONITOR_CONSUMER",
        "CLIENT_INNER_PRODUCER",
        "SELF_TEST_C_GROUP",
        "CID_ONS-HTTP-PROXY",
        "CID_ONSAPI_PERMISSION",
        "CID_ONSAPI_OWNER",
        "CID_ONSAPI_PULL",
    }
)


# TopicValidator.SYSTEM_TOPIC_SET as its static block fills it, and SYSTEM_TOPIC_PREFIX (5.3.3
# TopicValidator.java:25-37, 49-60). TopicConfigManager's constructor adds the topics it creates at start
# (the cluster's and the broker's own names, `<cluster>_REPLY_TOPIC`, the trace topic, ...: 5.3.3
# TopicConfigManager.java:86-192); those are in topics.json on any store the broker started on.
SYSTEM_TOPICS = frozenset(
    {
        "TBW102",
        SCHEDULE_TOPIC,
        "BenchmarkTest",
        TRANS_HALF_TOPIC,
        "RMQ_SYS_TRACE_TOPIC",
        TRANS_OP_HALF_TOPIC,
        "TRANS_CHECK_MAX_TIME_TOPIC",
        "SELF_TEST_TOPIC",
        "OFFSET_MOVED_EVENT",
        "CHECKPOINT_TOPIC",
    }
)
SYSTEM_TOPIC_PREFIX = "rmq_sys_"


def is_system_topic(topic: str) -> bool:
    """`TopicValidator.isSystemTopic` over the static set: a topic the broker itself owns."""
    return topic in SYSTEM_TOPICS or topic.startswith(SYSTEM_TOPIC_PREFIX)


TOPIC_MAX_LENGTH = 127  # TopicValidator.TOPIC_MAX_LENGTH (the send path; retry and DLQ topics are longer)
GROUP_MAX_LENGTH = 255  # Validators.CHARACTER_MAX_LENGTH
NAME_MAX_BYTES = 255  # the longest file name (Linux NAME_MAX): a queue directory is named by its topic
# TopicValidator.VALID_CHAR_BIT_MAP: ^[%|a-zA-Z0-9_-]+$
VALID_NAME_CHARS = frozenset("%|-_" + string.ascii_letters + string.digits)
POP_RETRY_SEPARATOR_V2 = "+"  # KeyBuilder.POP_RETRY_SEPARATOR_V2: in %RETRY%<group>+<topic> only


def is_topic_or_group_illegal(name: str) -> bool:
    """`TopicValidator.isTopicOrGroupIllegal`: a character outside ^[%|a-zA-Z0-9_-]+$."""
    return any(ch not in VALID_NAME_CHARS for ch in name)


def validate_topic(topic: str) -> str | None:
    """`TopicValidator.validateTopic` (the send path): its remark when it refuses `topic`, else None."""
    if not topic.strip():
        return "The specified topic is blank."
    if is_topic_or_group_illegal(topic):
        return "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
    if len(topic) > TOPIC_MAX_LENGTH:
        return "The specified topic is longer than topic max length."
    return None


def escaped_name(name: str, limit: int = 80) -> str:
    """A name quoted for a one-line message: control characters, NUL, lone surrogates and anything not
    printable ASCII escaped; cut to `limit` characters with its length said."""
    shown = name if len(name) <= limit else name[:limit]
    text = shown.encode("unicode_escape", "backslashreplace").decode("ascii").replace("'", "\\'")
    more = f"... ({len(name)} characters)" if len(name) > limit else ""
    return f"'{text}'{more}"


def topic_name_problem(name: str) -> str | None:
    """Why `name` (a record's topic, a queue's, an LMQ queue's) is not a name the broker's own code
    gives a queue, or None.

    The characters are TopicValidator's (^[%|a-zA-Z0-9_-]+$), plus the `+` of a POP retry topic V2
    (`%RETRY%<group>+<topic>`, KeyBuilder); every name the broker itself builds (retry, DLQ, POP retry,
    schedule, system topics) is made of them. The length is not the send path's 127: a retry or DLQ topic
    carries a group of up to 255 characters. What bounds it is the file system: the broker's dispatch
    names the queue's directory `consumequeue/<topic>/<queueId>` after the topic, and no file name is
    longer than 255 bytes.
    """
    if not name.strip():
        return "is blank"
    allowed_plus = name.startswith(RETRY_PREFIX)
    for i, ch in enumerate(name):
        if ch not in VALID_NAME_CHARS and not (ch == POP_RETRY_SEPARATOR_V2 and allowed_plus):
            return (
                f"holds {escaped_name(ch)} at character {i}, outside the broker's topic characters "
                "^[%|a-zA-Z0-9_-]+$ (TopicValidator)"
            )
    size = len(name.encode("utf-8"))
    if size > NAME_MAX_BYTES:
        return f"is {size} bytes long: no file system names a queue directory so (at most {NAME_MAX_BYTES})"
    return None


def pull_retry_topic(group: str) -> str:
    """`MixAll.getRetryTopic`: the retry topic of push/pull consumption."""
    return RETRY_PREFIX + group


def pop_retry_topic(topic: str, group: str, v2: bool = False) -> str:
    """`KeyBuilder.buildPopRetryTopic`: `%RETRY%<group>_<topic>` (V1) or `%RETRY%<group>+<topic>` (V2)."""
    return f"{RETRY_PREFIX}{group}{'+' if v2 else '_'}{topic}"


__all__ = [
    "escaped_name",
    "is_topic_or_group_illegal",
    "topic_name_problem",
    "validate_topic",
    "GROUP_MAX_LENGTH",
    "NAME_MAX_BYTES",
    "POP_RETRY_SEPARATOR_V2",
    "TOPIC_MAX_LENGTH",
    "VALID_NAME_CHARS",
    "pop_retry_topic",
    "pull_retry_topic",
    "BUILTIN_GROUPS",
    "DLQ_PREFIX",
    "INIT_SUBSCRIPTION_GROUPS",
    "RETRY_PREFIX",
    "LMQ_PREFIX",
    "LMQ_QUEUE_ID",
    "SCHEDULE_TOPIC",
    "SYSTEM_GROUP_PREFIX",
]
