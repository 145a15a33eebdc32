/*
 * `dledger-store DIR [SEED] [--variant plain|mixed|multipath|crash]` and `dledger-read STORE` on 5.3.3.
 *
 * dledger-store writes a store of a broker with enableDLegerCommitLog=true (a one-peer DLedger group n0 on
 * 127.0.0.1 and a free port) through the real DefaultMessageStore and DLedgerCommitLog (DLedger 0.3.1.2:
 * DLedgerServer, DLedgerLeaderElector, DLedgerEntryPusher, DLedgerMmapFileStore), with the broker parts
 * that put what a broker puts: the three put hooks (HookUtils; handleScheduleMessage turns a delay-level
 * message into a SCHEDULE_TOPIC_XXXX one), ScheduleMessageService (delivers due levels, persists
 * delayOffset.json), TransactionalMessageServiceImpl + TransactionalMessageBridge (half messages, op
 * messages through its TransactionalOpBatchService), EndTransactionProcessor (commit / rollback requests over
 * a Netty EmbeddedChannel), TopicConfigManager, ConsumerOffsetManager, EscapeBridge. Imitated: the send
 * request side (SendMessageProcessor's MessageExtBrokerInner: the client's properties, sysFlag
 * TRANSACTION_PREPARED_TYPE with TRAN_MSG / PGROUP for a half message, DELAY for a delayed one), the
 * end-transaction request header as a producer fills it, consumer commits (ConsumerOffsetManager.commitOffset
 * as the pull processor calls it), and DLedgerRoleChangeHandler's LEADER wait + changeToMaster
 * (DLedgerFiles.awaitLeader; then the schedule service starts, as changeSpecialServiceStatus(true) does).
 * Variants:
 *   plain      store-dledger: 128 KiB data files, ordinary / big / delayed / transactional messages
 *   mixed      store-dledger-mixed: a classic store (CommitLog) first, then the same store with DLedger on
 *   multipath  store-dledger-multipath: storePathDLedgerCommitLog = two directories (MultiPathMmapFileList)
 *   crash      store-dledger-crash: Runtime.halt while big entries are being appended (see its README)
 * It writes broker.conf (the DLedger settings; storePathDLedgerCommitLog relative to the store root) and no
 * expect.json: `dledger-read` makes that from a copy (reopening runs an election and rewrites currterm).
 *
 * dledger-read prints one JSON object from a temporary copy of STORE: the files as they are (DLedgerFiles.
 * onDisk), the real recovery (DefaultMessageStore.load: DLedgerCommitLog's normal or abnormal recovery and
 * DLedgerMmapFileStore.recover) and what it kept or cut, every entry (DLedgerMmapFileStore.get), then a start
 * as a broker (election, commit, dispatch): every record, every ConsumeQueue unit, min/max offsets, by-time
 * searches, index lookups (queryMessage) of every key and UNIQ_KEY, and the config files as the real managers
 * load them.
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
import org.apache.rocketmq.broker.BrokerController;
import org.apache.rocketmq.broker.failover.EscapeBridge;
import org.apache.rocketmq.broker.offset.ConsumerOffsetManager;
import org.apache.rocketmq.broker.processor.EndTransactionProcessor;
import org.apache.rocketmq.broker.schedule.DelayOffsetSerializeWrapper;
import org.apache.rocketmq.broker.schedule.ScheduleMessageService;
import org.apache.rocketmq.broker.topic.TopicConfigManager;
import org.apache.rocketmq.broker.transaction.queue.TransactionalMessageBridge;
import org.apache.rocketmq.broker.transaction.queue.TransactionalMessageServiceImpl;
import org.apache.rocketmq.broker.transaction.queue.TransactionalMessageUtil;
import org.apache.rocketmq.common.BoundaryType;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.message.MessageAccessor;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExtBrokerInner;
import org.apache.rocketmq.common.sysflag.MessageSysFlag;
import org.apache.rocketmq.common.topic.TopicValidator;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.remoting.protocol.RequestCode;
import org.apache.rocketmq.remoting.protocol.header.EndTransactionRequestHeader;
import org.apache.rocketmq.store.PutMessageResult;
import org.apache.rocketmq.store.config.MessageStoreConfig;
import org.apache.rocketmq.store.stats.BrokerStatsManager;

public final class DLedgerFixture {
    static final String CLUSTER = "DefaultCluster";
    static final String TOPIC_A = "TopicA";
    static final String TOPIC_B = "TopicB";
    static final String PRODUCER_GROUP = "PID_txn";
    static final String HOST = "192.168.1.100:40000";
    static final int FILE_SIZE = 128 * 1024;  // mappedFileSizeCommitLog = DLedger's mappedFileSizeForEntryData
    // The crash variant's files: an entry of ~4 MB takes ~1000 page faults to copy into a new file, so the halt
    // often finds the writer inside an append (the copy of the entry runs to its end, its index unit waits).
    static final int CRASH_FILE_SIZE = 4 * 1024 * 1024;
    static final int CQ_FILE_SIZE = 60 * 20;  // 60 units a ConsumeQueue file: the busier queues span files
    static final long BORN_BASE = 1700000000000L;
    static final int[] LEVELS = {1, 2, 3, 4, 10, 18};  // 1s 5s 10s 30s 6m 2h: the first three fall due

    private final BrokerController broker;
    private final Stores s;
    private final Random rnd;
    private final List<Map<String, Object>> events = new ArrayList<>();
    private int seq;

    private DLedgerFixture(BrokerController broker, Stores s, Random rnd, int seq) {
        this.broker = broker;
        this.s = s;
        this.rnd = rnd;
        this.seq = seq;
    }

    static Geometry geometry(boolean dledger) {
        Geometry g = new Geometry();
        g.commitLog = FILE_SIZE;  // the crash variant sets CRASH_FILE_SIZE
        g.consumeQueue = CQ_FILE_SIZE;
        if (dledger) {
            g.dledgerSelfId = DLedgerFiles.SELF_ID;
            g.dledgerGroup = DLedgerFiles.GROUP;
        }
        return g;
    }

    public static void write(String root, long seed, String variant) throws Exception {
        if (new File(root).exists()) {
            throw new IllegalStateException(root + " exists; the fixture is written into a new directory");
        }
        root = new File(root).getAbsolutePath();
        Random rnd = new Random(seed);
        Geometry g = geometry(true);
        Map<String, Object> info = new LinkedHashMap<>();
        info.put("variant", variant);
        info.put("seed", seed);
        try {
            switch (variant) {
                case "plain": {
                    DLedgerFixture f = open(root, g, rnd, 0, info);
                    f.traffic(260, true);
                    f.close(info);
                    break;
                }
                case "multipath": {
                    g.dledgerDataPath = root + "/disk1/dledger-data," + root + "/disk2/dledger-data";
                    DLedgerFixture f = open(root, g, rnd, 0, info);
                    f.traffic(160, false);
                    f.close(info);
                    break;
                }
                case "mixed": {
                    // 1: a broker without DLedger (CommitLog into commitlog/), clean shutdown
                    DLedgerFixture c = open(root, geometry(false), rnd, 0, info);
                    for (int i = 0; i < 150; i++) {
                        c.ordinary(300 + c.rnd.nextInt(900));
                    }
                    c.delayed(3, TOPIC_A, 1);  // due 10 s later: delivered by the DLedger broker
                    c.delayed(18, TOPIC_B, 0);
                    c.commitOffsets("GID_dledger", 2);
                    c.close(info);
                    // 2: the same store, the broker restarted with enableDLegerCommitLog=true
                    DLedgerFixture f = open(root, g, rnd, c.seq, info);
                    f.traffic(120, false);
                    f.close(info);
                    break;
                }
                case "crash": {
                    g.commitLog = CRASH_FILE_SIZE;
                    DLedgerFixture f = open(root, g, rnd, 0, info);
                    f.traffic(90, false);
                    f.crash(root, g, info);  // never returns
                    break;
                }
                default:
                    throw new IllegalArgumentException("unknown variant " + variant);
            }
        } catch (Throwable t) {
            t.printStackTrace();
            Runtime.getRuntime().halt(1);  // the broker's service threads would keep the JVM alive
        }
        DLedgerFiles.writeConf(root, g, info);
        writeInfo(root, info);
    }

    /** DIR.write.json beside the store: the variant, seed, leader waits and every put / end-transaction. */
    static void writeInfo(String root, Map<String, Object> info) throws Exception {
        Files.write(new File(root + ".write.json").toPath(), Json.write(info).getBytes(StandardCharsets.UTF_8));
    }

    /** BrokerController.initialize + start as far as the store goes; with DLedger, the leader wait. */
    static DLedgerFixture open(String root, Geometry g, Random rnd, int seq, Map<String, Object> info) throws Exception {
        BrokerConfig bc = new BrokerConfig();
        bc.setBrokerName(Stores.BROKER_NAME);
        bc.setBrokerClusterName(CLUSTER);
        bc.setBrokerIP1("192.168.0.10");
        MessageStoreConfig msc = Stores.config(root, g);
        if (g.dledgerSelfId != null) {
            info.put("dLegerPeers", msc.getdLegerPeers());
            bc.setBrokerId(-1);  // BrokerStartup: a DLedger broker starts without an id; the leader becomes 0
        }
        BrokerStatsManager stats = new BrokerStatsManager(CLUSTER, true);
        BrokerController b = new BrokerController(bc, msc, null);
        b.storeHost = new InetSocketAddress("192.168.0.10", 10911);
        b.brokerStatsManager = stats;
        b.topicConfigManager = new TopicConfigManager(b);
        b.consumerOffsetManager = new ConsumerOffsetManager(b);
        if (!(b.topicConfigManager.load() && b.consumerOffsetManager.load())) {
            throw new IllegalStateException("metadata did not load");
        }
        b.topicConfigManager.updateTopicConfig(new TopicConfig(TOPIC_A, 4, 4, 6));
        b.topicConfigManager.updateTopicConfig(new TopicConfig(TOPIC_B, 2, 2, 6));
        Stores s = Stores.open(msc, g, b.topicConfigManager.getTopicConfigTable(), bc, stats);
        if (!s.loaded) {
            throw new IllegalStateException("the store did not load");
        }
        b.setMessageStore(s.store);
        PopStore.registerMessageStoreHook(b);
        b.scheduleMessageService = new ScheduleMessageService(b);
        if (!b.scheduleMessageService.load()) {
            throw new IllegalStateException("delayOffset.json did not load");
        }
        b.transactionalMessageService = new TransactionalMessageServiceImpl(new TransactionalMessageBridge(b, s.store));
        b.escapeBridge = new EscapeBridge(b);
        s.start();
        b.escapeBridge.start();
        if (g.dledgerSelfId != null) {
            info.put("leader" + (info.containsKey("leader") ? "2" : ""), DLedgerFiles.awaitLeader(s.store, 30_000));
            bc.setBrokerId(MixAll.MASTER_ID);  // DLedgerRoleChangeHandler.changeToMaster
        }
        b.scheduleMessageService.start();  // changeSpecialServiceStatus(true) of a master
        return new DLedgerFixture(b, s, rnd, seq);
    }

    /** BrokerController.shutdown's order for these parts; then the clean store shutdown. */
    void close(Map<String, Object> info) throws Exception {
        broker.scheduleMessageService.shutdown();  // persists delayOffset.json
        ((TransactionalMessageServiceImpl) broker.transactionalMessageService).close();
        broker.escapeBridge.shutdown();
        broker.consumerOffsetManager.persist();
        broker.topicConfigManager.persist();
        s.shutdown();
        @SuppressWarnings("unchecked")
        List<Object> all = (List<Object>) info.computeIfAbsent("events", k -> new ArrayList<>());
        all.addAll(events);
    }

    // ---------------------------------------------------------------- traffic

    /** A message as a producer sends it (the broker parses the client's property string back). */
    static MessageExtBrokerInner message(Random rnd, int i, String topic, int queueId, int bodySize,
        Map<String, String> props) {
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
        p.put(MessageConst.PROPERTY_CLUSTER, "DefaultCluster");
        p.putAll(props);
        MessageAccessor.setProperties(m, MessageDecoder.string2messageProperties(MessageDecoder.messageProperties2String(p)));
        m.setPropertiesString(MessageDecoder.messageProperties2String(m.getProperties()));
        m.setTagsCode(MessageExtBrokerInner.tagsString2tagsCode(tags));
        return m;
    }


    /** `n` rounds of ordinary, big, delayed and transactional messages, then end-transactions and commits. */
    void traffic(int n, boolean exactFill) throws Exception {
        List<PutMessageResult> halves = new ArrayList<>();
        List<MessageExtBrokerInner> halfMsgs = new ArrayList<>();
        int big = 0;
        for (int i = 0; i < n; i++) {
            if (i % 60 == 17) {
                // a body close to a data file: the entry starts a new file (a pad ends the previous one);
                // with exactFill the first one leaves exactly 8 bytes, so the next entry's file ends in a minimal pad
                bigMessage(exactFill && big == 0 ? 8 : 8 + 1000 + rnd.nextInt(20_000));
                big++;
            } else if (i % 23 == 5) {
                delayed(LEVELS[(i / 23) % LEVELS.length], rnd.nextBoolean() ? TOPIC_A : TOPIC_B, rnd.nextInt(2));
            } else if (i % 19 == 7) {
                MessageExtBrokerInner m = half();
                halfMsgs.add(m);
                halves.add(lastResult);
            } else {
                ordinary(40 + rnd.nextInt(600));
            }
        }
        s.waitDispatched();
        for (int k = 0; k < halves.size(); k++) {
            if (k % 3 == 2) {
                event("pending", "half message left without commit or rollback", halves.get(k));
                continue;
            }
            endTransaction(halves.get(k), halfMsgs.get(k), k % 3 == 0);
        }
        commitOffsets("GID_dledger", 0);
        commitOffsets("GID_other", 3);
        waitDelivered();
        waitOpMessages(halves.size() - halves.size() / 3);
        s.waitDispatched();
    }

    private PutMessageResult lastResult;

    PutMessageResult put(MessageExtBrokerInner m, String kind) {
        PutMessageResult r = s.store.putMessage(m);
        if (!r.isOk()) {
            throw new IllegalStateException("put failed: " + r);
        }
        lastResult = r;
        event(kind, m.getTopic() + "/" + m.getQueueId(), r);
        return r;
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

    void ordinary(int bodySize) {
        String topic = rnd.nextInt(3) == 0 ? TOPIC_B : TOPIC_A;
        int queueId = rnd.nextInt(topic.equals(TOPIC_A) ? 4 : 2);
        put(message(rnd, seq++, topic, queueId, bodySize, Map.of()), "ordinary");
    }

    /** A message whose DLedger entry is fileSize - leave bytes (leave >= 8: MmapFileList.MIN_BLANK_LEN). */
    void bigMessage(int leave) {
        put(big(leave), "big (entry of " + (fileSize() - leave) + " bytes)");
    }

    int fileSize() {
        return s.store.getMessageStoreConfig().getMappedFileSizeCommitLog();
    }

    MessageExtBrokerInner big(int leave) {
        String topic = TOPIC_A;
        int queueId = rnd.nextInt(4);
        MessageExtBrokerInner m = message(rnd, seq++, topic, queueId, 1, Map.of());
        int props = m.getPropertiesString().getBytes(StandardCharsets.UTF_8).length;
        int fixed = 91 + topic.getBytes(StandardCharsets.UTF_8).length + props;  // MessageExtEncoder.calMsgLength, v4 hosts
        int body = fileSize() - leave - 48 - fixed;
        byte[] b = new byte[body];
        for (int k = 0; k < body; k++) {
            b[k] = (byte) ('a' + (k * 7 + seq) % 26);
        }
        m.setBody(b);
        return m;
    }

    /** A delay-level message as the client sends it (DELAY property); the real hook moves it to SCHEDULE_TOPIC_XXXX. */
    void delayed(int level, String topic, int queueId) {
        MessageExtBrokerInner m = message(rnd, seq++, topic, queueId, 60 + rnd.nextInt(200),
            Map.of(MessageConst.PROPERTY_DELAY_TIME_LEVEL, String.valueOf(level)));
        put(m, "delayed level " + level);
    }

    /** SendMessageProcessor's half message: TRAN_MSG + PGROUP, sysFlag PREPARED, then asyncPrepareMessage. */
    MessageExtBrokerInner half() throws Exception {
        String topic = rnd.nextBoolean() ? TOPIC_A : TOPIC_B;
        int queueId = rnd.nextInt(2);
        MessageExtBrokerInner m = message(rnd, seq++, topic, queueId, 80 + rnd.nextInt(300), Map.of(
            MessageConst.PROPERTY_TRANSACTION_PREPARED, "true",
            MessageConst.PROPERTY_PRODUCER_GROUP, PRODUCER_GROUP));
        m.setSysFlag(MessageSysFlag.resetTransactionValue(m.getSysFlag(), MessageSysFlag.TRANSACTION_PREPARED_TYPE));
        String uniq = m.getProperty(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX);
        PutMessageResult r = broker.transactionalMessageService.asyncPrepareMessage(m).get();
        if (!r.isOk()) {
            throw new IllegalStateException("half put failed: " + r);
        }
        lastResult = r;
        event("half", topic + "/" + queueId + " uniq " + uniq, r);
        MessageExtBrokerInner copy = new MessageExtBrokerInner();
        copy.setTransactionId(uniq);
        copy.setMsgId(r.getAppendMessageResult().getMsgId());
        copy.setTopic(topic);
        return copy;
    }

    /** END_TRANSACTION as the producer sends it, to the real EndTransactionProcessor. */
    void endTransaction(PutMessageResult half, MessageExtBrokerInner h, boolean commit) throws Exception {
        EndTransactionRequestHeader hdr = new EndTransactionRequestHeader();
        hdr.setTopic(h.getTopic());
        hdr.setProducerGroup(PRODUCER_GROUP);
        hdr.setTranStateTableOffset(half.getAppendMessageResult().getLogicsOffset());
        hdr.setCommitLogOffset(half.getAppendMessageResult().getWroteOffset());
        hdr.setCommitOrRollback(commit ? MessageSysFlag.TRANSACTION_COMMIT_TYPE : MessageSysFlag.TRANSACTION_ROLLBACK_TYPE);
        hdr.setFromTransactionCheck(false);
        hdr.setMsgId(h.getMsgId());
        hdr.setTransactionId(h.getTransactionId());
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

    /** ConsumerOffsetManager.commitOffset as the pull processor calls it (the request side imitated). */
    void commitOffsets(String group, int behind) throws Exception {
        for (String t : new String[] {TOPIC_A, TOPIC_B}) {
            int queues = t.equals(TOPIC_A) ? 4 : 2;
            for (int q = 0; q < queues; q++) {
                long max = s.store.getMaxOffsetInQueue(t, q);
                broker.consumerOffsetManager.commitOffset(HOST, group, t, q, Math.max(0, max - behind - q));
            }
        }
    }

    /** Until ScheduleMessageService delivered levels 1..3 (its offsets reached the level queues' ends). */
    void waitDelivered() throws Exception {
        long deadline = System.currentTimeMillis() + 40_000;
        while (true) {
            Map<Integer, Long> offs = DelayOffsetSerializeWrapper.fromJson(broker.scheduleMessageService.encode(),
                DelayOffsetSerializeWrapper.class).getOffsetTable();
            boolean done = true;
            for (int level = 1; level <= 3; level++) {
                long max = s.store.getMaxOffsetInQueue(TopicValidator.RMQ_SYS_SCHEDULE_TOPIC, level - 1);
                Long o = offs == null ? null : offs.get(level);
                done &= max == 0 || o != null && o >= max;
            }
            if (done) {
                return;
            }
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException("delay levels 1-3 not delivered in 40 s: " + offs);
            }
            Thread.sleep(200);
        }
    }

    /** Until TransactionalOpBatchService wrote the op messages of every ended half (their "offset," bodies). */
    void waitOpMessages(int ended) throws Exception {
        long deadline = System.currentTimeMillis() + 30_000;
        String op = TransactionalMessageUtil.buildOpTopic();
        while (ended > 0) {
            s.waitDispatched();
            int n = 0;
            long max = s.store.getMaxOffsetInQueue(op, 0);
            for (long o = s.store.getMinOffsetInQueue(op, 0); o < max; o++) {
                org.apache.rocketmq.common.message.MessageExt m = s.store.lookMessageByOffset(
                    s.store.getConsumeQueue(op, 0).get(o).getPos());
                for (String x : new String(m.getBody(), StandardCharsets.UTF_8).split(TransactionalMessageUtil.OFFSET_SEPARATOR)) {
                    n += x.isEmpty() ? 0 : 1;
                }
            }
            if (n >= ended) {
                return;
            }
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException("op messages for " + ended + " halves not written in 30 s (" + n + ")");
            }
            Thread.sleep(200);
        }
    }

    // ---------------------------------------------------------------- crash

    /**
     * Big entries appended one after the other (each needs a new data file: DLedger's preAppend writes a pad
     * into the previous file and creates the next, then the entry is copied in, then its index unit). When the
     * real append reaches the 3rd of them, a DLedger AppendHook (DLedgerMmapFileStore.addAppendHook; hooks run
     * in appendAsLeader after preAppend, before the entry is copied: DLedgerMmapFileStore.java:361-368)
     * releases a waiting thread that spins for a seeded 0-3 ms and calls Runtime.getRuntime().halt. Four
     * threads put at once (as a broker's send threads do), so an append is nearly always under way. The hook
     * writes nothing; the halt stops the writer wherever it has got to (HotSpot halts at a safepoint: one copy
     * into the mapped file is never cut in two, but the pad, the entry and its index unit are three copies),
     * and what was written to the mapped files stays on disk, as after a kill -9. The DLedger checkpoint lags
     * (FlushDataService persists it every 3 s), RocketMQ's dispatch has not seen the burst, abort remains.
     */
    void crash(String root, Geometry g, Map<String, Object> info) throws Exception {
        final int releaseAt = 3;
        final long spinNanos = rnd.nextInt(3_000_000);
        DLedgerFiles.writeConf(root, g, info);
        info.put("haltReleasedAtBurstEntry", releaseAt);
        info.put("haltSpinNanos", spinNanos);
        info.put("events", events);
        info.put("note", "halted during a burst of big entries; events end before the burst");
        writeInfo(root, info);
        int[] n = {0};
        java.util.concurrent.CountDownLatch go = new java.util.concurrent.CountDownLatch(1);
        Thread halt = new Thread(() -> {
            try {
                go.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            for (long until = System.nanoTime() + spinNanos; System.nanoTime() < until; ) {
                Thread.onSpinWait();
            }
            Runtime.getRuntime().halt(3);
        }, "halt");
        halt.start();
        DLedgerFiles.fileStore(s.store).addAppendHook((entry, buffer, bodyOffset) -> {
            if (entry.getBody().length > fileSize() / 2 && ++n[0] == releaseAt) {
                go.countDown();
            }
        });
        // As a broker's send threads: four producers put at once, so an append is nearly always under way.
        List<Thread> writers = new ArrayList<>();
        for (int t = 0; t < 4; t++) {
            Thread w = new Thread(() -> {
                for (int k = 0; k < 50; k++) {
                    MessageExtBrokerInner m;
                    synchronized (this) {
                        m = big(8 + 2000 + rnd.nextInt(fileSize() / 4));
                    }
                    s.store.putMessage(m);
                }
            }, "producer-" + t);
            w.start();
            writers.add(w);
        }
        for (Thread w : writers) {
            w.join();
        }
        throw new IllegalStateException("the halt did not come");
    }

    // ---------------------------------------------------------------- dledger-read

    /** On a temporary copy of STORE (Judge.copy); stdout carries only the JSON (a stray print goes to stderr). */
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
        out.put("rocketmq", "5.3.3");
        out.put("dledger", "0.3.1.2");
        out.put("store", shown);
        out.put("geometry", g.json());
        boolean abort = new File(root, "abort").exists();
        out.put("recovery", abort ? "abnormal" : "normal");
        Map<String, Object> disk = DLedgerFiles.onDisk(root, g);
        out.put("onDisk", disk);
        out.put("storeCheckpointOnDisk", DLedgerFiles.storeCheckpoint(root));

        BrokerConfig bc = new BrokerConfig();
        bc.setBrokerName(Stores.BROKER_NAME);
        BrokerController holder = new BrokerController(bc, Stores.config(root, g), null);
        TopicConfigManager topics = new TopicConfigManager(holder);
        topics.load();
        Stores s = Stores.open(Stores.config(root, g), g, topics.getTopicConfigTable(), bc,
            new BrokerStatsManager(CLUSTER, true));
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

        // A broker start: election (on this copy), the leader commits its ledger end, dispatch catches up.
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
            bb -> s.store.getCommitLog().checkMessageAndReturnSize(bb, true, false, true),
            bb -> MessageDecoder.decode(bb, true, false, false, true, true), crc);
        out.put("messages", records);
        out.put("crcErrors", crc);
        out.put("consumeQueues", ReadBack.consumeQueues(s.store));
        out.put("timeSearches", DLedgerFiles.timeSearches(records, "[topic,queueId,timestamp,LOWER,UPPER]",
            (topic, q, t) -> List.of(s.store.getOffsetInQueueByTime(topic, q, t, BoundaryType.LOWER),
                s.store.getOffsetInQueueByTime(topic, q, t, BoundaryType.UPPER))));
        out.put("index", DLedgerFiles.lookups(s.store, records));
        out.put("config", Load.configs(root, s));
        s.shutdown();
        return out;
    }
}
