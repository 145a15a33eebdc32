/*
 * `tiered-store DIR [SEED]`: a 5.x broker store with the real tiered storage plugin in front of it - 5.3.3's
 * TieredMessageStore (tieredstore module) over the real DefaultMessageStore, as the broker builds it when
 * messageStorePlugIn names it (BrokerController.initializeMessageStore -> MessageStoreFactory.build ->
 * new TieredMessageStore(MessageStorePluginContext, next)), with the POSIX provider
 * (tieredBackendServiceProvider=org.apache.rocketmq.tieredstore.provider.PosixFileSegment) writing under
 * DIR/tiered, beside the store DIR/store, and the default metadata store (DefaultMetadataStore:
 * DIR/store/config/tieredStoreMetadata.json). expect.json goes to DIR.
 *
 * Messages with keys go into three queues (two topics) in rounds; after each round the real dispatcher
 * (MessageStoreDispatcherImpl.doScheduleDispatch, forced as the plugin's own tests do, tieredStoreGroupCommit
 * off) copies every new message from the local commitlog into the queue's flat files: COMMIT_LOG (the message
 * bytes as stored) and CONSUME_QUEUE (20-byte units pointing into that per-queue log), several segments each
 * (tieredStoreCommitLogMaxSize / tieredStoreConsumeQueueMaxSize are small). Then the local store's own
 * retention runs - the broker's CleanCommitLogService, CorrectLogicOffsetService and CleanConsumeQueueService
 * (package-private inner services of DefaultMessageStore, called through reflection as `clean` does) with
 * deleteWhen = this hour, after the commitlog files but the newest were given a last-modified time older than
 * fileReservedTime (what 72 hours of age would do) - so the oldest offsets of every queue are only in the
 * tiered tree. expect.json holds what the real classes answer then: per queue the local min/max
 * (DefaultMessageStore), the plugin's min/max (TieredMessageStore.getMinOffsetInQueue/getMaxOffsetInQueue),
 * the flat file's ranges (FlatMessageFile.getConsumeQueueMinOffset/CommitOffset, commit log min/commit offset),
 * its segments; getMessage at every offset (which store served it, status, the message's ids, keys, body CRC);
 * and the metadata store's contents (topics, queues, file segments) as it persisted them at shutdown.
 *
 * Caffeine (the fetcher's read-ahead cache) is a stand-in in placeholders5: a map, no file is touched by it.
 */
package oracle;

import java.io.File;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Calendar;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageExtBrokerInner;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.logging.org.slf4j.LoggerFactory;
import org.apache.rocketmq.remoting.Configuration;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.common.BoundaryType;
import org.apache.rocketmq.store.GetMessageResult;
import org.apache.rocketmq.store.QueryMessageResult;
import org.apache.rocketmq.store.PutMessageResult;
import org.apache.rocketmq.store.config.MessageStoreConfig;
import org.apache.rocketmq.store.logfile.MappedFile;
import org.apache.rocketmq.store.plugin.MessageStorePluginContext;
import org.apache.rocketmq.store.stats.BrokerStatsManager;
import org.apache.rocketmq.tieredstore.TieredMessageStore;
import org.apache.rocketmq.tieredstore.common.FileSegmentType;
import org.apache.rocketmq.tieredstore.file.FlatMessageFile;
import org.apache.rocketmq.tieredstore.metadata.MetadataStore;
import org.apache.rocketmq.tieredstore.core.MessageStoreDispatcherImpl;
import org.apache.rocketmq.tieredstore.metadata.DefaultMetadataStore;
import org.apache.rocketmq.tieredstore.util.MessageFormatUtil;
import org.apache.rocketmq.tieredstore.util.MessageStoreUtil;

public final class TieredStore {
    static final String CLUSTER = "DefaultCluster";
    static final String TOPIC_A = "TieredTopicA";  // two queues
    static final String TOPIC_B = "TieredTopicB";  // one queue
    static final String GROUP = "tieredGroup";
    static final int COMMIT_LOG_FILE = 16 * 1024;
    static final int CQ_FILE = 20 * 30;
    static final long TIERED_COMMIT_LOG_SEGMENT = 6 * 1024;
    static final long TIERED_CQ_SEGMENT = 20 * 16;

    private TieredStore() {
    }

    static Properties tieredProperties(String dir) {
        Properties p = new Properties();
        p.setProperty("tieredStoreFilePath", dir + File.separator + "tiered");
        p.setProperty("tieredBackendServiceProvider", "org.apache.rocketmq.tieredstore.provider.PosixFileSegment");
        p.setProperty("tieredStoreCommitLogMaxSize", Long.toString(TIERED_COMMIT_LOG_SEGMENT));
        p.setProperty("tieredStoreConsumeQueueMaxSize", Long.toString(TIERED_CQ_SEGMENT));
        p.setProperty("tieredStoreGroupCommit", "false");
        p.setProperty("tieredStoreIndexFileMaxHashSlotNum", "64");
        p.setProperty("tieredStoreIndexFileMaxIndexNum", "256");
        return p;
    }

    public static void write(String dir, long seed) throws Exception {
        if (new File(dir).exists()) {
            throw new IllegalStateException(dir + " exists; the fixture is written into a new directory");
        }
        String root = dir + File.separator + "store";
        Random rnd = new Random(seed);
        Geometry g = new Geometry();
        g.commitLog = COMMIT_LOG_FILE;
        g.consumeQueue = CQ_FILE;
        MessageStoreConfig msc = Stores.config(root, g);
        int hour = Calendar.getInstance().get(Calendar.HOUR_OF_DAY);
        msc.setDeleteWhen(String.format("%02d", hour));
        BrokerConfig bc = new BrokerConfig();
        bc.setBrokerName(Stores.BROKER_NAME);
        bc.setBrokerClusterName(CLUSTER);
        ConcurrentHashMap<String, TopicConfig> topics = new ConcurrentHashMap<>();
        topics.put(TOPIC_A, new TopicConfig(TOPIC_A, 2, 2, 6));
        topics.put(TOPIC_B, new TopicConfig(TOPIC_B, 1, 1, 6));
        BrokerStatsManager stats = new BrokerStatsManager(CLUSTER, true);
        DefaultMessageStore local = new DefaultMessageStore(msc, stats, null, bc, topics);
        // the broker's Configuration holds brokerConfig and messageStoreConfig (BrokerController's constructor);
        // broker.conf's tiered keys are in it too: registerConfiguration copies them into the plugin's config.
        Configuration conf = new Configuration(LoggerFactory.getLogger("oracle"), bc, msc);
        conf.registerConfig(tieredProperties(dir));
        TieredMessageStore ts = new TieredMessageStore(new MessageStorePluginContext(msc, stats, null, bc, conf), local);
        if (!ts.load()) {
            throw new IllegalStateException("the tiered store did not load");
        }
        ts.start();

        List<Map<String, Object>> events = new ArrayList<>();
        int counter = 0;
        for (int round = 0; round < 4; round++) {
            for (int k = 0; k < 45; k++, counter++) {
                int pick = rnd.nextInt(10);
                String topic = pick < 7 ? TOPIC_A : TOPIC_B;
                int queueId = topic.equals(TOPIC_A) ? rnd.nextInt(2) : 0;
                String keys = counter % 11 == 5 ? null : "order-" + counter + (counter % 4 == 0 ? " shared-" + (counter % 3) : "");
                MessageExtBrokerInner m = CompactionFixture.message(rnd, counter, topic, queueId, keys, 60 + rnd.nextInt(200));
                PutMessageResult res = local.putMessage(m);
                if (!res.isOk()) {
                    throw new IllegalStateException("put failed: " + res);
                }
                Map<String, Object> e = new LinkedHashMap<>();
                e.put("topic", topic);
                e.put("queueId", queueId);
                e.put("keys", keys);
                e.put("queueOffset", res.getAppendMessageResult().getLogicsOffset());
                e.put("wroteOffset", res.getAppendMessageResult().getWroteOffset());
                e.put("msgId", res.getAppendMessageResult().getMsgId());
                events.add(e);
            }
            waitLocal(local);
            uploadAll(ts, local);
        }
        Map<String, Object> beforeRetention = queues(ts, local);

        // the local store's retention: files older than fileReservedTime, at deleteWhen
        List<MappedFile> files = local.getCommitLog().getMappedFileQueue().getMappedFiles();
        long old = System.currentTimeMillis() - (msc.getFileReservedTime() + 2) * 3600_000L;
        List<String> aged = new ArrayList<>();
        for (int i = 0; i < files.size() - 1; i++) {
            if (!new File(files.get(i).getFileName()).setLastModified(old)) {
                throw new IllegalStateException("cannot age " + files.get(i).getFileName());
            }
            aged.add(new File(files.get(i).getFileName()).getName());
        }
        Map<String, Long[]> filesBefore = Clean.files(root);
        Object commitLogClean = Clean.field(local, "cleanCommitLogService");
        Object queueClean = Clean.field(local, "cleanConsumeQueueService");
        Object correct = Clean.field(local, "correctLogicOffsetService");
        for (int r = 0; r < 2; r++) {  // deleteFileBatchMax and the intervals: a second round finishes the job
            Clean.invoke(commitLogClean, "run");
            Clean.invoke(correct, "run");
            Clean.invoke(queueClean, "run");
        }
        Map<String, Long[]> filesAfter = Clean.files(root);
        List<String> deleted = new ArrayList<>();
        for (String f : filesBefore.keySet()) {
            if (!filesAfter.containsKey(f)) {
                deleted.add(f);
            }
        }

        Map<String, Object> expect = new LinkedHashMap<>();
        expect.put("rocketmqVersion", "5.3.3 (git tag rocketmq-all-5.3.3)");
        expect.put("profile", "tiered");
        expect.put("seed", seed);
        Map<String, Object> config = new LinkedHashMap<>();
        config.put("mappedFileSizeCommitLog", g.commitLog);
        config.put("mappedFileSizeConsumeQueue", g.consumeQueue);
        config.put("maxHashSlotNum", g.hashSlots);
        config.put("maxIndexNum", g.indexNum);
        config.put("brokerName", Stores.BROKER_NAME);
        config.put("brokerClusterName", CLUSTER);
        Map<String, Object> tieredConf = new TreeMap<>();
        tieredProperties("DIR").forEach((k, v) -> tieredConf.put((String) k, v));
        config.put("tiered", tieredConf);
        config.put("tieredClusterDirectory", MessageStoreUtil.getHash(CLUSTER) + "_" + CLUSTER);
        expect.put("config", config);
        expect.put("events", events);
        expect.put("retention", Map.of("agedCommitLogFiles", aged, "deleted", deleted,
            "minPhyOffset", local.getMinPhyOffset()));
        expect.put("queuesBeforeRetention", beforeRetention);
        expect.put("queues", queues(ts, local));
        expect.put("reads", reads(ts, local));
        expect.put("tieredUnits", tieredUnits(ts));
        expect.put("localEarliestMessageTime", local.getEarliestMessageTime());
        expect.put("offsetsByTime", offsetsByTime(ts));
        expect.put("keyQueries", keyQueries(ts, events));
        ts.shutdown();  // persists the metadata (DefaultMetadataStore) and closes the segments
        stats.shutdown();
        expect.put("metadata", metadata(root, bc, msc));
        ReadBack.checkpoint(root, expect);
        ReadBack.files(root, expect);
        Map<String, Object> tieredFiles = new TreeMap<>();
        try (java.util.stream.Stream<java.nio.file.Path> walk = Files.walk(new File(dir, "tiered").toPath())) {
            for (java.nio.file.Path p : (Iterable<java.nio.file.Path>) walk.filter(Files::isRegularFile)::iterator) {
                tieredFiles.put(new File(dir).toPath().relativize(p).toString(), Files.size(p));
            }
        }
        expect.put("tieredFiles", tieredFiles);
        Files.write(new File(dir, "expect.json").toPath(), Json.write(expect).getBytes(StandardCharsets.UTF_8));
    }

    static void waitLocal(DefaultMessageStore local) throws InterruptedException {
        for (int i = 0; i < 600 && local.dispatchBehindBytes() != 0; i++) {
            Thread.sleep(20);
        }
        Thread.sleep(200);  // the reput's dispatch to the plugin (flatFileStore.computeIfAbsent) runs with it
    }

    /** Every queue's flat file dispatched up to the local max offset, as the dispatcher's thread would. */
    static void uploadAll(TieredMessageStore ts, DefaultMessageStore local) throws Exception {
        for (int attempt = 0; attempt < 200; attempt++) {
            boolean done = true;
            for (FlatMessageFile f : ts.getFlatFileStore().deepCopyFlatFileToList()) {
                MessageQueue mq = f.getMessageQueue();
                long max = local.getMaxOffsetInQueue(mq.getTopic(), mq.getQueueId());
                if (!f.isFlatFileInit() || f.getConsumeQueueCommitOffset() < max) {
                    done = false;
                    ((MessageStoreDispatcherImpl) Clean.field(ts, "dispatcher")).doScheduleDispatch(f, true).join();
                }
            }
            if (done && ts.getFlatFileStore().deepCopyFlatFileToList().size() == 3) {
                Thread.sleep(200);  // the group commit's index construction runs after the commit completes
                return;
            }
            Thread.sleep(20);
        }
        throw new IllegalStateException("the tiered dispatcher did not catch up");
    }

    static Map<String, Object> queues(TieredMessageStore ts, DefaultMessageStore local) throws Exception {
        Map<String, Object> out = new TreeMap<>();
        for (FlatMessageFile f : ts.getFlatFileStore().deepCopyFlatFileToList()) {
            MessageQueue mq = f.getMessageQueue();
            String t = mq.getTopic();
            int q = mq.getQueueId();
            Map<String, Object> o = new LinkedHashMap<>();
            o.put("topic", t);
            o.put("queueId", q);
            o.put("localMinOffset", local.getMinOffsetInQueue(t, q));
            o.put("localMaxOffset", local.getMaxOffsetInQueue(t, q));
            o.put("minOffset", ts.getMinOffsetInQueue(t, q));
            o.put("maxOffset", ts.getMaxOffsetInQueue(t, q));
            o.put("tieredMinOffset", f.getConsumeQueueMinOffset());
            o.put("tieredCommitOffset", f.getConsumeQueueCommitOffset());
            o.put("tieredCommitLogMinOffset", f.getCommitLogMinOffset());
            o.put("tieredCommitLogCommitOffset", f.getCommitLogCommitOffset());
            o.put("tieredFirstMessageOffset", f.getFirstMessageOffset());
            o.put("tieredMinStoreTimestamp", f.getMinStoreTimestamp());
            o.put("tieredMaxStoreTimestamp", f.getMaxStoreTimestamp());
            o.put("earliestMessageTime", ts.getEarliestMessageTime(t, q));
            out.put(t + "/" + q, o);
        }
        return out;
    }

    /** getMessage(maxMsgNums 1) of the plugin at every offset from 0 to the max, and which store answered. */
    static List<Map<String, Object>> reads(TieredMessageStore ts, DefaultMessageStore local) throws Exception {
        List<Map<String, Object>> out = new ArrayList<>();
        for (FlatMessageFile f : ts.getFlatFileStore().deepCopyFlatFileToList()) {
            MessageQueue mq = f.getMessageQueue();
            String t = mq.getTopic();
            int q = mq.getQueueId();
            long max = ts.getMaxOffsetInQueue(t, q);
            for (long off = 0; off <= max; off++) {
                Map<String, Object> o = new LinkedHashMap<>();
                o.put("topic", t);
                o.put("queueId", q);
                o.put("offset", off);
                o.put("fromTiered", ts.fetchFromCurrentStore(t, q, off));
                o.put("inLocalStore", local.checkInStoreByConsumeOffset(t, q, off));
                GetMessageResult r = ts.getMessage(GROUP, t, q, off, 1, null);
                o.put("status", r.getStatus().name());
                o.put("nextBeginOffset", r.getNextBeginOffset());
                o.put("minOffset", r.getMinOffset());
                o.put("maxOffset", r.getMaxOffset());
                List<Map<String, Object>> msgs = new ArrayList<>();
                for (ByteBuffer bb : r.getMessageBufferList()) {
                    msgs.add(message(bb));
                }
                r.release();
                o.put("messages", msgs);
                out.add(o);
            }
        }
        return out;
    }

    /** Every unit of each tiered ConsumeQueue, as FlatMessageFile.getConsumeQueueAsync reads it. */
    static Map<String, Object> tieredUnits(TieredMessageStore ts) {
        Map<String, Object> out = new TreeMap<>();
        for (FlatMessageFile f : ts.getFlatFileStore().deepCopyFlatFileToList()) {
            List<List<Long>> units = new ArrayList<>();
            for (long off = f.getConsumeQueueMinOffset(); off < f.getConsumeQueueCommitOffset(); off++) {
                ByteBuffer b = f.getConsumeQueueAsync(off).join();
                units.add(List.of(off, MessageFormatUtil.getCommitLogOffsetFromItem(b),
                    (long) MessageFormatUtil.getSizeFromItem(b), b.getLong(12)));
            }
            out.put(f.getMessageQueue().getTopic() + "/" + f.getMessageQueue().getQueueId(), units);
        }
        return out;
    }

    /** TieredMessageStore.getOffsetInQueueByTime (LOWER and UPPER) at every message's store time of each
     * queue, one before the first and one after the last. */
    static List<Map<String, Object>> offsetsByTime(TieredMessageStore ts) {
        List<Map<String, Object>> out = new ArrayList<>();
        for (FlatMessageFile f : ts.getFlatFileStore().deepCopyFlatFileToList()) {
            String t = f.getMessageQueue().getTopic();
            int q = f.getMessageQueue().getQueueId();
            java.util.TreeSet<Long> times = new java.util.TreeSet<>();
            for (long off = f.getConsumeQueueMinOffset(); off < f.getConsumeQueueCommitOffset(); off++) {
                times.add(MessageFormatUtil.getStoreTimeStamp(f.getMessageAsync(off).join()));
            }
            if (!times.isEmpty()) {
                times.add(times.first() - 1);
                times.add(times.last() + 1);
            }
            for (long time : times) {
                Map<String, Object> o = new LinkedHashMap<>();
                o.put("topic", t);
                o.put("queueId", q);
                o.put("timestamp", time);
                o.put("lower", ts.getOffsetInQueueByTime(t, q, time, BoundaryType.LOWER));
                o.put("upper", ts.getOffsetInQueueByTime(t, q, time, BoundaryType.UPPER));
                out.add(o);
            }
        }
        return out;
    }

    /** TieredMessageStore.queryMessage(topic, key, 64, 0, Long.MAX_VALUE) for a sample of the put keys (every
     * 7th put's first key and its UNIQ_KEY) and the shared keys. */
    static List<Map<String, Object>> keyQueries(TieredMessageStore ts, List<Map<String, Object>> events) {
        List<String[]> queries = new ArrayList<>();
        for (String t : new String[] {TOPIC_A, TOPIC_B}) {
            for (int k = 0; k < 3; k++) {
                queries.add(new String[] {t, "shared-" + k});
            }
        }
        for (int i = 0; i < events.size(); i += 7) {
            Map<String, Object> e = events.get(i);
            if (e.get("keys") != null) {
                queries.add(new String[] {(String) e.get("topic"), ((String) e.get("keys")).split(" ")[0]});
            }
        }
        List<Map<String, Object>> out = new ArrayList<>();
        for (String[] tk : queries) {
            QueryMessageResult r = ts.queryMessage(tk[0], tk[1], 64, 0, Long.MAX_VALUE);
            Map<String, Object> o = new LinkedHashMap<>();
            o.put("topic", tk[0]);
            o.put("key", tk[1]);
            List<Map<String, Object>> msgs = new ArrayList<>();
            for (ByteBuffer bb : r.getMessageBufferList()) {
                msgs.add(message(bb));
            }
            r.release();
            o.put("messages", msgs);
            out.add(o);
        }
        return out;
    }

    static Map<String, Object> message(ByteBuffer bb) {
        MessageExt m = MessageDecoder.decode(bb.slice(), true, false);
        Map<String, Object> o = new LinkedHashMap<>();
        o.put("queueOffset", m.getQueueOffset());
        o.put("physicalOffset", m.getCommitLogOffset());
        o.put("totalSize", m.getStoreSize());
        o.put("offsetMsgId", m.getMsgId());
        o.put("uniqKey", m.getProperty("UNIQ_KEY"));
        o.put("keys", m.getKeys());
        o.put("tags", m.getTags());
        o.put("storeTimestamp", m.getStoreTimestamp());
        o.put("bodyCRC", m.getBodyCRC());
        o.put("bodyLength", m.getBody() == null ? 0 : m.getBody().length);
        return o;
    }

    /** The metadata a new DefaultMetadataStore reads back from config/tieredStoreMetadata.json. */
    static Map<String, Object> metadata(String root, BrokerConfig bc, MessageStoreConfig msc) {
        org.apache.rocketmq.tieredstore.MessageStoreConfig c = new org.apache.rocketmq.tieredstore.MessageStoreConfig();
        c.setStorePathRootDir(root);
        c.setBrokerName(bc.getBrokerName());
        c.setBrokerClusterName(CLUSTER);
        MetadataStore ms = new DefaultMetadataStore(c);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("file", "config/tieredStoreMetadata.json");
        List<Map<String, Object>> topicsOut = new ArrayList<>();
        List<Map<String, Object>> queuesOut = new ArrayList<>();
        ms.iterateTopic(tm -> {
            Map<String, Object> o = new LinkedHashMap<>();
            o.put("topic", tm.getTopic());
            o.put("topicId", tm.getTopicId());
            o.put("status", tm.getStatus());
            o.put("reserveTime", tm.getReserveTime());
            topicsOut.add(o);
            ms.iterateQueue(tm.getTopic(), qm -> {
                Map<String, Object> qo = new LinkedHashMap<>();
                qo.put("topic", qm.getQueue().getTopic());
                qo.put("brokerName", qm.getQueue().getBrokerName());
                qo.put("queueId", qm.getQueue().getQueueId());
                qo.put("minOffset", qm.getMinOffset());
                qo.put("maxOffset", qm.getMaxOffset());
                queuesOut.add(qo);
            });
        });
        topicsOut.sort((a, b) -> ((String) a.get("topic")).compareTo((String) b.get("topic")));
        queuesOut.sort((a, b) -> (a.get("topic") + "/" + a.get("queueId")).compareTo(b.get("topic") + "/" + b.get("queueId")));
        out.put("topics", topicsOut);
        out.put("queues", queuesOut);
        List<Map<String, Object>> segs = new ArrayList<>();
        ms.iterateFileSegment(s -> {
            Map<String, Object> o = new LinkedHashMap<>();
            o.put("path", s.getPath());
            o.put("type", FileSegmentType.valueOf(s.getType()).name());
            o.put("baseOffset", s.getBaseOffset());
            o.put("size", s.getSize());
            o.put("status", s.getStatus());
            o.put("createTimestamp", s.getCreateTimestamp());
            o.put("beginTimestamp", s.getBeginTimestamp());
            o.put("endTimestamp", s.getEndTimestamp());
            o.put("sealTimestamp", s.getSealTimestamp());
            o.put("fileName", MessageStoreUtil.offset2FileName(s.getBaseOffset()));
            segs.add(o);
        });
        segs.sort((a, b) -> {
            int c1 = ((String) a.get("path")).compareTo((String) b.get("path"));
            if (c1 != 0) {
                return c1;
            }
            int c2 = ((String) a.get("type")).compareTo((String) b.get("type"));
            return c2 != 0 ? c2 : Long.compare((Long) a.get("baseOffset"), (Long) b.get("baseOffset"));
        });
        out.put("fileSegments", segs);
        return out;
    }
}
