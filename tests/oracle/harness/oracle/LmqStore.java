/*
 * `lmq-store DIR [SEED]`: a 5.x store of a broker with enableLmq and enableMultiDispatch. Records go through
 * the real put path (CommitLog's handlePropertiesForLmqMsg / LmqDispatch fill INNER_MULTI_QUEUE_OFFSET) and
 * the real ReputMessageService dispatches each one to its topic's queue and to every `%LMQ%` queue its
 * INNER_MULTI_DISPATCH names (ConsumeQueue.multiDispatchLmqQueue, queue id 0). Topics: TopicA (4 queues),
 * TopicB (2 queues), and a retry topic whose records carry INNER_MULTI_DISPATCH but are never multi-dispatched
 * (MixAll.topicAllowsLMQ). One LMQ queue (`%LMQ%hot`) is named by every third record, so its ConsumeQueue
 * spans several files. Offsets: LmqConsumerOffsetManager (the manager an LMQ broker runs) writes
 * config/lmqConsumerOffset.json; a plain ConsumerOffsetManager writes config/consumerOffset.json (as left by
 * the broker before LMQ was enabled). expect.json: every record and ConsumeQueue unit (LMQ ones included),
 * the LMQ queue offsets the store keeps in memory, and both files as the real managers read them back.
 */
package oracle;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import org.apache.rocketmq.broker.BrokerController;
import org.apache.rocketmq.broker.offset.ConsumerOffsetManager;
import org.apache.rocketmq.broker.offset.LmqConsumerOffsetManager;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExtBrokerInner;
import org.apache.rocketmq.store.PutMessageResult;
import org.apache.rocketmq.store.config.MessageStoreConfig;
import org.apache.rocketmq.store.stats.BrokerStatsManager;

public final class LmqStore {
    static final String[] TOPICS = {"TopicA", "TopicB"};
    static final int[] QUEUES = {4, 2};
    static final String RETRY = MixAll.RETRY_GROUP_TOPIC_PREFIX + "GID_lmq";
    static final int LMQ_QUEUES = 48;
    static final int MESSAGES = 420;
    static final String HOST = "192.168.1.100:40000";

    private LmqStore() {
    }

    static String lmq(int k) {
        return MixAll.LMQ_PREFIX + String.format("room%02d", k);
    }

    public static void write(String root, long seed) throws Exception {
        if (new File(root).exists()) {
            throw new IllegalStateException(root + " exists; the fixture is written into a new directory");
        }
        Random rnd = new Random(seed);
        Geometry g = new Geometry();
        g.consumeQueue = 1000;  // 50 units a file: the busier queues span several files
        MessageStoreConfig c = Stores.config(root, g);
        c.setEnableLmq(true);
        c.setEnableMultiDispatch(true);
        ConcurrentMap<String, TopicConfig> topics = new ConcurrentHashMap<>();
        for (int t = 0; t < TOPICS.length; t++) {
            topics.put(TOPICS[t], new TopicConfig(TOPICS[t], QUEUES[t], QUEUES[t], 6));
        }
        topics.put(RETRY, new TopicConfig(RETRY, 1, 1, 6));
        BrokerConfig bc = new BrokerConfig();
        bc.setBrokerName(Stores.BROKER_NAME);
        Stores s = Stores.open(c, g, topics, bc, new BrokerStatsManager("DefaultCluster", true));
        if (!s.loaded) {
            throw new IllegalStateException("fresh store did not load");
        }
        s.start();
        List<Map<String, Object>> events = new ArrayList<>();
        Set<String> named = new LinkedHashSet<>();
        for (int i = 0; i < MESSAGES; i++) {
            int t = rnd.nextInt(TOPICS.length);
            String topic = i % 60 == 59 ? RETRY : TOPICS[t];
            int queueId = topic.equals(RETRY) ? 0 : rnd.nextInt(QUEUES[t]);
            Map<String, String> props = new LinkedHashMap<>();
            List<String> lmqs = new ArrayList<>();
            if (i % 3 == 0) {
                lmqs.add(MixAll.LMQ_PREFIX + "hot");
            }
            if (rnd.nextInt(10) < 7) {  // 70 %: 1..5 LMQ queues (with the hot one at most 5 in all)
                int n = 1 + rnd.nextInt(5 - lmqs.size());
                while (lmqs.size() < n + (i % 3 == 0 ? 1 : 0)) {
                    String q = lmq(rnd.nextInt(LMQ_QUEUES));
                    if (!lmqs.contains(q)) {
                        lmqs.add(q);
                    }
                }
            }
            if (!lmqs.isEmpty()) {
                props.put(MessageConst.PROPERTY_INNER_MULTI_DISPATCH, String.join(MixAll.LMQ_DISPATCH_SEPARATOR, lmqs));
            }
            if (i % 7 == 3) {
                props.put(MessageConst.PROPERTY_WAIT_STORE_MSG_OK, "true");
            }
            MessageExtBrokerInner m = TimerFixture.message(rnd, i, topic, queueId, 20, 300, props);
            if (i % 11 == 5) {  // no tags: tagsCode 0
                org.apache.rocketmq.common.message.MessageAccessor.clearProperty(m, MessageConst.PROPERTY_TAGS);
                m.setPropertiesString(org.apache.rocketmq.common.message.MessageDecoder.messageProperties2String(m.getProperties()));
                m.setTagsCode(0);
            }
            PutMessageResult r = s.store.putMessage(m);
            if (!r.isOk()) {
                throw new IllegalStateException("put failed: " + r);
            }
            if (!topic.equals(RETRY)) {
                named.addAll(lmqs);
            }
            Map<String, Object> e = new LinkedHashMap<>();
            e.put("topic", topic);
            e.put("queueId", queueId);
            e.put("wroteOffset", r.getAppendMessageResult().getWroteOffset());
            e.put("queueOffset", r.getAppendMessageResult().getLogicsOffset());
            e.put("innerMultiDispatch", m.getProperty(MessageConst.PROPERTY_INNER_MULTI_DISPATCH));
            e.put("innerMultiQueueOffset", m.getProperty(MessageConst.PROPERTY_INNER_MULTI_QUEUE_OFFSET));
            events.add(e);
        }
        s.waitDispatched();

        Map<String, Object> lmqOffsets = new TreeMap<>();
        for (String q : named) {
            lmqOffsets.put(q, s.store.getQueueStore().getLmqQueueOffset(q, MixAll.LMQ_QUEUE_ID));
        }

        BrokerController broker = new BrokerController(bc, c, s.store);
        LmqConsumerOffsetManager lmqManager = new LmqConsumerOffsetManager(broker);
        ConsumerOffsetManager plain = new ConsumerOffsetManager(broker);
        List<String> names = new ArrayList<>(named);
        for (int k = 0; k < names.size(); k += 3) {
            String q = names.get(k);
            long max = s.store.getMaxOffsetInQueue(q, MixAll.LMQ_QUEUE_ID);
            // An LMQ consumer commits with the LMQ queue as topic and an LMQ group: lmqOffsetTable["topic@group"].
            lmqManager.commitOffset(HOST, MixAll.LMQ_PREFIX + "GID_room" + k, q, MixAll.LMQ_QUEUE_ID, k % 2 == 0 ? max : max / 2);
        }
        for (int t = 0; t < TOPICS.length; t++) {
            for (int q = 0; q < QUEUES[t]; q++) {
                long max = s.store.getMaxOffsetInQueue(TOPICS[t], q);
                lmqManager.commitOffset(HOST, "GID_plain", TOPICS[t], q, max - q);
                plain.commitOffset(HOST, "GID_plain", TOPICS[t], q, max / 2);
            }
        }
        lmqManager.persist();
        plain.persist();

        Map<String, Object> expect = new LinkedHashMap<>();
        expect.put("rocketmqVersion", "5.3.3 (git tag rocketmq-all-5.3.3)");
        expect.put("profile", "lmq");
        expect.put("seed", seed);
        Map<String, Object> config = new LinkedHashMap<>();
        config.put("mappedFileSizeCommitLog", g.commitLog);
        config.put("mappedFileSizeConsumeQueue", g.consumeQueue);
        config.put("maxHashSlotNum", g.hashSlots);
        config.put("maxIndexNum", g.indexNum);
        config.put("enableLmq", c.isEnableLmq());
        config.put("enableMultiDispatch", c.isEnableMultiDispatch());
        config.put("brokerName", Stores.BROKER_NAME);
        expect.put("config", config);
        expect.put("events", events);
        ReadBack.store(s.store, expect);
        expect.put("lmqQueueOffsets", lmqOffsets);
        expect.put("minPhyOffset", s.store.getMinPhyOffset());
        expect.put("maxPhyOffset", s.store.getMaxPhyOffset());
        s.shutdown();
        expect.put("offsets", offsetsReadBack(root, c, bc, names));
        ReadBack.checkpoint(root, expect);
        ReadBack.files(root, expect);
        java.nio.file.Files.write(new File(root, "expect.json").toPath(),
            Json.write(expect).getBytes(StandardCharsets.UTF_8));
    }

    /** Both offset files as fresh managers load them, and queryOffset as the broker answers it. */
    static Map<String, Object> offsetsReadBack(String root, MessageStoreConfig c, BrokerConfig bc, List<String> lmqNames) {
        BrokerController broker = new BrokerController(bc, c, null);
        Map<String, Object> out = new LinkedHashMap<>();
        LmqConsumerOffsetManager lmq = new LmqConsumerOffsetManager(broker);
        Map<String, Object> l = new LinkedHashMap<>();
        l.put("loaded", lmq.load());
        Map<String, Object> table = new TreeMap<>();
        lmq.getOffsetTable().forEach((k, v) -> table.put(k, new TreeMap<>(v)));
        l.put("offsetTable", table);
        l.put("lmqOffsetTable", new TreeMap<>(lmq.getLmqOffsetTable()));
        Map<String, Object> queried = new TreeMap<>();
        lmq.getLmqOffsetTable().keySet().forEach(k -> {
            String[] tg = k.split(ConsumerOffsetManager.TOPIC_GROUP_SEPARATOR);
            queried.put(k, lmq.queryOffset(tg[1], tg[0], MixAll.LMQ_QUEUE_ID));
        });
        l.put("queryOffset", queried);
        out.put("lmqConsumerOffset", l);
        ConsumerOffsetManager plain = new ConsumerOffsetManager(broker);
        Map<String, Object> p = new LinkedHashMap<>();
        p.put("loaded", plain.load());
        Map<String, Object> ptable = new TreeMap<>();
        plain.getOffsetTable().forEach((k, v) -> ptable.put(k, new TreeMap<>(v)));
        p.put("offsetTable", ptable);
        out.put("consumerOffset", p);
        return out;
    }
}
