/*
 * Stand-in for the broker object (the real one pulls in the whole broker: network, auth, proxy, metrics).
 * The 4.9.8 build's holder (placeholders5/ shadows it in the 5.3.3 build). It holds the store's settings and
 * the real parts a command wires into it, and answers the getters those classes call; it writes nothing.
 *   load:          ConsumerOffsetManager and MessageRequestModeManager (the three-argument constructor).
 *   dledger-store: TopicConfigManager, ConsumerOffsetManager, TransactionalMessageServiceImpl and the
 *                  NettyServerConfig its bridge reads, EndTransactionProcessor (wired by oracle.DLedgerFixture49).
 * A getter whose part was not wired returns null; the transaction check-back's getters throw (never called).
 */
package org.apache.rocketmq.broker;

import org.apache.rocketmq.broker.client.ConsumerManager;
import org.apache.rocketmq.broker.offset.ConsumerOffsetManager;
import org.apache.rocketmq.broker.topic.TopicConfigManager;
import org.apache.rocketmq.broker.transaction.TransactionalMessageService;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.remoting.netty.NettyServerConfig;
import org.apache.rocketmq.store.MessageStore;
import org.apache.rocketmq.store.config.MessageStoreConfig;
import org.apache.rocketmq.store.stats.BrokerStatsManager;

public class BrokerController {
    private final BrokerConfig brokerConfig;
    private final MessageStoreConfig messageStoreConfig;
    private MessageStore messageStore;
    public BrokerStatsManager brokerStatsManager;
    public TopicConfigManager topicConfigManager;
    public ConsumerOffsetManager consumerOffsetManager;
    public TransactionalMessageService transactionalMessageService;
    public NettyServerConfig nettyServerConfig = new NettyServerConfig();

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

    public void setMessageStore(MessageStore messageStore) {
        this.messageStore = messageStore;
    }

    public ConsumerManager getConsumerManager() {
        throw new UnsupportedOperationException("no consumers in the oracle");
    }

    public BrokerStatsManager getBrokerStatsManager() {
        return brokerStatsManager;
    }

    public TopicConfigManager getTopicConfigManager() {
        return topicConfigManager;
    }

    public ConsumerOffsetManager getConsumerOffsetManager() {
        return consumerOffsetManager;
    }

    public TransactionalMessageService getTransactionalMessageService() {
        return transactionalMessageService;
    }

    public NettyServerConfig getNettyServerConfig() {
        return nettyServerConfig;
    }

    /** Registration with the name servers (TopicConfigManager calls it on new topics): a no-op. */
    public synchronized void registerBrokerAll(final boolean checkOrderConfig, boolean oneway, boolean forceRegister) {
    }

    /** The transaction check-back (a producer's channel, the broker-to-client call): never run here (throws). */
    public org.apache.rocketmq.broker.client.ProducerManager getProducerManager() {
        throw new UnsupportedOperationException("no transaction check-back in the oracle");
    }

    public org.apache.rocketmq.broker.client.net.Broker2Client getBroker2Client() {
        throw new UnsupportedOperationException("no transaction check-back in the oracle");
    }

    public org.apache.rocketmq.broker.transaction.AbstractTransactionalMessageCheckListener getTransactionalMessageCheckListener() {
        throw new UnsupportedOperationException("no transaction check-back in the oracle");
    }

    public org.apache.rocketmq.remoting.RemotingServer getRemotingServer() {
        throw new UnsupportedOperationException("no broker remoting server in the oracle");
    }
}
