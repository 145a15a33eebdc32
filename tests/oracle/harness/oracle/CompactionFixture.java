/*
 * `compaction-store DIR [SEED]`: a 5.x store with two compaction topics (topic attribute
 * cleanup.policy=COMPACTION, written by the real TopicConfigManager) and an ordinary topic, through the real
 * DefaultMessageStore with enableCompaction (its default): the real ReputMessageService dispatches each record
 * of a compaction topic to its ConsumeQueue and, through CommitLogDispatcherCompaction -> CompactionService ->
 * CompactionStore.doDispatch, into compaction/compactionLog/<topic>/<queueId>/ and its SparseConsumeQueue in
 * compaction/compactionCq/ (5.3.3 store/.../kv/CompactionService.java:46-70, CompactionStore.java:172-178,
 * CompactionLog.java:377-429). Keys are overwritten several times, some records are tombstones (empty body),
 * a few carry no KEYS (CompactionLog.java:385: never put into the compaction log) and one carries a KEYS
 * string of two keys (the offset map hashes the whole string, CompactionLog.java:327/655/973). The real
 * compaction task (CompactionLog.doCompaction, what the compactionSchedule runs every
 * compactionScheduleInternal) runs twice, with more records put between, through CompactionProbe. The store is
 * then reopened (CompactionStore.load: every log's TopicPartitionLog.init, recover and sanityCheck) and
 * expect.json holds what the real classes read back: every commitlog record, per compaction queue the log and
 * CQ files, every CQ unit on disk, the SparseConsumeQueue's min/max, the store's getMessage at every offset
 * (routed to CompactionStore.getMessage, DefaultMessageStore.java:804-809), everything a consumer pulling from
 * offset 0 gets, the ConsumeQueue's min/max (what the broker's admin answers report), the position-checkpoint
 * (CompactionPositionMgr) and sanityCheck's verdict.
 */
package oracle;

import java.io.File;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import org.apache.rocketmq.broker.BrokerController;
import org.apache.rocketmq.broker.topic.TopicConfigManager;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.message.MessageAccessor;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageExtBrokerInner;
import org.apache.rocketmq.store.GetMessageResult;
import org.apache.rocketmq.store.PutMessageResult;
import org.apache.rocketmq.store.SelectMappedBufferResult;
import org.apache.rocketmq.store.config.MessageStoreConfig;
import org.apache.rocketmq.store.kv.CompactionLog;
import org.apache.rocketmq.store.kv.CompactionProbe;
import org.apache.rocketmq.store.kv.CompactionStore;
import org.apache.rocketmq.store.logfile.MappedFile;
import org.apache.rocketmq.store.queue.BatchConsumeQueue;
import org.apache.rocketmq.store.queue.SparseConsumeQueue;
import org.apache.rocketmq.store.stats.BrokerStatsManager;

public final class CompactionFixture {
    static final String TOPIC_A = "CompactTopicA";
    static final String TOPIC_B = "CompactTopicB";
    static final String PLAIN = "PlainTopic";
    static final String CLUSTER = "DefaultCluster";
    // 12 units a CQ file (rounded down to whole units, CompactionLog.java:106-108); the log file size follows
    // from it (getCompactionLogSize, CompactionLog.java:127-138): 5 * 552 -> (5 + 1) * 552 = 3312 bytes.
    static final int CQ_FILE_SIZE = 12 * BatchConsumeQueue.CQ_STORE_UNIT_SIZE;
    static final int LOG_FILE_SIZE_SETTING = 5 * CQ_FILE_SIZE;

    private CompactionFixture() {
    }

    static MessageStoreConfig config(String root, Geometry g) {
        MessageStoreConfig c = Stores.config(root, g);
        c.setEnableCompaction(true);
        c.setCompactionCqMappedFileSize(CQ_FILE_SIZE);
        c.setCompactionMappedFileSize(LOG_FILE_SIZE_SETTING);
        c.setMaxOffsetMapSize(1024 * 1024);
        c.setCompactionThreadNum(1);
        return c;
    }

    /** A broker of the fixture's settings over a store root: its configs and its TopicConfigManager (the
     * harness's BrokerController holder; topics.json not loaded yet). */
    record Broker(BrokerConfig bc, MessageStoreConfig msc, BrokerController b) {
        static Broker of(String root, Geometry g) {
            BrokerConfig bc = new BrokerConfig();
            bc.setBrokerName(Stores.BROKER_NAME);
            bc.setBrokerClusterName(CLUSTER);
            MessageStoreConfig msc = config(root, g);
            BrokerController b = new BrokerController(bc, msc, null);
            b.topicConfigManager = new TopicConfigManager(b);
            return new Broker(bc, msc, b);
        }

        boolean loadTopics() {
            return b.topicConfigManager.load();
        }

        Stores open(Geometry g) throws Exception {
            return Stores.open(msc, g, b.topicConfigManager.getTopicConfigTable(), bc,
                new BrokerStatsManager(CLUSTER, true));
        }
    }

    public static void write(String root, long seed) throws Exception {
        if (new File(root).exists()) {
            throw new IllegalStateException(root + " exists; the fixture is written into a new directory");
        }
        Random rnd = new Random(seed);
        Geometry g = new Geometry();
        Broker broker = Broker.of(root, g);
        MessageStoreConfig msc = broker.msc();
        BrokerController b = broker.b();
        if (!broker.loadTopics()) {
            throw new IllegalStateException("topics.json did not load");
        }
        for (String t : new String[] {TOPIC_A, TOPIC_B}) {
            int queues = t.equals(TOPIC_A) ? 2 : 1;
            TopicConfig tc = new TopicConfig(t, queues, queues, 6);
            Map<String, String> attrs = new HashMap<>();
            attrs.put("+cleanup.policy", "COMPACTION");  // "+": add, as mqadmin updateTopic sends it
            tc.setAttributes(attrs);
            b.topicConfigManager.updateTopicConfig(tc);
        }
        b.topicConfigManager.updateTopicConfig(new TopicConfig(PLAIN, 1, 1, 6));
        Stores s = broker.open(g);
        if (!s.loaded) {
            throw new IllegalStateException("fresh store did not load");
        }
        s.start();
        List<Map<String, Object>> events = new ArrayList<>();
        List<Map<String, Object>> compactions = new ArrayList<>();
        int[] counter = {0};
        round(s, rnd, counter, 70, events);
        s.waitDispatched();
        compactAll(s, "first", compactions);
        round(s, rnd, counter, 50, events);
        s.waitDispatched();
        compactAll(s, "second", compactions);
        round(s, rnd, counter, 12, events);  // after the last compaction: not compacted yet
        s.waitDispatched();
        s.shutdown();
        b.topicConfigManager.persist();

        // Reopen: what a broker restart reads from these files (CompactionStore.load -> CompactionLog.load).
        Stores r = broker.open(g);
        Map<String, Object> expect = new LinkedHashMap<>();
        expect.put("rocketmqVersion", "5.3.3 (git tag rocketmq-all-5.3.3)");
        expect.put("profile", "compaction");
        expect.put("seed", seed);
        Map<String, Object> config = new LinkedHashMap<>();
        config.put("mappedFileSizeCommitLog", g.commitLog);
        config.put("mappedFileSizeConsumeQueue", g.consumeQueue);
        config.put("maxHashSlotNum", g.hashSlots);
        config.put("maxIndexNum", g.indexNum);
        config.put("compactionCqMappedFileSize", CQ_FILE_SIZE);
        config.put("compactionMappedFileSize", LOG_FILE_SIZE_SETTING);
        config.put("brokerName", Stores.BROKER_NAME);
        expect.put("config", config);
        expect.put("loaded", r.loaded);
        if (!r.loaded) {
            throw new IllegalStateException("the store did not load again");
        }
        r.start();
        r.waitDispatched();
        expect.put("events", events);
        expect.put("compactions", compactions);
        expect.put("messages", ReadBack.messages(r.store, null));
        expect.put("compactionQueues", readQueues(r, root));
        expect.put("positionCheckpoint", positions(r, root));
        r.shutdown();
        ReadBack.checkpoint(root, expect);
        ReadBack.files(root, expect);
        Files.write(new File(root, "expect.json").toPath(), Json.write(expect).getBytes(StandardCharsets.UTF_8));
    }

    /** `compaction-read STORE`: on a copy of STORE, the store reopened with the fixture's settings; prints
     * the compaction queues, the position-checkpoint and whether it loaded (expect.json's fields). */
    public static int read(String storeArg) throws Exception {
        return read(storeArg, false, 0, 0L);
    }

    /** `compaction-run STORE [PUTS [SEED]]`: as `compaction-read`, after PUTS more puts (a round as the
     * fixture's, from SEED; `events` lists them) and one `doCompaction` of every compaction log (what the
     * compactionSchedule thread would run next); `compactions` lists the files before and after. */
    public static int read(String storeArg, boolean compactFirst, int puts, long seed) throws Exception {
        return Judge.onCopy(storeArg, (root, shown) -> {
            Geometry g = Geometry.of(root, new String[0]);
            Broker broker = Broker.of(root, g);
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("store", shown);
            out.put("topicsLoaded", broker.loadTopics());
            Stores r = broker.open(g);
            out.put("loaded", r.loaded);
            if (r.loaded) {
                r.start();
                r.waitDispatched();
                if (puts > 0) {
                    List<Map<String, Object>> events = new ArrayList<>();
                    round(r, new Random(seed), new int[] {100_000}, puts, events);
                    r.waitDispatched();
                    out.put("events", events);
                }
                if (compactFirst) {
                    List<Map<String, Object>> runs = new ArrayList<>();
                    compactAll(r, "next", runs);
                    out.put("compactions", runs);
                }
                out.put("compactionQueues", readQueues(r, root));
                out.put("positionCheckpoint", positions(r, root));
            }
            r.shutdown();
            out.put("clean", r.loaded);
            return out;
        });
    }

    /** `compaction-crash STORE`, in place (on a copy of a store like the fixture): the store opened and
     * started with the fixture's settings, then every compaction log that has a compaction due runs it up to
     * `replaceFiles` (CompactionProbe.compactUntilReplace: the kept records written into compacting/) and the
     * process halts there, as a broker killed mid-compaction: no shutdown, the abort file stays, the mapped
     * files hold what the compaction wrote. Prints the logs it compacted before halting. */
    public static int crash(String root) throws Exception {
        Geometry g = Geometry.of(root, new String[0]);
        Broker broker = Broker.of(root, g);
        if (!broker.loadTopics()) {
            throw new IllegalStateException("topics.json did not load");
        }
        Stores s = broker.open(g);
        if (!s.loaded) {
            throw new IllegalStateException("the store did not load");
        }
        s.start();
        s.waitDispatched();
        List<String> compacted = new ArrayList<>();
        for (Map.Entry<String, CompactionLog> e : CompactionProbe.logs(CompactionProbe.store(s.store)).entrySet()) {
            if (CompactionProbe.compactUntilReplace(e.getValue())) {
                compacted.add(e.getKey());
            }
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("store", root);
        out.put("compactedUntilReplace", compacted);
        System.out.println(Json.write(out));
        System.out.flush();
        Runtime.getRuntime().halt(0);  // killed: no shutdown, no flush beyond what the page cache holds
        return 0;
    }

    /** One batch of puts: per compaction queue, keys from a small set overwritten, tombstones, no-key records. */
    static void round(Stores s, Random rnd, int[] counter, int n, List<Map<String, Object>> events) {
        for (int k = 0; k < n; k++) {
            int i = counter[0]++;
            int pick = rnd.nextInt(10);
            String topic = pick < 6 ? TOPIC_A : pick < 9 ? TOPIC_B : PLAIN;
            int queueId = topic.equals(TOPIC_A) ? rnd.nextInt(2) : 0;
            String keys = "user-" + rnd.nextInt(7);
            int bodyLen = 40 + rnd.nextInt(120);
            int kind = rnd.nextInt(20);
            if (kind == 0) {
                keys = null;  // no KEYS: dispatched to the ConsumeQueue, never to the compaction log
            } else if (kind == 1) {
                keys = "user-1 user-2";  // two keys in one KEYS string: one offset-map key
            } else if (kind < 4) {
                bodyLen = 0;  // a tombstone
            }
            MessageExtBrokerInner m = message(rnd, i, topic, queueId, keys, bodyLen);
            PutMessageResult res = s.store.putMessage(m);
            if (!res.isOk()) {
                throw new IllegalStateException("put failed: " + res);
            }
            Map<String, Object> e = new LinkedHashMap<>();
            e.put("topic", topic);
            e.put("queueId", queueId);
            e.put("keys", keys);
            e.put("bodyLength", bodyLen);
            e.put("queueOffset", res.getAppendMessageResult().getLogicsOffset());
            e.put("wroteOffset", res.getAppendMessageResult().getWroteOffset());
            events.add(e);
        }
    }

    static MessageExtBrokerInner message(Random rnd, int i, String topic, int queueId, String keys, int bodyLen) {
        MessageExtBrokerInner m = new MessageExtBrokerInner();
        m.setTopic(topic);
        m.setQueueId(queueId);
        byte[] body = new byte[bodyLen];
        for (int k = 0; k < body.length; k++) {
            body[k] = (byte) ('a' + rnd.nextInt(26));
        }
        m.setBody(body);
        m.setBornTimestamp(TimerFixture.BORN_BASE + i * 1000L);
        m.setBornHost(new InetSocketAddress("192.168.1.100", 40000 + i % 7));
        m.setStoreHost(new InetSocketAddress("192.168.0.10", 10911));
        String tags = "tag" + (i % 3);
        Map<String, String> p = new LinkedHashMap<>();
        if (keys != null) {
            p.put(MessageConst.PROPERTY_KEYS, keys);
        }
        p.put(MessageConst.PROPERTY_TAGS, tags);
        p.put(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX, String.format("%016X%016X", rnd.nextLong(), (long) i));
        p.put(MessageConst.PROPERTY_CLUSTER, CLUSTER);
        MessageAccessor.setProperties(m, MessageDecoder.string2messageProperties(MessageDecoder.messageProperties2String(p)));
        m.setPropertiesString(MessageDecoder.messageProperties2String(m.getProperties()));
        m.setTagsCode(MessageExtBrokerInner.tagsString2tagsCode(tags));
        return m;
    }

    static void compactAll(Stores s, String name, List<Map<String, Object>> out) throws Exception {
        CompactionStore cs = CompactionProbe.store(s.store);
        for (Map.Entry<String, CompactionLog> e : CompactionProbe.logs(cs).entrySet()) {
            List<String> before = names(e.getValue().getLog().getMappedFiles());
            CompactionProbe.compact(e.getValue());
            Map<String, Object> c = new LinkedHashMap<>();
            c.put("run", name);
            c.put("log", e.getKey());
            c.put("filesBefore", before);
            c.put("filesAfter", names(e.getValue().getLog().getMappedFiles()));
            c.put("positionAfter", cs.getPositionMgr().getQueueOffsetMap().get(e.getKey()));
            out.add(c);
        }
    }

    static List<String> names(List<MappedFile> files) {
        List<String> out = new ArrayList<>();
        for (MappedFile mf : files) {
            out.add(mf.getFile().getName());
        }
        return out;
    }

    static Map<String, Object> positions(Stores r, String root) throws Exception {
        Map<String, Object> p = new LinkedHashMap<>();
        File f = new File(root, "compaction/position-checkpoint");
        p.put("text", f.exists() ? new String(Files.readAllBytes(f.toPath()), StandardCharsets.UTF_8) : null);
        p.put("queueOffsetMap", new TreeMap<>(CompactionProbe.store(r.store).getPositionMgr().getQueueOffsetMap()));
        return p;
    }

    static Map<String, Object> readQueues(Stores r, String root) throws Exception {
        Map<String, Object> out = new TreeMap<>();
        CompactionStore cs = CompactionProbe.store(r.store);
        for (Map.Entry<String, CompactionLog> e : CompactionProbe.logs(cs).entrySet()) {
            CompactionLog log = e.getValue();
            SparseConsumeQueue cq = CompactionProbe.cq(log);
            String topic = cq.getTopic();
            int queueId = cq.getQueueId();
            Map<String, Object> q = new LinkedHashMap<>();
            q.put("topic", topic);
            q.put("queueId", queueId);
            q.put("sanityCheck", CompactionProbe.sanityCheck(log));
            List<Object> logFiles = new ArrayList<>();
            for (MappedFile mf : log.getLog().getMappedFiles()) {
                logFiles.add(List.of(mf.getFile().getName(), mf.getFileSize(), mf.getWrotePosition()));
            }
            q.put("logFiles[name,fileSize,wrotePosition]", logFiles);
            q.put("logMaxOffset", log.getLog().getMaxOffset());
            List<Object> cqFiles = new ArrayList<>();
            List<Object> units = new ArrayList<>();
            for (MappedFile mf : cq.getMappedFileQueue().getMappedFiles()) {
                cqFiles.add(List.of(mf.getFile().getName(), mf.getFileSize(), mf.getReadPosition()));
                ByteBuffer bb = ByteBuffer.wrap(Files.readAllBytes(mf.getFile().toPath()));
                for (int pos = 0; pos + BatchConsumeQueue.CQ_STORE_UNIT_SIZE <= bb.capacity();
                    pos += BatchConsumeQueue.CQ_STORE_UNIT_SIZE) {
                    if (bb.getLong(pos) == 0 && bb.getInt(pos + 8) == 0 && bb.getLong(pos + 28) == 0
                        && bb.getShort(pos + 36) == 0) {
                        break;  // the zeroed rest of the file
                    }
                    units.add(List.of(mf.getFile().getName(), pos, bb.getLong(pos), bb.getInt(pos + 8),
                        bb.getLong(pos + 12), bb.getLong(pos + 20), bb.getLong(pos + 28), (int) bb.getShort(pos + 36),
                        bb.getInt(pos + 38), bb.getInt(pos + 42)));
                }
            }
            q.put("cqFiles[name,fileSize,readPosition]", cqFiles);
            q.put("cqUnitsOnDisk[file,pos,phyOffset,size,tagsCode,storeTime,msgBaseOffset,batchSize,compactedOffset,"
                + "reserved]", units);
            q.put("minOffset", cq.getMinOffsetInQueue());
            q.put("maxOffset", cq.getMaxOffsetInQueue());
            q.put("maxPhyOffsetInLog", cq.getMaxPhyOffsetInLog());
            q.put("consumeQueueMinOffset", r.store.getMinOffsetInQueue(topic, queueId));
            q.put("consumeQueueMaxOffset", r.store.getMaxOffsetInQueue(topic, queueId));
            long max = cq.getMaxOffsetInQueue();
            List<Object> gets = new ArrayList<>();
            for (long o = -1; o <= max + 1; o++) {
                gets.add(get(r, topic, queueId, o, 1));
            }
            q.put("getMessage", gets);
            // What a consumer pulling from offset 0 gets, pull after pull (32 a pull) until nothing is found.
            List<Object> consumed = new ArrayList<>();
            long next = 0;
            for (int pulls = 0; pulls < 1000; pulls++) {
                GetMessageResult g = r.store.getMessage("oracle-group", topic, queueId, next, 32, null);
                try {
                    for (int k = 0; k < g.getMessageMapedList().size(); k++) {
                        consumed.add(describe(g.getMessageMapedList().get(k), g.getMessageQueueOffset().get(k)));
                    }
                    if (g.getMessageCount() == 0 || g.getNextBeginOffset() == next) {
                        break;
                    }
                    next = g.getNextBeginOffset();
                } finally {
                    g.release();
                }
            }
            q.put("consumed", consumed);
            out.put(topic + "/" + queueId, q);
        }
        return out;
    }

    static Map<String, Object> get(Stores r, String topic, int queueId, long offset, int num) {
        GetMessageResult g = r.store.getMessage("oracle-group", topic, queueId, offset, num, null);
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("offset", offset);
        m.put("status", g.getStatus().name());
        m.put("nextBeginOffset", g.getNextBeginOffset());
        m.put("minOffset", g.getMinOffset());
        m.put("maxOffset", g.getMaxOffset());
        List<Object> msgs = new ArrayList<>();
        for (int k = 0; k < g.getMessageMapedList().size(); k++) {
            msgs.add(describe(g.getMessageMapedList().get(k), g.getMessageQueueOffset().get(k)));
        }
        m.put("messages", msgs);
        g.release();
        return m;
    }

    /** One served buffer: where it is in the compaction log and what the client decodes from it. */
    static Map<String, Object> describe(SelectMappedBufferResult sb, long queueOffset) {
        ByteBuffer bb = sb.getByteBuffer().slice();
        MessageExt x = MessageDecoder.decode(bb, true, false, false);
        Map<String, Object> d = new LinkedHashMap<>();
        d.put("queueOffset", queueOffset);
        d.put("logOffset", sb.getStartOffset());
        d.put("size", sb.getSize());
        if (x == null) {  // the bytes served are no message the client can decode
            d.put("decoded", false);
            return d;
        }
        d.put("recordQueueOffset", x.getQueueOffset());
        d.put("recordPhysicalOffset", x.getCommitLogOffset());
        d.put("keys", x.getKeys());
        d.put("bodyLength", x.getBody() == null ? 0 : x.getBody().length);
        d.put("uniqKey", x.getProperty(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX));
        d.put("storeTimestamp", x.getStoreTimestamp());
        return d;
    }
}
