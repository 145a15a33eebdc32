"""A RocksDB-mode broker (org.apache.rocketmq.store.rocksdb): the database opened read-only, consume queues
and config kept in RocksDB."""
