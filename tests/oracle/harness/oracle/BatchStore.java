/*
 * `batchcq-store DIR [SEED]`: a 5.x store with BatchCQ topics (topic attribute queue.type=BatchCQ), written
 * by the real DefaultMessageStore. Inner-batch records are built as SendMessageProcessor.sendBatchMessage
 * builds them for a BatchCQ topic (imitated: it needs the request context): the body is the client's
 * MessageDecoder.encodeMessages of the inner messages, sysFlag gains NEED_UNWRAP and INNER_BATCH, INNER_NUM
 * is the count of inner messages; then the real putMessage assigns the queue offset (INNER_BASE) and the
 * real ReputMessageService dispatches a BatchConsumeQueue unit per record. Plain (single) messages go to a
 * BatchCQ topic too (units of batch size 1), and to an ordinary topic beside them. topics.json is written by
 * the real TopicConfigManager. The store is then reopened (load + recover + start) and expect.json holds
 * what the real classes read back: every record, every BatchCQ unit (raw fields and CqUnit), min/max
 * offsets, get(offset) for every offset, getOffsetInQueueByTime (LOWER and UPPER) and getMessage answers.
 */
package oracle;

import java.io.File;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import org.apache.rocketmq.broker.BrokerController;
import org.apache.rocketmq.broker.topic.TopicConfigManager;
import org.apache.rocketmq.common.BoundaryType;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.attribute.CQType;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageAccessor;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExtBatch;
import org.apache.rocketmq.common.message.MessageExtBrokerInner;
import org.apache.rocketmq.common.sysflag.MessageSysFlag;
import org.apache.rocketmq.store.GetMessageResult;
import org.apache.rocketmq.store.PutMessageResult;
import org.apache.rocketmq.store.SelectMappedBufferResult;
import org.apache.rocketmq.store.config.MessageStoreConfig;
import org.apache.rocketmq.store.logfile.MappedFile;
import org.apache.rocketmq.store.queue.BatchConsumeQueue;
import org.apache.rocketmq.store.queue.ConsumeQueueInterface;
import org.apache.rocketmq.store.queue.CqUnit;
import org.apache.rocketmq.store.stats.BrokerStatsManager;

public final class BatchStore {
    static final String BATCH_A = "BatchTopicA";
    static final String BATCH_B = "BatchTopicB";
    static final String PLAIN = "PlainTopic";
    static final String CLUSTER = "DefaultCluster";
    // 8 units a file: the queues span several files, so the searches cross file boundaries.
    static final int BCQ_FILE_SIZE = 8 * BatchConsumeQueue.CQ_STORE_UNIT_SIZE;

    private BatchStore() {
    }

    public static void write(String root, long seed) throws Exception {
        if (new File(root).exists()) {
            throw new IllegalStateException(root + " exists; the fixture is written into a new directory");
        }
        Random rnd = new Random(seed);
        Geometry g = new Geometry();
        BrokerConfig bc = new BrokerConfig();
        bc.setBrokerName(Stores.BROKER_NAME);
        bc.setBrokerClusterName(CLUSTER);
        MessageStoreConfig msc = Stores.config(root, g);
        msc.setMapperFileSizeBatchConsumeQueue(BCQ_FILE_SIZE);
        BrokerStatsManager stats = new BrokerStatsManager(CLUSTER, true);
        BrokerController b = new BrokerController(bc, msc, null);
        b.topicConfigManager = new TopicConfigManager(b);
        if (!b.topicConfigManager.load()) {
            throw new IllegalStateException("topics.json did not load");
        }
        for (String t : new String[] {BATCH_A, BATCH_B}) {
            TopicConfig tc = new TopicConfig(t, t.equals(BATCH_A) ? 2 : 1, t.equals(BATCH_A) ? 2 : 1, 6);
            Map<String, String> attrs = new HashMap<>();
            attrs.put("+queue.type", CQType.BatchCQ.name());  // "+": add, as mqadmin updateTopic sends it
            tc.setAttributes(attrs);
            b.topicConfigManager.updateTopicConfig(tc);
        }
        b.topicConfigManager.updateTopicConfig(new TopicConfig(PLAIN, 2, 2, 6));
        Stores s = Stores.open(msc, g, b.topicConfigManager.getTopicConfigTable(), bc, stats);
        if (!s.loaded) {
            throw new IllegalStateException("fresh store did not load");
        }
        s.start();
        List<Map<String, Object>> events = new ArrayList<>();
        int i = 0;
        for (int round = 0; round < 60; round++) {
            String topic = round % 4 == 3 ? BATCH_B : BATCH_A;
            int queueId = topic.equals(BATCH_A) ? rnd.nextInt(2) : 0;
            if (round % 5 == 4) {
                put(s, single(rnd, i++, topic, queueId), events);  // a plain message on a BatchCQ topic
            } else {
                int n = 1 + rnd.nextInt(round % 7 == 0 ? 40 : 9);
                put(s, innerBatch(rnd, i, topic, queueId, n, round % 3 != 0), events);
                i += n;
            }
            put(s, single(rnd, i++, PLAIN, round % 2), events);
            if (round % 6 != 5) {  // now and then two puts in one millisecond: equal store times
                Thread.sleep(2 + rnd.nextInt(4));
            }
        }
        s.waitDispatched();
        s.shutdown();
        b.topicConfigManager.persist();

        // Reopen: what a broker restart reads from these files.
        BrokerStatsManager stats2 = new BrokerStatsManager(CLUSTER, true);
        Stores r = Stores.open(msc, g, b.topicConfigManager.getTopicConfigTable(), bc, stats2);
        if (!r.loaded) {
            throw new IllegalStateException("the store did not load again");
        }
        r.start();
        r.waitDispatched();
        Map<String, Object> expect = new LinkedHashMap<>();
        expect.put("rocketmqVersion", "5.3.3 (git tag rocketmq-all-5.3.3)");
        expect.put("profile", "batchcq");
        expect.put("seed", seed);
        Map<String, Object> config = new LinkedHashMap<>();
        config.put("mappedFileSizeCommitLog", g.commitLog);
        config.put("mappedFileSizeConsumeQueue", g.consumeQueue);
        config.put("mapperFileSizeBatchConsumeQueue", BCQ_FILE_SIZE);
        config.put("maxHashSlotNum", g.hashSlots);
        config.put("maxIndexNum", g.indexNum);
        config.put("brokerName", Stores.BROKER_NAME);
        expect.put("config", config);
        expect.put("events", events);
        List<Map<String, Object>> messages = ReadBack.messages(r.store, null);
        for (Map<String, Object> m : messages) {  // the dispatch's batch fields (setBatchSizeIfNeeded)
            if ("MESSAGE".equals(m.get("kind"))) {
                ByteBuffer bb = r.store.getCommitLog().getMessage((Long) m.get("physicalOffset"),
                    (Integer) m.get("totalSize")).getByteBuffer();
                org.apache.rocketmq.store.DispatchRequest d =
                    r.store.getCommitLog().checkMessageAndReturnSize(bb, true, false, true);
                @SuppressWarnings("unchecked")
                Map<String, Object> dm = (Map<String, Object>) m.get("dispatch");
                dm.put("msgBaseOffset", d.getMsgBaseOffset());
                dm.put("batchSize", (int) d.getBatchSize());
                bb.position(0);
                org.apache.rocketmq.common.message.MessageExt ext = MessageDecoder.decode(bb, true, false, false);
                if (MessageSysFlag.check(ext.getSysFlag(), MessageSysFlag.INNER_BATCH_FLAG)) {
                    // the consumer's unwrap (PullAPIWrapper -> MessageDecoder.decodeMessage(messageExt, list))
                    List<org.apache.rocketmq.common.message.MessageExt> inner = new ArrayList<>();
                    MessageDecoder.decodeMessage(ext, inner);
                    List<Object> rows = new ArrayList<>();
                    for (org.apache.rocketmq.common.message.MessageExt x : inner) {
                        Map<String, Object> row = new LinkedHashMap<>();
                        row.put("queueOffset", x.getQueueOffset());
                        row.put("flag", x.getFlag());
                        row.put("properties", new TreeMap<>(x.getProperties()));
                        row.put("bodyBase64", java.util.Base64.getEncoder().encodeToString(x.getBody()));
                        rows.add(row);
                    }
                    m.put("innerMessages", rows);
                }
            }
        }
        expect.put("messages", messages);
        Map<String, Object> plain = new TreeMap<>();
        Map<String, Object> batch = new TreeMap<>();
        r.store.getConsumeQueueTable().forEach((topic, queues) -> queues.forEach((qid, cq) -> {
            if (cq instanceof BatchConsumeQueue) {
                batch.put(topic + "/" + qid, batchQueue(r, (BatchConsumeQueue) cq));
            } else {
                plain.put(topic + "/" + qid, ReadBack.consumeQueue(cq));
            }
        }));
        expect.put("consumeQueues", plain);
        expect.put("batchConsumeQueues", batch);
        expect.put("minPhyOffset", r.store.getMinPhyOffset());
        expect.put("maxPhyOffset", r.store.getMaxPhyOffset());
        r.shutdown();
        ReadBack.checkpoint(root, expect);
        ReadBack.files(root, expect);
        java.nio.file.Files.write(new File(root, "expect.json").toPath(),
            Json.write(expect).getBytes(StandardCharsets.UTF_8));
    }

    /**
     * `batchcq-load STORE`: on a copy of STORE, the real broker's start as far as the store goes: topics.json
     * through the real TopicConfigManager (the load checks each queue directory's type against it), the
     * BatchCQ file size from the files, `load` (recovery) and `start`; prints whether it loaded and every
     * BatchConsumeQueue as `batchQueue` reads it (the same fields as expect.json).
     */
    public static int load(String storeArg) throws Exception {
        return Judge.onCopy(storeArg, (root, shown) -> {
            Geometry g = Geometry.of(root, new String[0]);
            BrokerConfig bc = new BrokerConfig();
            bc.setBrokerName(Stores.BROKER_NAME);
            MessageStoreConfig msc = Stores.config(root, g);
            File[] topics = new File(root, "batchconsumequeue").listFiles();
            for (File t : topics == null ? new File[0] : topics) {
                File[] queues = t.listFiles();
                for (File q : queues == null ? new File[0] : queues) {
                    File[] files = q.listFiles();
                    if (files != null && files.length > 0) {
                        msc.setMapperFileSizeBatchConsumeQueue((int) files[0].length());
                    }
                }
            }
            BrokerStatsManager stats = new BrokerStatsManager(CLUSTER, true);
            BrokerController b = new BrokerController(bc, msc, null);
            b.topicConfigManager = new TopicConfigManager(b);
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("store", shown);
            out.put("topicsLoaded", b.topicConfigManager.load());
            Stores r;
            try {
                r = Stores.open(msc, g, b.topicConfigManager.getTopicConfigTable(), bc, stats);
            } catch (RuntimeException e) {
                out.put("loaded", false);
                out.put("error", e.getMessage());
                out.put("clean", false);
                return out;
            }
            out.put("loaded", r.loaded);
            r.start();
            r.waitDispatched();
            Map<String, Object> batch = new TreeMap<>();
            r.store.getConsumeQueueTable().forEach((topic, queues) -> queues.forEach((qid, cq) -> {
                if (cq instanceof BatchConsumeQueue) {
                    batch.put(topic + "/" + qid, batchQueue(r, (BatchConsumeQueue) cq));
                }
            }));
            out.put("batchConsumeQueues", batch);
            r.shutdown();
            out.put("clean", r.loaded);
            return out;
        });
    }

    /** One BatchConsumeQueue as the real class reads it. */
    static Map<String, Object> batchQueue(Stores r, BatchConsumeQueue cq) {
        Map<String, Object> q = new LinkedHashMap<>();
        q.put("topic", cq.getTopic());
        q.put("queueId", cq.getQueueId());
        q.put("minOffset", cq.getMinOffsetInQueue());
        q.put("maxOffset", cq.getMaxOffsetInQueue());
        q.put("minLogicOffset", cq.getMinLogicOffset());
        q.put("maxPhysicOffset", cq.getMaxPhysicOffset());
        q.put("messageTotalInQueue", cq.getMessageTotalInQueue());
        List<Object> files = new ArrayList<>();
        for (MappedFile mf : cq.getMappedFileQueue().getMappedFiles()) {
            files.add(List.of(mf.getFileFromOffset(), mf.getReadPosition()));
        }
        q.put("files[fromOffset,readPosition]", files);
        // Every unit, walked as getMessage walks: get(offset), then offset = base + batch size.
        List<Object> units = new ArrayList<>();
        List<Long> times = new ArrayList<>();
        for (long o = cq.getMinOffsetInQueue(); o < cq.getMaxOffsetInQueue(); ) {
            CqUnit u = cq.get(o);
            SelectMappedBufferResult sbr = cq.getBatchMsgIndexBuffer(o);
            ByteBuffer bb = sbr.getByteBuffer();
            long storeTime = bb.getLong(BatchConsumeQueue.MSG_STORE_TIME_OFFSET_INDEX);
            units.add(List.of(bb.getLong(0), bb.getInt(8), bb.getLong(BatchConsumeQueue.MSG_TAG_OFFSET_INDEX),
                storeTime, bb.getLong(BatchConsumeQueue.MSG_BASE_OFFSET_INDEX),
                (int) bb.getShort(BatchConsumeQueue.MSG_BATCH_SIZE_INDEX),
                bb.getInt(BatchConsumeQueue.MSG_COMPACT_OFFSET_INDEX), bb.getInt(42),
                u.getQueueOffset(), (int) u.getBatchNum(), u.getCompactedOffset()));
            sbr.release();
            times.add(storeTime);
            o = u.getQueueOffset() + u.getBatchNum();
        }
        q.put("units[phyOffset,size,tagsCode,storeTime,msgBaseOffset,batchSize,compactedOffset,reserved,"
            + "cqUnit.queueOffset,cqUnit.batchNum,cqUnit.compactedOffset]", units);
        // get(offset) for every offset, and a few outside: the base offset of the unit it returns (null: none).
        List<Object> gets = new ArrayList<>();
        for (long o = -1; o <= cq.getMaxOffsetInQueue() + 1; o++) {
            CqUnit u = cq.get(o);
            gets.add(List.of(o, u == null ? -1L : u.getQueueOffset()));
        }
        q.put("get[offset,unitBaseOffsetOrMinus1]", gets);
        List<Object> byTime = new ArrayList<>();
        List<Long> probes = new ArrayList<>();
        if (!times.isEmpty()) {
            probes.add(times.get(0) - 1000);
            probes.add(times.get(times.size() - 1) + 1000);
        }
        for (long t : times) {
            probes.add(t - 1);
            probes.add(t);
            probes.add(t + 1);
        }
        for (long t : new java.util.TreeSet<>(probes)) {
            byTime.add(List.of(t,
                cq.getOffsetInQueueByTime(t, BoundaryType.LOWER), cq.getOffsetInQueueByTime(t, BoundaryType.UPPER),
                r.store.getOffsetInQueueByTime(cq.getTopic(), cq.getQueueId(), t, BoundaryType.LOWER),
                r.store.getOffsetInQueueByTime(cq.getTopic(), cq.getQueueId(), t, BoundaryType.UPPER)));
        }
        q.put("byTime[timestamp,cqLower,cqUpper,storeLower,storeUpper]", byTime);
        List<Object> gets2 = new ArrayList<>();
        long max = cq.getMaxOffsetInQueue();
        for (long o : new long[] {0, 1, max / 2, max - 1, max, max + 5}) {
            for (int num : new int[] {1, 32}) {
                GetMessageResult g = r.store.getMessage("oracle-group", cq.getTopic(), cq.getQueueId(), o, num, null);
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("offset", o);
                m.put("maxMsgNums", num);
                m.put("status", g.getStatus().name());
                m.put("nextBeginOffset", g.getNextBeginOffset());
                m.put("minOffset", g.getMinOffset());
                m.put("maxOffset", g.getMaxOffset());
                m.put("messageCount", g.getMessageCount());
                List<Object> bufs = new ArrayList<>();
                for (int k = 0; k < g.getMessageMapedList().size(); k++) {
                    SelectMappedBufferResult sb = g.getMessageMapedList().get(k);
                    bufs.add(List.of(g.getMessageQueueOffset().get(k), sb.getStartOffset(), sb.getSize()));
                }
                m.put("buffers[queueOffset,phyOffset,size]", bufs);
                g.release();
                gets2.add(m);
            }
        }
        q.put("getMessage", gets2);
        return q;
    }

    static Message inner(Random rnd, int i, String topic) {
        Message m = new Message();
        m.setTopic(topic);
        byte[] body = new byte[20 + rnd.nextInt(120)];
        for (int k = 0; k < body.length; k++) {
            body[k] = (byte) ('a' + rnd.nextInt(26));
        }
        m.setBody(body);
        m.setTags("tag" + (i % 3));
        m.setKeys("key-" + i);
        MessageAccessor.putProperty(m, MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
            String.format("%016X%016X", rnd.nextLong(), (long) i));
        return m;
    }

    /** SendMessageProcessor.sendBatchMessage for a BatchCQ topic with a uniq id (imitated): one record. */
    static MessageExtBrokerInner innerBatch(Random rnd, int first, String topic, int queueId, int n, boolean tags) {
        List<Message> msgs = new ArrayList<>();
        for (int k = 0; k < n; k++) {
            msgs.add(inner(rnd, first + k, topic));
        }
        MessageExtBatch b = new MessageExtBatch();
        b.setTopic(topic);
        b.setQueueId(queueId);
        Map<String, String> p = new LinkedHashMap<>();  // the producer's batch properties, as on the wire
        p.put(MessageConst.PROPERTY_WAIT_STORE_MSG_OK, "true");
        if (tags) {
            p.put(MessageConst.PROPERTY_TAGS, "batch" + (first % 2));
        }
        p.put(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX, String.format("%016X%016X", rnd.nextLong(), (long) first));
        MessageAccessor.setProperties(b, MessageDecoder.string2messageProperties(MessageDecoder.messageProperties2String(p)));
        b.setBody(MessageDecoder.encodeMessages(msgs));
        b.setBornTimestamp(TimerFixture.BORN_BASE + first * 1000L);
        b.setBornHost(new InetSocketAddress("192.168.1.100", 40000 + first % 7));
        b.setStoreHost(new InetSocketAddress("192.168.0.10", 10911));
        MessageAccessor.putProperty(b, MessageConst.PROPERTY_CLUSTER, CLUSTER);
        b.setSysFlag(b.getSysFlag() | MessageSysFlag.NEED_UNWRAP_FLAG | MessageSysFlag.INNER_BATCH_FLAG);
        b.setInnerBatch(true);
        int innerNum = MessageDecoder.countInnerMsgNum(ByteBuffer.wrap(b.getBody()));
        MessageAccessor.putProperty(b, MessageConst.PROPERTY_INNER_NUM, String.valueOf(innerNum));
        b.setPropertiesString(MessageDecoder.messageProperties2String(b.getProperties()));
        return b;
    }

    static MessageExtBrokerInner single(Random rnd, int i, String topic, int queueId) {
        return TimerFixture.message(rnd, i, topic, queueId, 30, 200, Map.of());
    }

    static void put(Stores s, MessageExtBrokerInner m, List<Map<String, Object>> events) {
        PutMessageResult r = s.store.putMessage(m);
        if (!r.isOk()) {
            throw new IllegalStateException("put failed: " + r);
        }
        Map<String, Object> e = new LinkedHashMap<>();
        e.put("topic", m.getTopic());
        e.put("queueId", m.getQueueId());
        e.put("innerBatch", m instanceof MessageExtBatch);
        e.put("innerNum", m.getProperty(MessageConst.PROPERTY_INNER_NUM));
        e.put("wroteOffset", r.getAppendMessageResult().getWroteOffset());
        e.put("wroteBytes", r.getAppendMessageResult().getWroteBytes());
        e.put("queueOffset", r.getAppendMessageResult().getLogicsOffset());
        e.put("msgNum", r.getAppendMessageResult().getMsgNum());
        events.add(e);
    }
}
