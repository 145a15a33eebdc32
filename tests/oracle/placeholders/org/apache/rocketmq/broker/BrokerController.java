/*
 * Stand-in for the broker object (the real one pulls in the whole broker: network, auth, proxy, metrics).
 * ConsumerOffsetManager and MessageRequestModeManager only call these getters on it; it holds the
 * store's settings and nothing else. It writes nothing.
 */
package org.apache.rocketmq.broker;

import org.apache.rocketmq.broker.client.ConsumerManager;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.store.MessageStore;
import org.apache.rocketmq.store.config.MessageStoreConfig;

public class BrokerController {
    private final BrokerConfig brokerConfig;
    private final MessageStoreConfig messageStoreConfig;
    private final MessageStore messageStore;

    public BrokerController(BrokerConfig brokerConfig, MessageStoreConfig messageStoreConfig, MessageStore store) {
        this.brokerConfig = brokerConfig;
        this.messageStoreConfig = messageStoreConfig;
        this.messageStore = store;
    }

    public BrokerConfig getBrokerConfig() {
        return brokerConfig;
    }

    public MessageStoreConfig getMessageStoreConfig() {
        return messageStoreConfig;
    }

    public MessageStore getMessageStore() {
        return messageStore;
    }

    public ConsumerManager getConsumerManager() {
        throw new UnsupportedOperationException("no consumers in the oracle");
    }
}
