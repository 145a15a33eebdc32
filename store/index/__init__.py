"""The IndexService (org.apache.rocketmq.store.index): key queries over index files, and the writer that adds
entries as the broker does."""
