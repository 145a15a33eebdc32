/*
 * `tiered-load DIR OUT`: what the real 5.3.3 tiered storage plugin serves from a store DIR/store and its tiered tree
 * DIR/tiered (the layout `tiered-store` writes), read with whatever config/tieredStoreMetadata.json the store holds
 * now - the judge of `mqtool tiered rebuild-metadata`. The broker's start path: DefaultMessageStore wrapped by
 * TieredMessageStore(MessageStorePluginContext, next) with the fixture's tiered keys in the broker's Configuration,
 * then TieredMessageStore.load() (DefaultMetadataStore reads the file or its .bak as ConfigManager.load does;
 * FlatFileStore.load -> recover builds a flat file per queue of the metadata, FlatAppendFile.recover /
 * recoverFileSize its segments; IndexStoreService.recover the INDEX segments), then the local store's start() (it
 * serves its own offsets only once started). Not the plugin's start(): its dispatcher would upload from the
 * local store and change the tree being judged. OUT gets JSON: per queue the ranges
 * (TieredStore.queues), getMessage at every offset up to the larger of the max and the flat file's commit
 * offset, every tiered unit, getOffsetInQueueByTime at every tiered message's store time, queryMessage for every key of every tiered message, and the metadata
 * as the plugin persisted it at shutdown (TieredStore.metadata). Run on a copy: shutdown writes the store.
 */
package oracle;

import java.io.File;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.logging.org.slf4j.LoggerFactory;
import org.apache.rocketmq.remoting.Configuration;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.GetMessageResult;
import org.apache.rocketmq.store.config.MessageStoreConfig;
import org.apache.rocketmq.store.plugin.MessageStorePluginContext;
import org.apache.rocketmq.store.stats.BrokerStatsManager;
import org.apache.rocketmq.tieredstore.TieredMessageStore;
import org.apache.rocketmq.tieredstore.file.FlatMessageFile;

public final class TieredLoad {
    private TieredLoad() {
    }

    /** TieredStore.reads, each offset on its own: a null result or an exception is recorded, not fatal. */
    static List<Map<String, Object>> reads(TieredMessageStore ts, DefaultMessageStore local) throws Exception {
        List<Map<String, Object>> out = new ArrayList<>();
        for (FlatMessageFile f : ts.getFlatFileStore().deepCopyFlatFileToList()) {
            String t = f.getMessageQueue().getTopic();
            int q = f.getMessageQueue().getQueueId();
            // a queue whose local ConsumeQueue is gone answers max 0: read up to the flat file's commit offset too
            long max = Math.max(ts.getMaxOffsetInQueue(t, q), f.getConsumeQueueCommitOffset());
            for (long off = 0; off <= max; off++) {
                Map<String, Object> o = new LinkedHashMap<>();
                o.put("topic", t);
                o.put("queueId", q);
                o.put("offset", off);
                o.put("fromTiered", ts.fetchFromCurrentStore(t, q, off));
                o.put("inLocalStore", local.checkInStoreByConsumeOffset(t, q, off));
                List<Map<String, Object>> msgs = new ArrayList<>();
                try {
                    GetMessageResult r = ts.getMessage(TieredStore.GROUP, t, q, off, 1, null);
                    if (r == null) {
                        o.put("status", "null");
                    } else {
                        o.put("status", r.getStatus().name());
                        o.put("nextBeginOffset", r.getNextBeginOffset());
                        o.put("minOffset", r.getMinOffset());
                        o.put("maxOffset", r.getMaxOffset());
                        for (ByteBuffer bb : r.getMessageBufferList()) {
                            msgs.add(TieredStore.message(bb));
                        }
                        r.release();
                    }
                } catch (RuntimeException e) {
                    o.put("status", "exception " + e);
                }
                o.put("messages", msgs);
                out.add(o);
            }
        }
        return out;
    }

    @SuppressWarnings("unchecked")
    public static int run(String dir, String out) throws Exception {
        String root = dir + File.separator + "store";
        Geometry g = new Geometry();
        g.commitLog = TieredStore.COMMIT_LOG_FILE;
        g.consumeQueue = TieredStore.CQ_FILE;
        MessageStoreConfig msc = Stores.config(root, g);
        BrokerConfig bc = new BrokerConfig();
        bc.setBrokerName(Stores.BROKER_NAME);
        bc.setBrokerClusterName(TieredStore.CLUSTER);
        ConcurrentHashMap<String, TopicConfig> topics = new ConcurrentHashMap<>();
        topics.put(TieredStore.TOPIC_A, new TopicConfig(TieredStore.TOPIC_A, 2, 2, 6));
        topics.put(TieredStore.TOPIC_B, new TopicConfig(TieredStore.TOPIC_B, 1, 1, 6));
        BrokerStatsManager stats = new BrokerStatsManager(TieredStore.CLUSTER, true);
        DefaultMessageStore local = new DefaultMessageStore(msc, stats, null, bc, topics);
        Configuration conf = new Configuration(LoggerFactory.getLogger("oracle"), bc, msc);
        conf.registerConfig(TieredStore.tieredProperties(dir));
        TieredMessageStore ts = new TieredMessageStore(new MessageStorePluginContext(msc, stats, null, bc, conf), local);
        Map<String, Object> o = new LinkedHashMap<>();
        o.put("loaded", ts.load());
        local.start();  // the local store serves its offsets only once started (getMessage returns null before)
        o.put("flatFiles", ts.getFlatFileStore().deepCopyFlatFileToList().size());
        o.put("queues", TieredStore.queues(ts, local));
        List<Map<String, Object>> reads = reads(ts, local);
        o.put("reads", reads);
        o.put("tieredUnits", TieredStore.tieredUnits(ts));
        o.put("offsetsByTime", TieredStore.offsetsByTime(ts));
        // every key of every message the tiered store served, as the events keyQueries samples (every one here)
        TreeSet<String> seen = new TreeSet<>();
        for (Map<String, Object> r : reads) {
            if (!Boolean.TRUE.equals(r.get("fromTiered"))) {
                continue;
            }
            for (Map<String, Object> m : (List<Map<String, Object>>) r.get("messages")) {
                if (m.get("keys") != null) {
                    for (String k : ((String) m.get("keys")).split(" ")) {
                        seen.add(r.get("topic") + "\u0000" + k);
                    }
                }
            }
        }
        List<Map<String, Object>> events = new ArrayList<>();
        for (String tk : seen) {
            Map<String, Object> e = new LinkedHashMap<>();
            e.put("topic", tk.split("\u0000")[0]);
            e.put("keys", tk.split("\u0000")[1]);
            for (int i = 0; i < 7; i++) {  // keyQueries samples every 7th event: give it each key 7 times
                events.add(e);
            }
        }
        o.put("keyQueries", TieredStore.keyQueries(ts, events));
        ts.shutdown();
        stats.shutdown();
        o.put("metadata", TieredStore.metadata(root, bc, msc));
        Files.write(new File(out).toPath(), Json.write(o).getBytes(StandardCharsets.UTF_8));
        return 0;
    }
}
