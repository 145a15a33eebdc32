"""Dead-letter queues (`mqtool dlq`): the messages of `%DLQ%<group>` topics and where they came from.

* `listing` — `list_dlq`: every message of the DLQ topics with the origin properties the broker's send-back
  copied onto it, `dlq_stats`: counts per group and original topic, by age.
"""
