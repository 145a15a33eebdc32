/*
 * `dlq-store DIR [SEED]`: a 5.3.3 broker store whose consumers sent messages to their dead-letter queues through
 * the real retry path, with a deleted group and a deleted topic left behind. Real: DefaultMessageStore, the put
 * hooks (HookUtils: a send-back's delay level into SCHEDULE_TOPIC_XXXX), ScheduleMessageService (delivers each
 * retry copy into %RETRY%<group>), AbstractSendMessageProcessor.consumerSendMsgBack (through SendBackProbe: the
 * copy into %RETRY%<group>, or past the consumer's maxReconsumeTimes into %DLQ%<group>), TopicConfigManager
 * (createTopicInSendMessageBackMethod; deleteTopicConfig), SubscriptionGroupManager (deleteSubscriptionGroupConfig),
 * DefaultMessageStore.deleteTopics (what AdminBrokerProcessor.deleteTopic runs), ConsumerOffsetManager (the
 * commits), MessageDecoder and the client's DefaultMQPushConsumerImpl.resetRetryAndNamespace (what the listener
 * sees). Imitated: the producer's send and SendMessageProcessor's request side (TraceStore.send's message,
 * without trace hooks), the consumers' pulls (the real getMessage of one message at a time) and their choice
 * to fail (a listener returning RECONSUME_LATER with delayLevelWhenNextConsume 1, so each retry waits 1 s).
 *
 * The broker runs without the timer store (timerWheelEnable false: delay levels need only ScheduleMessageService).
 * Scenario (broker-a, 192.168.0.10:10911): OrderEvents (2 queues) and LegacyTopic (1 queue); GID_dlq fails
 * order-1, order-2 and legacy-1, GID_gone fails order-2; order-ok is consumed by both. Each consumer's
 * maxReconsumeTimes is 2 (sent in the send-back header, which overrides the group's retryMaxTimes): the third
 * failure sends the message to the DLQ. Then GID_gone is deleted (subscriptionGroup.json) and LegacyTopic is
 * deleted (topics.json and its consume queues; its record stays in the commitlog). expect.json: each message's
 * history (sent, every send-back with the broker's response, delivered retry copies, the dead letter), the
 * consumer offsets, and what the real classes read back from the store (ReadBack).
 */
package oracle;

import java.io.File;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import org.apache.rocketmq.broker.processor.SendBackProbe;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.impl.consumer.DefaultMQPushConsumerImpl;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.message.MessageAccessor;
import org.apache.rocketmq.common.message.MessageClientIDSetter;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageExtBrokerInner;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.remoting.protocol.subscription.SubscriptionGroupConfig;
import org.apache.rocketmq.store.GetMessageResult;
import org.apache.rocketmq.store.PutMessageResult;

public final class DlqStore {
    static final String TOPIC = "OrderEvents";
    static final String GONE_TOPIC = "LegacyTopic";
    static final String GROUP = "GID_dlq";
    static final String GONE_GROUP = "GID_gone";
    static final int MAX_RECONSUME = 2;  // the consumers' maxReconsumeTimes, sent in the send-back header
    static final InetSocketAddress PRODUCER = new InetSocketAddress("192.168.1.100", 40001);
    static final Map<String, InetSocketAddress> CONSUMERS = Map.of(
        GROUP, new InetSocketAddress("192.168.1.102", 40003), GONE_GROUP, new InetSocketAddress("192.168.1.103", 40004));

    final TraceStore.Broker br;
    final SendBackProbe processor;
    final Random rnd;
    final Map<String, Map<String, Object>> history = new LinkedHashMap<>();

    DlqStore(TraceStore.Broker br, Random rnd) {
        this.br = br;
        this.processor = new SendBackProbe(br.b);
        this.rnd = rnd;
    }

    public static void run(String root, long seed) throws Exception {
        new File(root).mkdirs();
        TraceStore.Broker br = TraceStore.start(root, "broker-a", "192.168.0.10", false);
        try {
            new DlqStore(br, new Random(seed)).scenario(root, seed);
        } catch (Throwable t) {
            t.printStackTrace();
            Runtime.getRuntime().halt(1);
        }
    }

    void scenario(String root, long seed) throws Exception {
        br.b.topicConfigManager.updateTopicConfig(new TopicConfig(TOPIC, 2, 2, 6));
        br.b.topicConfigManager.updateTopicConfig(new TopicConfig(GONE_TOPIC, 1, 1, 6));
        for (String g : List.of(GROUP, GONE_GROUP)) {
            SubscriptionGroupConfig sg = new SubscriptionGroupConfig();
            sg.setGroupName(g);
            br.b.subscriptionGroupManager.updateSubscriptionGroupConfig(sg);
        }
        String order1 = send(TOPIC, 0, "tagA", "order-1 vip", "order-1");
        String order2 = send(TOPIC, 1, "tagB", "order-2", "order-2");
        String legacy1 = send(GONE_TOPIC, 0, "tagA", "legacy-1", "legacy-1");
        String ok = send(TOPIC, 0, "tagA", "order-ok", "order-ok");
        consume(GROUP, TOPIC, 0, 0, false);   // order-1
        consume(GROUP, TOPIC, 0, 1, true);    // order-ok
        consume(GROUP, TOPIC, 1, 0, false);   // order-2
        consume(GROUP, GONE_TOPIC, 0, 0, false);  // legacy-1
        consume(GONE_GROUP, TOPIC, 0, 0, true);   // order-1
        consume(GONE_GROUP, TOPIC, 0, 1, true);   // order-ok
        consume(GONE_GROUP, TOPIC, 1, 0, false);  // order-2
        // what mqadmin deleteSubGroup / deleteTopic make the broker do (AdminBrokerProcessor)
        br.b.subscriptionGroupManager.deleteSubscriptionGroupConfig(GONE_GROUP);
        br.b.topicConfigManager.deleteTopicConfig(GONE_TOPIC);
        br.s.store.deleteTopics(Set.of(GONE_TOPIC));
        writeExpect(root, seed, List.of(order1, order2, legacy1, ok));
    }

    /** The producer's send as TraceStore.send builds it (no trace hook): the real put. */
    String send(String topic, int queueId, String tags, String keys, String name) throws Exception {
        byte[] body = new byte[200];
        for (int k = 0; k < body.length; k++) {
            body[k] = (byte) ('a' + rnd.nextInt(26));
        }
        org.apache.rocketmq.common.message.Message msg = new org.apache.rocketmq.common.message.Message(topic, tags, keys, body);
        MessageClientIDSetter.setUniqID(msg);
        Map<String, String> props = new java.util.HashMap<>(msg.getProperties());
        props.put(MessageConst.PROPERTY_MSG_REGION, br.b.getBrokerConfig().getRegionId());
        props.put(MessageConst.PROPERTY_TRACE_SWITCH, String.valueOf(br.b.getBrokerConfig().isTraceOn()));
        MessageExtBrokerInner inner = new MessageExtBrokerInner();
        inner.setTopic(topic);
        inner.setQueueId(queueId);
        inner.setBody(body);
        inner.setFlag(0);
        MessageAccessor.setProperties(inner, MessageDecoder.string2messageProperties(MessageDecoder.messageProperties2String(props)));
        inner.setTagsCode(MessageExtBrokerInner.tagsString2tagsCode(null, tags));
        inner.setBornTimestamp(System.currentTimeMillis());
        inner.setBornHost(PRODUCER);
        inner.setStoreHost(br.b.storeHost);
        MessageAccessor.putProperty(inner, MessageConst.PROPERTY_CLUSTER, TraceStore.CLUSTER);
        inner.setPropertiesString(MessageDecoder.messageProperties2String(inner.getProperties()));
        PutMessageResult r = br.s.store.putMessage(inner);
        if (r == null || !r.isOk()) {
            throw new IllegalStateException("put failed: " + r);
        }
        String uniq = MessageClientIDSetter.getUniqID(msg);
        Map<String, Object> h = new LinkedHashMap<>();
        h.put("name", name);
        h.put("uniqKey", uniq);
        h.put("events", new ArrayList<Object>());
        history.put(uniq, h);
        Map<String, Object> e = event(uniq, "sent");
        e.put("topic", topic);
        e.put("queueId", queueId);
        e.put("physicalOffset", r.getAppendMessageResult().getWroteOffset());
        e.put("queueOffset", r.getAppendMessageResult().getLogicsOffset());
        e.put("offsetMsgId", r.getAppendMessageResult().getMsgId());
        return uniq;
    }

    Map<String, Object> event(String uniq, String kind) {
        Map<String, Object> e = new LinkedHashMap<>();
        e.put("event", kind);
        @SuppressWarnings("unchecked")
        List<Object> events = (List<Object>) history.get(uniq).get("events");
        events.add(e);
        return e;
    }

    /** What the group's listener gets at (topic, queueId, offset): getMessage, the client's decode and reset. */
    MessageExt pull(String group, String topic, int queueId, long offset) throws Exception {
        br.s.waitDispatched();
        GetMessageResult r = br.s.store.getMessage(group, topic, queueId, offset, 1, null);
        if (r == null || r.getMessageBufferList().isEmpty()) {
            throw new IllegalStateException("no message at " + topic + "/" + queueId + "/" + offset + ": " + r);
        }
        ByteBuffer buf = r.getMessageBufferList().get(0);
        byte[] bytes = new byte[buf.remaining()];
        buf.get(bytes);
        r.release();
        MessageExt m = MessageDecoder.decode(ByteBuffer.wrap(bytes), true, true, true);
        List<MessageExt> list = new ArrayList<>();
        list.add(m);
        new DefaultMQPushConsumerImpl(new DefaultMQPushConsumer(group), null).resetRetryAndNamespace(list, group);
        return m;
    }

    /** One message consumed by `group` from (topic, queueId, offset): done, or failed until it is a dead letter. */
    void consume(String group, String topic, int queueId, long offset, boolean success) throws Exception {
        InetSocketAddress client = CONSUMERS.get(group);
        String host = client.getAddress().getHostAddress() + ":" + client.getPort();
        MessageExt m = pull(group, topic, queueId, offset);
        br.b.consumerOffsetManager.commitOffset(host, group, topic, queueId, offset + 1);
        String uniq = m.getMsgId();
        String retryTopic = MixAll.getRetryTopic(group);
        while (!success) {
            Map<String, Object> e = event(uniq, "sendBack");
            e.put("group", group);
            e.put("pulledFrom", m.getProperty(MessageConst.PROPERTY_REAL_TOPIC) != null && m.getReconsumeTimes() > 0
                ? retryTopic : topic);
            e.put("pulledReconsumeTimes", m.getReconsumeTimes());
            e.put("pulledPhysicalOffset", m.getCommitLogOffset());
            boolean dead = m.getReconsumeTimes() >= MAX_RECONSUME;
            long retryBefore = br.s.store.getMaxOffsetInQueue(retryTopic, 0);
            long dlqBefore = br.s.store.getMaxOffsetInQueue(MixAll.getDLQTopic(group), 0);
            // MQClientAPIImpl.consumerSendMessageBack: the message as the listener saw it (msgId = UNIQ_KEY,
            // topic after resetRetryAndNamespace), delay level 1 (the listener's delayLevelWhenNextConsume)
            RemotingCommand response = processor.sendBack(m.getCommitLogOffset(), group, 1, m.getMsgId(), m.getTopic(),
                MAX_RECONSUME);
            e.put("responseCode", response.getCode());
            if (response.getCode() != 0) {
                throw new IllegalStateException("send back refused: " + response.getRemark());
            }
            if (dead) {
                br.s.waitDispatched();
                String dlqTopic = MixAll.getDLQTopic(group);
                long q = br.s.store.getMaxOffsetInQueue(dlqTopic, 0) - 1;
                if (q != Math.max(dlqBefore, 0)) {
                    throw new IllegalStateException("no dead letter of " + uniq + " in " + dlqTopic);
                }
                Map<String, Object> d = event(uniq, "dlq");
                d.put("group", group);
                d.put("topic", dlqTopic);
                d.put("queueId", 0);
                d.put("queueOffset", q);
                d.put("physicalOffset", br.s.store.getConsumeQueue(dlqTopic, 0).get(q).getPos());
                return;
            }
            long deadline = System.currentTimeMillis() + 60_000;
            while (br.s.store.getMaxOffsetInQueue(retryTopic, 0) <= Math.max(retryBefore, 0)
                && System.currentTimeMillis() < deadline) {
                Thread.sleep(100);
            }
            long retryOffset = br.s.store.getMaxOffsetInQueue(retryTopic, 0) - 1;
            if (retryOffset < Math.max(retryBefore, 0)) {
                throw new IllegalStateException("the retry copy of " + uniq + " did not reach " + retryTopic);
            }
            m = pull(group, retryTopic, 0, retryOffset);
            if (!uniq.equals(m.getProperty(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX))) {
                throw new IllegalStateException("the copy delivered into " + retryTopic + " is not " + uniq);
            }
            Map<String, Object> d = event(uniq, "delivered");
            d.put("topic", retryTopic);
            d.put("queueId", 0);
            d.put("queueOffset", retryOffset);
            d.put("physicalOffset", m.getCommitLogOffset());
            d.put("reconsumeTimes", m.getReconsumeTimes());
            br.b.consumerOffsetManager.commitOffset(host, group, retryTopic, 0, retryOffset + 1);
        }
    }

    void writeExpect(String root, long seed, List<String> order) throws Exception {
        Map<String, Object> offsets = new TreeMap<>();
        br.b.consumerOffsetManager.getOffsetTable().forEach((k, v) -> offsets.put(k, new TreeMap<>(v)));
        Map<String, Object> rb = new LinkedHashMap<>();
        ReadBack.store(br.s.store, rb);
        br.schedule.persist();
        br.schedule.shutdown();
        br.b.consumerOffsetManager.persist();
        br.b.topicConfigManager.persist();
        br.b.subscriptionGroupManager.persist();
        br.b.transactionalMessageService.close();
        br.s.shutdown();
        Map<String, Object> expect = new LinkedHashMap<>();
        expect.put("rocketmqVersion", "5.3.3 (git tag rocketmq-all-5.3.3)");
        expect.put("profile", "dlq");
        expect.put("seed", seed);
        Map<String, Object> config = new LinkedHashMap<>();
        config.put("broker", br.addr());
        config.put("maxReconsumeTimes", MAX_RECONSUME);
        config.put("deletedGroup", GONE_GROUP);
        config.put("deletedTopic", GONE_TOPIC);
        expect.put("config", config);
        Geometry g = new Geometry();  // the geometry TraceStore.start opened the store with
        g.timer = false;
        expect.put("geometry", g.json());
        List<Object> hist = new ArrayList<>();
        for (String u : order) {
            hist.add(history.get(u));
        }
        expect.put("history", hist);
        expect.put("consumerOffsets", offsets);
        expect.putAll(rb);
        ReadBack.checkpoint(root, expect);
        ReadBack.files(root, expect);
        java.nio.file.Files.write(new File(root, "expect.json").toPath(), Json.write(expect).getBytes(StandardCharsets.UTF_8));
        Runtime.getRuntime().halt(0);
    }
}
