/*
 * Writes the 5.x timer fixture store: ordinary messages and timer messages through the real put path, the
 * real TimerMessageStore enqueues them into timerlog/timerwheel and delivers the one that falls due.
 * Then expect.json: what the real classes read back (ReadBack).
 */
package oracle;

import java.io.File;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.message.MessageAccessor;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExtBrokerInner;
import org.apache.rocketmq.store.PutMessageResult;
import org.apache.rocketmq.store.timer.TimerMessageStore;

public final class TimerFixture {
    static final String TOPIC = "TimerTopic";
    static final int QUEUES = 2;
    static final long BORN_BASE = 1700000000000L;

    private TimerFixture() {
    }

    static MessageExtBrokerInner message(Random rnd, int i, String topic, int queueId, int minBody, int spanBody,
        Map<String, String> props) {
        MessageExtBrokerInner m = new MessageExtBrokerInner();
        m.setTopic(topic);
        m.setQueueId(queueId);
        byte[] body = new byte[minBody + rnd.nextInt(spanBody)];
        for (int k = 0; k < body.length; k++) {
            body[k] = (byte) ('a' + rnd.nextInt(26));
        }
        m.setBody(body);
        m.setBornTimestamp(BORN_BASE + i * 1000L);
        m.setBornHost(new InetSocketAddress("192.168.1.100", 40000 + i % 7));
        m.setStoreHost(new InetSocketAddress("192.168.0.10", 10911));
        String tags = "tag" + (i % 3);
        Map<String, String> p = new LinkedHashMap<>();
        p.put(MessageConst.PROPERTY_KEYS, "key-" + i);
        p.put(MessageConst.PROPERTY_TAGS, tags);
        p.put(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX, String.format("%016X%016X", rnd.nextLong(), (long) i));
        p.put(MessageConst.PROPERTY_CLUSTER, "DefaultCluster");
        p.putAll(props);
        // As on the wire: the client's property string, parsed back by the broker.
        MessageAccessor.setProperties(m, MessageDecoder.string2messageProperties(MessageDecoder.messageProperties2String(p)));
        m.setPropertiesString(MessageDecoder.messageProperties2String(m.getProperties()));
        m.setTagsCode(MessageExtBrokerInner.tagsString2tagsCode(tags));
        return m;
    }

    /** A new store at `root` (refused when it exists) with TimerTopic and the timer topic, loaded and started. */
    static Stores startNew(String root, Geometry g) throws Exception {
        if (new File(root).exists()) {
            throw new IllegalStateException(root + " exists; the fixture is written into a new directory");
        }
        ConcurrentMap<String, TopicConfig> topics = new ConcurrentHashMap<>();
        topics.put(TOPIC, new TopicConfig(TOPIC, QUEUES, QUEUES, 6));
        topics.put(TimerMessageStore.TIMER_TOPIC, new TopicConfig(TimerMessageStore.TIMER_TOPIC, 1, 1, 6));
        Stores s = Stores.open(root, g, topics);
        if (!s.loaded) {
            throw new IllegalStateException("fresh store did not load");
        }
        s.start();
        return s;
    }

    /** What the broker's HookUtils.transformTimerMessage does to a timer message before the put (imitated). */
    static void toTimerTopic(MessageExtBrokerInner m, long deliverMs, int precisionMs) {
        long slotMs = deliverMs % precisionMs == 0 ? deliverMs - precisionMs : deliverMs / precisionMs * precisionMs;
        MessageAccessor.putProperty(m, MessageConst.PROPERTY_TIMER_OUT_MS, Long.toString(slotMs));
        MessageAccessor.putProperty(m, MessageConst.PROPERTY_REAL_TOPIC, m.getTopic());
        MessageAccessor.putProperty(m, MessageConst.PROPERTY_REAL_QUEUE_ID, Integer.toString(m.getQueueId()));
        m.setPropertiesString(MessageDecoder.messageProperties2String(m.getProperties()));
        m.setTopic(TimerMessageStore.TIMER_TOPIC);
        m.setQueueId(0);
    }

    public static void write(String root, long seed) throws Exception {
        Random rnd = new Random(seed);
        Geometry g = new Geometry();
        g.timer = true;
        Stores s = startNew(root, g);
        List<Map<String, Object>> events = new ArrayList<>();
        int precision = s.config.getTimerPrecisionMs();
        int i = 0;
        // Enough ordinary messages to roll the 1 MiB commitlog once; they pad the store around the timer puts.
        for (; i < 400; i++) {
            put(s, message(rnd, i, TOPIC, i % QUEUES, 2000, 2000, Map.of()), "ordinary", events, null);
            if (i == 200) {
                long now = System.currentTimeMillis();
                long[] delays = {4_000L, 3_600_000L, 7_200_000L, 86_400_000L + 1234L, 2 * 86_400_000L + 500L};
                for (int k = 0; k < delays.length; k++) {
                    long deliverMs = now + delays[k];
                    MessageExtBrokerInner m = message(rnd, 100000 + k, TOPIC, k % QUEUES, 50, 400,
                        Map.of(MessageConst.PROPERTY_TIMER_DELIVER_MS, Long.toString(deliverMs)));
                    toTimerTopic(m, deliverMs, precision);
                    put(s, m, "timer +" + delays[k] + " ms", events, deliverMs);
                }
            }
        }
        // Wait until the due timer message is back in its real topic (the real dequeue delivered it).
        s.waitDispatched();
        long before = maxOffsets(s);
        long deadline = System.currentTimeMillis() + 30_000;
        while (maxOffsets(s) == before && System.currentTimeMillis() < deadline) {
            Thread.sleep(200);
        }
        if (maxOffsets(s) == before) {
            throw new IllegalStateException("the due timer message was not delivered in 30 s");
        }
        Thread.sleep(1500);  // let the timer commit its read position past the delivered slot
        s.waitDispatched();
        s.timer.shutdown();
        s.waitDispatched();
        writeExpect(s, root, g, seed, "timer5", events);
    }

    /** expect.json: what the real classes read back from the stopped store (the timer already shut down). */
    static void writeExpect(Stores s, String root, Geometry g, long seed, String profile,
        List<Map<String, Object>> events) throws Exception {
        int precision = s.config.getTimerPrecisionMs();
        Map<String, Object> expect = new LinkedHashMap<>();
        expect.put("rocketmqVersion", "5.3.3 (git tag rocketmq-all-5.3.3)");
        expect.put("profile", profile);
        expect.put("seed", seed);
        Map<String, Object> config = new LinkedHashMap<>();
        config.put("mappedFileSizeCommitLog", g.commitLog);
        config.put("mappedFileSizeConsumeQueue", g.consumeQueue);
        config.put("mappedFileSizeTimerLog", g.timerLog);
        config.put("maxHashSlotNum", g.hashSlots);
        config.put("maxIndexNum", g.indexNum);
        config.put("timerPrecisionMs", precision);
        config.put("timerRollWindowSlot", s.config.getTimerRollWindowSlot());
        config.put("timerWheelSlots", TimerMessageStore.TIMER_WHEEL_TTL_DAY * TimerMessageStore.DAY_SECS);
        config.put("brokerName", Stores.BROKER_NAME);
        config.put("storeHost", "192.168.0.10:10911");
        expect.put("config", config);
        expect.put("events", events);
        ReadBack.store(s.store, expect);
        List<String[]> queries = new ArrayList<>();
        for (Object o : (List<?>) expect.get("messages")) {
            Map<?, ?> r = (Map<?, ?>) o;
            if ("MESSAGE".equals(r.get("kind")) && ((Long) r.get("physicalOffset")) % 7 == 0
                || !TOPIC.equals(r.get("topic")) || r.containsKey("bodyBase64")) {
                queries.add(new String[] {(String) r.get("topic"), (String) r.get("keys")});
                queries.add(new String[] {(String) r.get("topic"), (String) r.get("uniqKey")});
            }
        }
        expect.put("indexQueries", ReadBack.indexQueries(s.store, queries, 64));
        expect.put("minPhyOffset", s.store.getMinPhyOffset());
        expect.put("maxPhyOffset", s.store.getMaxPhyOffset());
        s.store.shutdown();
        s.stats.shutdown();
        ReadBack.timer(root, g, expect);
        ReadBack.checkpoint(root, expect);
        ReadBack.files(root, expect);
        java.nio.file.Files.write(new File(root, "expect.json").toPath(),
            Json.write(expect).getBytes(StandardCharsets.UTF_8));
    }

    static long maxOffsets(Stores s) throws Exception {
        long n = 0;
        for (int q = 0; q < QUEUES; q++) {
            n += s.store.getMaxOffsetInQueue(TOPIC, q);
        }
        return n;
    }

    static void put(Stores s, MessageExtBrokerInner m, String note, List<Map<String, Object>> events, Long deliverMs) {
        PutMessageResult r = s.store.putMessage(m);
        if (!r.isOk()) {
            throw new IllegalStateException("put failed: " + r);
        }
        if (!"ordinary".equals(note)) {
            Map<String, Object> e = new LinkedHashMap<>();
            e.put("event", "put");
            e.put("note", note);
            e.put("topic", m.getTopic());
            e.put("deliverMs", deliverMs);
            e.put("timerOutMs", Long.parseLong(m.getProperty(MessageConst.PROPERTY_TIMER_OUT_MS)));
            e.put("wroteOffset", r.getAppendMessageResult().getWroteOffset());
            e.put("wroteBytes", r.getAppendMessageResult().getWroteBytes());
            e.put("queueOffset", r.getAppendMessageResult().getLogicsOffset());
            e.put("status", r.getPutMessageStatus().name());
            events.add(e);
        }
    }
}
