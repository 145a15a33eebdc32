/*
 * `pop-store DIR [SEED]`: a 5.x store with POP traffic written by the real 5.3.3 broker classes. The harness
 * wires a broker holder (placeholders/.../BrokerController) with the real TopicConfigManager,
 * SubscriptionGroupManager, ConsumerOffsetManager, ConsumerOrderInfoManager, ConsumerManager,
 * MessageRequestModeManager, EscapeBridge, the broker's put hooks (HookUtils) and a real DefaultMessageStore
 * with its TimerMessageStore; then sends POP_MESSAGE, ACK_MESSAGE, BATCH_ACK_MESSAGE requests to the real
 * PopMessageProcessor / AckMessageProcessor over a Netty EmbeddedChannel, while the real
 * PopBufferMergeService and PopReviveServices run. The client side (building requests, reading the POP
 * response into ack extraInfo as MQClientAPIImpl.processPopResponse does) is the harness's.
 * Scenario (see tests/data/store-pop/README.md): GID_ACKED, GID_BATCH, GID_REVIVE_V1, then retry topic V2,
 * GID_REVIVE_V2, GID_INVISIBLE, GID_PULL (PULL switched to POP), GID_ORDER, and GID_OVERDUE after the revive
 * services stopped.
 */
package oracle;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.embedded.EmbeddedChannel;
import java.io.File;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.Executors;
import org.apache.rocketmq.broker.BrokerController;
import org.apache.rocketmq.broker.client.ConsumerGroupEvent;
import org.apache.rocketmq.broker.client.ConsumerIdsChangeListener;
import org.apache.rocketmq.broker.client.ConsumerManager;
import org.apache.rocketmq.broker.failover.EscapeBridge;
import org.apache.rocketmq.broker.filter.ConsumerFilterManager;
import org.apache.rocketmq.broker.loadbalance.MessageRequestModeManager;
import org.apache.rocketmq.broker.offset.ConsumerOffsetManager;
import org.apache.rocketmq.broker.offset.ConsumerOrderInfoManager;
import org.apache.rocketmq.broker.processor.AckMessageProcessor;
import org.apache.rocketmq.broker.processor.ChangeInvisibleTimeProcessor;
import org.apache.rocketmq.broker.processor.NotificationProcessor;
import org.apache.rocketmq.broker.processor.PopInflightMessageCounter;
import org.apache.rocketmq.broker.processor.PopMessageProcessor;
import org.apache.rocketmq.broker.processor.ReviveProbe;
import org.apache.rocketmq.broker.subscription.SubscriptionGroupManager;
import org.apache.rocketmq.broker.topic.TopicConfigManager;
import org.apache.rocketmq.broker.util.HookUtils;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.KeyBuilder;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.PopAckConstants;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.constant.ConsumeInitMode;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageExtBrokerInner;
import org.apache.rocketmq.common.message.MessageRequestMode;
import org.apache.rocketmq.common.utils.DataConverter;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.remoting.protocol.RequestCode;
import org.apache.rocketmq.remoting.protocol.ResponseCode;
import org.apache.rocketmq.remoting.protocol.body.BatchAck;
import org.apache.rocketmq.remoting.protocol.body.BatchAckMessageRequestBody;
import org.apache.rocketmq.remoting.protocol.body.SetMessageRequestModeRequestBody;
import org.apache.rocketmq.remoting.protocol.header.AckMessageRequestHeader;
import org.apache.rocketmq.remoting.protocol.header.ExtraInfoUtil;
import org.apache.rocketmq.remoting.protocol.header.PopMessageRequestHeader;
import org.apache.rocketmq.remoting.protocol.header.PopMessageResponseHeader;
import org.apache.rocketmq.store.PutMessageResult;
import org.apache.rocketmq.store.config.MessageStoreConfig;
import org.apache.rocketmq.store.hook.PutMessageHook;
import org.apache.rocketmq.store.pop.PopCheckPoint;
import org.apache.rocketmq.store.stats.BrokerStatsManager;

public final class PopStore {
    static final String CLUSTER = "DefaultCluster";
    static final String TOPIC_A = "PopTopicA";
    static final String TOPIC_B = "PopTopicB";
    static final String TOPIC_ORDER = "OrderTopic";
    static final String TOPIC_PULL = "PullTopic";
    static final int PER_QUEUE = 10;

    private final BrokerController broker;
    private final Stores s;
    private final List<Map<String, Object>> events = new ArrayList<>();
    private int attempt;

    private PopStore(BrokerController broker, Stores s) {
        this.broker = broker;
        this.s = s;
    }

    /** One popped message as the client holds it: its queue, offset and the ack extraInfo. */
    static final class Popped {
        final String topic;
        final int queueId;
        final long queueOffset;
        final String extraInfo;
        final long startOffset;

        Popped(String topic, int queueId, long queueOffset, String extraInfo, long startOffset) {
            this.topic = topic;
            this.queueId = queueId;
            this.queueOffset = queueOffset;
            this.extraInfo = extraInfo;
            this.startOffset = startOffset;
        }
    }

    /** One POP response: the header fields and the messages. */
    static final class PopResponse {
        long popTime;
        long invisibleTime;
        int reviveQid;
        final List<Popped> msgs = new ArrayList<>();
    }

    public static void write(String root, long seed) throws Exception {
        if (new File(root).exists()) {
            throw new IllegalStateException(root + " exists; the fixture is written into a new directory");
        }
        Random rnd = new Random(seed);
        Geometry g = new Geometry();
        g.timer = true;
        BrokerConfig bc = new BrokerConfig();
        bc.setBrokerName(Stores.BROKER_NAME);
        bc.setBrokerClusterName(CLUSTER);
        bc.setBrokerIP1("192.168.0.10");
        // Deterministic pops: no random first look into the retry topic, no V1 retry topic after the V2 switch.
        bc.setPopFromRetryProbability(0);
        bc.setRetrieveMessageFromPopRetryTopicV1(false);
        MessageStoreConfig msc = Stores.config(root, g);
        BrokerStatsManager stats = new BrokerStatsManager(CLUSTER, true);
        BrokerController b = new BrokerController(bc, msc, null);
        b.storeHost = new InetSocketAddress("192.168.0.10", 10911);
        b.brokerStatsManager = stats;
        b.topicConfigManager = new TopicConfigManager(b);
        b.subscriptionGroupManager = new SubscriptionGroupManager(b);
        b.consumerOffsetManager = new ConsumerOffsetManager(b);
        b.consumerFilterManager = new ConsumerFilterManager(b);
        b.consumerOrderInfoManager = new ConsumerOrderInfoManager(b);
        // BrokerController.initializeMetadata
        if (!(b.topicConfigManager.load() && b.consumerOffsetManager.load() && b.subscriptionGroupManager.load()
            && b.consumerFilterManager.load() && b.consumerOrderInfoManager.load())) {
            throw new IllegalStateException("metadata did not load");
        }
        b.consumerManager = new ConsumerManager(new ConsumerIdsChangeListener() {
            @Override
            public void handle(ConsumerGroupEvent event, String group, Object... args) {
            }

            @Override
            public void shutdown() {
            }
        }, stats, bc);
        b.popInflightMessageCounter = new PopInflightMessageCounter(b);
        for (String t : new String[] {TOPIC_A, TOPIC_B, TOPIC_PULL}) {
            b.topicConfigManager.updateTopicConfig(new TopicConfig(t, 2, 2, 6));
        }
        TopicConfig order = new TopicConfig(TOPIC_ORDER, 1, 1, 6);
        order.setOrder(true);
        b.topicConfigManager.updateTopicConfig(order);

        Stores s = Stores.open(msc, g, b.topicConfigManager.getTopicConfigTable(), bc, stats);
        if (!s.loaded) {
            throw new IllegalStateException("fresh store did not load");
        }
        b.setMessageStore(s.store);
        registerMessageStoreHook(b);
        b.escapeBridge = new EscapeBridge(b);
        b.pullMessageExecutor = Executors.newFixedThreadPool(2);
        b.popMessageProcessor = new PopMessageProcessor(b);
        b.notificationProcessor = new NotificationProcessor(b);
        b.ackMessageProcessor = new AckMessageProcessor(b);
        b.changeInvisibleTimeProcessor = new ChangeInvisibleTimeProcessor(b);
        s.start();
        // BrokerController.start's POP part, then the master's changeSpecialServiceStatus(true)
        b.popMessageProcessor.getPopLongPollingService().start();
        b.popMessageProcessor.getPopBufferMergeService().start();
        b.popMessageProcessor.getQueueLockManager().start();
        b.ackMessageProcessor.startPopReviveService();
        b.notificationProcessor.getPopLongPollingService().start();
        b.escapeBridge.start();
        b.ackMessageProcessor.setPopReviveServiceStatus(true);
        try {
            new PopStore(b, s).run(root, g, seed, rnd);
        } catch (Throwable t) {
            t.printStackTrace();
            Runtime.getRuntime().halt(1);  // the broker's service threads would keep the JVM alive
        }
    }

    /** BrokerController.registerMessageStoreHook: the three real put hooks (timer transform among them). */
    static void registerMessageStoreHook(BrokerController b) {
        List<PutMessageHook> hooks = b.getMessageStore().getPutMessageHookList();
        hooks.add(hook("checkBeforePutMessage", m -> HookUtils.checkBeforePutMessage(b, m)));
        hooks.add(hook("innerBatchChecker", m -> m instanceof MessageExtBrokerInner ? HookUtils.checkInnerBatch(b, m) : null));
        hooks.add(hook("handleScheduleMessage", m -> m instanceof MessageExtBrokerInner
            ? HookUtils.handleScheduleMessage(b, (MessageExtBrokerInner) m) : null));
    }

    static PutMessageHook hook(String name, java.util.function.Function<MessageExt, PutMessageResult> f) {
        return new PutMessageHook() {
            @Override
            public String hookName() {
                return name;
            }

            @Override
            public PutMessageResult executeBeforePutMessage(MessageExt msg) {
                return f.apply(msg);
            }
        };
    }

    private void run(String root, Geometry g, long seed, Random rnd) throws Exception {
        int i = 0;
        for (String t : new String[] {TOPIC_A, TOPIC_B, TOPIC_ORDER, TOPIC_PULL}) {
            int queues = t.equals(TOPIC_ORDER) ? 1 : 2;
            for (int q = 0; q < queues; q++) {
                for (int k = 0; k < PER_QUEUE; k++, i++) {
                    TimerFixture.put(s, TimerFixture.message(rnd, i, t, q, 100, 200, Map.of()), "ordinary", events, null);
                }
            }
        }
        s.waitDispatched();
        String brokerName = Stores.BROKER_NAME;
        // Retry topic V1 (the broker default).
        PopResponse acked = pop("GID_ACKED", TOPIC_A, 0, 4, 4_000L, false, "all 4 acked one by one");
        for (Popped p : acked.msgs) {
            ack("GID_ACKED", p, "ack");
        }
        PopResponse batch = pop("GID_BATCH", TOPIC_A, 1, 5, 4_000L, false, "3 of 5 acked in one batch ack, 2 revived");
        batchAck("GID_BATCH", batch, new int[] {0, 2, 4}, brokerName);
        pop("GID_REVIVE_V1", TOPIC_B, 0, 3, 4_000L, false, "none acked, all revived (retry topic V1)");
        waitRetry(KeyBuilder.buildPopRetryTopicV1(TOPIC_A, "GID_BATCH"), 2);
        waitRetry(KeyBuilder.buildPopRetryTopicV1(TOPIC_B, "GID_REVIVE_V1"), 3);
        event("enableRetryTopicV2", "the broker switches to retry topic V2 (group+topic)");
        broker.getBrokerConfig().setEnableRetryTopicV2(true);
        PopResponse v2 = pop("GID_REVIVE_V2", TOPIC_B, 1, 4, 4_000L, false, "1 of 4 acked, 3 revived (retry topic V2)");
        ack("GID_REVIVE_V2", v2.msgs.get(1), "ack");
        waitRetry(KeyBuilder.buildPopRetryTopicV2(TOPIC_B, "GID_REVIVE_V2"), 3);

        PopResponse inv = pop("GID_INVISIBLE", TOPIC_A, 0, 3, 3_600_000L, false, "invisible 1 h: one ack, one batch ack, one unacked");
        ack("GID_INVISIBLE", inv.msgs.get(0), "ack");
        batchAck("GID_INVISIBLE", inv, new int[] {2}, brokerName);

        pullSwitchedToPop(rnd);

        PopResponse ord = pop("GID_ORDER", TOPIC_ORDER, 0, 3, 3_600_000L, true, "orderly pop of 3, the first acked");
        ack("GID_ORDER", ord.msgs.get(0), "ack (orderly: reviveQid 999)");

        // The revive services stop (as on a broker shutdown); a ck falls due after that and is never revived.
        broker.ackMessageProcessor.shutdownPopReviveService();
        event("revive stopped", "PopReviveServices shut down");
        long before = reviveUnits();
        pop("GID_OVERDUE", TOPIC_B, 0, 2, 3_000L, false, "due after the revive services stopped: overdue, not revived");
        long deadline = System.currentTimeMillis() + 30_000;
        while (reviveUnits() == before && System.currentTimeMillis() < deadline) {
            Thread.sleep(200);
        }
        if (reviveUnits() == before) {
            throw new IllegalStateException("the overdue ck did not reach the revive topic in 30 s");
        }
        Thread.sleep(1500);
        s.waitDispatched();

        Map<String, Object> pairing = pairing();
        shutdown();
        writeExpect(root, g, seed, pairing);
    }

    /** A PULL group with offsets and messages in %RETRY%group, switched to POP, then popped once. */
    private void pullSwitchedToPop(Random rnd) throws Exception {
        String group = "GID_PULL";
        ConsumerOffsetManager offsets = broker.consumerOffsetManager;
        // PullMessageProcessor's commit of a pull consumer's progress (imitated: the request side).
        offsets.commitOffset("192.168.1.100:40000", group, TOPIC_PULL, 0, 6);
        offsets.commitOffset("192.168.1.100:40000", group, TOPIC_PULL, 1, 4);
        String retry = MixAll.getRetryTopic(group);
        broker.topicConfigManager.createTopicInSendMessageBackMethod(retry, 1, 6, 0);
        for (int k = 0; k < 3; k++) {
            MessageExtBrokerInner m = TimerFixture.message(rnd, 5000 + k, retry, 0, 100, 100, Map.of(
                MessageConst.PROPERTY_RETRY_TOPIC, TOPIC_PULL,
                MessageConst.PROPERTY_ORIGIN_MESSAGE_ID, String.format("C0A8000A00002A9F%016X", 1000L + k),
                MessageConst.PROPERTY_REAL_TOPIC, retry,
                MessageConst.PROPERTY_REAL_QUEUE_ID, "0"));
            m.setReconsumeTimes(1);
            TimerFixture.put(s, m, "ordinary", events, null);
        }
        s.waitDispatched();
        event("send-back", "3 messages of " + TOPIC_PULL + " in " + retry + " (as delivered after the send-back delay)");
        offsets.commitOffset("192.168.1.100:40000", group, retry, 0, 1);
        // AdminBrokerProcessor.setMessageRequestMode (imitated: the request side), the manager is real.
        MessageRequestModeManager modes = new MessageRequestModeManager(broker);
        modes.load();
        SetMessageRequestModeRequestBody body = new SetMessageRequestModeRequestBody();
        body.setTopic(TOPIC_PULL);
        body.setConsumerGroup(group);
        body.setMode(MessageRequestMode.POP);
        body.setPopShareQueueNum(0);
        modes.setMessageRequestMode(TOPIC_PULL, group, body);
        modes.persist();
        event("setMessageRequestMode", group + " on " + TOPIC_PULL + ": PULL -> POP");
        pop(group, TOPIC_PULL, 0, 2, 3_600_000L, false, "after the switch: 2 popped from the pull offset, invisible 1 h");
    }

    private long reviveUnits() throws Exception {
        long n = 0;
        String reviveTopic = PopAckConstants.buildClusterReviveTopic(CLUSTER);
        for (int q = 0; q < broker.getBrokerConfig().getReviveQueueNum(); q++) {
            n += Math.max(0, s.store.getMaxOffsetInQueue(reviveTopic, q));
        }
        return n;
    }

    private void waitRetry(String retryTopic, long count) throws Exception {
        long deadline = System.currentTimeMillis() + 60_000;
        while (s.store.getMaxOffsetInQueue(retryTopic, 0) < count && System.currentTimeMillis() < deadline) {
            Thread.sleep(200);
        }
        if (s.store.getMaxOffsetInQueue(retryTopic, 0) < count) {
            throw new IllegalStateException(retryTopic + " did not get " + count + " revived messages in 60 s");
        }
        Thread.sleep(2000);  // let the revive service commit its offset
        event("revived", retryTopic + " holds " + s.store.getMaxOffsetInQueue(retryTopic, 0));
    }

    private void event(String name, String note) {
        Map<String, Object> e = new LinkedHashMap<>();
        e.put("event", name);
        e.put("note", note);
        e.put("timeMs", System.currentTimeMillis());
        events.add(e);
    }

    private static ChannelHandlerContext channel() {
        EmbeddedChannel ch = new EmbeddedChannel(new ChannelInboundHandlerAdapter());
        return ch.pipeline().firstContext();
    }

    private static RemotingCommand await(ChannelHandlerContext ctx, RemotingCommand sync) throws Exception {
        if (sync != null) {
            return sync;
        }
        EmbeddedChannel ch = (EmbeddedChannel) ctx.channel();
        long deadline = System.currentTimeMillis() + 10_000;
        while (System.currentTimeMillis() < deadline) {
            Object o = ch.readOutbound();
            if (o != null) {
                return (RemotingCommand) o;
            }
            Thread.sleep(20);
        }
        throw new IllegalStateException("no response in 10 s");
    }

    /** POP_MESSAGE to the real PopMessageProcessor; the response read as the client reads it. */
    private PopResponse pop(String group, String topic, int queueId, int max, long invisibleMs, boolean order,
        String note) throws Exception {
        PopMessageRequestHeader h = new PopMessageRequestHeader();
        h.setConsumerGroup(group);
        h.setTopic(topic);
        h.setQueueId(queueId);
        h.setMaxMsgNums(max);
        h.setInvisibleTime(invisibleMs);
        h.setPollTime(15_000L);  // the client default; messages are always there, so no long polling
        h.setBornTime(System.currentTimeMillis());
        h.setInitMode(ConsumeInitMode.MIN);
        h.setOrder(order);
        if (order) {
            h.setAttemptId("attempt-" + (++attempt));
        }
        RemotingCommand req = RemotingCommand.createRequestCommand(RequestCode.POP_MESSAGE, h);
        req.makeCustomHeaderToNet();
        ChannelHandlerContext ctx = channel();
        RemotingCommand resp = await(ctx, broker.popMessageProcessor.processRequest(ctx, req));
        if (resp.getCode() != ResponseCode.SUCCESS) {
            throw new IllegalStateException("pop " + group + " " + topic + ": " + resp.getCode() + " " + resp.getRemark());
        }
        resp.makeCustomHeaderToNet();  // as encoded on the wire, then decoded as the client does
        PopMessageResponseHeader rh = (PopMessageResponseHeader) resp.decodeCommandCustomHeader(PopMessageResponseHeader.class);
        PopResponse r = new PopResponse();
        r.popTime = rh.getPopTime();
        r.invisibleTime = rh.getInvisibleTime();
        r.reviveQid = rh.getReviveQid();
        Map<String, Long> starts = ExtraInfoUtil.parseStartOffsetInfo(rh.getStartOffsetInfo());
        List<Long> offsets = new ArrayList<>();
        for (MessageExt m : MessageDecoder.decodesBatch(ByteBuffer.wrap(resp.getBody()), true, false, true)) {
            long start = starts.get(ExtraInfoUtil.getStartOffsetInfoMapKey(m.getTopic(), m.getQueueId()));
            String extra = ExtraInfoUtil.buildExtraInfo(start, r.popTime, r.invisibleTime, r.reviveQid, m.getTopic(),
                Stores.BROKER_NAME, m.getQueueId(), m.getQueueOffset());
            r.msgs.add(new Popped(m.getTopic(), m.getQueueId(), m.getQueueOffset(), extra, start));
            offsets.add(m.getQueueOffset());
        }
        if (r.msgs.size() != max) {
            throw new IllegalStateException("pop " + group + " got " + r.msgs.size() + " of " + max);
        }
        Map<String, Object> e = new LinkedHashMap<>();
        e.put("event", "pop");
        e.put("note", note);
        e.put("group", group);
        e.put("topic", topic);
        e.put("queueId", queueId);
        e.put("order", order);
        e.put("popTime", r.popTime);
        e.put("invisibleTime", r.invisibleTime);
        e.put("reviveQid", r.reviveQid);
        e.put("startOffsetInfo", rh.getStartOffsetInfo());
        e.put("msgOffsetInfo", rh.getMsgOffsetInfo());
        e.put("orderCountInfo", rh.getOrderCountInfo());
        e.put("queueOffsets", offsets);
        events.add(e);
        return r;
    }

    /** ACK_MESSAGE to the real AckMessageProcessor. */
    private void ack(String group, Popped p, String note) throws Exception {
        AckMessageRequestHeader h = new AckMessageRequestHeader();
        h.setConsumerGroup(group);
        h.setTopic(p.topic);
        h.setQueueId(p.queueId);
        h.setExtraInfo(p.extraInfo);
        h.setOffset(p.queueOffset);
        RemotingCommand req = RemotingCommand.createRequestCommand(RequestCode.ACK_MESSAGE, h);
        req.makeCustomHeaderToNet();
        ChannelHandlerContext ctx = channel();
        RemotingCommand resp = await(ctx, broker.ackMessageProcessor.processRequest(ctx, req));
        if (resp.getCode() != ResponseCode.SUCCESS) {
            throw new IllegalStateException("ack " + group + ": " + resp.getCode() + " " + resp.getRemark());
        }
        Map<String, Object> e = new LinkedHashMap<>();
        e.put("event", "ack");
        e.put("note", note);
        e.put("group", group);
        e.put("topic", p.topic);
        e.put("queueId", p.queueId);
        e.put("offset", p.queueOffset);
        e.put("extraInfo", p.extraInfo);
        events.add(e);
    }

    /** BATCH_ACK_MESSAGE (one BatchAck of the given indexes of one pop) to the real AckMessageProcessor. */
    private void batchAck(String group, PopResponse r, int[] indexes, String brokerName) throws Exception {
        Popped first = r.msgs.get(0);
        BatchAck ba = new BatchAck();
        ba.setConsumerGroup(group);
        ba.setTopic(first.topic);
        ba.setRetry("0");
        ba.setStartOffset(first.startOffset);
        ba.setQueueId(first.queueId);
        ba.setReviveQueueId(r.reviveQid);
        ba.setPopTime(r.popTime);
        ba.setInvisibleTime(r.invisibleTime);
        BitSet bits = new BitSet();
        List<Long> offsets = new ArrayList<>();
        for (int k : indexes) {
            bits.set((int) (r.msgs.get(k).queueOffset - first.startOffset));
            offsets.add(r.msgs.get(k).queueOffset);
        }
        ba.setBitSet(bits);
        BatchAckMessageRequestBody body = new BatchAckMessageRequestBody();
        body.setBrokerName(brokerName);
        body.setAcks(List.of(ba));
        RemotingCommand req = RemotingCommand.createRequestCommand(RequestCode.BATCH_ACK_MESSAGE, null);
        req.setBody(body.encode());
        ChannelHandlerContext ctx = channel();
        RemotingCommand resp = await(ctx, broker.ackMessageProcessor.processRequest(ctx, req));
        if (resp.getCode() != ResponseCode.SUCCESS) {
            throw new IllegalStateException("batch ack " + group + ": " + resp.getCode() + " " + resp.getRemark());
        }
        Map<String, Object> e = new LinkedHashMap<>();
        e.put("event", "batchAck");
        e.put("group", group);
        e.put("topic", first.topic);
        e.put("queueId", first.queueId);
        e.put("offsets", offsets);
        e.put("body", new String(body.encode(), StandardCharsets.UTF_8));
        events.add(e);
    }

    /**
     * The real PopReviveService.consumeReviveMessage over every revive queue from its start (a holder whose
     * ConsumerOffsetManager is empty): every ck it found with the acks it merged, and whether mergeAndRevive
     * would revive it now. Retry records are matched by the popped message's UNIQ_KEY.
     */
    private Map<String, Object> pairing() throws Exception {
        String reviveTopic = PopAckConstants.buildClusterReviveTopic(CLUSTER);
        BrokerController probe = new BrokerController(broker.getBrokerConfig(), broker.getMessageStoreConfig(), s.store);
        probe.consumerOffsetManager = new ConsumerOffsetManager(probe);  // not loaded: no revive offsets
        probe.brokerStatsManager = broker.brokerStatsManager;
        probe.storeHost = broker.storeHost;
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("reviveTopic", reviveTopic);
        out.put("reviveQueueNum", broker.getBrokerConfig().getReviveQueueNum());
        List<Object> queues = new ArrayList<>();
        for (int q = 0; q < broker.getBrokerConfig().getReviveQueueNum(); q++) {
            ReviveProbe p = ReviveProbe.scan(probe, reviveTopic, q);
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("queueId", q);
            m.put("maxOffset", s.store.getMaxOffsetInQueue(reviveTopic, q));
            m.put("reviveGroupOffset", broker.consumerOffsetManager.queryOffset(PopAckConstants.REVIVE_GROUP, reviveTopic, q));
            m.put("scanOldOffset", p.oldOffset);
            m.put("scanEndTime", p.endTime);
            List<Object> cks = new ArrayList<>();
            for (PopCheckPoint ck : p.sortList) {
                Map<String, Object> c = new LinkedHashMap<>();
                c.put("cid", ck.getCId());
                c.put("topic", ck.getTopic());
                c.put("queueId", ck.getQueueId());
                c.put("startOffset", ck.getStartOffset());
                c.put("popTime", ck.getPopTime());
                c.put("invisibleTime", ck.getInvisibleTime());
                c.put("reviveTime", ck.getReviveTime());
                c.put("reviveOffset", ck.getReviveOffset());
                c.put("num", (int) ck.getNum());
                c.put("bitMap", ck.getBitMap());
                List<Object> ackedIdx = new ArrayList<>();
                List<Object> unacked = new ArrayList<>();
                for (int j = 0; j < ck.getNum(); j++) {
                    long off = ck.ackOffsetByIndex((byte) j);
                    if (DataConverter.getBit(ck.getBitMap(), j)) {
                        ackedIdx.add(j);
                    } else {
                        Map<String, Object> u = new LinkedHashMap<>();
                        u.put("index", j);
                        u.put("queueOffset", off);
                        u.put("retryRecords", retryRecords(ck, off));
                        unacked.add(u);
                    }
                }
                c.put("ackedIndexes", ackedIdx);
                c.put("unacked", unacked);
                // mergeAndRevive's condition (it stops at the first ck not yet due)
                c.put("dueForRevive", p.endTime - ck.getReviveTime() > PopAckConstants.ackTimeInterval + PopAckConstants.SECOND);
                c.put("behindReviveGroupOffset", ck.getReviveOffset() <= (Long) m.get("reviveGroupOffset"));
                cks.add(c);
            }
            m.put("checkpoints", cks);
            queues.add(m);
        }
        out.put("queues", queues);
        return out;
    }

    /** Physical offsets of the records in the ck's POP retry topics (V1 and V2) with the popped message's UNIQ_KEY. */
    private List<Object> retryRecords(PopCheckPoint ck, long queueOffset) throws Exception {
        MessageExt orig = s.store.lookMessageByOffset(s.store.getCommitLogOffsetInQueue(ck.getTopic(), ck.getQueueId(), queueOffset));
        String uniq = orig.getProperty(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX);
        List<Object> out = new ArrayList<>();
        for (String retry : new String[] {KeyBuilder.buildPopRetryTopicV1(ck.getTopic(), ck.getCId()),
            KeyBuilder.buildPopRetryTopicV2(ck.getTopic(), ck.getCId())}) {
            long max = s.store.getMaxOffsetInQueue(retry, 0);
            for (long o = 0; o < max; o++) {
                long phy = s.store.getCommitLogOffsetInQueue(retry, 0, o);
                MessageExt m = s.store.lookMessageByOffset(phy);
                if (m != null && uniq.equals(m.getProperty(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX))) {
                    out.add(phy);
                }
            }
        }
        return out;
    }

    /** BrokerController.shutdown's order for what runs here; the managers persist their files. */
    private void shutdown() throws Exception {
        broker.popMessageProcessor.getPopLongPollingService().shutdown();
        broker.popMessageProcessor.getQueueLockManager().shutdown();
        broker.popMessageProcessor.getPopBufferMergeService().shutdown();
        broker.notificationProcessor.getPopLongPollingService().shutdown();
        s.timer.shutdown();
        s.waitDispatched();
        broker.pullMessageExecutor.shutdown();
        broker.consumerFilterManager.persist();
        broker.escapeBridge.shutdown();
        broker.topicConfigManager.persist();
        broker.subscriptionGroupManager.persist();
        broker.subscriptionGroupManager.stop();
        broker.consumerOffsetManager.persist();
        broker.consumerOffsetManager.stop();
        broker.consumerOrderInfoManager.persist();
        broker.consumerOrderInfoManager.shutdown();
    }

    private void writeExpect(String root, Geometry g, long seed, Map<String, Object> pairing) throws Exception {
        Map<String, Object> expect = new LinkedHashMap<>();
        expect.put("rocketmqVersion", "5.3.3 (git tag rocketmq-all-5.3.3)");
        expect.put("profile", "pop");
        expect.put("seed", seed);
        Map<String, Object> config = new LinkedHashMap<>();
        config.put("mappedFileSizeCommitLog", g.commitLog);
        config.put("mappedFileSizeConsumeQueue", g.consumeQueue);
        config.put("mappedFileSizeTimerLog", g.timerLog);
        config.put("maxHashSlotNum", g.hashSlots);
        config.put("maxIndexNum", g.indexNum);
        config.put("timerPrecisionMs", s.config.getTimerPrecisionMs());
        config.put("brokerName", Stores.BROKER_NAME);
        config.put("brokerClusterName", CLUSTER);
        config.put("storeHost", "192.168.0.10:10911");
        config.put("reviveQueueNum", broker.getBrokerConfig().getReviveQueueNum());
        config.put("enableRetryTopicV2", broker.getBrokerConfig().isEnableRetryTopicV2());
        expect.put("config", config);
        expect.put("events", events);
        ReadBack.store(s.store, expect);
        expect.put("pop", popBodies((List<?>) expect.get("messages")));
        expect.put("pairing", pairing);
        expect.put("minPhyOffset", s.store.getMinPhyOffset());
        expect.put("maxPhyOffset", s.store.getMaxPhyOffset());
        Map<String, Object> configs = Load.configs(root, s);
        configs.put("consumerOrderInfo", orderInfo(root));
        expect.put("configFiles", configs);
        s.store.shutdown();
        s.stats.shutdown();
        ReadBack.timer(root, g, expect);
        ReadBack.checkpoint(root, expect);
        ReadBack.files(root, expect);
        java.nio.file.Files.write(new File(root, "expect.json").toPath(),
            Json.write(expect).getBytes(StandardCharsets.UTF_8));
    }

    /** Every ck / ack / bAck body in the commitlog (revive topic or still in the timer topic), parsed by fastjson. */
    private static List<Object> popBodies(List<?> messages) {
        String reviveTopic = PopAckConstants.buildClusterReviveTopic(CLUSTER);
        List<Object> out = new ArrayList<>();
        for (Object o : messages) {
            Map<?, ?> r = (Map<?, ?>) o;
            if (!"MESSAGE".equals(r.get("kind"))) {
                continue;
            }
            Map<?, ?> props = (Map<?, ?>) r.get("properties");
            String topic = (String) r.get("topic");
            String realTopic = props == null ? null : (String) props.get(MessageConst.PROPERTY_REAL_TOPIC);
            if (!reviveTopic.equals(topic) && !reviveTopic.equals(realTopic)) {
                continue;
            }
            String tag = (String) props.get(MessageConst.PROPERTY_TAGS);
            String body = new String(java.util.Base64.getDecoder().decode((String) r.get("bodyBase64")), StandardCharsets.UTF_8);
            Map<String, Object> e = new LinkedHashMap<>();
            e.put("physicalOffset", r.get("physicalOffset"));
            e.put("topic", topic);
            e.put("queueId", r.get("queueId"));
            e.put("queueOffset", r.get("queueOffset"));
            e.put("tag", tag);
            e.put("body", body);
            e.put("parsed", PopBodies.parsed(PopAckConstants.CK_TAG.equals(tag) ? "ck" : tag, body));
            out.add(e);
        }
        return out;
    }

    /** config/consumerOrderInfo.json decoded by ConsumerOrderInfoManager.decode (no broker: no lock recovery). */
    private Map<String, Object> orderInfo(String root) throws Exception {
        String text = new String(java.nio.file.Files.readAllBytes(new File(
            org.apache.rocketmq.broker.BrokerPathConfigHelper.getConsumerOrderInfoPath(root)).toPath()), StandardCharsets.UTF_8);
        ConsumerOrderInfoManager m = new ConsumerOrderInfoManager();
        m.decode(text);
        Map<String, Object> table = new TreeMap<>();
        m.getTable().forEach((key, queues) -> queues.forEach((qid, info) -> {
            Map<String, Object> o = new LinkedHashMap<>();
            o.put("attemptId", info.getAttemptId());
            o.put("popTime", info.getPopTime());
            o.put("invisibleTime", info.getInvisibleTime());
            o.put("offsetList", info.getOffsetList());
            o.put("commitOffsetBit", info.getCommitOffsetBit());
            o.put("lastConsumeTimestamp", info.getLastConsumeTimestamp());
            o.put("offsetNextVisibleTime", info.getOffsetNextVisibleTime());
            o.put("offsetConsumedCount", info.getOffsetConsumedCount());
            o.put("nextOffset", info.getNextOffset());
            table.put(key + "/" + qid, o);
        }));
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("table", table);
        return out;
    }
}
