/*
 * Harness class in the send processors' package: the real AbstractSendMessageProcessor.consumerSendMsgBack
 * (protected) of 5.3.3, reached through a subclass that adds nothing else. `sendBack` hands it the
 * CONSUMER_SEND_MSG_BACK request a push consumer's MQClientAPIImpl.consumerSendMessageBack builds
 * (ConsumerSendMsgBackRequestHeader: the pulled message's commitlog offset, group, delay level, origin msgId
 * and topic, the consumer's maxReconsumeTimes) and returns the broker's response.
 */
package org.apache.rocketmq.broker.processor;

import io.netty.channel.ChannelHandlerContext;
import org.apache.rocketmq.broker.BrokerController;
import org.apache.rocketmq.common.MQVersion;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.remoting.protocol.RequestCode;
import org.apache.rocketmq.remoting.protocol.header.ConsumerSendMsgBackRequestHeader;

public final class SendBackProbe extends AbstractSendMessageProcessor {
    public SendBackProbe(BrokerController brokerController) {
        super(brokerController);
    }

    public RemotingCommand sendBack(long commitLogOffset, String group, int delayLevel, String originMsgId,
        String originTopic, int maxReconsumeTimes) throws Exception {
        ConsumerSendMsgBackRequestHeader header = new ConsumerSendMsgBackRequestHeader();
        header.setOffset(commitLogOffset);
        header.setGroup(group);
        header.setDelayLevel(delayLevel);
        header.setOriginMsgId(originMsgId);
        header.setOriginTopic(originTopic);
        header.setUnitMode(false);
        header.setMaxReconsumeTimes(maxReconsumeTimes);
        RemotingCommand request = RemotingCommand.createRequestCommand(RequestCode.CONSUMER_SEND_MSG_BACK, header);
        request.setVersion(MQVersion.CURRENT_VERSION);  // the client's (MQClientAPIImpl sets rocketmq.remoting.version)
        request.makeCustomHeaderToNet();
        return consumerSendMsgBack(null, request);
    }

    @Override
    public RemotingCommand processRequest(ChannelHandlerContext ctx, RemotingCommand request) {
        throw new UnsupportedOperationException("only sendBack");
    }

    @Override
    public boolean rejectRequest() {
        return false;
    }
}
