/*
 * `rocksdb-v2-store DIR [SEED]`: a 5.x store of a broker with configManagerVersion=v2 (5.3.2+): topics,
 * subscription groups and consumer offsets in the RocksDB database config/rdb (ConfigStorage), written by the
 * real TopicConfigManagerV2, SubscriptionGroupManagerV2 and ConsumerOffsetManagerV2 (fastjson2 topic and group
 * values). Consume queues are files (the default store type); the broker has enableLmq, so LMQ consumer
 * offsets go into config/rdb too (ConsumerOffsetManagerV2 keeps them only there). Beside it, stale
 * topics.json, subscriptionGroup.json and lmqConsumerOffset.json from the file managers (as a broker left them
 * before the switch to v2), which a v2 broker never reads. `rocksdb-v2-read STORE` reopens a copy with the
 * v2 managers and prints what they hold (the fixture's expect.json).
 */
package oracle;

import java.io.File;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import org.apache.rocketmq.broker.BrokerController;
import org.apache.rocketmq.broker.config.v2.ConfigStorage;
import org.apache.rocketmq.broker.config.v2.ConsumerOffsetManagerV2;
import org.apache.rocketmq.broker.config.v2.SubscriptionGroupManagerV2;
import org.apache.rocketmq.broker.config.v2.TopicConfigManagerV2;
import org.apache.rocketmq.broker.offset.LmqConsumerOffsetManager;
import org.apache.rocketmq.broker.subscription.SubscriptionGroupManager;
import org.apache.rocketmq.broker.topic.TopicConfigManager;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExtBrokerInner;
import org.apache.rocketmq.remoting.protocol.DataVersion;
import org.apache.rocketmq.remoting.protocol.subscription.SubscriptionGroupConfig;
import org.apache.rocketmq.store.PutMessageResult;
import org.apache.rocketmq.store.config.MessageStoreConfig;
import org.apache.rocketmq.store.stats.BrokerStatsManager;
import org.rocksdb.RocksIterator;

public final class RocksDBV2Fixture {
    static final String[][] TOPICS = {{"V2Topic", "4"}, {"V2Other", "2"}};
    static final String BATCH_TOPIC = "V2Batch";  // queue.type=BatchCQ in config/rdb only; no message
    static final String GONE_TOPIC = "V2Gone";  // created, then deleted (a tombstone in config/rdb)
    static final String[] GROUPS = {"GID_v2_a", "GID_v2_orderly"};
    static final String GONE_GROUP = "GID_v2_gone";
    static final String[] LMQS = {MixAll.LMQ_PREFIX + "v2room0", MixAll.LMQ_PREFIX + "v2room1"};
    static final String HOST = "127.0.0.1:40000";

    private RocksDBV2Fixture() {
    }

    static MessageStoreConfig config(String root) {
        MessageStoreConfig c = Stores.config(root, new Geometry());
        c.setEnableLmq(true);
        c.setEnableMultiDispatch(true);
        return c;
    }

    static BrokerConfig brokerConfig() {
        BrokerConfig bc = new BrokerConfig();
        bc.setBrokerName(Stores.BROKER_NAME);
        bc.setConfigManagerVersion("v2");
        return bc;
    }

    public static void write(String root, long seed) throws Exception {
        if (new File(root).exists()) {
            throw new IllegalStateException(root + " exists; the fixture is written into a new directory");
        }
        Random rnd = new Random(seed);
        MessageStoreConfig c = config(root);
        BrokerConfig bc = brokerConfig();
        ConcurrentMap<String, TopicConfig> storeTopics = new ConcurrentHashMap<>();
        for (String[] t : TOPICS) {
            int n = Integer.parseInt(t[1]);
            storeTopics.put(t[0], new TopicConfig(t[0], n, n, 6));
        }
        Stores s = Stores.open(c, new Geometry(), storeTopics, bc, new BrokerStatsManager("DefaultCluster", true));
        if (!s.loaded) {
            throw new IllegalStateException("fresh store did not load");
        }
        s.start();
        for (int i = 0; i < 120; i++) {
            String[] t = TOPICS[rnd.nextInt(TOPICS.length)];
            int q = rnd.nextInt(Integer.parseInt(t[1]));
            Map<String, String> props = new LinkedHashMap<>();
            if (i % 2 == 0) {
                props.put(MessageConst.PROPERTY_INNER_MULTI_DISPATCH, i % 4 == 0 ? LMQS[0] : LMQS[0] + MixAll.LMQ_DISPATCH_SEPARATOR + LMQS[1]);
            }
            MessageExtBrokerInner m = TimerFixture.message(rnd, i, t[0], q, 100, 400, props);
            PutMessageResult r = s.store.putMessage(m);
            if (!r.isOk()) {
                throw new IllegalStateException("put failed: " + r);
            }
        }
        s.waitDispatched();
        BrokerController broker = new BrokerController(bc, c, s.store);

        // Stale files of the file managers, as the broker left them before configManagerVersion=v2.
        TopicConfigManager jsonTopics = new TopicConfigManager(broker);
        jsonTopics.load();
        jsonTopics.putTopicConfig(new TopicConfig("V2Stale", 8, 8, 6));
        jsonTopics.putTopicConfig(new TopicConfig(TOPICS[0][0], 8, 8, 6));
        jsonTopics.persist();
        SubscriptionGroupManager jsonGroups = new SubscriptionGroupManager(broker);
        jsonGroups.load();
        SubscriptionGroupConfig stale = new SubscriptionGroupConfig();
        stale.setGroupName("GID_v2_stale");
        jsonGroups.putSubscriptionGroupConfig(stale);
        jsonGroups.persist();
        LmqConsumerOffsetManager jsonOffsets = new LmqConsumerOffsetManager(broker);
        jsonOffsets.load();
        for (String[] t : TOPICS) {
            for (int q = 0; q < Integer.parseInt(t[1]); q++) {
                jsonOffsets.commitOffset(HOST, GROUPS[0], t[0], q, 1);
            }
        }
        jsonOffsets.commitOffset(HOST, MixAll.LMQ_PREFIX + "GID_room", LMQS[0], MixAll.LMQ_QUEUE_ID, 1);
        jsonOffsets.persist();

        ConfigStorage rdb = new ConfigStorage(c);
        if (!rdb.start()) {
            throw new IllegalStateException("ConfigStorage did not start");
        }
        TopicConfigManagerV2 topics = new TopicConfigManagerV2(broker, rdb);
        if (!topics.load()) {
            throw new IllegalStateException("TopicConfigManagerV2 did not load");
        }
        for (String[] t : TOPICS) {
            int n = Integer.parseInt(t[1]);
            TopicConfig tc = new TopicConfig(t[0], n, n, 6);
            if (t[0].equals(TOPICS[1][0])) {
                tc.setOrder(true);
                tc.setTopicSysFlag(1);
                tc.getAttributes().put("+message.type", "FIFO");  // as the admin tool sends it: "+" adds
            }
            topics.updateTopicConfig(tc);
        }
        TopicConfig batch = new TopicConfig(BATCH_TOPIC, 2, 2, 6);
        batch.getAttributes().put("+queue.type", "BatchCQ");
        topics.updateTopicConfig(batch);
        topics.updateTopicConfig(new TopicConfig(GONE_TOPIC, 1, 1, 6));
        topics.deleteTopicConfig(GONE_TOPIC);
        SubscriptionGroupManagerV2 groups = new SubscriptionGroupManagerV2(broker, rdb);
        if (!groups.load()) {
            throw new IllegalStateException("SubscriptionGroupManagerV2 did not load");
        }
        for (String g : GROUPS) {
            SubscriptionGroupConfig sg = new SubscriptionGroupConfig();
            sg.setGroupName(g);
            sg.setRetryMaxTimes(g.endsWith("orderly") ? 3 : 16);
            sg.setConsumeMessageOrderly(g.endsWith("orderly"));
            groups.updateSubscriptionGroupConfig(sg);
        }
        SubscriptionGroupConfig gone = new SubscriptionGroupConfig();
        gone.setGroupName(GONE_GROUP);
        groups.updateSubscriptionGroupConfig(gone);
        groups.deleteSubscriptionGroupConfig(GONE_GROUP);
        ConsumerOffsetManagerV2 offsets = new ConsumerOffsetManagerV2(broker, rdb);
        if (!offsets.load()) {
            throw new IllegalStateException("ConsumerOffsetManagerV2 did not load");
        }
        for (String g : GROUPS) {
            for (String[] t : TOPICS) {
                for (int q = 0; q < Integer.parseInt(t[1]); q++) {
                    long max = s.store.getMaxOffsetInQueue(t[0], q);
                    offsets.commitOffset(HOST, g, t[0], q, max - rnd.nextInt((int) Math.max(1, max / 2)));
                }
            }
        }
        // LMQ consumers commit with the LMQ queue as topic: kept in config/rdb only, never in the offset table.
        for (int k = 0; k < LMQS.length; k++) {
            long max = s.store.getMaxOffsetInQueue(LMQS[k], MixAll.LMQ_QUEUE_ID);
            offsets.commitOffset(HOST, MixAll.LMQ_PREFIX + "GID_room" + k, LMQS[k], MixAll.LMQ_QUEUE_ID, max - k - 1);
            offsets.commitPullOffset(HOST, MixAll.LMQ_PREFIX + "GID_room" + k, LMQS[k], MixAll.LMQ_QUEUE_ID, max);
        }
        offsets.commitOffset(HOST, "GID_v2_dropped", TOPICS[0][0], 0, 1);
        offsets.removeOffset("GID_v2_dropped");
        offsets.persist();
        rdb.shutdown();
        s.shutdown();

        Map<String, Object> expect = read(root, seed);
        Files.writeString(Path.of(root, "expect.json"), Json.write(expect) + "\n");
    }

    /** Reopens a copy of `root` with the v2 managers and says what they hold. */
    public static Map<String, Object> read(String root, long seed) throws Exception {
        Path copy = Files.createTempDirectory("oracle-rocksdb-v2-");
        try {
            Judge.copy(Path.of(root), copy.resolve("store"));
            return readInPlace(copy.resolve("store").toString(), seed);
        } finally {
            Judge.delete(copy);
        }
    }

    static Map<String, Object> readInPlace(String root, long seed) throws Exception {
        MessageStoreConfig c = config(root);
        BrokerConfig bc = brokerConfig();
        BrokerController broker = new BrokerController(bc, c, null);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("rocketmqVersion", "5.3.3 (git tag rocketmq-all-5.3.3)");
        out.put("seed", seed);
        out.put("configManagerVersion", bc.getConfigManagerVersion());
        ConfigStorage rdb = new ConfigStorage(c);
        out.put("started", rdb.start());

        // What init() puts in memory at every start; config/rdb holds only what was updated.
        out.put("builtinTopics", new ArrayList<>(new TreeMap<>(new TopicConfigManagerV2(broker, rdb).getTopicConfigTable()).keySet()));
        out.put("builtinGroups", new ArrayList<>(new TreeMap<>(new SubscriptionGroupManagerV2(broker, rdb).getSubscriptionGroupTable()).keySet()));

        TopicConfigManagerV2 topics = new TopicConfigManagerV2(broker, rdb);
        Map<String, Object> tc = new LinkedHashMap<>();
        tc.put("loaded", topics.load());
        tc.put("dataVersion", version(topics.getDataVersion()));
        Map<String, Object> tt = new TreeMap<>();
        topics.getTopicConfigTable().forEach((k, v) -> {
            Map<String, Object> one = new LinkedHashMap<>();
            one.put("topicName", v.getTopicName());
            one.put("readQueueNums", v.getReadQueueNums());
            one.put("writeQueueNums", v.getWriteQueueNums());
            one.put("perm", v.getPerm());
            one.put("topicFilterType", v.getTopicFilterType().name());
            one.put("topicSysFlag", v.getTopicSysFlag());
            one.put("order", v.isOrder());
            one.put("attributes", new TreeMap<>(v.getAttributes()));
            tt.put(k, one);
        });
        tc.put("topicConfigTable", tt);
        out.put("topics", tc);

        SubscriptionGroupManagerV2 groups = new SubscriptionGroupManagerV2(broker, rdb);
        Map<String, Object> gc = new LinkedHashMap<>();
        gc.put("loaded", groups.load());
        gc.put("dataVersion", version(groups.getDataVersion()));
        Map<String, Object> gt = new TreeMap<>();
        groups.getSubscriptionGroupTable().forEach((k, v) -> {
            Map<String, Object> one = new LinkedHashMap<>();
            one.put("groupName", v.getGroupName());
            one.put("consumeEnable", v.isConsumeEnable());
            one.put("consumeFromMinEnable", v.isConsumeFromMinEnable());
            one.put("consumeBroadcastEnable", v.isConsumeBroadcastEnable());
            one.put("consumeMessageOrderly", v.isConsumeMessageOrderly());
            one.put("retryQueueNums", v.getRetryQueueNums());
            one.put("retryMaxTimes", v.getRetryMaxTimes());
            one.put("brokerId", v.getBrokerId());
            one.put("whichBrokerWhenConsumeSlowly", v.getWhichBrokerWhenConsumeSlowly());
            one.put("notifyConsumerIdsChangedEnable", v.isNotifyConsumerIdsChangedEnable());
            one.put("groupSysFlag", v.getGroupSysFlag());
            one.put("consumeTimeoutMinute", v.getConsumeTimeoutMinute());
            one.put("attributes", new TreeMap<>(v.getAttributes()));
            gt.put(k, one);
        });
        gc.put("subscriptionGroupTable", gt);
        out.put("subscriptionGroups", gc);

        ConsumerOffsetManagerV2 offsets = new ConsumerOffsetManagerV2(broker, rdb);
        Map<String, Object> oc = new LinkedHashMap<>();
        oc.put("loaded", offsets.load());
        oc.put("dataVersion", version(offsets.getDataVersion()));
        Map<String, Object> ot = new TreeMap<>();
        offsets.getOffsetTable().forEach((k, v) -> ot.put(k, new TreeMap<>(v)));
        oc.put("offsetTable", ot);
        // LMQ offsets: not in the table; queryOffset reads them from config/rdb.
        Map<String, Object> lmq = new TreeMap<>();
        for (int k = 0; k < LMQS.length; k++) {
            String group = MixAll.LMQ_PREFIX + "GID_room" + k;
            lmq.put(LMQS[k] + "@" + group, offsets.queryOffset(group, LMQS[k], MixAll.LMQ_QUEUE_ID));
            lmq.put(LMQS[k] + "@" + group + " (pull)", offsets.queryPullOffset(group, LMQS[k], MixAll.LMQ_QUEUE_ID));
        }
        oc.put("lmqQueryOffset", lmq);
        out.put("consumerOffsets", oc);

        // The values as stored: [serialization type][fastjson2 JSON] for topics (table 3) and groups (table 4).
        Map<String, Object> raw = new TreeMap<>();
        try (RocksIterator it = rdb.iterate(ByteBuffer.wrap(new byte[] {1, 0, 3, 2}), ByteBuffer.wrap(new byte[] {1, 0, 4, 3}))) {
            while (it.isValid()) {
                byte[] key = it.key();
                byte[] value = it.value();
                if (key[3] == 2 && value.length > 0) {
                    String name = new String(key, 6, key.length - 6, StandardCharsets.UTF_8);
                    raw.put("table " + key[2] + " " + name, "type " + value[0] + " " + new String(value, 1, value.length - 1, StandardCharsets.UTF_8));
                }
                it.next();
            }
        }
        out.put("storedValues", raw);
        rdb.shutdown();
        return out;
    }

    static Map<String, Object> version(DataVersion v) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("stateVersion", v.getStateVersion());
        out.put("timestamp", v.getTimestamp());
        out.put("counter", v.getCounter().get());
        return out;
    }

    /** `rocksdb-v2-read STORE`: what the v2 managers read from a copy of STORE, as one JSON object. */
    public static int run(String root) throws Exception {
        System.out.println(Json.write(read(root, 0)));
        return 0;
    }
}
