"""The broker's `org.apache.rocketmq.store.kv`: compaction topics' logs and queues (`compaction`)."""
