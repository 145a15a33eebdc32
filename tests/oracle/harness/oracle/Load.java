/*
 * `load STORE [HASH_SLOTS INDEX_NUM]` on 5.3.3: judges a store (one mqtool wrote) with the real code, on a
 * temporary copy (recovery rewrites files), geometry from the files. Prints one JSON object: whether it
 * loaded, normal or abnormal recovery, whether recovery truncated the commitlog and where, CRC errors in a
 * full walk, ConsumeQueue units that differ from what the dispatcher computes (before and after load),
 * index keys the real IndexService cannot find, and the config files as the real managers read them
 * (Judge holds what the 4.9.8 oracle shares). A DLedger store (a dledger-<selfId> directory) is opened with
 * enableDLegerCommitLog and walked entry by entry (DLedgerFiles); `dledger` adds what DLedger's recovery kept.
 */
package oracle;

import java.io.File;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.rocketmq.broker.BrokerController;
import org.apache.rocketmq.broker.loadbalance.MessageRequestModeManager;
import org.apache.rocketmq.broker.offset.ConsumerOffsetManager;
import org.apache.rocketmq.broker.offset.ConsumerOrderInfoManager;
import org.apache.rocketmq.broker.offset.LmqConsumerOffsetManager;
import org.apache.rocketmq.broker.schedule.DelayOffsetSerializeWrapper;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.remoting.protocol.body.SubscriptionGroupWrapper;
import org.apache.rocketmq.remoting.protocol.body.TopicConfigSerializeWrapper;
import org.apache.rocketmq.remoting.protocol.subscription.SubscriptionGroupConfig;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.queue.ConsumeQueueInterface;
import org.apache.rocketmq.store.queue.CqUnit;
import org.apache.rocketmq.store.stats.BrokerStatsManager;

public final class Load {
    private Load() {
    }

    public static int run(String storeArg, String[] extra) throws Exception {
        return Judge.onCopy(storeArg, (root, shown) -> judge(root, shown, extra));
    }

    static Map<String, Object> judge(String root, String shown, String[] extra) throws Exception {
        Geometry g = Geometry.of(root, extra);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("store", shown);
        out.put("geometry", g.json());
        out.put("recovery", new File(root, "abort").exists() ? "abnormal" : "normal");

        // Before load: walk the files as they are with the real record checker; raw ConsumeQueue units.
        BrokerConfig bc = new BrokerConfig();
        bc.setBrokerName(Stores.BROKER_NAME);
        BrokerStatsManager probeStats = new BrokerStatsManager("DefaultCluster", true);
        DefaultMessageStore probe = new DefaultMessageStore(Stores.config(root, g), probeStats, null, bc,
            new ConcurrentHashMap<>());
        java.util.function.Function<java.nio.ByteBuffer, org.apache.rocketmq.store.DispatchRequest> check =
            bb -> probe.getCommitLog().checkMessageAndReturnSize(bb, true, false, true);
        // A DLedger store (dledger-<selfId>/): its data files entry by entry (DLedgerCommitLog's checker), after
        // the classic commitlog/ files of a store that was switched to DLedger.
        Judge.Walk before = g.dledgerSelfId == null ? Judge.walkFiles(check, root, g.commitLog, g.lmq)
            : DLedgerFiles.walk(check, root, g);
        Map<String, long[]> cqBefore = Judge.rawConsumeQueues(root);
        probeStats.shutdown();

        // Load: the real store (and timer store) recover. A store part whose constructor throws (a timerwheel
        // of the wrong length) is caught by BrokerController.initializeMessageStore (5.3.3
        // BrokerController.java:852-855), whose false makes BrokerStartup exit: recorded as not loaded.
        Stores s;
        try {
            s = Stores.open(root, g, new ConcurrentHashMap<String, TopicConfig>());
        } catch (Exception e) {
            out.put("loaded", false);
            out.put("initError", e.getClass().getSimpleName() + ": " + e.getMessage());
            out.put("clean", false);
            return out;
        }
        List<Map<String, Object>> crc = new ArrayList<>();
        List<Map<String, Object>> records = g.dledgerSelfId == null ? ReadBack.messages(s.store, crc)
            : DLedgerFiles.records(s.store, bb -> s.store.getCommitLog().checkMessageAndReturnSize(bb, true, false, true),
                bb -> org.apache.rocketmq.common.message.MessageDecoder.decode(bb, true, false, false, true, true), crc);
        Map<String, long[]> cqAfter = new HashMap<>();
        s.store.getConsumeQueueTable().forEach((topic, queues) -> queues.forEach((qid, cq) -> units(cq, cqAfter)));
        Judge.verdict(out, s.loaded, before, cqBefore, records, crc, cqAfter, s.store.getMinPhyOffset(),
            s.store.getMaxPhyOffset(), ReadBack.indexService(s.store));
        out.put("config", configs(root, s));
        if (g.dledgerSelfId != null) {
            out.put("dledger", DLedgerFiles.recovered(s.store, root));  // what DLedger's recovery kept
        }
        if (s.timer != null) {
            Map<String, Object> t = new LinkedHashMap<>();
            t.put("timerLogMaxOffset", s.timer.getTimerLog().getMappedFileQueue().getMaxOffset());
            t.put("commitQueueOffset", s.timer.getCommitQueueOffset());
            t.put("timercheckLastReadTimeMs", s.timer.getTimerCheckpoint().getLastReadTimeMs());
            out.put("timer", t);
        }
        out.put("clean", out.remove("clean"));  // last, as before
        s.shutdown();
        return out;
    }

    /**
     * `recover STORE`: the real recovery in place (load, start, dispatch, clean shutdown), as a broker run.
     * `withTimer` false (`recover-without-timer`): as a broker with timerWheelEnable=false runs it, so the
     * timer files stay as they are and nothing is delivered.
     */
    public static int recover(String root, String[] extra, boolean withTimer) throws Exception {
        Geometry g = Geometry.of(root, extra);
        g.timer = g.timer && withTimer;
        Stores s = Stores.open(root, g, new ConcurrentHashMap<String, TopicConfig>());
        if (!s.loaded) {
            System.err.println("the store did not load");
            return 1;
        }
        s.start();
        if (g.dledgerSelfId != null) {
            DLedgerFiles.awaitLeader(s.store, 30_000);  // a DLedger broker serves once elected and committed
        }
        s.waitDispatched();
        s.shutdown();
        return 0;
    }

    static void units(ConsumeQueueInterface cq, Map<String, long[]> out) {
        for (long i = cq.getMinOffsetInQueue(); i < cq.getMaxOffsetInQueue(); i++) {
            CqUnit u = cq.get(i);
            if (u != null) {
                out.put(cq.getTopic() + "/" + cq.getQueueId() + "/" + i, new long[] {u.getPos(), u.getSize(), u.getTagsCode()});
            }
        }
    }

    static Map<String, Object> configs(String root, Stores s) throws Exception {
        Map<String, Object> out = new LinkedHashMap<>();
        String dir = root + "/config/";
        BrokerConfig bc = new BrokerConfig();
        BrokerController broker = new BrokerController(bc, s.config, s.store);

        ConsumerOffsetManager offsets = new ConsumerOffsetManager(broker);
        Map<String, Object> co = new LinkedHashMap<>();
        co.put("source", Judge.source(dir + "consumerOffset.json", t -> new ConsumerOffsetManager().decode(t)));
        co.put("loaded", offsets.load());
        Map<String, Object> table = new TreeMap<>();
        offsets.getOffsetTable().forEach((k, v) -> table.put(k, new TreeMap<>(v)));
        co.put("offsetTable", table);
        out.put("consumerOffset", co);

        if (new File(dir + "lmqConsumerOffset.json").exists() || s.config.isEnableLmq()) {
            // the manager a broker with enableLmq runs instead of ConsumerOffsetManager
            LmqConsumerOffsetManager lmq = new LmqConsumerOffsetManager(broker);
            Map<String, Object> lo = new LinkedHashMap<>();
            lo.put("source", Judge.source(dir + "lmqConsumerOffset.json", t -> new LmqConsumerOffsetManager().decode(t)));
            lo.put("loaded", lmq.load());
            Map<String, Object> ltable = new TreeMap<>();
            lmq.getOffsetTable().forEach((k, v) -> ltable.put(k, new TreeMap<>(v)));
            lo.put("offsetTable", ltable);
            lo.put("lmqOffsetTable", new TreeMap<>(lmq.getLmqOffsetTable()));
            out.put("lmqConsumerOffset", lo);
        }

        // BrokerController.initializeMetadata loads it (5.3.3 BrokerController.java:815): false refuses the start
        ConsumerOrderInfoManager orders = new ConsumerOrderInfoManager(broker);
        Map<String, Object> oi = new LinkedHashMap<>();
        oi.put("source", Judge.source(dir + "consumerOrderInfo.json", t -> new ConsumerOrderInfoManager().decode(t)));
        oi.put("loaded", orders.load());
        out.put("consumerOrderInfo", oi);

        MessageRequestModeManager modes = new MessageRequestModeManager(broker);
        Map<String, Object> mr = new LinkedHashMap<>();
        mr.put("source", Judge.source(dir + "messageRequestMode.json", t -> new MessageRequestModeManager().decode(t)));
        mr.put("loaded", modes.load());
        Map<String, Object> mt = new TreeMap<>();
        modes.getMessageRequestModeMap().forEach((topic, groups) -> groups.forEach((group, body) -> {
            Map<String, Object> b = new LinkedHashMap<>();
            b.put("mode", body.getMode().name());
            b.put("popShareQueueNum", body.getPopShareQueueNum());
            mt.put(topic + "@" + group, b);
        }));
        mr.put("table", mt);
        out.put("messageRequestMode", mr);

        // ScheduleMessageService / TopicConfigManager / SubscriptionGroupManager decode with these wrappers.
        String delayPath = dir + "delayOffset.json";
        String src = Judge.source(delayPath, t -> DelayOffsetSerializeWrapper.fromJson(t, DelayOffsetSerializeWrapper.class).getOffsetTable().size());
        Map<String, Object> dl = new LinkedHashMap<>();
        dl.put("source", src);
        if (src.equals("file") || src.equals("bak")) {
            dl.put("offsetTable", new TreeMap<>(DelayOffsetSerializeWrapper.fromJson(Judge.text(delayPath, src),
                DelayOffsetSerializeWrapper.class).getOffsetTable()));
        }
        out.put("delayOffset", dl);

        String topicsPath = dir + "topics.json";
        src = Judge.source(topicsPath, t -> TopicConfigSerializeWrapper.fromJson(t, TopicConfigSerializeWrapper.class).getTopicConfigTable().size());
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
        src = Judge.source(groupsPath, t -> SubscriptionGroupWrapper.fromJson(t, SubscriptionGroupWrapper.class).getSubscriptionGroupTable().size());
        Map<String, Object> gp = new LinkedHashMap<>();
        gp.put("source", src);
        if (src.equals("file") || src.equals("bak")) {
            Map<String, Object> gt = new TreeMap<>();
            Map<String, SubscriptionGroupConfig> table2 = SubscriptionGroupWrapper.fromJson(Judge.text(groupsPath, src),
                SubscriptionGroupWrapper.class).getSubscriptionGroupTable();
            table2.forEach((k, v) -> gt.put(k, List.of(v.isConsumeEnable(), v.getRetryMaxTimes())));
            gp.put("groups[consumeEnable,retryMaxTimes]", gt);
        }
        out.put("subscriptionGroup", gp);
        return out;
    }
}
