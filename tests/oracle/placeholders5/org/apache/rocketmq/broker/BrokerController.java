/*
 * Stand-in for the broker object (the real one pulls in the whole broker: network, auth, proxy, metrics).
 * It holds the store's settings and the real managers and services a command wires into it, and answers
 * the getters those real classes call on the broker; it writes nothing itself.
 *   load:      ConsumerOffsetManager and MessageRequestModeManager (the three-argument constructor).
 *   pop-store: the POP processors, PopBufferMergeService, PopReviveService, the config managers, EscapeBridge
 *              and the broker's put hooks (HookUtils), wired by oracle.PopStore.
 *   dledger-store: the config managers, EscapeBridge, the put hooks, ScheduleMessageService (delay levels),
 *              TransactionalMessageServiceImpl and the NettyServerConfig its bridge reads, wired by
 *              oracle.DLedgerFixture.
 *   trace-store: the same services (oracle.TraceStore), and the processors it sends to (recall, end
 *              transaction).
 * A getter whose part was not wired returns null; getBrokerOuterAPI and getTopicRouteInfoManager always do
 * (a lone master never escapes to another broker).
 */
package org.apache.rocketmq.broker;

import java.net.InetSocketAddress;
import java.util.concurrent.ExecutorService;
import org.apache.rocketmq.broker.client.ConsumerManager;
import org.apache.rocketmq.broker.failover.EscapeBridge;
import org.apache.rocketmq.broker.filter.ConsumerFilterManager;
import org.apache.rocketmq.broker.offset.ConsumerOffsetManager;
import org.apache.rocketmq.broker.offset.ConsumerOrderInfoManager;
import org.apache.rocketmq.broker.out.BrokerOuterAPI;
import org.apache.rocketmq.broker.pop.PopConsumerService;
import org.apache.rocketmq.broker.processor.AckMessageProcessor;
import org.apache.rocketmq.broker.processor.ChangeInvisibleTimeProcessor;
import org.apache.rocketmq.broker.processor.NotificationProcessor;
import org.apache.rocketmq.broker.processor.PopInflightMessageCounter;
import org.apache.rocketmq.broker.processor.PopMessageProcessor;
import org.apache.rocketmq.broker.subscription.SubscriptionGroupManager;
import org.apache.rocketmq.broker.topic.TopicConfigManager;
import org.apache.rocketmq.broker.topic.TopicRouteInfoManager;
import org.apache.rocketmq.broker.transaction.TransactionalMessageService;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.BrokerIdentity;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.remoting.netty.NettyServerConfig;
import org.apache.rocketmq.remoting.protocol.DataVersion;
import org.apache.rocketmq.store.MessageStore;
import org.apache.rocketmq.store.config.MessageStoreConfig;
import org.apache.rocketmq.store.stats.BrokerStatsManager;
import org.apache.rocketmq.store.timer.TimerMessageStore;

public class BrokerController {
    private final BrokerConfig brokerConfig;
    private final MessageStoreConfig messageStoreConfig;
    private MessageStore messageStore;
    public InetSocketAddress storeHost;
    public BrokerStatsManager brokerStatsManager;
    public TopicConfigManager topicConfigManager;
    public SubscriptionGroupManager subscriptionGroupManager;
    public ConsumerOffsetManager consumerOffsetManager;
    public ConsumerManager consumerManager;
    public ConsumerFilterManager consumerFilterManager;
    public ConsumerOrderInfoManager consumerOrderInfoManager;
    public PopInflightMessageCounter popInflightMessageCounter;
    public PopMessageProcessor popMessageProcessor;
    public AckMessageProcessor ackMessageProcessor;
    public ChangeInvisibleTimeProcessor changeInvisibleTimeProcessor;
    public NotificationProcessor notificationProcessor;
    public EscapeBridge escapeBridge;
    public ExecutorService pullMessageExecutor;
    public long shouldStartTime;
    public org.apache.rocketmq.broker.schedule.ScheduleMessageService scheduleMessageService;
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

    /** As the real one: this broker when it is the master, else null. */
    public BrokerController peekMasterBroker() {
        return brokerConfig.getBrokerId() == MixAll.MASTER_ID ? this : null;
    }

    /** As the real one: the local store for this broker's name, else null (remote). */
    public MessageStore getMessageStoreByBrokerName(String brokerName) {
        return brokerConfig.getBrokerName().equals(brokerName) ? messageStore : null;
    }

    public BrokerIdentity getBrokerIdentity() {
        return new BrokerIdentity(brokerConfig.getBrokerClusterName(), brokerConfig.getBrokerName(),
            brokerConfig.getBrokerId(), brokerConfig.isInBrokerContainer());
    }

    public TimerMessageStore getTimerMessageStore() {
        return messageStore == null ? null : messageStore.getTimerMessageStore();
    }

    /** Null unless wired (dledger-store): HookUtils reaches it only for a delay-level message. */
    public org.apache.rocketmq.broker.schedule.ScheduleMessageService getScheduleMessageService() {
        return scheduleMessageService;
    }

    public TransactionalMessageService getTransactionalMessageService() {
        return transactionalMessageService;
    }

    public NettyServerConfig getNettyServerConfig() {
        return nettyServerConfig;
    }

    /** The transaction check-back (a producer's channel, the broker-to-client call): never run here (throws). */
    public org.apache.rocketmq.broker.client.ProducerManager getProducerManager() {
        throw new UnsupportedOperationException("no transaction check-back in the oracle");
    }

    public org.apache.rocketmq.broker.client.net.Broker2Client getBroker2Client() {
        throw new UnsupportedOperationException("no transaction check-back in the oracle");
    }

    public org.apache.rocketmq.remoting.RemotingServer getRemotingServer() {
        throw new UnsupportedOperationException("no broker remoting server in the oracle");
    }

    /** As the real one for a lone broker group: its own id (only the slave-acting-master check reads it). */
    public long getMinBrokerIdInGroup() {
        return brokerConfig.getBrokerId();
    }

    public BrokerOuterAPI getBrokerOuterAPI() {
        return null;
    }

    public TopicRouteInfoManager getTopicRouteInfoManager() {
        return null;
    }

    /** Registration with the name servers: a no-op (no name server; TopicConfigManager calls it on new topics). */
    public synchronized void registerSingleTopicAll(TopicConfig topicConfig) {
    }

    /** As registerSingleTopicAll: a no-op. */
    public synchronized void registerIncrementBrokerData(TopicConfig topicConfig, DataVersion dataVersion) {
    }

    /** As the real one (5.3.3 BrokerController.java:1650-1652): brokerIP1 and the listen port. */
    public String getBrokerAddr() {
        return brokerConfig.getBrokerIP1() + ":" + nettyServerConfig.getListenPort();
    }

    public InetSocketAddress getStoreHost() {
        return storeHost;
    }

    public BrokerStatsManager getBrokerStatsManager() {
        return brokerStatsManager;
    }

    public TopicConfigManager getTopicConfigManager() {
        return topicConfigManager;
    }

    public SubscriptionGroupManager getSubscriptionGroupManager() {
        return subscriptionGroupManager;
    }

    public ConsumerOffsetManager getConsumerOffsetManager() {
        return consumerOffsetManager;
    }

    public ConsumerManager getConsumerManager() {
        if (consumerManager == null) {
            throw new UnsupportedOperationException("no consumers in the oracle");
        }
        return consumerManager;
    }

    public ConsumerFilterManager getConsumerFilterManager() {
        return consumerFilterManager;
    }

    public ConsumerOrderInfoManager getConsumerOrderInfoManager() {
        return consumerOrderInfoManager;
    }

    public PopInflightMessageCounter getPopInflightMessageCounter() {
        return popInflightMessageCounter;
    }

    public PopMessageProcessor getPopMessageProcessor() {
        return popMessageProcessor;
    }

    public AckMessageProcessor getAckMessageProcessor() {
        return ackMessageProcessor;
    }

    public ChangeInvisibleTimeProcessor getChangeInvisibleTimeProcessor() {
        return changeInvisibleTimeProcessor;
    }

    public NotificationProcessor getNotificationProcessor() {
        return notificationProcessor;
    }

    public PopConsumerService getPopConsumerService() {
        return null;  // popConsumerKVServiceEnable is false: the file-based POP path runs
    }

    public EscapeBridge getEscapeBridge() {
        return escapeBridge;
    }

    public ExecutorService getPullMessageExecutor() {
        return pullMessageExecutor;
    }

    public long getShouldStartTime() {
        return shouldStartTime;
    }
}
