/* Placeholder: the tiered store plugin. EscapeBridge and TopicConfigManager test `instanceof` it; never true here. */
package org.apache.rocketmq.tieredstore;

import org.apache.rocketmq.tieredstore.metadata.MetadataStore;

public class TieredMessageStore {
    public MetadataStore getMetadataStore() {
        throw new UnsupportedOperationException("no tiered store in the oracle");
    }
}
