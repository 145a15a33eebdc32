/*
 * `controller-store DIR [SEED]`: a 5.x store of a controller-mode master (BrokerConfig.enableControllerMode)
 * whose checkpoint's confirmPhyOffset is below the commitlog's end. The real DefaultMessageStore builds the
 * real AutoSwitchHAService (DefaultMessageStore.java:245-247; its accept socket on an ephemeral port, no peer
 * ever connects); the harness plays the controller's part: ReplicasManager.changeToMaster (the role
 * SYNC_MASTER, AutoSwitchHAService.changeToMaster: epochFileCheckpoint gets epoch 1) and the sync state sets
 * it would push (setSyncStateSet). Messages (waitStoreMsgOK=false, so the put path asks no slave) go through
 * the real putMessage: the first CONFIRMED while the sync state set is {1} (getConfirmOffset = the max
 * physical offset, CommitLog.java:658-661), then the set grows to {1, 2} with broker 2 never connected, so
 * computeConfirmOffset keeps the confirm offset where it was (AutoSwitchHAService.java:420-428) and the
 * reput stops there (DefaultMessageStore.java:2856); the last UNCONFIRMED messages are appended, not
 * dispatched. A clean shutdown flushes the checkpoint (StoreCheckpoint.flush: confirmPhyOffset).
 *
 * `controller-read STORE`: on temporary copies, what the real store serves after a load in four starts:
 * controller mode or not, normal or abnormal (an `abort` file, as a killed broker leaves it). Controller mode
 * is loaded as BrokerController.recoverAndInitService does: the store fenced first (ReplicasManager.setFenced,
 * BrokerController.java:879-882). Per start: the confirm offset after recovery, min/max physical offsets,
 * every queue's units after load, then after start() getMaxOffsetInQueue and getMessage at every offset, and
 * IndexService.queryOffset of every record's key.
 */
package oracle;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.GetMessageResult;
import org.apache.rocketmq.store.PutMessageResult;
import org.apache.rocketmq.store.SelectMappedBufferResult;
import org.apache.rocketmq.store.config.BrokerRole;
import org.apache.rocketmq.store.config.MessageStoreConfig;
import org.apache.rocketmq.store.ha.autoswitch.AutoSwitchHAService;
import org.apache.rocketmq.store.stats.BrokerStatsManager;

public final class ControllerStore {
    static final int CONFIRMED = 30;
    static final int UNCONFIRMED = 12;

    private ControllerStore() {
    }

    static MessageStoreConfig config(String root, Geometry g) {
        MessageStoreConfig c = Stores.config(root, g);
        c.setHaListenPort(0);  // AutoSwitchHAService listens; an ephemeral port, nothing connects
        c.setAllAckInSyncStateSet(true);
        return c;
    }

    static BrokerConfig brokerConfig(boolean controller) {
        BrokerConfig bc = new BrokerConfig();
        bc.setBrokerName(Stores.BROKER_NAME);
        bc.setEnableControllerMode(controller);
        return bc;
    }

    static String topicOf(int i) {
        if (i >= CONFIRMED) {
            return i % 3 == 0 ? "TopicLate" : "TopicA";  // TopicLate: records only in the unconfirmed tail
        }
        return "TopicA";
    }

    public static void write(String root, long seed) throws Exception {
        write(root, seed, false);
    }

    /**
     * `lone`: the sync state set stays {1} (a controller-mode master without slaves): getConfirmOffset answers
     * the max physical offset without storing it (CommitLog.java:658-661), so the checkpoint keeps the confirm
     * offset changeToMaster set at the election (0 on a new store) while every message is dispatched.
     */
    public static void write(String root, long seed, boolean lone) throws Exception {
        if (new File(root).exists()) {
            throw new IllegalStateException(root + " exists; the fixture is written into a new directory");
        }
        Random rnd = new Random(seed);
        Geometry g = new Geometry();
        MessageStoreConfig c = config(root, g);
        BrokerConfig bc = brokerConfig(true);
        ConcurrentHashMap<String, TopicConfig> topics = new ConcurrentHashMap<>();
        topics.put("TopicA", new TopicConfig("TopicA", 2, 2, 6));
        topics.put("TopicLate", new TopicConfig("TopicLate", 1, 1, 6));
        Stores s = Stores.open(c, g, topics, bc, new BrokerStatsManager("DefaultCluster", true));
        if (!s.loaded) {
            throw new IllegalStateException("fresh store did not load");
        }
        s.start();
        AutoSwitchHAService ha = (AutoSwitchHAService) s.store.getHaService();
        ha.setLocalBrokerId(1L);
        ha.setSyncStateSet(Set.of(1L));
        if (!ha.changeToMaster(1)) {  // what ReplicasManager.changeToMaster runs when elected (epoch 1)
            throw new IllegalStateException("changeToMaster failed");
        }
        c.setBrokerRole(BrokerRole.SYNC_MASTER);  // ReplicasManager.java:265
        List<Map<String, Object>> events = new ArrayList<>();
        long confirmSet = -1;
        for (int i = 0; i < CONFIRMED + UNCONFIRMED; i++) {
            if (i == CONFIRMED && !lone) {
                s.waitDispatched();
                ha.setSyncStateSet(Set.of(1L));  // confirm offset = the max physical offset now
                confirmSet = s.store.getConfirmOffset();
                ha.setSyncStateSet(Set.of(1L, 2L));  // broker 2 in the set, never connected: confirm stays
            }
            String topic = topicOf(i);
            int queueId = topic.equals("TopicA") ? i % 2 : 0;
            MessageExtBrokerInnerHolder.put(s.store, rnd, i, topic, queueId, events);
        }
        Thread.sleep(500);  // give the reput its chance: it must stop at the confirm offset
        if (lone) {
            s.waitDispatched();
            events.forEach(e -> e.remove("confirmed"));  // nothing ever moved the confirm offset
        }
        Map<String, Object> expect = new LinkedHashMap<>();
        expect.put("rocketmqVersion", "5.3.3 (git tag rocketmq-all-5.3.3)");
        expect.put("profile", lone ? "controller-lone" : "controller");
        expect.put("seed", seed);
        Map<String, Object> config = new LinkedHashMap<>();
        config.put("mappedFileSizeCommitLog", g.commitLog);
        config.put("mappedFileSizeConsumeQueue", g.consumeQueue);
        config.put("maxHashSlotNum", g.hashSlots);
        config.put("maxIndexNum", g.indexNum);
        config.put("enableControllerMode", true);
        config.put("allAckInSyncStateSet", true);
        config.put("brokerRole", c.getBrokerRole().name());
        expect.put("config", config);
        Map<String, Object> run = new LinkedHashMap<>();
        run.put("confirmOffsetSet", confirmSet);
        run.put("confirmOffsetAtShutdown", s.store.getConfirmOffset());
        run.put("maxPhyOffsetAtShutdown", s.store.getMaxPhyOffset());
        run.put("reputFromOffsetAtShutdown", s.store.getReputFromOffset());
        run.put("dispatchBehindBytes", s.store.dispatchBehindBytes());
        run.put("epochEntries", ha.getEpochEntries().toString());
        expect.put("run", run);
        expect.put("events", events);
        s.shutdown();
        ReadBack.checkpoint(root, expect);
        expect.put("abortAfterShutdown", new File(root, "abort").exists());
        expect.put("reads", reads(root));
        ReadBack.files(root, expect);
        Files.write(new File(root, "expect.json").toPath(), Json.write(expect).getBytes(StandardCharsets.UTF_8));
    }

    /** The four starts, each on its own copy of STORE. */
    static Map<String, Object> reads(String root) throws Exception {
        Map<String, Object> out = new LinkedHashMap<>();
        for (boolean controller : new boolean[] {true, false}) {
            for (boolean abort : new boolean[] {false, true}) {
                Path copy = Files.createTempDirectory("controller-read");
                try {
                    Judge.copy(new File(root).toPath(), copy);
                    Files.deleteIfExists(copy.resolve("expect.json"));
                    if (abort) {
                        Files.write(copy.resolve("abort"), new byte[0]);
                    }
                    out.put((controller ? "controller" : "classic") + (abort ? "Abnormal" : "Normal"),
                        read(copy.toString(), controller));
                } finally {
                    Judge.delete(copy);
                }
            }
        }
        return out;
    }

    public static int readCommand(String root) throws Exception {
        System.out.println(Json.write(reads(root)));
        return 0;
    }

    static Map<String, Object> read(String root, boolean controller) throws Exception {
        Geometry g = Geometry.of(root, new String[0]);
        MessageStoreConfig c = config(root, g);
        BrokerConfig bc = brokerConfig(controller);
        ConcurrentHashMap<String, TopicConfig> topics = new ConcurrentHashMap<>();
        topics.put("TopicA", new TopicConfig("TopicA", 2, 2, 6));
        topics.put("TopicLate", new TopicConfig("TopicLate", 1, 1, 6));
        BrokerStatsManager stats = new BrokerStatsManager("DefaultCluster", true);
        DefaultMessageStore store = new DefaultMessageStore(c, stats, null, bc, topics);
        if (controller) {
            store.getRunningFlags().makeFenced(true);  // ReplicasManager.setFenced(true) before load
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("haService", store.getHaService() == null ? null : store.getHaService().getClass().getSimpleName());
        boolean loaded = store.load();
        out.put("loaded", loaded);
        out.put("confirmOffsetAfterLoad", store.getConfirmOffset());
        out.put("checkpointConfirmPhyOffsetAfterLoad", store.getStoreCheckpoint().getConfirmPhyOffset());
        out.put("minPhyOffset", store.getMinPhyOffset());
        out.put("maxPhyOffset", store.getMaxPhyOffset());
        if (!loaded) {  // BrokerController.initialize returns false: BrokerStartup exits (-3)
            out.put("queues", new TreeMap<>());
            stats.shutdown();
            return out;
        }
        out.put("consumeQueuesAfterLoad", ReadBack.consumeQueues(store));
        store.start();
        for (int i = 0; i < 40 && store.dispatchBehindBytes() > 0; i++) {
            Thread.sleep(50);
        }
        Thread.sleep(300);
        out.put("confirmOffsetAfterStart", store.getConfirmOffset());
        out.put("reputFromOffset", store.getReputFromOffset());
        Map<String, Object> queues = new TreeMap<>();
        for (String topic : new String[] {"TopicA", "TopicLate"}) {
            int n = topic.equals("TopicA") ? 2 : 1;
            for (int q = 0; q < n; q++) {
                Map<String, Object> m = new LinkedHashMap<>();
                long min = store.getMinOffsetInQueue(topic, q);
                long max = store.getMaxOffsetInQueue(topic, q);
                m.put("minOffset", min);
                m.put("maxOffset", max);
                List<Object> gets = new ArrayList<>();
                for (long off = 0; off <= Math.max(max, 12); off++) {
                    GetMessageResult r = store.getMessage("GID_read", topic, q, off, 1, null);
                    List<Long> phys = new ArrayList<>();
                    for (SelectMappedBufferResult b : r.getMessageMapedList()) {
                        phys.add(b.getStartOffset());
                    }
                    gets.add(List.of(off, r.getStatus().name(), phys, r.getNextBeginOffset()));
                    r.release();
                }
                m.put("getMessage[offset,status,phyOffsets,nextBeginOffset]", gets);
                queues.put(topic + "/" + q, m);
            }
        }
        out.put("queues", queues);
        List<String[]> keys = new ArrayList<>();
        for (int i = 0; i < CONFIRMED + UNCONFIRMED; i++) {
            keys.add(new String[] {topicOf(i), "key-" + i});
        }
        out.put("index", ReadBack.indexQueries(store, keys, 32));
        store.shutdown();
        stats.shutdown();
        return out;
    }

    /** One put through the real path (waitStoreMsgOK=false: no slave is asked), recorded in `events`. */
    static final class MessageExtBrokerInnerHolder {
        private MessageExtBrokerInnerHolder() {
        }

        static void put(DefaultMessageStore store, Random rnd, int i, String topic, int queueId,
            List<Map<String, Object>> events) {
            org.apache.rocketmq.common.message.MessageExtBrokerInner m =
                TimerFixture.message(rnd, i, topic, queueId, 20, 200, new LinkedHashMap<>());
            m.setWaitStoreMsgOK(false);
            m.setPropertiesString(org.apache.rocketmq.common.message.MessageDecoder.messageProperties2String(m.getProperties()));
            PutMessageResult r = store.putMessage(m);
            if (!r.isOk()) {
                throw new IllegalStateException("put failed: " + r);
            }
            Map<String, Object> e = new LinkedHashMap<>();
            e.put("i", i);
            e.put("topic", topic);
            e.put("queueId", queueId);
            e.put("key", "key-" + i);
            e.put("wroteOffset", r.getAppendMessageResult().getWroteOffset());
            e.put("wroteBytes", r.getAppendMessageResult().getWroteBytes());
            e.put("queueOffset", r.getAppendMessageResult().getLogicsOffset());
            e.put("confirmed", i < CONFIRMED);  // by the sync state set {1, 2} of the default variant
            events.add(e);
        }
    }
}
