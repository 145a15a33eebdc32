/*
 * `dledger-store DIR [SEED]` and `dledger-read STORE` on 4.9.8 (store-dledger-49): DLedgerFixture's plain
 * shape, smaller, written and read by RocketMQ 4.9.8's classes with the same DLedger 0.3.1.2.
 *
 * Real 4.9.8 code: DefaultMessageStore with enableDLegerCommitLog (DLedgerCommitLog: in 4.9 it turns a
 * delay-level message into a SCHEDULE_TOPIC_XXXX one itself, in setMessageInfo), the store's own
 * ScheduleMessageService (started as BrokerController.changeToMaster does: handleScheduleMessageService;
 * delivers the due levels, persists delayOffset.json at shutdown), TransactionalMessageServiceImpl +
 * TransactionalMessageBridge (half messages; one op message per end, written at once in 4.9),
 * EndTransactionProcessor (commit / rollback requests over a Netty EmbeddedChannel), TopicConfigManager,
 * ConsumerOffsetManager. Imitated as in DLedgerFixture: the send request side, the end-transaction header,
 * consumer commits, DLedgerRoleChangeHandler's LEADER wait (DLedgerFiles.awaitLeader).
 * dledger-read prints DLedgerFixture's JSON shape (`timeSearches` has one answer: 4.9 has no BoundaryType).
 */
package oracle;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.embedded.EmbeddedChannel;
import java.io.File;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import org.apache.rocketmq.broker.BrokerController;
import org.apache.rocketmq.broker.offset.ConsumerOffsetManager;
import org.apache.rocketmq.broker.processor.EndTransactionProcessor;
import org.apache.rocketmq.broker.topic.TopicConfigManager;
import org.apache.rocketmq.broker.transaction.queue.TransactionalMessageBridge;
import org.apache.rocketmq.broker.transaction.queue.TransactionalMessageServiceImpl;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.message.MessageAccessor;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.protocol.RequestCode;
import org.apache.rocketmq.common.protocol.header.EndTransactionRequestHeader;
import org.apache.rocketmq.common.sysflag.MessageSysFlag;
import org.apache.rocketmq.common.topic.TopicValidator;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.store.ConsumeQueue;
import org.apache.rocketmq.store.MessageExtBrokerInner;
import org.apache.rocketmq.store.PutMessageResult;
import org.apache.rocketmq.store.SelectMappedBufferResult;
import org.apache.rocketmq.store.config.BrokerRole;
import org.apache.rocketmq.store.config.MessageStoreConfig;
import org.apache.rocketmq.store.schedule.DelayOffsetSerializeWrapper;
import org.apache.rocketmq.store.stats.BrokerStatsManager;

public final class DLedgerFixture49 {
    static final String CLUSTER = "DefaultCluster";
    static final String TOPIC_A = "TopicA";
    static final String TOPIC_B = "TopicB";
    static final String PRODUCER_GROUP = "PID_txn";
    static final String HOST = "192.168.1.100:40000";
    static final int FILE_SIZE = 128 * 1024;
    static final int CQ_FILE_SIZE = 60 * 20;
    static final long BORN_BASE = 1700000000000L;
    static final int[] LEVELS = {1, 2, 3, 4, 10, 18};

    private final BrokerController broker;
    private final Stores s;
    private final Random rnd;
    private final List<Map<String, Object>> events = new ArrayList<>();
    private int seq;

    private DLedgerFixture49(BrokerController broker, Stores s, Random rnd) {
        this.broker = broker;
        this.s = s;
        this.rnd = rnd;
    }

    public static void write(String root, long seed) throws Exception {
        if (new File(root).exists()) {
            throw new IllegalStateException(root + " exists; the fixture is written into a new directory");
        }
        root = new File(root).getAbsolutePath();
        Geometry g = new Geometry();
        g.commitLog = FILE_SIZE;
        g.consumeQueue = CQ_FILE_SIZE;
        g.dledgerSelfId = DLedgerFiles.SELF_ID;
        g.dledgerGroup = DLedgerFiles.GROUP;
        Map<String, Object> info = new LinkedHashMap<>();
        info.put("variant", "plain (4.9.8)");
        info.put("seed", seed);
        try {
            BrokerConfig bc = new BrokerConfig();
            bc.setBrokerName(Stores.BROKER_NAME);
            bc.setBrokerClusterName(CLUSTER);
            bc.setBrokerIP1("192.168.0.10");
            bc.setBrokerId(-1);  // BrokerStartup: a DLedger broker starts without an id; the leader becomes 0
            MessageStoreConfig msc = Stores.config(root, g);
            info.put("dLegerPeers", msc.getdLegerPeers());
            BrokerStatsManager stats = new BrokerStatsManager(CLUSTER, true);
            BrokerController b = new BrokerController(bc, msc, null);
            b.brokerStatsManager = stats;
            b.topicConfigManager = new TopicConfigManager(b);
            b.consumerOffsetManager = new ConsumerOffsetManager(b);
            if (!(b.topicConfigManager.load() && b.consumerOffsetManager.load())) {
                throw new IllegalStateException("metadata did not load");
            }
            b.topicConfigManager.updateTopicConfig(new TopicConfig(TOPIC_A, 4, 4, 6));
            b.topicConfigManager.updateTopicConfig(new TopicConfig(TOPIC_B, 2, 2, 6));
            Stores s = Stores.open(msc, bc, stats);
            if (!s.loaded) {
                throw new IllegalStateException("the store did not load");
            }
            b.setMessageStore(s.store);
            b.transactionalMessageService = new TransactionalMessageServiceImpl(new TransactionalMessageBridge(b, s.store));
            s.start();
            info.put("leader", DLedgerFiles.awaitLeader(s.store, 30_000));
            // BrokerController.changeToMaster (4.9.8): the schedule service, broker id 0
            s.store.handleScheduleMessageService(BrokerRole.SYNC_MASTER);
            bc.setBrokerId(MixAll.MASTER_ID);
            DLedgerFixture49 f = new DLedgerFixture49(b, s, new Random(seed));
            f.traffic(130);
            b.consumerOffsetManager.persist();
            b.topicConfigManager.persist();
            s.shutdown();  // the schedule service persists delayOffset.json
            info.put("events", f.events);
        } catch (Throwable t) {
            t.printStackTrace();
            Runtime.getRuntime().halt(1);
        }
        DLedgerFiles.writeConf(root, g, info);
        Files.write(new File(root + ".write.json").toPath(), Json.write(info).getBytes(StandardCharsets.UTF_8));
    }

    void traffic(int n) throws Exception {
        List<PutMessageResult> halves = new ArrayList<>();
        List<String[]> halfIds = new ArrayList<>();
        int big = 0;
        for (int i = 0; i < n; i++) {
            if (i % 60 == 17) {
                put(big(big++ == 0 ? 8 : 8 + 1000 + rnd.nextInt(20_000)), "big");
            } else if (i % 23 == 5) {
                int level = LEVELS[(i / 23) % LEVELS.length];
                put(message(seq++, rnd.nextBoolean() ? TOPIC_A : TOPIC_B, rnd.nextInt(2), 60 + rnd.nextInt(200),
                    Map.of(MessageConst.PROPERTY_DELAY_TIME_LEVEL, String.valueOf(level))), "delayed level " + level);
            } else if (i % 19 == 7) {
                String topic = rnd.nextBoolean() ? TOPIC_A : TOPIC_B;
                MessageExtBrokerInner m = message(seq++, topic, rnd.nextInt(2), 80 + rnd.nextInt(300), Map.of(
                    MessageConst.PROPERTY_TRANSACTION_PREPARED, "true",
                    MessageConst.PROPERTY_PRODUCER_GROUP, PRODUCER_GROUP));
                m.setSysFlag(MessageSysFlag.resetTransactionValue(m.getSysFlag(), MessageSysFlag.TRANSACTION_PREPARED_TYPE));
                String uniq = m.getProperty(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX);
                PutMessageResult r = broker.transactionalMessageService.prepareMessage(m);  // SendMessageProcessor (4.9.8)
                if (!r.isOk()) {
                    throw new IllegalStateException("half put failed: " + r);
                }
                event("half", topic + " uniq " + uniq, r);
                halves.add(r);
                halfIds.add(new String[] {topic, uniq, r.getAppendMessageResult().getMsgId()});
            } else {
                String topic = rnd.nextInt(3) == 0 ? TOPIC_B : TOPIC_A;
                put(message(seq++, topic, rnd.nextInt(topic.equals(TOPIC_A) ? 4 : 2), 40 + rnd.nextInt(600), Map.of()), "ordinary");
            }
        }
        s.waitDispatched();
        for (int k = 0; k < halves.size(); k++) {
            if (k % 3 == 2) {
                event("pending", "half message left without commit or rollback", halves.get(k));
                continue;
            }
            endTransaction(halves.get(k), halfIds.get(k), k % 3 == 0);
        }
        for (String group : new String[] {"GID_dledger", "GID_other"}) {
            for (String t : new String[] {TOPIC_A, TOPIC_B}) {
                for (int q = 0; q < (t.equals(TOPIC_A) ? 4 : 2); q++) {
                    long max = s.store.getMaxOffsetInQueue(t, q);
                    broker.consumerOffsetManager.commitOffset(HOST, group, t, q, Math.max(0, max - q - (group.equals("GID_other") ? 3 : 0)));
                }
            }
        }
        long deadline = System.currentTimeMillis() + 40_000;
        while (true) {  // until the schedule service delivered levels 1..3
            Map<Integer, Long> offs = DelayOffsetSerializeWrapper.fromJson(s.store.getScheduleMessageService().encode(),
                DelayOffsetSerializeWrapper.class).getOffsetTable();
            boolean done = true;
            for (int level = 1; level <= 3; level++) {
                long max = s.store.getMaxOffsetInQueue(TopicValidator.RMQ_SYS_SCHEDULE_TOPIC, level - 1);
                Long o = offs == null ? null : offs.get(level);
                done &= max == 0 || o != null && o >= max;
            }
            if (done) {
                break;
            }
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException("delay levels 1-3 not delivered in 40 s: " + offs);
            }
            Thread.sleep(200);
        }
        s.waitDispatched();
    }

    MessageExtBrokerInner message(int i, String topic, int queueId, int bodySize, Map<String, String> props) {
        MessageExtBrokerInner m = new MessageExtBrokerInner();
        m.setTopic(topic);
        m.setQueueId(queueId);
        byte[] body = new byte[bodySize];
        for (int k = 0; k < body.length; k++) {
            body[k] = (byte) ('a' + rnd.nextInt(26));
        }
        m.setBody(body);
        m.setBornTimestamp(BORN_BASE + i * 1000L);
        m.setBornHost(new InetSocketAddress("192.168.1.100", 40000 + i % 7));
        m.setStoreHost(new InetSocketAddress("192.168.0.10", 10911));
        String tags = "tag" + (i % 3);
        Map<String, String> p = new LinkedHashMap<>();
        p.put(MessageConst.PROPERTY_KEYS, i % 5 == 0 ? "key-" + i + " order-" + (i / 5) : "key-" + i);
        p.put(MessageConst.PROPERTY_TAGS, tags);
        p.put(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX, String.format("%016X%016X", rnd.nextLong(), (long) i));
        p.put(MessageConst.PROPERTY_CLUSTER, CLUSTER);
        p.putAll(props);
        MessageAccessor.setProperties(m, MessageDecoder.string2messageProperties(MessageDecoder.messageProperties2String(p)));
        m.setPropertiesString(MessageDecoder.messageProperties2String(m.getProperties()));
        m.setTagsCode(MessageExtBrokerInner.tagsString2tagsCode(tags));
        return m;
    }

    MessageExtBrokerInner big(int leave) {
        MessageExtBrokerInner m = message(seq++, TOPIC_A, rnd.nextInt(4), 1, Map.of());
        int props = m.getPropertiesString().getBytes(StandardCharsets.UTF_8).length;
        int body = FILE_SIZE - leave - 48 - (91 + TOPIC_A.length() + props);  // CommitLog.calMsgLength (4.9), v4 hosts
        byte[] b = new byte[body];
        for (int k = 0; k < body; k++) {
            b[k] = (byte) ('a' + (k * 7 + seq) % 26);
        }
        m.setBody(b);
        return m;
    }

    void put(MessageExtBrokerInner m, String kind) {
        PutMessageResult r = s.store.putMessage(m);
        if (!r.isOk()) {
            throw new IllegalStateException("put failed: " + r);
        }
        event(kind, m.getTopic() + "/" + m.getQueueId(), r);
    }

    void event(String kind, String note, PutMessageResult r) {
        Map<String, Object> e = new LinkedHashMap<>();
        e.put("kind", kind);
        e.put("note", note);
        if (r != null) {
            e.put("wroteOffset", r.getAppendMessageResult().getWroteOffset());
            e.put("wroteBytes", r.getAppendMessageResult().getWroteBytes());
            e.put("queueOffset", r.getAppendMessageResult().getLogicsOffset());
            e.put("msgId", r.getAppendMessageResult().getMsgId());
        }
        events.add(e);
    }

    /** END_TRANSACTION as the producer sends it, to the real 4.9.8 EndTransactionProcessor. */
    void endTransaction(PutMessageResult half, String[] ids, boolean commit) throws Exception {
        EndTransactionRequestHeader hdr = new EndTransactionRequestHeader();
        hdr.setProducerGroup(PRODUCER_GROUP);
        hdr.setTranStateTableOffset(half.getAppendMessageResult().getLogicsOffset());
        hdr.setCommitLogOffset(half.getAppendMessageResult().getWroteOffset());
        hdr.setCommitOrRollback(commit ? MessageSysFlag.TRANSACTION_COMMIT_TYPE : MessageSysFlag.TRANSACTION_ROLLBACK_TYPE);
        hdr.setFromTransactionCheck(false);
        hdr.setMsgId(ids[2]);
        hdr.setTransactionId(ids[1]);
        RemotingCommand req = RemotingCommand.createRequestCommand(RequestCode.END_TRANSACTION, hdr);
        req.makeCustomHeaderToNet();
        EmbeddedChannel ch = new EmbeddedChannel(new ChannelInboundHandlerAdapter());
        ChannelHandlerContext ctx = ch.pipeline().firstContext();
        RemotingCommand resp = new EndTransactionProcessor(broker).processRequest(ctx, req);
        Map<String, Object> e = new LinkedHashMap<>();
        e.put("kind", commit ? "commit" : "rollback");
        e.put("halfOffset", hdr.getCommitLogOffset());
        e.put("halfQueueOffset", hdr.getTranStateTableOffset());
        e.put("responseCode", resp == null ? null : resp.getCode());
        events.add(e);
        if (resp == null || resp.getCode() != 0) {
            throw new IllegalStateException("end transaction refused: " + (resp == null ? null : resp.getRemark()));
        }
    }

    // ---------------------------------------------------------------- dledger-read

    public static int read(String storeArg) throws Exception {
        java.nio.file.Path original = java.nio.file.Path.of(storeArg).toAbsolutePath();
        java.nio.file.Path tmp = Files.createTempDirectory("mqtool-oracle-dledger");
        java.io.PrintStream stdout = System.out;
        try {
            System.setOut(System.err);
            Judge.copy(original, tmp.resolve("store"));
            Map<String, Object> out = readOn(tmp.resolve("store").toString(), original.toString());
            System.setOut(stdout);
            System.out.print(Json.write(out));
            System.out.flush();
            return 0;
        } finally {
            System.setOut(stdout);
            Judge.delete(tmp);
        }
    }

    static Map<String, Object> readOn(String root, String shown) throws Exception {
        Geometry g = Geometry.of(root, new String[0]);
        if (g.dledgerSelfId == null) {
            throw new IllegalStateException(shown + " has no dledger-<selfId> directory");
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("rocketmq", "4.9.8");
        out.put("dledger", "0.3.1.2");
        out.put("store", shown);
        out.put("geometry", g.json());
        out.put("recovery", new File(root, "abort").exists() ? "abnormal" : "normal");
        Map<String, Object> disk = DLedgerFiles.onDisk(root, g);
        out.put("onDisk", disk);
        out.put("storeCheckpointOnDisk", DLedgerFiles.storeCheckpoint(root));
        Stores s = Stores.open(root, g);
        out.put("loaded", s.loaded);
        Map<String, Object> rec = DLedgerFiles.recovered(s.store, root);
        rec.put("recoveryCut", DLedgerFiles.cut(disk, rec, root, g));
        rec.put("storeMinPhyOffset", s.store.getMinPhyOffset());
        rec.put("storeMaxPhyOffset", s.store.getMaxPhyOffset());
        out.put("afterLoad", rec);
        out.put("entries", DLedgerFiles.entries(s.store));
        // ConsumeQueues as recovery left them (before the start re-dispatches): [min, max, maxPhysicOffset]
        Map<String, Object> cqs = new java.util.TreeMap<>();
        s.store.getConsumeQueueTable().forEach((topic, queues) -> queues.forEach((qid, cq) -> cqs.put(topic + "/" + qid,
            List.of(cq.getMinOffsetInQueue(), cq.getMaxOffsetInQueue(), cq.getMaxPhysicOffset()))));
        out.put("consumeQueuesAfterLoad[min,max,maxPhysicOffset]", cqs);

        s.start();
        Map<String, Object> started = DLedgerFiles.awaitLeader(s.store, 30_000);
        s.waitDispatched();
        started.put("committedIndex", DLedgerFiles.fileStore(s.store).getCommittedIndex());
        started.put("committedPos", DLedgerFiles.fileStore(s.store).getCommittedPos());
        started.put("minPhyOffset", s.store.getMinPhyOffset());
        started.put("maxPhyOffset", s.store.getMaxPhyOffset());
        started.put("dividedCommitlogOffset", DLedgerFiles.commitLog(s.store).getDividedCommitlogOffset());
        out.put("afterStart", started);
        List<Map<String, Object>> crc = new ArrayList<>();
        List<Map<String, Object>> records = DLedgerFiles.records(s.store,
            bb -> s.store.getCommitLog().checkMessageAndReturnSize(bb, true, true),
            bb -> MessageDecoder.decode(bb, true, false, false), crc);
        out.put("messages", records);
        out.put("crcErrors", crc);
        out.put("consumeQueues", consumeQueues(s));
        out.put("timeSearches", DLedgerFiles.timeSearches(records, "[topic,queueId,timestamp,offset]",
            (topic, q, t) -> List.of(s.store.getOffsetInQueueByTime(topic, q, t))));
        out.put("index", DLedgerFiles.lookups(s.store, records));
        out.put("config", Load.configs(root, s));
        s.shutdown();
        return out;
    }

    /** Every ConsumeQueue unit through ConsumeQueue.getIndexBuffer (4.9.8), in ReadBack.consumeQueue's shape. */
    static Map<String, Object> consumeQueues(Stores s) {
        Map<String, Object> out = new TreeMap<>();
        s.store.getConsumeQueueTable().forEach((topic, queues) -> queues.forEach((qid, cq) -> {
            Map<String, Object> q = new LinkedHashMap<>();
            q.put("topic", cq.getTopic());
            q.put("queueId", cq.getQueueId());
            q.put("minOffset", cq.getMinOffsetInQueue());
            q.put("maxOffset", cq.getMaxOffsetInQueue());
            List<Object> units = new ArrayList<>();
            for (long i = cq.getMinOffsetInQueue(); i < cq.getMaxOffsetInQueue(); i++) {
                units.add(unit((ConsumeQueue) cq, i));
            }
            q.put("units[queueOffset,phyOffset,size,tagsCode]", units);
            out.put(topic + "/" + qid, q);
        }));
        return out;
    }

    static Object unit(ConsumeQueue cq, long i) {
        SelectMappedBufferResult sbr = cq.getIndexBuffer(i);
        if (sbr == null) {
            return null;
        }
        try {
            java.nio.ByteBuffer bb = sbr.getByteBuffer();
            return List.of(i, bb.getLong(0), bb.getInt(8), bb.getLong(12));
        } finally {
            sbr.release();
        }
    }
}
