/* Placeholder: route lookups for escaping to a remote broker; the pop-store broker is a lone master. */
package org.apache.rocketmq.broker.topic;

import org.apache.rocketmq.client.impl.producer.TopicPublishInfo;

public class TopicRouteInfoManager {
    public void updateTopicRouteInfoFromNameServer(String topic, boolean isNeedUpdatePublishInfo,
        boolean isNeedUpdateSubscribeInfo) {
        throw new UnsupportedOperationException("no name server in the oracle");
    }

    public TopicPublishInfo tryToFindTopicPublishInfo(String topic) {
        throw new UnsupportedOperationException("no name server in the oracle");
    }

    public String findBrokerAddressInPublish(String brokerName) {
        throw new UnsupportedOperationException("no name server in the oracle");
    }

    public String findBrokerAddressInSubscribe(String brokerName, long brokerId, boolean onlyThisBroker) {
        throw new UnsupportedOperationException("no name server in the oracle");
    }

    public void shutdown() {
    }
}
