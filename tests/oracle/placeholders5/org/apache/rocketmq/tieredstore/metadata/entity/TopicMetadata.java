/* Placeholder: the tiered store's topic metadata (reached only through TieredMessageStore). */
package org.apache.rocketmq.tieredstore.metadata.entity;

public class TopicMetadata {
    public long getReserveTime() {
        throw new UnsupportedOperationException("no tiered store in the oracle");
    }

    public void setReserveTime(long reserveTime) {
        throw new UnsupportedOperationException("no tiered store in the oracle");
    }
}
