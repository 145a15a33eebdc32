"""The broker's reserved topic names, prefixes and built-in consumer groups (MixAll, TopicValidator).

Checked against rocketmq-all-5.3.3 `common/.../MixAll.java`, `common/.../topic/TopicValidator.java` and
`broker/.../subscription/SubscriptionGroupManager.java`.
"""

from __future__ import annotations

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


def pull_retry_topic(group: str) -> str:
    """`MixAll.getRetryTopic`: the retry topic of push/pull consumption."""
    return RETRY_PREFIX + group


def pop_retry_topic(topic: str, group: str, v2: bool = False) -> str:
    """`KeyBuilder.buildPopRetryTopic`: `%RETRY%<group>_<topic>` (V1) or `%RETRY%<group>+<topic>` (V2)."""
    return f"{RETRY_PREFIX}{group}{'+' if v2 else '_'}{topic}"


__all__ = [
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
