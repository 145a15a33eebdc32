/*
 * Placeholder: the broker's client to name servers and other brokers (the real one needs fastjson2 and the
 * auth module). EscapeBridge and HookUtils reach it only to escape to a remote broker; the pop-store broker
 * is a lone master, so the holder's getBrokerOuterAPI returns null and nothing here is called.
 */
package org.apache.rocketmq.broker.out;

import java.util.concurrent.CompletableFuture;
import org.apache.commons.lang3.tuple.Triple;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.remoting.exception.RemotingException;

public class BrokerOuterAPI {
    public SendResult sendMessageToSpecificBroker(String brokerAddr, String brokerName, MessageExt msg, String group,
        long timeoutMillis) throws RemotingException, MQBrokerException, InterruptedException {
        throw new UnsupportedOperationException("no remote broker in the oracle");
    }

    public CompletableFuture<SendResult> sendMessageToSpecificBrokerAsync(String brokerAddr, String brokerName,
        MessageExt msg, String group, long timeoutMillis) {
        throw new UnsupportedOperationException("no remote broker in the oracle");
    }

    public CompletableFuture<Triple<PullResult, String, Boolean>> pullMessageFromSpecificBrokerAsync(String brokerName,
        String brokerAddr, String consumerGroup, String topic, int queueId, long offset, int maxNums,
        long timeoutMillis) throws RemotingException, InterruptedException {
        throw new UnsupportedOperationException("no remote broker in the oracle");
    }
}
