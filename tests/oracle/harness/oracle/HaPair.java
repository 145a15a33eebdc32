/*
 * `ha-pair DIR [SEED]`: a master and a slave of one broker replicated by the real classic HA of 5.3.3
 * (DefaultHAService on 127.0.0.1: the master's AcceptSocketService on an ephemeral port, the slave's
 * DefaultHAClient pulling from it), then what a failover does to the pair, in three snapshots under DIR:
 *
 *   lagging/{master,slave}    the slave in sync after the first puts, then stopped; the master took more
 *   failover/{old,new}        the master stopped (a dead master: its last puts never reached the slave);
 *                             the slave restarted as the master and took puts of its own
 *   rejoin/{old,new}          the old master restarted as a slave of the new one (DefaultHAClient reports
 *                             its own end; DefaultHAConnection ships the master's bytes from there), the
 *                             new master took more puts, both stopped
 *
 * DIR/expect.json: every put (store, topic, queue, queue offset, physical offset, size, UNIQ_KEY), each
 * snapshot's max physical offsets, and in `rejoin` what the old master received: the offset the new
 * master started shipping from and the old master's end after it.
 *
 * Every byte is the real classes'. The harness swaps the HA service the store builds (the LoneMasterHAService
 * the harness registers under META-INF/service/) for a real DefaultHAService before start() initialises it
 * (DefaultMessageStore.java:397), and plays the broker's part: the roles (MessageStoreConfig.brokerRole) and
 * the master address the slave's broker would learn from the name server (updateHaMasterAddress).
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
import java.util.concurrent.ConcurrentHashMap;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.message.MessageAccessor;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExtBrokerInner;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.PutMessageResult;
import org.apache.rocketmq.store.config.BrokerRole;
import org.apache.rocketmq.store.config.MessageStoreConfig;
import org.apache.rocketmq.store.ha.DefaultHAService;
import org.apache.rocketmq.store.stats.BrokerStatsManager;

public final class HaPair {
    static final String[] TOPICS = {"TopicTest", "OrderTopic"};
    static final String MASTER_HOST = "192.168.0.10";
    static final String SLAVE_HOST = "192.168.0.11";

    private HaPair() {
    }

    static Geometry geometry() {
        Geometry g = new Geometry();
        g.commitLog = 16 * 1024;  // several files for a few dozen messages: the pair's logs cross file ends
        return g;
    }

    /** A store of the pair with a real DefaultHAService, loaded (not started). */
    static Stores open(String root, BrokerRole role, long brokerId) throws Exception {
        return open(root, role, brokerId, geometry());
    }

    /** The same with the file sizes of `g` (HaSync: a store of other sizes). */
    static Stores open(String root, BrokerRole role, long brokerId, Geometry g) throws Exception {
        MessageStoreConfig c = Stores.config(root, g);
        c.setBrokerRole(role);
        c.setHaListenPort(0);  // DefaultHAService.AcceptSocketService: the OS picks, the config is updated
        BrokerConfig bc = new BrokerConfig();
        bc.setBrokerName(Stores.BROKER_NAME);
        bc.setBrokerId(brokerId);
        Stores s = Stores.open(c, g, new ConcurrentHashMap<String, TopicConfig>(), bc,
            new BrokerStatsManager("DefaultCluster", true));
        if (!s.loaded) {
            throw new IllegalStateException(root + " did not load");
        }
        Field f = DefaultMessageStore.class.getDeclaredField("haService");
        f.setAccessible(true);
        f.set(s.store, new DefaultHAService());
        return s;
    }

    static void follow(Stores slave, Stores master) {
        slave.store.updateHaMasterAddress("127.0.0.1:" + master.config.getHaListenPort());
    }

    static void waitFor(Stores s, long offset) throws InterruptedException {
        for (int i = 0; i < 600 && s.store.getMaxPhyOffset() < offset; i++) {
            Thread.sleep(50);
        }
        if (s.store.getMaxPhyOffset() < offset) {
            throw new IllegalStateException("the slave did not reach " + offset + ": " + s.store.getMaxPhyOffset());
        }
        s.waitDispatched();
    }

    static void put(Stores s, String name, String host, Random rnd, int[] counter, int n,
        List<Map<String, Object>> events) {
        for (int k = 0; k < n; k++) {
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
            m.setStoreHost(new InetSocketAddress(host, 10911));
            String uniq = String.format("%016X%016X", rnd.nextLong(), (long) i);
            Map<String, String> p = new LinkedHashMap<>();
            p.put(MessageConst.PROPERTY_KEYS, "key-" + i);
            p.put(MessageConst.PROPERTY_TAGS, "tag" + (i % 3));
            p.put(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX, uniq);
            MessageAccessor.setProperties(m, MessageDecoder.string2messageProperties(MessageDecoder.messageProperties2String(p)));
            m.setPropertiesString(MessageDecoder.messageProperties2String(m.getProperties()));
            m.setTagsCode(MessageExtBrokerInner.tagsString2tagsCode("tag" + (i % 3)));
            PutMessageResult res = s.store.putMessage(m);
            if (!res.isOk()) {
                throw new IllegalStateException("put failed: " + res);
            }
            Map<String, Object> e = new LinkedHashMap<>();
            e.put("store", name);
            e.put("topic", topic);
            e.put("queueId", queueId);
            e.put("queueOffset", res.getAppendMessageResult().getLogicsOffset());
            e.put("physicalOffset", res.getAppendMessageResult().getWroteOffset());
            e.put("size", res.getAppendMessageResult().getWroteBytes());
            e.put("uniqKey", uniq);
            events.add(e);
        }
    }

    static void snapshot(String from, String to) throws Exception {
        Judge.copy(Path.of(from), Path.of(to));
        Files.deleteIfExists(Path.of(to, "lock"));  // the copy is no running broker's
        Files.createFile(Path.of(to, "lock"));
    }

    public static int write(String dir, long seed) throws Exception {
        if (new File(dir).exists()) {
            throw new IllegalStateException(dir + " exists; the pairs are written into a new directory");
        }
        String work = dir + "/.work";
        String a = work + "/a";  // the first master
        String b = work + "/b";  // its slave, later the new master
        Random rnd = new Random(seed);
        int[] counter = {0};
        List<Map<String, Object>> events = new ArrayList<>();
        Map<String, Object> expect = new LinkedHashMap<>();
        expect.put("rocketmqVersion", "5.3.3 (git tag rocketmq-all-5.3.3)");
        expect.put("seed", seed);
        expect.put("mappedFileSizeCommitLog", geometry().commitLog);

        // 1. in sync, then the slave stops and the master takes more: `lagging`
        Stores master = open(a, BrokerRole.ASYNC_MASTER, 0);
        master.start();
        Stores slave = open(b, BrokerRole.SLAVE, 1);
        slave.start();
        follow(slave, master);
        put(master, "a", MASTER_HOST, rnd, counter, 40, events);
        master.waitDispatched();
        long synced = master.store.getMaxPhyOffset();
        waitFor(slave, synced);
        slave.shutdown();
        put(master, "a", MASTER_HOST, rnd, counter, 15, events);
        master.waitDispatched();
        long masterEnd = master.store.getMaxPhyOffset();
        master.shutdown();  // and it dies: its last 15 never reach the slave
        snapshot(a, dir + "/lagging/master");
        snapshot(b, dir + "/lagging/slave");
        Map<String, Object> lagging = new LinkedHashMap<>();
        lagging.put("syncedOffset", synced);
        lagging.put("maxPhyOffset", Map.of("master", masterEnd, "slave", synced));
        expect.put("lagging", lagging);

        // 2. the slave takes over as the master and takes puts of its own: `failover`
        Stores promoted = open(b, BrokerRole.ASYNC_MASTER, 0);
        promoted.start();
        put(promoted, "b", SLAVE_HOST, rnd, counter, 10, events);
        promoted.waitDispatched();
        long newEnd = promoted.store.getMaxPhyOffset();
        promoted.shutdown();
        snapshot(a, dir + "/failover/old");
        snapshot(b, dir + "/failover/new");
        Map<String, Object> failover = new LinkedHashMap<>();
        failover.put("maxPhyOffset", Map.of("old", masterEnd, "new", newEnd));
        expect.put("failover", failover);

        // 3. the old master comes back as a slave of the new one, which takes more puts: `rejoin`
        Stores newMaster = open(b, BrokerRole.ASYNC_MASTER, 0);
        newMaster.start();
        Stores rejoined = open(a, BrokerRole.SLAVE, 1);
        rejoined.start();
        follow(rejoined, newMaster);
        Thread.sleep(3000);  // the HA connection: the slave reports its end, the master answers
        long before = rejoined.store.getMaxPhyOffset();
        put(newMaster, "b", SLAVE_HOST, rnd, counter, 20, events);
        newMaster.waitDispatched();
        long newMasterEnd = newMaster.store.getMaxPhyOffset();
        for (int i = 0; i < 100 && rejoined.store.getMaxPhyOffset() < newMasterEnd; i++) {
            Thread.sleep(50);
        }
        Thread.sleep(1000);
        long after = rejoined.store.getMaxPhyOffset();
        rejoined.shutdown();
        newMaster.shutdown();
        snapshot(a, dir + "/rejoin/old");
        snapshot(b, dir + "/rejoin/new");
        Map<String, Object> rejoin = new LinkedHashMap<>();
        rejoin.put("oldEndBefore", before);
        rejoin.put("oldEndAfter", after);
        rejoin.put("newEnd", newMasterEnd);
        expect.put("rejoin", rejoin);
        expect.put("events", events);
        Judge.delete(Path.of(work));
        Files.write(new File(dir, "expect.json").toPath(), Json.write(expect).getBytes(StandardCharsets.UTF_8));
        System.out.println(Json.write(rejoin));
        Runtime.getRuntime().halt(0);  // the HA services' threads would keep the JVM alive
        return 0;
    }
}
