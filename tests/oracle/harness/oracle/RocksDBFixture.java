/*
 * The RocksDB-mode fixture (storeType=defaultRocksDB): messages through the real RocksDBMessageStore, whose
 * RocksDBConsumeQueueStore dispatches every unit into the RocksDB database in consumequeue/; consumer offsets,
 * topics and subscription groups through the real v1 managers (RocksDBConsumerOffsetManager,
 * RocksDBTopicConfigManager, RocksDBSubscriptionGroupManager: config/consumerOffsets, config/topics,
 * config/subscriptionGroups); a consumerOffset.json written first by the plain ConsumerOffsetManager, imported by
 * the RocksDB manager's merge() at its first load, then left stale. `read` reopens a copy with the same classes
 * and prints what they read (the fixture's expect.json, and the judge of an offline write).
 */
package oracle;

import java.io.File;
import java.nio.ByteBuffer;
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
import org.apache.rocketmq.broker.config.v1.RocksDBConsumerOffsetManager;
import org.apache.rocketmq.broker.config.v1.RocksDBSubscriptionGroupManager;
import org.apache.rocketmq.broker.config.v1.RocksDBTopicConfigManager;
import org.apache.rocketmq.broker.config.v2.ConfigStorage;
import org.apache.rocketmq.broker.config.v2.ConsumerOffsetManagerV2;
import org.apache.rocketmq.broker.offset.ConsumerOffsetManager;
import org.apache.rocketmq.broker.pop.PopConsumerRecord;
import org.apache.rocketmq.broker.pop.PopConsumerRocksdbStore;
import org.apache.rocketmq.common.BoundaryType;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.message.MessageExtBrokerInner;
import org.apache.rocketmq.remoting.protocol.subscription.SubscriptionGroupConfig;
import org.apache.rocketmq.store.PutMessageResult;
import org.apache.rocketmq.store.RocksDBMessageStore;
import org.apache.rocketmq.store.config.MessageStoreConfig;
import org.apache.rocketmq.store.queue.ConsumeQueueInterface;
import org.apache.rocketmq.store.queue.RocksDBConsumeQueueStore;
import org.apache.rocketmq.store.stats.BrokerStatsManager;

public final class RocksDBFixture {
    static final String[][] TOPICS = {{"RdbTopic", "4"}, {"RdbOther", "2"}};
    static final String[] GROUPS = {"GID_rdb_a", "GID_rdb_b"};

    private RocksDBFixture() {
    }

    static MessageStoreConfig config(String root) {
        MessageStoreConfig c = Stores.config(root, new Geometry());
        c.setStoreType("defaultRocksDB");
        return c;
    }

    static RocksDBMessageStore open(MessageStoreConfig c, BrokerConfig bc, BrokerStatsManager stats) throws Exception {
        ConcurrentMap<String, TopicConfig> topics = new ConcurrentHashMap<>();
        for (String[] t : TOPICS) {
            int n = Integer.parseInt(t[1]);
            topics.put(t[0], new TopicConfig(t[0], n, n, 6));
        }
        RocksDBMessageStore store = new RocksDBMessageStore(c, stats, null, bc, topics);
        if (!store.load()) {
            throw new IllegalStateException("RocksDBMessageStore did not load");
        }
        return store;
    }

    public static void write(String root, long seed) throws Exception {
        if (new File(root).exists()) {
            throw new IllegalStateException(root + " exists; the fixture is written into a new directory");
        }
        Random rnd = new Random(seed);
        MessageStoreConfig c = config(root);
        BrokerConfig bc = new BrokerConfig();
        bc.setBrokerName(Stores.BROKER_NAME);
        BrokerStatsManager stats = new BrokerStatsManager("DefaultCluster", true);
        RocksDBMessageStore store = open(c, bc, stats);
        store.start();
        int i = 0;
        for (int round = 0; round < 6; round++) {
            for (int k = 0; k < 140; k++, i++) {
                String[] t = TOPICS[rnd.nextInt(TOPICS.length)];
                int q = rnd.nextInt(Integer.parseInt(t[1]));
                MessageExtBrokerInner m = TimerFixture.message(rnd, i, t[0], q, 1000, 3000, Map.of());
                PutMessageResult r = store.putMessage(m);
                if (!r.isOk()) {
                    throw new IllegalStateException("put failed: " + r);
                }
            }
            Thread.sleep(30);  // a few distinct store times per queue, for the by-time search
        }
        for (int k = 0; k < 600 && store.dispatchBehindBytes() != 0; k++) {
            Thread.sleep(50);
        }
        Thread.sleep(300);
        // The broker answers min offsets all the time; that writes the "min" keys. Ask for one topic only, so
        // the other topic's queues keep no "min" key (both states are on disk).
        for (int q = 0; q < Integer.parseInt(TOPICS[0][1]); q++) {
            store.getMinOffsetInQueue(TOPICS[0][0], q);
        }
        // Then the first commitlog file goes, as CleanCommitLogService deletes it: those "min" keys now point
        // below the commitlog's min offset, and every queue's first units into a deleted file.
        if (store.getCommitLog().deleteExpiredFile(0, 0, 1000, true, 1) != 1) {
            throw new IllegalStateException("the first commitlog file was not deleted");
        }

        BrokerController broker = new BrokerController(bc, c, store);
        // consumerOffset.json as the file-based broker wrote it before the switch to RocksDB (then stale).
        ConsumerOffsetManager json = new ConsumerOffsetManager(broker);
        json.load();
        for (int k = 0; k < 100; k++) {  // 1,200 commits: the data version moves every 500 (the broker default)
            commit(json, rnd, 2);
        }
        json.persist();
        RocksDBConsumerOffsetManager offsets = new RocksDBConsumerOffsetManager(broker);
        if (!offsets.load()) {  // merge(): the JSON's data version is ahead of the (absent) KV one: imported
            throw new IllegalStateException("RocksDBConsumerOffsetManager did not load");
        }
        commit(offsets, rnd, 10);
        offsets.commitOffset("127.0.0.1", "GID_rdb_new", TOPICS[1][0], 1, 3);
        offsets.persist();
        offsets.stop();

        RocksDBTopicConfigManager topics = new RocksDBTopicConfigManager(broker);
        if (!topics.load()) {
            throw new IllegalStateException("RocksDBTopicConfigManager did not load");
        }
        for (String[] t : TOPICS) {
            int n = Integer.parseInt(t[1]);
            topics.putTopicConfig(new TopicConfig(t[0], n, n, 6));
        }
        topics.stop();
        RocksDBSubscriptionGroupManager groups = new RocksDBSubscriptionGroupManager(broker);
        if (!groups.load()) {
            throw new IllegalStateException("RocksDBSubscriptionGroupManager did not load");
        }
        for (String g : GROUPS) {
            SubscriptionGroupConfig sg = new SubscriptionGroupConfig();
            sg.setGroupName(g);
            sg.setRetryMaxTimes(g.endsWith("b") ? 3 : 16);
            groups.putSubscriptionGroupConfig(sg);
        }
        groups.stop();
        // Config manager v2 (configManagerVersion=v2, config/rdb): its consumer offsets, which a broker switched
        // to v2 keeps there (it never reads the v1 directories or the JSON). Only offsets: v2 topics and groups
        // are RocksDBV2Fixture's.
        ConfigStorage rdb = new ConfigStorage(c);
        if (!rdb.start()) {
            throw new IllegalStateException("ConfigStorage did not start");
        }
        ConsumerOffsetManagerV2 v2 = new ConsumerOffsetManagerV2(broker, rdb);
        if (!v2.load()) {
            throw new IllegalStateException("ConsumerOffsetManagerV2 did not load");
        }
        commit(v2, rnd, 30);
        v2.persist();
        rdb.shutdown();
        // POP state in RocksDB (popConsumerKVServiceEnable=true: PopConsumerService's kvStore/, column family
        // popState): records as PopConsumerService writes them at pop time, some deleted as its ack does.
        PopConsumerRocksdbStore pop = new PopConsumerRocksdbStore(root + File.separator + "kvStore");
        if (!pop.start()) {
            throw new IllegalStateException("PopConsumerRocksdbStore did not start");
        }
        List<PopConsumerRecord> popped = new ArrayList<>();
        long popTime = 1795000000000L;
        for (int k = 0; k < 12; k++) {
            String topic = k % 3 == 2 ? "%RETRY%GID_rdb_pop_RdbTopic" : TOPICS[0][0];
            PopConsumerRecord r = new PopConsumerRecord(popTime + k * 1000L, "GID_rdb_pop", topic, k % 4,
                k % 3 == 2 ? PopConsumerRecord.RetryType.RETRY_TOPIC_V1.getCode() : 0, 60_000L + (k % 2) * 30_000L,
                60 + k, "attempt-" + k);
            r.setAttemptTimes(k % 3);
            popped.add(r);
        }
        pop.writeRecords(popped);
        pop.deleteRecords(List.of(popped.get(1), popped.get(4), popped.get(7)));
        pop.shutdown();
        store.shutdown();
        stats.shutdown();

        Map<String, Object> expect = read(root, seed);
        Files.writeString(Path.of(root, "expect.json"), Json.write(expect) + "\n");
    }

    static void commit(ConsumerOffsetManager m, Random rnd, int bound) {
        for (String g : GROUPS) {
            for (String[] t : TOPICS) {
                for (int q = 0; q < Integer.parseInt(t[1]); q++) {
                    m.commitOffset("127.0.0.1", g, t[0], q, rnd.nextInt(bound) + bound);
                }
            }
        }
    }

    /** Reopens a copy of `root` with the real classes (reading writes min keys and more) and says what they read. */
    public static Map<String, Object> read(String root, long seed) throws Exception {
        Path copy = Files.createTempDirectory("oracle-rocksdb-");
        try {
            Judge.copy(Path.of(root), copy.resolve("store"));
            return readInPlace(copy.resolve("store").toString(), seed);
        } finally {
            Judge.delete(copy);
        }
    }

    static Map<String, Object> readInPlace(String root, long seed) throws Exception {
        MessageStoreConfig c = config(root);
        BrokerConfig bc = new BrokerConfig();
        bc.setBrokerName(Stores.BROKER_NAME);
        BrokerStatsManager stats = new BrokerStatsManager("DefaultCluster", true);
        RocksDBMessageStore store = open(c, bc, stats);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("rocketmqVersion", "5.3.3 (git tag rocketmq-all-5.3.3)");
        out.put("seed", seed);
        Map<String, Object> cfg = new LinkedHashMap<>();
        cfg.put("storeType", c.getStoreType());
        cfg.put("mappedFileSizeCommitLog", c.getMappedFileSizeCommitLog());
        cfg.put("rocksdbCompressionType", c.getRocksdbCompressionType());
        cfg.put("bottomMostCompressionTypeForConsumeQueueStore", c.getBottomMostCompressionTypeForConsumeQueueStore());
        out.put("storeConfig", cfg);
        RocksDBConsumeQueueStore cqs = (RocksDBConsumeQueueStore) store.getQueueStore();
        Map<String, Object> cq = new LinkedHashMap<>();
        cq.put("commitLogMinOffset", store.getMinPhyOffset());
        cq.put("commitLogMaxOffset", store.getMaxPhyOffset());
        cq.put("maxPhyOffsetInConsumeQueue", cqs.getMaxPhyOffsetInConsumeQueue());
        Map<String, Object> queues = new TreeMap<>();
        List<Map<String, Object>> searches = new ArrayList<>();
        for (String[] t : TOPICS) {
            for (int q = 0; q < Integer.parseInt(t[1]); q++) {
                ConsumeQueueInterface logic = store.getConsumeQueue(t[0], q);
                Map<String, Object> one = new LinkedHashMap<>();
                long min = logic.getMinOffsetInQueue();
                long max = logic.getMaxOffsetInQueue();
                one.put("minOffset", min);
                one.put("maxOffset", max);
                one.put("maxPhyOffset", cqs.getMaxPhyOffsetInConsumeQueue(t[0], q));
                List<List<Long>> units = new ArrayList<>();
                List<Long> times = new ArrayList<>();
                for (long o = min; o < max; o++) {
                    ByteBuffer v = cqs.get(t[0], q, o);
                    units.add(List.of(o, v.getLong(0), (long) v.getInt(8), v.getLong(12), v.getLong(20)));
                    times.add(v.getLong(20));
                }
                one.put("units", units);
                queues.put(t[0] + "/" + q, one);
                if (!times.isEmpty()) {
                    long first = times.get(0);
                    long last = times.get(times.size() - 1);
                    long mid = times.get(times.size() / 2);
                    for (long ts : new long[] {first - 1000, first, first + 1, mid, mid + 1, last - 1, last, last + 1000}) {
                        for (BoundaryType b : BoundaryType.values()) {
                            Map<String, Object> s = new LinkedHashMap<>();
                            s.put("topic", t[0]);
                            s.put("queueId", q);
                            s.put("timestamp", ts);
                            s.put("boundary", b.name().toLowerCase());
                            s.put("offset", store.getOffsetInQueueByTime(t[0], q, ts, b));
                            searches.add(s);
                        }
                    }
                }
            }
        }
        cq.put("queues", queues);
        out.put("consumeQueue", cq);
        out.put("timeSearch", searches);

        BrokerController broker = new BrokerController(bc, c, store);
        Map<String, Object> conf = new LinkedHashMap<>();
        ConsumerOffsetManager json = new ConsumerOffsetManager(broker);
        json.load();
        Map<String, Object> co = new LinkedHashMap<>();
        co.put("jsonDataVersionCounter", json.getDataVersion().getCounter().get());
        co.put("jsonOffsetTable", table(json.getOffsetTable()));
        RocksDBConsumerOffsetManager offsets = new RocksDBConsumerOffsetManager(broker);
        co.put("loaded", offsets.load());
        co.put("kvDataVersionCounter", offsets.getDataVersion().getCounter().get());
        co.put("offsetTable", table(offsets.getOffsetTable()));
        offsets.stop();
        conf.put("consumerOffset", co);
        ConfigStorage rdb = new ConfigStorage(c);
        Map<String, Object> v2 = new LinkedHashMap<>();
        v2.put("started", rdb.start());
        ConsumerOffsetManagerV2 v2offsets = new ConsumerOffsetManagerV2(broker, rdb);
        v2.put("loaded", v2offsets.load());
        v2.put("dataVersionCounter", v2offsets.getDataVersion().getCounter().get());
        v2.put("offsetTable", table(v2offsets.getOffsetTable()));
        rdb.shutdown();
        conf.put("consumerOffsetV2", v2);
        PopConsumerRocksdbStore pop = new PopConsumerRocksdbStore(root + File.separator + "kvStore");
        List<Map<String, Object>> records = new ArrayList<>();
        if (pop.start()) {
            for (PopConsumerRecord r : pop.scanExpiredRecords(0, Long.MAX_VALUE, 1000)) {
                Map<String, Object> one = new LinkedHashMap<>();
                one.put("popTime", r.getPopTime());
                one.put("groupId", r.getGroupId());
                one.put("topicId", r.getTopicId());
                one.put("queueId", r.getQueueId());
                one.put("retryFlag", r.getRetryFlag());
                one.put("invisibleTime", r.getInvisibleTime());
                one.put("offset", r.getOffset());
                one.put("attemptTimes", r.getAttemptTimes());
                one.put("attemptId", r.getAttemptId());
                one.put("visibilityTimeout", r.getVisibilityTimeout());
                records.add(one);
            }
            pop.shutdown();
        }
        out.put("popState", records);
        RocksDBTopicConfigManager topics = new RocksDBTopicConfigManager(broker);
        Map<String, Object> tc = new LinkedHashMap<>();
        tc.put("loaded", topics.load());
        Map<String, Object> tt = new TreeMap<>();
        topics.getTopicConfigTable().forEach((k, v) -> {
            Map<String, Object> one = new LinkedHashMap<>();
            one.put("readQueueNums", v.getReadQueueNums());
            one.put("writeQueueNums", v.getWriteQueueNums());
            one.put("perm", v.getPerm());
            tt.put(k, one);
        });
        tc.put("topicConfigTable", tt);
        topics.stop();
        conf.put("topics", tc);
        RocksDBSubscriptionGroupManager groups = new RocksDBSubscriptionGroupManager(broker);
        Map<String, Object> gc = new LinkedHashMap<>();
        gc.put("loaded", groups.load());
        Map<String, Object> gt = new TreeMap<>();
        groups.getSubscriptionGroupTable().forEach((k, v) -> {
            Map<String, Object> one = new LinkedHashMap<>();
            one.put("retryMaxTimes", v.getRetryMaxTimes());
            one.put("consumeEnable", v.isConsumeEnable());
            gt.put(k, one);
        });
        gc.put("subscriptionGroupTable", gt);
        groups.stop();
        conf.put("subscriptionGroups", gc);
        out.put("config", conf);
        store.shutdown();
        stats.shutdown();
        return out;
    }

    static Map<String, Object> table(ConcurrentMap<String, ConcurrentMap<Integer, Long>> t) {
        Map<String, Object> out = new TreeMap<>();
        t.forEach((k, v) -> out.put(k, new TreeMap<>(v)));
        return out;
    }

    /** `rocksdb-read STORE`: what the real classes read from a copy of STORE, as one JSON object. */
    public static int run(String root) throws Exception {
        System.out.println(Json.write(read(root, 0)));
        return 0;
    }
}
