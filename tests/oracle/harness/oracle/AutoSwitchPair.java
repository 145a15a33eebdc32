/*
 * `autoswitch-pair DIR [SEED]`: two replicas of one broker in controller mode (BrokerConfig.enableControllerMode)
 * replicated by the real AutoSwitchHAService / AutoSwitchHAClient / AutoSwitchHAConnection of 5.3.3 on 127.0.0.1,
 * a failover to the slave at a higher epoch, and the old master's rejoin as a slave, which the real
 * AutoSwitchHAClient truncates. No controller process runs: the harness plays ReplicasManager's part with the
 * calls it makes (5.3.3 broker/.../controller/ReplicasManager.java):
 *
 *   - the store fenced before load and unfenced once a role is decided (BrokerController.java:879-881,
 *     ReplicasManager.java:203);
 *   - the broker's controller id (AutoSwitchHAService.setLocalBrokerId, ReplicasManager.java:544);
 *   - changeToMaster: the sync state set the controller answered (changeSyncStateSet ->
 *     AutoSwitchHAService.setSyncStateSet, ReplicasManager.java:256,343), then AutoSwitchHAService.changeToMaster
 *     (ReplicasManager.java:262), then brokerId 0 and the role SYNC_MASTER (ReplicasManager.java:264-265);
 *   - changeToSlave: the role SLAVE, brokerId = the controller id (ReplicasManager.java:300,303), then
 *     AutoSwitchHAService.changeToSlave(masterAddress, epoch, controllerId) (ReplicasManager.java:313); the HA
 *     address a slave learns when it registers (BrokerController.java:2034: updateHaMasterAddress);
 *   - the controller's answer to the master's alterSyncStateSet when the slave caught up
 *     (AutoSwitchHAService.maybeExpandInSyncStateSet notifies; the controller's reply is setSyncStateSet).
 *
 * The story (broker A: controller id 1, host 192.168.0.10; broker B: id 2, host 192.168.0.11):
 *   1. A elected at epoch 1 (changeToMaster(1), sync state set {1}); B its slave (changeToSlave(A, 1, 2)); puts on
 *      A (waitStoreMsgOK=false, so a put asks no slave); B catches up; the controller grows the set to {1, 2};
 *      more puts until B acked them all (A's confirm offset = its end, AutoSwitchHAService.computeConfirmOffset).
 *   2. B's HA client stops (a cut connection: AutoSwitchHAClient.shutdown); A's connection ends
 *      (AutoSwitchHAService.removeConnection, :101-113, marks {1} as the set being synchronized and notifies; the
 *      controller never answers the shrink, so B stays in the set and electable, and A's confirm offset stays); A takes a tail of puts B never gets; A dies: store shutdown, then the `abort` file a
 *      crash leaves (a real crash would also leave the checkpoint as last flushed).
 *   3. B elected at epoch 2 (changeToMaster(2), set {2}: AutoSwitchHAService.changeToMaster appends epoch 2 at
 *      B's end) and takes puts of its own.  Snapshot: DIR/diverged/{a,b}. B is a running master then: its
 *      files are copied after StoreCheckpoint.flush(), without its `abort` and `lock` (what a clean stop leaves;
 *      the mapped files are read through the page cache, so the copy holds every byte B wrote).
 *   4. A restarts (abnormal recovery: the abort file), fenced, as B's slave at epoch 2 (changeToSlave(B, 2, 1)):
 *      AutoSwitchHAClient's handshake compares the epoch files (findConsistentPoint) and truncates A
 *      (DefaultMessageStore.truncateFiles, AutoSwitchHAClient.java:435-470), then pulls from B. Both stop
 *      cleanly. Snapshot: DIR/rejoined/{a,b}.
 *
 * The truncation the real client chose is recorded twice: every DefaultMessageStore.truncateFiles /
 * truncateDirtyFiles call on A (the store is a subclass that only notes the argument and calls the real method),
 * and the first offset A reported to B after the handshake (AutoSwitchHAConnection.slaveRequestOffset).
 *
 * DIR/expect.json: every put, per phase each side's epoch entries, checkpoint, commitlog min/max, confirm
 * offset and per-queue min/max offsets; the truncations; and per snapshot what the real store serves after a
 * controller-mode load of a copy (fenced, as BrokerController does): confirm offset after recovery, min/max
 * physical offset, per queue min/max offsets after start(), and IndexService.queryOffset of every key.
 */
package oracle;

import java.io.File;
import java.lang.reflect.Field;
import java.net.InetSocketAddress;
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
import org.apache.rocketmq.common.message.MessageAccessor;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExtBrokerInner;
import org.apache.rocketmq.remoting.protocol.EpochEntry;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.PutMessageResult;
import org.apache.rocketmq.store.config.BrokerRole;
import org.apache.rocketmq.store.config.MessageStoreConfig;
import org.apache.rocketmq.store.ha.HAConnection;
import org.apache.rocketmq.store.ha.autoswitch.AutoSwitchHAConnection;
import org.apache.rocketmq.store.ha.autoswitch.AutoSwitchHAService;
import org.apache.rocketmq.store.stats.BrokerStatsManager;

public final class AutoSwitchPair {
    static final String[] TOPICS = {"TopicTest", "OrderTopic"};
    static final int SYNCED = 30;     // puts on A that B replicates
    static final int ACKED = 6;       // puts on A after the set grew to {1, 2}: acked by B, confirm offset = end
    static final int TAIL = 8;        // puts on A after the cut: B never gets them
    static final int PROMOTED = 10;   // puts on B at epoch 2

    private AutoSwitchPair() {
    }

    /** A store whose truncations are noted (the real methods run). */
    static final class NotingStore extends DefaultMessageStore {
        final List<Map<String, Object>> truncations;

        NotingStore(MessageStoreConfig c, BrokerStatsManager stats, BrokerConfig bc,
            ConcurrentHashMap<String, TopicConfig> topics, List<Map<String, Object>> truncations) throws Exception {
            super(c, stats, null, bc, topics);
            this.truncations = truncations;
        }

        private void note(String via, long offset) {
            Map<String, Object> t = new LinkedHashMap<>();
            t.put("via", via);
            t.put("offset", offset);
            t.put("maxPhyOffsetBefore", getMaxPhyOffset());
            t.put("thread", Thread.currentThread().getName());
            truncations.add(t);
        }

        @Override
        public boolean truncateFiles(long offsetToTruncate) throws org.rocksdb.RocksDBException {
            note("truncateFiles", offsetToTruncate);
            return super.truncateFiles(offsetToTruncate);
        }

        @Override
        public void truncateDirtyFiles(long offsetToTruncate) throws org.rocksdb.RocksDBException {
            note("truncateDirtyFiles", offsetToTruncate);
            super.truncateDirtyFiles(offsetToTruncate);
        }
    }

    static final class Node {
        final String name;
        final String host;
        final long controllerId;
        final MessageStoreConfig config;
        final BrokerConfig brokerConfig;
        final BrokerStatsManager stats;
        final NotingStore store;

        Node(String name, String root, String host, long controllerId, List<Map<String, Object>> truncations)
            throws Exception {
            this.name = name;
            this.host = host;
            this.controllerId = controllerId;
            this.config = config(root);
            this.brokerConfig = brokerConfig();
            this.stats = new BrokerStatsManager("DefaultCluster", true);
            this.store = new NotingStore(config, stats, brokerConfig, topics(), truncations);
            store.getRunningFlags().makeFenced(true);  // BrokerController.java:879-881, before load
            if (!store.load()) {
                throw new IllegalStateException(root + " did not load");
            }
            ha().setLocalBrokerId(controllerId);  // ReplicasManager.java:544
            store.start();
        }

        AutoSwitchHAService ha() {
            return (AutoSwitchHAService) store.getHaService();
        }

        void changeToMaster(int epoch, Set<Long> syncStateSet) throws Exception {
            ha().setSyncStateSet(syncStateSet);
            if (!ha().changeToMaster(epoch)) {
                throw new IllegalStateException(name + ": changeToMaster(" + epoch + ") failed");
            }
            brokerConfig.setBrokerId(0);
            config.setBrokerRole(BrokerRole.SYNC_MASTER);
            store.getRunningFlags().makeFenced(false);  // ReplicasManager.java:203
        }

        void changeToSlave(Node master, int epoch) {
            config.setBrokerRole(BrokerRole.SLAVE);
            brokerConfig.setBrokerId(controllerId);
            if (!ha().changeToSlave("127.0.0.1:10911", epoch, controllerId)) {
                throw new IllegalStateException(name + ": changeToSlave(" + epoch + ") failed");
            }
            store.getRunningFlags().makeFenced(false);
            store.updateHaMasterAddress("127.0.0.1:" + master.config.getHaListenPort());
        }

        void shutdown() {
            store.shutdown();
            stats.shutdown();
        }
    }

    static MessageStoreConfig config(String root) {
        MessageStoreConfig c = Stores.config(root, HaPair.geometry());
        c.setHaListenPort(0);  // the accept socket on an ephemeral port; the config is updated with it
        c.setAllAckInSyncStateSet(true);  // the confirm offset waits for every replica of the sync state set
        c.setBrokerRole(BrokerRole.SLAVE);  // until the controller decides
        return c;
    }

    static BrokerConfig brokerConfig() {
        BrokerConfig bc = new BrokerConfig();
        bc.setBrokerName(Stores.BROKER_NAME);
        bc.setEnableControllerMode(true);
        return bc;
    }

    static ConcurrentHashMap<String, TopicConfig> topics() {
        ConcurrentHashMap<String, TopicConfig> t = new ConcurrentHashMap<>();
        t.put("TopicTest", new TopicConfig("TopicTest", 4, 4, 6));
        t.put("OrderTopic", new TopicConfig("OrderTopic", 2, 2, 6));
        return t;
    }

    static void put(Node n, Random rnd, int[] counter, int count, List<Map<String, Object>> events) {
        for (int k = 0; k < count; k++) {
            int i = counter[0]++;
            String topic = TOPICS[rnd.nextInt(TOPICS.length)];
            int queueId = rnd.nextInt(topic.equals("TopicTest") ? 4 : 2);
            MessageExtBrokerInner m = new MessageExtBrokerInner();
            m.setTopic(topic);
            m.setQueueId(queueId);
            byte[] body = new byte[60 + rnd.nextInt(300)];
            for (int b = 0; b < body.length; b++) {
                body[b] = (byte) ('a' + rnd.nextInt(26));
            }
            m.setBody(body);
            m.setBornTimestamp(TimerFixture.BORN_BASE + i * 1000L);
            m.setBornHost(new InetSocketAddress("192.168.1.100", 40000 + i % 5));
            m.setStoreHost(new InetSocketAddress(n.host, 10911));
            String uniq = String.format("%016X%016X", rnd.nextLong(), (long) i);
            Map<String, String> p = new LinkedHashMap<>();
            p.put(MessageConst.PROPERTY_KEYS, "key-" + i);
            p.put(MessageConst.PROPERTY_TAGS, "tag" + (i % 3));
            p.put(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX, uniq);
            MessageAccessor.setProperties(m, MessageDecoder.string2messageProperties(MessageDecoder.messageProperties2String(p)));
            m.setWaitStoreMsgOK(false);  // CommitLog.needHandleHA: the put waits for no replica
            m.setPropertiesString(MessageDecoder.messageProperties2String(m.getProperties()));
            m.setTagsCode(MessageExtBrokerInner.tagsString2tagsCode("tag" + (i % 3)));
            PutMessageResult res = n.store.putMessage(m);
            if (!res.isOk()) {
                throw new IllegalStateException(n.name + ": put failed: " + res);
            }
            Map<String, Object> e = new LinkedHashMap<>();
            e.put("store", n.name);
            e.put("topic", topic);
            e.put("queueId", queueId);
            e.put("queueOffset", res.getAppendMessageResult().getLogicsOffset());
            e.put("physicalOffset", res.getAppendMessageResult().getWroteOffset());
            e.put("size", res.getAppendMessageResult().getWroteBytes());
            e.put("key", "key-" + i);
            e.put("uniqKey", uniq);
            events.add(e);
        }
    }

    static void await(String what, java.util.function.BooleanSupplier done) throws InterruptedException {
        for (int i = 0; i < 600 && !done.getAsBoolean(); i++) {
            Thread.sleep(50);
        }
        if (!done.getAsBoolean()) {
            throw new IllegalStateException("timed out: " + what);
        }
    }

    static List<Object> epochs(AutoSwitchHAService ha) {
        List<Object> out = new ArrayList<>();
        for (EpochEntry e : ha.getEpochEntries()) {
            out.add(List.of(e.getEpoch(), e.getStartOffset(), e.getEndOffset()));
        }
        return out;
    }

    static Map<String, Object> queues(DefaultMessageStore store) throws Exception {
        Map<String, Object> out = new TreeMap<>();
        for (String topic : TOPICS) {
            int n = topic.equals("TopicTest") ? 4 : 2;
            for (int q = 0; q < n; q++) {
                out.put(topic + "/" + q, List.of(store.getMinOffsetInQueue(topic, q), store.getMaxOffsetInQueue(topic, q)));
            }
        }
        return out;
    }

    /** A running node as it is now. */
    static Map<String, Object> state(Node n) throws Exception {
        Map<String, Object> s = new LinkedHashMap<>();
        s.put("role", n.config.getBrokerRole().name());
        s.put("epochEntries[epoch,start,end]", epochs(n.ha()));
        s.put("minPhyOffset", n.store.getMinPhyOffset());
        s.put("maxPhyOffset", n.store.getMaxPhyOffset());
        s.put("confirmOffset", n.store.getConfirmOffset());
        s.put("checkpointConfirmPhyOffset", n.store.getStoreCheckpoint().getConfirmPhyOffset());
        s.put("checkpointMasterFlushedOffset", n.store.getStoreCheckpoint().getMasterFlushedOffset());
        s.put("reputFromOffset", n.store.getReputFromOffset());
        s.put("queues[min,max]", queues(n.store));
        return s;
    }

    static void snapshot(String from, String to) throws Exception {
        Judge.copy(Path.of(from), Path.of(to));
        Files.deleteIfExists(Path.of(to, "lock"));
        Files.createFile(Path.of(to, "lock"));  // the copy is no running broker's
    }

    /** What the real store serves from a copy of ROOT loaded in controller mode (fenced first), then started. */
    static Map<String, Object> read(String root) throws Exception {
        Path copy = Files.createTempDirectory("autoswitch-read");
        try {
            Judge.copy(Path.of(root), copy);
            Files.deleteIfExists(copy.resolve("lock"));
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("recovery", Files.exists(copy.resolve("abort")) ? "abnormal" : "normal");
            MessageStoreConfig c = config(copy.toString());
            BrokerStatsManager stats = new BrokerStatsManager("DefaultCluster", true);
            DefaultMessageStore store = new DefaultMessageStore(c, stats, null, brokerConfig(), topics());
            store.getRunningFlags().makeFenced(true);
            boolean loaded = store.load();
            out.put("loaded", loaded);
            out.put("confirmOffsetAfterLoad", store.getConfirmOffset());
            out.put("minPhyOffset", store.getMinPhyOffset());
            out.put("maxPhyOffset", store.getMaxPhyOffset());
            if (loaded) {
                out.put("queuesAfterLoad[min,max]", queues(store));
                store.start();  // AutoSwitchHAService.init reads the epoch file here (DefaultMessageStore.java:396)
                out.put("epochEntries[epoch,start,end]", epochs((AutoSwitchHAService) store.getHaService()));
                await("dispatch", () -> store.dispatchBehindBytes() <= 0);
                Thread.sleep(300);
                out.put("reputFromOffset", store.getReputFromOffset());
                out.put("queuesAfterStart[min,max]", queues(store));
                List<String[]> keys = new ArrayList<>();
                for (String topic : TOPICS) {
                    for (int i = 0; i < SYNCED + ACKED + TAIL + PROMOTED; i++) {
                        keys.add(new String[] {topic, "key-" + i});
                    }
                }
                out.put("index", ReadBack.indexQueries(store, keys, 32));
                store.shutdown();
            }
            stats.shutdown();
            return out;
        } finally {
            Judge.delete(copy);
        }
    }

    /** `autoswitch-read STORE`: what `reads` holds for one snapshot, with IndexService.queryOffset of every key. */
    public static int readCommand(String root) throws Exception {
        System.out.println(Json.write(read(root)));
        Runtime.getRuntime().halt(0);
        return 0;
    }

    static long slaveRequestOffset(AutoSwitchHAService master) throws Exception {
        for (HAConnection c : master.getConnectionList()) {
            Field f = AutoSwitchHAConnection.class.getDeclaredField("slaveRequestOffset");
            f.setAccessible(true);
            return (long) f.get(c);
        }
        return -2;
    }

    /**
     * `autoswitch-restart MASTER SLAVE EPOCH [--master-a]`, in place (pass copies): MASTER (broker B, controller
     * id 2; with --master-a broker A, id 1) restarted and elected at EPOCH with the sync state set {its id}, then
     * SLAVE (the other broker) restarted as its slave at EPOCH, as ReplicasManager does when the controller answers; waits up to 30 s for the slave to reach the
     * master's end, stops both cleanly. One JSON object: both states, every truncation on each store, the
     * slave's first reported offset, and whether the slave reached the master's end.
     */
    public static int restart(String masterDir, String slaveDir, int epoch, boolean masterIsA) throws Exception {
        List<Map<String, Object>> truncationsSlave = new ArrayList<>();
        List<Map<String, Object>> truncationsMaster = new ArrayList<>();
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("epoch", epoch);
        out.put("masterBroker", masterIsA ? "a" : "b");
        long masterId = masterIsA ? 1 : 2;
        Node master = new Node(masterIsA ? "a" : "b", masterDir, masterIsA ? "192.168.0.10" : "192.168.0.11",
            masterId, truncationsMaster);
        out.put("masterAfterLoad", state(master));
        master.changeToMaster(epoch, Set.of(masterId));
        Node slave = new Node(masterIsA ? "b" : "a", slaveDir, masterIsA ? "192.168.0.11" : "192.168.0.10",
            masterIsA ? 2 : 1, truncationsSlave);
        out.put("slaveAfterLoad", state(slave));
        slave.changeToSlave(master, epoch);
        boolean reached = false;
        for (int i = 0; i < 600 && !reached; i++) {
            Thread.sleep(50);
            reached = slave.store.getMaxPhyOffset() == master.store.getMaxPhyOffset()
                && truncationsSlave.stream().anyMatch(t -> "truncateFiles".equals(t.get("via")));
        }
        Thread.sleep(1500);
        out.put("slaveReachedMasterEnd", reached);
        out.put("slaveRequestOffset", slaveRequestOffset(master.ha()));
        out.put("truncationsSlave", truncationsSlave);
        out.put("truncationsMaster", truncationsMaster);
        out.put("master", state(master));
        out.put("slave", state(slave));
        slave.shutdown();
        master.shutdown();
        System.out.println(Json.write(out));
        Runtime.getRuntime().halt(0);
        return 0;
    }

    public static int write(String dir, long seed) throws Exception {
        if (new File(dir).exists()) {
            throw new IllegalStateException(dir + " exists; the pair is written into a new directory");
        }
        String work = dir + "/.work";
        String rootA = work + "/a";
        String rootB = work + "/b";
        Random rnd = new Random(seed);
        int[] counter = {0};
        List<Map<String, Object>> events = new ArrayList<>();
        List<Map<String, Object>> truncationsA = new ArrayList<>();
        List<Map<String, Object>> truncationsB = new ArrayList<>();
        Map<String, Object> expect = new LinkedHashMap<>();
        expect.put("rocketmqVersion", "5.3.3 (git tag rocketmq-all-5.3.3)");
        expect.put("seed", seed);
        Map<String, Object> cfg = new LinkedHashMap<>();
        cfg.put("mappedFileSizeCommitLog", HaPair.geometry().commitLog);
        cfg.put("mappedFileSizeConsumeQueue", HaPair.geometry().consumeQueue);
        cfg.put("enableControllerMode", true);
        cfg.put("allAckInSyncStateSet", true);
        cfg.put("controllerIds", Map.of("a", 1, "b", 2));
        expect.put("config", cfg);

        // 1. A master at epoch 1, B its slave, in sync
        Node a = new Node("a", rootA, "192.168.0.10", 1, truncationsA);
        a.changeToMaster(1, Set.of(1L));
        Node b = new Node("b", rootB, "192.168.0.11", 2, truncationsB);
        b.changeToSlave(a, 1);
        put(a, rnd, counter, SYNCED, events);
        await("B catches up", () -> b.store.getMaxPhyOffset() >= a.store.getMaxPhyOffset());
        a.ha().setSyncStateSet(Set.of(1L, 2L));  // the controller's answer to A's alterSyncStateSet
        put(a, rnd, counter, ACKED, events);
        await("B acks all", () -> a.store.getConfirmOffset() == a.store.getMaxPhyOffset()
            && b.store.getMaxPhyOffset() == a.store.getMaxPhyOffset());
        Thread.sleep(500);
        Map<String, Object> synced = new LinkedHashMap<>();
        synced.put("a", state(a));
        synced.put("b", state(b));
        expect.put("synced", synced);
        long syncedEnd = a.store.getMaxPhyOffset();

        // 2. the connection is cut; A takes a tail B never gets, then dies
        b.ha().getHAClient().shutdown();
        await("A drops B", () -> a.ha().getConnectionList().isEmpty());
        put(a, rnd, counter, TAIL, events);
        Thread.sleep(500);
        Map<String, Object> cut = new LinkedHashMap<>();
        cut.put("a", state(a));
        cut.put("b", state(b));
        expect.put("cut", cut);
        long aEnd = a.store.getMaxPhyOffset();
        a.shutdown();
        Files.write(Path.of(rootA, "abort"), new byte[0]);  // as a crash leaves it

        // 3. B elected at epoch 2 and takes puts
        b.changeToMaster(2, Set.of(2L));
        put(b, rnd, counter, PROMOTED, events);
        await("B dispatches", () -> b.store.dispatchBehindBytes() <= 0);
        Thread.sleep(500);
        b.store.getStoreCheckpoint().flush();
        Map<String, Object> diverged = new LinkedHashMap<>();
        diverged.put("syncedEnd", syncedEnd);
        diverged.put("aEnd", aEnd);
        diverged.put("b", state(b));
        snapshot(rootA, dir + "/diverged/a");
        snapshot(rootB, dir + "/diverged/b");
        Files.deleteIfExists(Path.of(dir, "diverged/b/abort"));  // a running broker's; a clean stop removes it
        ReadBack.checkpoint(dir + "/diverged/a", diverged);
        diverged.put("checkpointA", diverged.remove("checkpoint"));
        ReadBack.checkpoint(dir + "/diverged/b", diverged);
        diverged.put("checkpointB", diverged.remove("checkpoint"));
        expect.put("diverged", diverged);

        // 4. A restarts as B's slave at epoch 2: the real client truncates A, then pulls from B
        Node a2 = new Node("a", rootA, "192.168.0.10", 1, truncationsA);
        Map<String, Object> rejoin = new LinkedHashMap<>();
        rejoin.put("aAfterLoad", state(a2));
        a2.changeToSlave(b, 2);
        await("A catches up", () -> a2.store.getMaxPhyOffset() == b.store.getMaxPhyOffset()
            && !truncationsA.isEmpty());
        Thread.sleep(1500);
        rejoin.put("slaveRequestOffset", slaveRequestOffset(b.ha()));
        rejoin.put("truncationsA", truncationsA);
        rejoin.put("truncationsB", truncationsB);
        rejoin.put("a", state(a2));
        rejoin.put("b", state(b));
        a2.shutdown();
        b.shutdown();
        snapshot(rootA, dir + "/rejoined/a");
        snapshot(rootB, dir + "/rejoined/b");
        expect.put("rejoin", rejoin);

        Map<String, Object> reads = new LinkedHashMap<>();
        for (String s : new String[] {"diverged/a", "diverged/b", "rejoined/a", "rejoined/b"}) {
            reads.put(s, read(dir + "/" + s));
        }
        expect.put("reads", reads);
        expect.put("events", events);
        Judge.delete(Path.of(work));
        Files.write(new File(dir, "expect.json").toPath(), Json.write(expect).getBytes(StandardCharsets.UTF_8));
        System.out.println(Json.write(rejoin));
        Runtime.getRuntime().halt(0);  // the HA services' threads would keep the JVM alive
        return 0;
    }
}
