/* Placeholder for RocketMQ's native RocksDB compaction filter (absent from stock rocksdbjni); runs only when
 * RocksDB compacts a RocksDB consume queue, which the oracle's file stores never have. */
package org.rocksdb;

public class RemoveConsumeQueueCompactionFilter extends AbstractCompactionFilter<Slice> {
    public RemoveConsumeQueueCompactionFilter(long minPhyOffset) {
        super(0);
        throw new UnsupportedOperationException("RocketMQ's native compaction filter is not available");
    }
}
