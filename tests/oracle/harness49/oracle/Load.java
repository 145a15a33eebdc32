/*
 * `load STORE [HASH_SLOTS INDEX_NUM]` on 4.9.8: the same JSON object as the 5.3.3 oracle's `load` (Judge
 * holds the shared half), read with the 4.9.8 classes: its DefaultMessageStore and recovery, its
 * CommitLog.checkMessageAndReturnSize and MessageDecoder, ConsumeQueue.getIndexBuffer, IndexService, and
 * the config files as 4.9.8's ConsumerOffsetManager and wrappers read them. 4.9 has no timer wheel and no
 * messageRequestMode.json (POP came with 5.0). A DLedger store is opened and walked as the 5.3.3 `load` does it.
 */
package oracle;

import java.io.File;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.rocketmq.broker.BrokerController;
import org.apache.rocketmq.broker.offset.ConsumerOffsetManager;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.protocol.body.SubscriptionGroupWrapper;
import org.apache.rocketmq.common.protocol.body.TopicConfigSerializeWrapper;
import org.apache.rocketmq.common.subscription.SubscriptionGroupConfig;
import org.apache.rocketmq.store.CommitLog;
import org.apache.rocketmq.store.ConsumeQueue;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.DispatchRequest;
import org.apache.rocketmq.store.SelectMappedBufferResult;
import org.apache.rocketmq.store.index.IndexService;
import org.apache.rocketmq.store.schedule.DelayOffsetSerializeWrapper;
import org.apache.rocketmq.store.stats.BrokerStatsManager;

public final class Load {
    private Load() {
    }

    static Map<String, Object> judge(String root, String shown, String[] extra) throws Exception {
        Geometry g = Geometry.of(root, extra);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("store", shown);
        out.put("rocketmq", "4.9.8");
        out.put("geometry", g.json());
        out.put("recovery", new File(root, "abort").exists() ? "abnormal" : "normal");

        BrokerStatsManager probeStats = new BrokerStatsManager("DefaultCluster", true);
        DefaultMessageStore probe = new DefaultMessageStore(Stores.config(root, g), probeStats, null,
            Stores.brokerConfig());
        // 4.9's checker computes a SCHEDULE_TOPIC_XXXX unit's tagsCode (the deliver time) from the level
        // table, which load() parses; the probe is not loaded, so parse it here.
        probe.getScheduleMessageService().parseDelayLevel();
        java.util.function.Function<ByteBuffer, DispatchRequest> check =
            bb -> probe.getCommitLog().checkMessageAndReturnSize(bb, true, true);
        // A DLedger store (dledger-<selfId>/): its data files entry by entry (DLedgerCommitLog's checker).
        Judge.Walk before = g.dledgerSelfId == null ? Judge.walkFiles(check, root, g.commitLog)
            : DLedgerFiles.walk(check, root, g);
        Map<String, long[]> cqBefore = Judge.rawConsumeQueues(root);
        probeStats.shutdown();

        Stores s = Stores.open(root, g);
        List<Map<String, Object>> crc = new ArrayList<>();
        List<Map<String, Object>> records = g.dledgerSelfId == null ? messages(s.store, crc)
            : DLedgerFiles.records(s.store, bb -> s.store.getCommitLog().checkMessageAndReturnSize(bb, true, true),
                bb -> MessageDecoder.decode(bb, true, false, false), crc);
        Map<String, long[]> cqAfter = new HashMap<>();
        s.store.getConsumeQueueTable().forEach((topic, queues) -> queues.forEach((qid, cq) -> units(cq, cqAfter)));
        Judge.verdict(out, s.loaded, before, cqBefore, records, crc, cqAfter, s.store.getMinPhyOffset(),
            s.store.getMaxPhyOffset(), indexService(s.store));
        out.put("config", configs(root, s));
        if (g.dledgerSelfId != null) {
            out.put("dledger", DLedgerFiles.recovered(s.store, root));  // what DLedger's recovery kept
        }
        out.put("clean", out.remove("clean"));
        s.shutdown();
        return out;
    }

    /** `recover STORE`: the real 4.9.8 recovery in place (load, start, dispatch, clean shutdown). */
    public static int recover(String root, String[] extra) throws Exception {
        Stores s = Stores.open(root, Geometry.of(root, extra));
        if (!s.loaded) {
            System.err.println("the store did not load");
            return 1;
        }
        s.start();
        if (s.config.isEnableDLegerCommitLog()) {
            DLedgerFiles.awaitLeader(s.store, 30_000);  // a DLedger broker serves once elected and committed
        }
        s.waitDispatched();
        s.shutdown();
        return 0;
    }

    /** Every record of the loaded commitlog, file by file (CommitLog.getData), CRC checked. */
    static List<Map<String, Object>> messages(DefaultMessageStore store, List<Map<String, Object>> crcErrors) {
        List<Map<String, Object>> out = new ArrayList<>();
        CommitLog log = store.getCommitLog();
        int fileSize = store.getMessageStoreConfig().getMappedFileSizeCommitLog();
        for (long fileStart = log.getMinOffset(); fileStart < log.getMaxOffset(); fileStart = log.rollNextFile(fileStart)) {
            SelectMappedBufferResult sbr = log.getData(fileStart, fileStart == 0);
            if (sbr == null) {
                continue;
            }
            try {
                ByteBuffer bb = sbr.getByteBuffer();
                String file = String.format("%020d", fileStart);
                int pos = 0;
                while (pos < sbr.getSize()) {
                    long phy = fileStart + pos;
                    int totalSize = bb.getInt(pos);
                    int magic = bb.getInt(pos + 4);
                    DispatchRequest d = log.checkMessageAndReturnSize(bb.slice(pos, sbr.getSize() - pos), true, false);
                    if (d.isSuccess() && d.getMsgSize() == 0) {
                        if (totalSize != 0) {
                            out.add(Judge.record(file, phy, totalSize, magic, d, null));  // BLANK
                        }
                        break;
                    }
                    if (!d.isSuccess()) {
                        Judge.crcError(crcErrors, phy, totalSize);
                        if (totalSize <= 0 || pos + totalSize > fileSize) {
                            break;
                        }
                        pos += totalSize;
                        continue;
                    }
                    MessageExt m = MessageDecoder.decode(bb.slice(pos, totalSize), true, false, false);
                    out.add(Judge.record(file, phy, totalSize, magic, d, m));
                    pos += totalSize;
                }
            } finally {
                sbr.release();
            }
        }
        return out;
    }

    static void units(ConsumeQueue cq, Map<String, long[]> out) {
        for (long i = cq.getMinOffsetInQueue(); i < cq.getMaxOffsetInQueue(); i++) {
            SelectMappedBufferResult sbr = cq.getIndexBuffer(i);
            if (sbr == null) {
                continue;
            }
            try {
                ByteBuffer bb = sbr.getByteBuffer();
                out.put(cq.getTopic() + "/" + cq.getQueueId() + "/" + i,
                    new long[] {bb.getLong(0), bb.getInt(8), bb.getLong(12)});
            } finally {
                sbr.release();
            }
        }
    }

    /** The store's own IndexService (a private field of DefaultMessageStore). */
    static IndexService indexService(DefaultMessageStore store) {
        try {
            java.lang.reflect.Field f = DefaultMessageStore.class.getDeclaredField("indexService");
            f.setAccessible(true);
            return (IndexService) f.get(store);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }

    static Map<String, Object> configs(String root, Stores s) throws Exception {
        Map<String, Object> out = new LinkedHashMap<>();
        String dir = root + "/config/";
        BrokerController broker = new BrokerController(new BrokerConfig(), s.config, s.store);

        ConsumerOffsetManager offsets = new ConsumerOffsetManager(broker);
        Map<String, Object> co = new LinkedHashMap<>();
        co.put("source", Judge.source(dir + "consumerOffset.json", t -> new ConsumerOffsetManager().decode(t)));
        co.put("loaded", offsets.load());
        Map<String, Object> table = new TreeMap<>();
        offsets.getOffsetTable().forEach((k, v) -> table.put(k, new TreeMap<>(v)));
        co.put("offsetTable", table);
        out.put("consumerOffset", co);

        // ScheduleMessageService / TopicConfigManager / SubscriptionGroupManager decode with these wrappers.
        String delayPath = dir + "delayOffset.json";
        String src = Judge.source(delayPath,
            t -> DelayOffsetSerializeWrapper.fromJson(t, DelayOffsetSerializeWrapper.class).getOffsetTable().size());
        Map<String, Object> dl = new LinkedHashMap<>();
        dl.put("source", src);
        if (src.equals("file") || src.equals("bak")) {
            dl.put("offsetTable", new TreeMap<>(DelayOffsetSerializeWrapper.fromJson(Judge.text(delayPath, src),
                DelayOffsetSerializeWrapper.class).getOffsetTable()));
        }
        out.put("delayOffset", dl);

        String topicsPath = dir + "topics.json";
        src = Judge.source(topicsPath,
            t -> TopicConfigSerializeWrapper.fromJson(t, TopicConfigSerializeWrapper.class).getTopicConfigTable().size());
        Map<String, Object> tp = new LinkedHashMap<>();
        tp.put("source", src);
        if (src.equals("file") || src.equals("bak")) {
            Map<String, Object> tt = new TreeMap<>();
            TopicConfigSerializeWrapper.fromJson(Judge.text(topicsPath, src), TopicConfigSerializeWrapper.class)
                .getTopicConfigTable().forEach((k, v) -> tt.put(k,
                    List.of(v.getReadQueueNums(), v.getWriteQueueNums(), v.getPerm(), v.isOrder() ? 1 : 0)));
            tp.put("topics[read,write,perm,order]", tt);
        }
        out.put("topics", tp);

        String groupsPath = dir + "subscriptionGroup.json";
        src = Judge.source(groupsPath,
            t -> SubscriptionGroupWrapper.fromJson(t, SubscriptionGroupWrapper.class).getSubscriptionGroupTable().size());
        Map<String, Object> gp = new LinkedHashMap<>();
        gp.put("source", src);
        if (src.equals("file") || src.equals("bak")) {
            Map<String, Object> gt = new TreeMap<>();
            Map<String, SubscriptionGroupConfig> groups = SubscriptionGroupWrapper.fromJson(
                Judge.text(groupsPath, src), SubscriptionGroupWrapper.class).getSubscriptionGroupTable();
            groups.forEach((k, v) -> gt.put(k, List.of(v.isConsumeEnable(), v.getRetryMaxTimes())));
            gp.put("groups[consumeEnable,retryMaxTimes]", gt);
        }
        out.put("subscriptionGroup", gp);
        return out;
    }
}
