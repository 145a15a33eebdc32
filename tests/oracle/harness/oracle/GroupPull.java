/*
 * `group-pull STORE GROUP [TOPIC...]` on 5.3.3: what a push consumer of GROUP receives from a store (mqtool
 * wrote), on a temporary copy. The store is opened as `load` opens it (the real DefaultMessageStore, its
 * recovery) and started as a broker starts it before serving pulls; the group's committed offsets are the real ConsumerOffsetManager's (config/consumerOffset.json).
 * For %RETRY%GROUP and each TOPIC, every queue is pulled from the committed offset (none: 0 for the retry topic,
 * RebalancePushImpl.computePullFromWhere's answer for a retry queue; the max offset for another topic,
 * CONSUME_FROM_LAST_OFFSET) to the end with the real DefaultMessageStore.getMessage (what the broker's pull
 * processor reads), each message decoded by the real MessageDecoder.decode(readBody, decompressBody, isClient)
 * as PullAPIWrapper.processPullResult does, then given the topic the listener sees by the real
 * DefaultMQPushConsumerImpl.resetRetryAndNamespace. Prints one JSON object: `loaded`, `committed`
 * {"TOPIC/QUEUE_ID": offset}, `pulled` [{queueTopic, queueId, queueOffset, commitLogOffset, topic, msgId,
 * offsetMsgId, uniqKey, originMessageId, retryTopic, reconsumeTimes, keys, tags, bodyCRC}].
 */
package oracle;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.rocketmq.broker.BrokerController;
import org.apache.rocketmq.broker.offset.ConsumerOffsetManager;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.impl.consumer.DefaultMQPushConsumerImpl;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.UtilAll;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.store.GetMessageResult;
import org.apache.rocketmq.store.GetMessageStatus;

public final class GroupPull {
    private GroupPull() {
    }

    public static int run(String storeArg, String[] extra) throws Exception {
        String group = extra[0];
        List<String> topics = new ArrayList<>();
        topics.add(MixAll.getRetryTopic(group));
        for (int i = 1; i < extra.length; i++) {
            topics.add(extra[i]);
        }
        return Judge.onCopy(storeArg, (root, shown) -> pull(root, shown, group, topics));
    }

    static Map<String, Object> pull(String root, String shown, String group, List<String> topics) throws Exception {
        Geometry g = Geometry.of(root, new String[0]);
        g.timer = false;  // nothing is started: the timer store plays no part in a pull
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("store", shown);
        out.put("group", group);
        Stores s = Stores.open(root, g, new ConcurrentHashMap<String, TopicConfig>());
        out.put("loaded", s.loaded);
        if (!s.loaded) {
            out.put("clean", false);
            return out;
        }
        s.start();  // the broker serves pulls once started (getMessage answers null while the store is shut down)
        s.waitDispatched();
        BrokerController broker = new BrokerController(new BrokerConfig(), s.config, s.store);
        ConsumerOffsetManager offsets = new ConsumerOffsetManager(broker);
        out.put("offsetsLoaded", offsets.load());
        DefaultMQPushConsumerImpl consumer = new DefaultMQPushConsumerImpl(new DefaultMQPushConsumer(group), null);
        Map<String, Object> committed = new TreeMap<>();
        Map<String, Object> ends = new TreeMap<>();  // the status that ended each queue's pulls
        List<Map<String, Object>> pulled = new ArrayList<>();
        for (String topic : topics) {
            Map<Integer, ?> queues = s.store.getConsumeQueueTable().get(topic);
            if (queues == null) {
                continue;
            }
            for (int queueId : new TreeMap<>(queues).keySet()) {
                long offset = offsets.queryOffset(group, topic, queueId);
                committed.put(topic + "/" + queueId, offset);
                if (offset < 0) {
                    offset = topic.startsWith(MixAll.RETRY_GROUP_TOPIC_PREFIX) ? 0 : s.store.getMaxOffsetInQueue(topic, queueId);
                }
                while (true) {
                    GetMessageResult r = s.store.getMessage(group, topic, queueId, offset, 32, null);
                    if (r == null || r.getStatus() != GetMessageStatus.FOUND || r.getMessageBufferList().isEmpty()) {
                        ends.put(topic + "/" + queueId, r == null ? "null" : r.getStatus().name());
                        if (r != null) {
                            r.release();
                        }
                        break;
                    }
                    List<MessageExt> msgs = new ArrayList<>();
                    for (ByteBuffer buf : r.getMessageBufferList()) {
                        byte[] bytes = new byte[buf.remaining()];
                        buf.get(bytes);
                        msgs.add(MessageDecoder.decode(ByteBuffer.wrap(bytes), true, true, true));
                    }
                    long next = r.getNextBeginOffset();
                    r.release();
                    List<String> queueTopics = new ArrayList<>();
                    for (MessageExt m : msgs) {
                        queueTopics.add(m.getTopic());
                    }
                    consumer.resetRetryAndNamespace(msgs, group);
                    for (int i = 0; i < msgs.size(); i++) {
                        MessageExt m = msgs.get(i);
                        Map<String, Object> e = new LinkedHashMap<>();
                        e.put("queueTopic", queueTopics.get(i));
                        e.put("queueId", m.getQueueId());
                        e.put("queueOffset", m.getQueueOffset());
                        e.put("commitLogOffset", m.getCommitLogOffset());
                        e.put("topic", m.getTopic());
                        e.put("msgId", m.getMsgId());
                        e.put("offsetMsgId", ((org.apache.rocketmq.common.message.MessageClientExt) m).getOffsetMsgId());
                        e.put("uniqKey", m.getProperty(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX));
                        e.put("originMessageId", m.getProperty(MessageConst.PROPERTY_ORIGIN_MESSAGE_ID));
                        e.put("retryTopic", m.getProperty(MessageConst.PROPERTY_RETRY_TOPIC));
                        e.put("reconsumeTimes", m.getReconsumeTimes());
                        e.put("keys", m.getKeys());
                        e.put("tags", m.getTags());
                        e.put("bodyCRC", UtilAll.crc32(m.getBody()));
                        pulled.add(e);
                    }
                    if (next <= offset) {
                        break;
                    }
                    offset = next;
                }
            }
        }
        out.put("committed", committed);
        out.put("ends", ends);
        out.put("pulled", pulled);
        out.put("clean", s.loaded);
        s.shutdown();
        return out;
    }
}
