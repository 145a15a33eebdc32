/* Placeholder: the tiered store's metadata (reached only through TieredMessageStore). */
package org.apache.rocketmq.tieredstore.metadata;

import org.apache.rocketmq.tieredstore.metadata.entity.TopicMetadata;

public interface MetadataStore {
    TopicMetadata getTopic(String topic);

    TopicMetadata addTopic(String topic, long reserveTime);

    void updateTopic(TopicMetadata topicMetadata);
}
