"""POP consumption state (PopReviveService, ConsumerOrderInfoManager, the RocksDB kvStore): what POP consumers
hold."""
