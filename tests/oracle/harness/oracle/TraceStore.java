/*
 * `trace-store DIR_A DIR_B [SEED]`: two 5.3.3 broker stores (broker-a, broker-b, one cluster) holding traced
 * messages, their retries, delay and DLQ copies, a transaction and a recall, and the trace messages the real
 * client wrote about them. Real: DefaultMessageStore and TimerMessageStore (both brokers), the put hooks
 * (HookUtils: delay levels into SCHEDULE_TOPIC_XXXX, timer messages into rmq_sys_wheel_timer),
 * ScheduleMessageService (delivers the retries' and the delay message's copies), TransactionalMessageServiceImpl
 * with its bridge and op batch service, EndTransactionProcessor, RecallMessageProcessor, TopicConfigManager
 * (the trace topic with traceTopicEnable), SubscriptionGroupManager, ConsumerOffsetManager; on the client side
 * MessageClientIDSetter, the trace hooks SendMessageTraceHookImpl, ConsumeMessageTraceHookImpl and
 * DefaultRecallMessageTraceHook, AsyncTraceDispatcher (its batching, TraceDataEncoder, the trace Message with
 * its key set, the MessageQueueSelector that spreads trace messages over the brokers), MessageDecoder (the
 * consumer's view of a pulled message). Imitated (tests/data/store-trace-a/README.md): the network (the trace
 * producer is replaced by one that hands each trace Message to the harness instead of sending it), the
 * client's send (sendKernelImpl: uniq id, compression, sysFlag) and the broker's request side of a send
 * (SendMessageProcessor up to the put: MSG_REGION, TRACE_ON, CLUSTER, born/store host), the consumer's send
 * back (AbstractSendMessageProcessor.consumerSendMsgBack, transcribed; its put is the real store's, through the
 * real hooks), EndTransactionTraceHookImpl's context (it needs a started client), the consumers' pulls and
 * offset commits (the real ConsumerOffsetManager). expect.json: every trace message (its body decoded by the
 * real decoder, where it is stored), and each traced message's true history.
 */
package oracle;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.embedded.EmbeddedChannel;
import java.io.File;
import java.lang.reflect.Field;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.ThreadPoolExecutor;
import org.apache.rocketmq.broker.BrokerController;
import org.apache.rocketmq.broker.failover.EscapeBridge;
import org.apache.rocketmq.broker.offset.ConsumerOffsetManager;
import org.apache.rocketmq.broker.processor.EndTransactionProcessor;
import org.apache.rocketmq.broker.processor.RecallMessageProcessor;
import org.apache.rocketmq.broker.schedule.ScheduleMessageService;
import org.apache.rocketmq.broker.subscription.SubscriptionGroupManager;
import org.apache.rocketmq.broker.topic.TopicConfigManager;
import org.apache.rocketmq.broker.transaction.queue.TransactionalMessageBridge;
import org.apache.rocketmq.broker.transaction.queue.TransactionalMessageServiceImpl;
import org.apache.rocketmq.client.AccessChannel;
import org.apache.rocketmq.client.consumer.listener.ConsumeReturnType;
import org.apache.rocketmq.client.hook.ConsumeMessageContext;
import org.apache.rocketmq.client.hook.SendMessageContext;
import org.apache.rocketmq.client.impl.CommunicationMode;
import org.apache.rocketmq.client.impl.producer.TopicPublishInfo;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.producer.MessageQueueSelector;
import org.apache.rocketmq.client.producer.SendCallback;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.client.trace.AsyncTraceDispatcher;
import org.apache.rocketmq.client.trace.TraceBean;
import org.apache.rocketmq.client.trace.TraceContext;
import org.apache.rocketmq.client.trace.TraceDispatcher;
import org.apache.rocketmq.client.trace.TraceType;
import org.apache.rocketmq.client.trace.hook.ConsumeMessageTraceHookImpl;
import org.apache.rocketmq.client.trace.hook.DefaultRecallMessageTraceHook;
import org.apache.rocketmq.client.trace.hook.SendMessageTraceHookImpl;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.UtilAll;
import org.apache.rocketmq.common.compression.CompressionType;
import org.apache.rocketmq.common.compression.CompressorFactory;
import org.apache.rocketmq.common.constant.PermName;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageAccessor;
import org.apache.rocketmq.common.message.MessageClientIDSetter;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageExtBrokerInner;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.common.message.MessageType;
import org.apache.rocketmq.common.producer.RecallMessageHandle;
import org.apache.rocketmq.common.sysflag.MessageSysFlag;
import org.apache.rocketmq.common.topic.TopicValidator;
import org.apache.rocketmq.remoting.netty.NettyServerConfig;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.remoting.protocol.RequestCode;
import org.apache.rocketmq.remoting.protocol.ResponseCode;
import org.apache.rocketmq.remoting.protocol.header.EndTransactionRequestHeader;
import org.apache.rocketmq.remoting.protocol.header.RecallMessageRequestHeader;
import org.apache.rocketmq.remoting.protocol.subscription.SubscriptionGroupConfig;
import org.apache.rocketmq.store.GetMessageResult;
import org.apache.rocketmq.store.PutMessageResult;
import org.apache.rocketmq.store.config.MessageStoreConfig;
import org.apache.rocketmq.store.stats.BrokerStatsManager;

public final class TraceStore {
    static final String CLUSTER = "DefaultCluster";
    static final String TOPIC = "TraceTopic";
    static final String TRACE_TOPIC = TopicValidator.RMQ_SYS_TRACE_TOPIC;
    static final String PG = "PG_trace";
    static final String PG_TX = "PG_tx";
    static final String PG_PLAIN = "PG_plain";
    static final String G_OK = "GID_ok";
    static final String G_RETRY = "GID_retry";
    static final String G_NOTRACE = "GID_notrace";
    static final int MAX_RECONSUME = 2;  // the consumer's maxReconsumeTimes, sent in the send-back header

    /** One broker: the holder with the real managers and services, its store, the processors driven here. */
    static final class Broker {
        final String name;
        final String ip;
        final BrokerController b;
        final Stores s;
        ScheduleMessageService schedule;
        RecallMessageProcessor recall;
        EndTransactionProcessor endTx;

        Broker(String name, String ip, BrokerController b, Stores s) {
            this.name = name;
            this.ip = ip;
            this.b = b;
            this.s = s;
        }

        String addr() {
            return ip + ":10911";
        }
    }

    /** The trace producer of one client: the real one's settings; each trace message is handed over here. */
    static final class CaptureProducer extends DefaultMQProducer {
        final List<Object[]> sent = Collections.synchronizedList(new ArrayList<>());
        final List<MessageQueue> queues = new ArrayList<>();

        CaptureProducer(String group) {
            super(group);
            setSendMsgTimeout(5000);
            setVipChannelEnabled(false);
            setMaxMessageSize(128000);
        }

        @Override
        public void send(Message msg, MessageQueueSelector selector, Object arg, SendCallback sendCallback) {
            // DefaultMQProducerImpl.sendSelectImpl: the selector picks among the topic's published queues
            sent.add(new Object[] {msg, selector.select(queues, msg, arg)});
        }

        @Override
        public void send(Message msg, SendCallback sendCallback, long timeout) {
            throw new IllegalStateException("the trace topic has routes: the dispatcher selects a queue");
        }
    }

    /** A client: its group, host and (when traced) its trace dispatcher and trace producer. */
    static final class Client {
        final String group;
        final InetSocketAddress host;
        final AsyncTraceDispatcher dispatcher;
        final CaptureProducer capture;

        Client(String group, InetSocketAddress host, AsyncTraceDispatcher dispatcher, CaptureProducer capture) {
            this.group = group;
            this.host = host;
            this.dispatcher = dispatcher;
            this.capture = capture;
        }

        String hostString() {
            return host.getAddress().getHostAddress() + ":" + host.getPort();
        }
    }

    private final Broker a;
    private final Broker bb;
    private final Random rnd;
    private final Map<String, Map<String, Object>> history = new LinkedHashMap<>();
    private final List<Map<String, Object>> traceMessages = new ArrayList<>();

    private TraceStore(Broker a, Broker bb, Random rnd) {
        this.a = a;
        this.bb = bb;
        this.rnd = rnd;
    }

    public static void write(String rootA, String rootB, long seed) throws Exception {
        for (String root : new String[] {rootA, rootB}) {
            if (new File(root).exists()) {
                throw new IllegalStateException(root + " exists; the fixture is written into a new directory");
            }
        }
        System.setProperty("com.rocketmq.recall.default.trace.enable", "true");
        Broker a = start(rootA, "broker-a", "192.168.0.10");
        Broker b = start(rootB, "broker-b", "192.168.0.11");
        try {
            new TraceStore(a, b, new Random(seed)).run(rootA, rootB, seed);
        } catch (Throwable t) {
            t.printStackTrace();
            Runtime.getRuntime().halt(1);  // the services' threads would keep the JVM alive
        }
    }

    static Broker start(String root, String name, String ip) throws Exception {
        return start(root, name, ip, true);
    }

    /** `timer`: with the 5.x timer store (timerWheelEnable), as the trace brokers run; DlqStore runs without. */
    static Broker start(String root, String name, String ip, boolean timer) throws Exception {
        Geometry g = new Geometry();
        g.timer = timer;
        BrokerConfig bc = new BrokerConfig();
        bc.setBrokerName(name);
        bc.setBrokerClusterName(CLUSTER);
        bc.setBrokerIP1(ip);
        bc.setTraceTopicEnable(true);  // TopicConfigManager creates RMQ_SYS_TRACE_TOPIC
        bc.setRecallMessageEnable(true);
        MessageStoreConfig msc = Stores.config(root, g);
        BrokerStatsManager stats = new BrokerStatsManager(CLUSTER, true);
        BrokerController b = new BrokerController(bc, msc, null);
        b.storeHost = new InetSocketAddress(ip, 10911);
        b.brokerStatsManager = stats;
        b.nettyServerConfig = new NettyServerConfig();
        b.nettyServerConfig.setListenPort(10911);
        b.topicConfigManager = new TopicConfigManager(b);
        b.subscriptionGroupManager = new SubscriptionGroupManager(b);
        b.consumerOffsetManager = new ConsumerOffsetManager(b);
        if (!(b.topicConfigManager.load() && b.consumerOffsetManager.load() && b.subscriptionGroupManager.load())) {
            throw new IllegalStateException("metadata did not load");
        }
        b.topicConfigManager.updateTopicConfig(new TopicConfig(TOPIC, 2, 2, 6));
        Stores s = Stores.open(msc, g, b.topicConfigManager.getTopicConfigTable(), bc, stats);
        if (!s.loaded) {
            throw new IllegalStateException("fresh store did not load");
        }
        b.setMessageStore(s.store);
        PopStore.registerMessageStoreHook(b);
        b.escapeBridge = new EscapeBridge(b);
        Broker br = new Broker(name, ip, b, s);
        s.start();
        b.escapeBridge.start();
        br.schedule = new ScheduleMessageService(b);
        b.scheduleMessageService = br.schedule;
        br.schedule.start();  // loads delayOffset.json and the level table (the put hook asks its max level)
        b.transactionalMessageService = new TransactionalMessageServiceImpl(new TransactionalMessageBridge(b, s.store));
        br.endTx = new EndTransactionProcessor(b);
        br.recall = new RecallMessageProcessor(b);
        return br;
    }

    static Client client(String group, String ip, int port, TraceDispatcher.Type type, List<Broker> traceBrokers)
        throws Exception {
        InetSocketAddress host = new InetSocketAddress(ip, port);
        if (type == null) {
            return new Client(group, host, null, null);
        }
        AsyncTraceDispatcher d = new AsyncTraceDispatcher(group, type, 10, null, null);
        CaptureProducer capture = new CaptureProducer(d.getTraceProducer().getProducerGroup());
        for (Broker br : traceBrokers) {
            capture.queues.add(new MessageQueue(TRACE_TOPIC, br.name, 0));
        }
        // The route the trace producer would have fetched: the trace topic's queue on each broker.
        TopicPublishInfo route = new TopicPublishInfo();
        route.setMessageQueueList(new ArrayList<>(capture.queues));
        route.setHaveTopicRouterInfo(true);
        capture.getDefaultMQProducerImpl().getTopicPublishInfoTable().put(TRACE_TOPIC, route);
        Field f = AsyncTraceDispatcher.class.getDeclaredField("traceProducer");
        f.setAccessible(true);
        f.set(d, capture);
        return new Client(group, host, d, capture);
    }

    // --- the client's send and the broker's request side (imitated up to the real put) ------------------------

    /** One send: sendKernelImpl's preparation and hooks, SendMessageProcessor's message, the real put. */
    SendResult send(Client c, Broker br, Message msg, int queueId, SendMessageTraceHookImpl hook, String name)
        throws Exception {
        MessageQueue mq = new MessageQueue(msg.getTopic(), br.name, queueId);
        MessageClientIDSetter.setUniqID(msg);
        int sysFlag = 0;
        byte[] body = msg.getBody();
        if (body != null && body.length >= 4096) {  // tryToCompressMessage: compressMsgBodyOverHowmuch, ZLIB 5
            msg.setBody(CompressorFactory.getCompressor(CompressionType.ZLIB).compress(body, 5));
            sysFlag |= MessageSysFlag.COMPRESSED_FLAG | CompressionType.ZLIB.getCompressionFlag();
        }
        boolean prepared = Boolean.parseBoolean(msg.getProperty(MessageConst.PROPERTY_TRANSACTION_PREPARED));
        if (prepared) {
            sysFlag |= MessageSysFlag.TRANSACTION_PREPARED_TYPE;
        }
        SendMessageContext context = null;
        if (hook != null) {
            context = new SendMessageContext();
            context.setProducerGroup(c.group);
            context.setCommunicationMode(CommunicationMode.SYNC);
            context.setBornHost(c.host.getAddress().getHostAddress());
            context.setBrokerAddr(br.addr());
            context.setMessage(msg);
            context.setMq(mq);
            if ("true".equals(msg.getProperty(MessageConst.PROPERTY_TRANSACTION_PREPARED))) {
                context.setMsgType(MessageType.Trans_Msg_Half);
            }
            if (msg.getProperty("__STARTDELIVERTIME") != null || msg.getProperty(MessageConst.PROPERTY_DELAY_TIME_LEVEL) != null) {
                context.setMsgType(MessageType.Delay_Msg);
            }
            hook.sendMessageBefore(context);
        }
        long bornTimestamp = System.currentTimeMillis();
        String headerProps = MessageDecoder.messageProperties2String(msg.getProperties());
        // broker: AbstractSendMessageProcessor.buildMsgContext, clearReservedProperties, sendMessage
        Map<String, String> properties = MessageDecoder.string2messageProperties(headerProps);
        properties.put(MessageConst.PROPERTY_MSG_REGION, br.b.getBrokerConfig().getRegionId());
        properties.put(MessageConst.PROPERTY_TRACE_SWITCH, String.valueOf(br.b.getBrokerConfig().isTraceOn()));
        headerProps = MessageDecoder.messageProperties2String(properties);
        TopicConfig topicConfig = br.b.topicConfigManager.selectTopicConfig(msg.getTopic());
        MessageExtBrokerInner inner = new MessageExtBrokerInner();
        inner.setTopic(msg.getTopic());
        inner.setQueueId(queueId);
        Map<String, String> oriProps = MessageDecoder.string2messageProperties(headerProps);
        inner.setSysFlag(sysFlag);
        inner.setBody(msg.getBody());
        inner.setFlag(msg.getFlag());
        MessageAccessor.setProperties(inner, oriProps);
        inner.setTagsCode(MessageExtBrokerInner.tagsString2tagsCode(topicConfig.getTopicFilterType(), inner.getTags()));
        inner.setBornTimestamp(bornTimestamp);
        inner.setBornHost(c.host);
        inner.setStoreHost(br.b.storeHost);
        inner.setReconsumeTimes(0);
        MessageAccessor.putProperty(inner, MessageConst.PROPERTY_CLUSTER, CLUSTER);
        inner.setPropertiesString(MessageDecoder.messageProperties2String(inner.getProperties()));
        PutMessageResult r = prepared
            ? br.b.transactionalMessageService.prepareMessage(inner)
            : br.s.store.putMessage(inner);
        if (r == null || !r.isOk()) {
            throw new IllegalStateException("put failed: " + r);
        }
        // MQClientAPIImpl.processSendResponse: msgId = the uniq key, offsetMsgId = the broker's id of the record
        SendResult result = new SendResult(SendStatus.SEND_OK, MessageClientIDSetter.getUniqID(msg),
            r.getAppendMessageResult().getMsgId(), mq, r.getAppendMessageResult().getLogicsOffset());
        result.setRegionId(br.b.getBrokerConfig().getRegionId());
        result.setTraceOn(br.b.getBrokerConfig().isTraceOn());
        result.setTransactionId(MessageClientIDSetter.getUniqID(msg));
        if (hook != null) {
            context.setSendResult(result);
            hook.sendMessageAfter(context);
        }
        if (name != null) {
            Map<String, Object> h = new LinkedHashMap<>();
            h.put("name", name);
            h.put("uniqKey", result.getMsgId());
            h.put("producerGroup", c.group);
            h.put("traced", hook != null);
            h.put("events", new ArrayList<Object>());
            history.put(result.getMsgId(), h);
            Map<String, Object> e = event(result.getMsgId(), "sent");
            e.put("broker", br.name);
            e.put("topic", inner.getTopic());  // where the put hooks left it (delay levels, timer messages)
            e.put("queueId", inner.getQueueId());
            e.put("physicalOffset", r.getAppendMessageResult().getWroteOffset());
            e.put("queueOffset", r.getAppendMessageResult().getLogicsOffset());
            e.put("offsetMsgId", r.getAppendMessageResult().getMsgId());
            e.put("bornHost", c.hostString());
            e.put("compressed", (sysFlag & MessageSysFlag.COMPRESSED_FLAG) != 0);
        }
        return result;
    }

    Map<String, Object> event(String uniqKey, String kind) {
        Map<String, Object> e = new LinkedHashMap<>();
        e.put("event", kind);
        e.put("timeMs", System.currentTimeMillis());
        @SuppressWarnings("unchecked")
        List<Object> events = (List<Object>) history.get(uniqKey).get("events");
        events.add(e);
        return e;
    }

    static Message message(String topic, String tags, String keys, int bodySize, Random rnd) {
        byte[] body = new byte[bodySize];
        for (int k = 0; k < body.length; k++) {
            body[k] = (byte) ('a' + rnd.nextInt(26));
        }
        Message m = new Message(topic, tags, keys, body);
        return m;
    }

    // --- consumers (imitated pulls, real trace hook, real offsets and send-back put) -------------------------

    /** The message at (topic, queueId, offset) as a pulled message reaches the listener. */
    MessageExt pull(Broker br, String group, String topic, int queueId, long offset) {
        GetMessageResult r = br.s.store.getMessage(group, topic, queueId, offset, 1, null);
        if (r == null || r.getMessageBufferList().isEmpty()) {
            throw new IllegalStateException("no message at " + topic + "/" + queueId + "/" + offset + ": " + r);
        }
        ByteBuffer buf = r.getMessageBufferList().get(0);
        byte[] bytes = new byte[buf.remaining()];
        buf.get(bytes);
        r.release();
        // PullAPIWrapper.processPullResult: decodesBatch(readBody, decompressBody, isClient)
        MessageExt m = MessageDecoder.decode(ByteBuffer.wrap(bytes), true, true, true);
        // DefaultMQPushConsumerImpl.resetRetryAndNamespace
        String retryTopic = m.getProperty(MessageConst.PROPERTY_RETRY_TOPIC);
        if (retryTopic != null && MixAll.getRetryTopic(group).equals(m.getTopic())) {
            m.setTopic(retryTopic);
        }
        return m;
    }

    /** One consume of one message: the trace hook around the listener, a send-back on failure, the commit. */
    void consume(Client c, Broker br, String queueTopic, int queueId, long offset, boolean success, int delayLevel)
        throws Exception {
        MessageExt m = pull(br, c.group, queueTopic, queueId, offset);
        ConsumeMessageContext ctx = null;
        ConsumeMessageTraceHookImpl hook = c.dispatcher == null ? null : new ConsumeMessageTraceHookImpl(c.dispatcher);
        if (hook != null) {
            ctx = new ConsumeMessageContext();
            ctx.setNamespace(null);
            ctx.setConsumerGroup(c.group);
            ctx.setProps(new HashMap<>());
            ctx.setMq(new MessageQueue(queueTopic, br.name, queueId));
            List<MessageExt> list = new ArrayList<>();
            list.add(m);
            ctx.setMsgList(list);
            ctx.setSuccess(false);
            hook.consumeMessageBefore(ctx);
        }
        Thread.sleep(3 + rnd.nextInt(20));  // the listener's work
        if (hook != null) {
            ctx.getProps().put(MixAll.CONSUME_CONTEXT_TYPE, (success ? ConsumeReturnType.SUCCESS : ConsumeReturnType.FAILED).name());
            ctx.setStatus(success ? "CONSUME_SUCCESS" : "RECONSUME_LATER");
            ctx.setSuccess(success);
            ctx.setAccessChannel(AccessChannel.LOCAL);
            hook.consumeMessageAfter(ctx);
        }
        String uniq = m.getProperty(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX);
        if (history.containsKey(uniq)) {
            Map<String, Object> e = event(uniq, "consumed");
            e.put("group", c.group);
            e.put("broker", br.name);
            e.put("topic", queueTopic);
            e.put("queueId", queueId);
            e.put("queueOffset", offset);
            e.put("physicalOffset", m.getCommitLogOffset());
            e.put("reconsumeTimes", m.getReconsumeTimes());
            e.put("success", success);
            e.put("traced", hook != null);
            e.put("clientHost", c.hostString());
        }
        if (!success) {
            sendBack(c, br, m, delayLevel);
        }
        br.b.consumerOffsetManager.commitOffset(c.hostString(), c.group, queueTopic, queueId, offset + 1);
    }

    /** AbstractSendMessageProcessor.consumerSendMsgBack (5.3.3, lines 92-231), transcribed: the copy into
     * %RETRY%group (through the real put hooks, which move a delay level into SCHEDULE_TOPIC_XXXX) or, past
     * maxReconsumeTimes, %DLQ%group. */
    void sendBack(Client c, Broker br, MessageExt pulled, int delayLevel) throws Exception {
        String group = c.group;
        SubscriptionGroupConfig sg = br.b.subscriptionGroupManager.findSubscriptionGroupConfig(group);
        String newTopic = MixAll.getRetryTopic(group);
        int queueIdInt = rnd.nextInt(sg.getRetryQueueNums());
        br.b.topicConfigManager.createTopicInSendMessageBackMethod(newTopic, sg.getRetryQueueNums(),
            PermName.PERM_WRITE | PermName.PERM_READ, 0);
        MessageExt msgExt = br.s.store.lookMessageByOffset(pulled.getCommitLogOffset());
        if (msgExt.getProperty(MessageConst.PROPERTY_RETRY_TOPIC) == null) {
            MessageAccessor.putProperty(msgExt, MessageConst.PROPERTY_RETRY_TOPIC, msgExt.getTopic());
        }
        msgExt.setWaitStoreMsgOK(false);
        boolean dlq = false;
        if (msgExt.getReconsumeTimes() >= MAX_RECONSUME || delayLevel < 0) {
            dlq = true;
            newTopic = MixAll.getDLQTopic(group);
            queueIdInt = rnd.nextInt(1);  // DLQ_NUMS_PER_GROUP
            br.b.topicConfigManager.createTopicInSendMessageBackMethod(newTopic, 1, PermName.PERM_WRITE | PermName.PERM_READ, 0);
            msgExt.setDelayTimeLevel(0);
        } else {
            if (0 == delayLevel) {
                delayLevel = 3 + msgExt.getReconsumeTimes();
            }
            msgExt.setDelayTimeLevel(delayLevel);
        }
        MessageExtBrokerInner msgInner = new MessageExtBrokerInner();
        msgInner.setTopic(newTopic);
        msgInner.setBody(msgExt.getBody());
        msgInner.setFlag(msgExt.getFlag());
        MessageAccessor.setProperties(msgInner, msgExt.getProperties());
        msgInner.setPropertiesString(MessageDecoder.messageProperties2String(msgExt.getProperties()));
        msgInner.setTagsCode(MessageExtBrokerInner.tagsString2tagsCode(null, msgExt.getTags()));
        msgInner.setQueueId(queueIdInt);
        msgInner.setSysFlag(msgExt.getSysFlag());
        msgInner.setBornTimestamp(msgExt.getBornTimestamp());
        msgInner.setBornHost(msgExt.getBornHost());
        msgInner.setStoreHost(br.b.storeHost);
        msgInner.setReconsumeTimes(msgExt.getReconsumeTimes() + 1);
        String originMsgId = MessageAccessor.getOriginMessageId(msgExt);
        MessageAccessor.setOriginMessageId(msgInner, UtilAll.isBlank(originMsgId) ? msgExt.getMsgId() : originMsgId);
        msgInner.setPropertiesString(MessageDecoder.messageProperties2String(msgExt.getProperties()));
        br.s.waitDispatched();
        long retryMax = br.s.store.getMaxOffsetInQueue(MixAll.getRetryTopic(group), queueIdInt);
        PutMessageResult r = br.s.store.putMessage(msgInner);
        if (r == null || !r.isOk()) {
            throw new IllegalStateException("send back failed: " + r);
        }
        String uniq = msgExt.getProperty(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX);
        Map<String, Object> e = event(uniq, dlq ? "dlq" : "sendBack");
        e.put("group", group);
        e.put("broker", br.name);
        e.put("topic", msgInner.getTopic());  // SCHEDULE_TOPIC_XXXX when the hook moved a delay level there
        e.put("queueId", msgInner.getQueueId());
        e.put("physicalOffset", r.getAppendMessageResult().getWroteOffset());
        e.put("queueOffset", r.getAppendMessageResult().getLogicsOffset());
        e.put("reconsumeTimes", msgInner.getReconsumeTimes());
        e.put("delayLevel", dlq ? 0 : delayLevel);
        e.put("originMessageId", MessageAccessor.getOriginMessageId(msgInner));
        if (!dlq) {
            awaitDelivery(br, uniq, MixAll.getRetryTopic(group), queueIdInt, retryMax);
        }
    }

    /** Waits for ScheduleMessageService to deliver the copy into `topic`; records where it landed. */
    void awaitDelivery(Broker br, String uniq, String topic, int queueId, long before) throws Exception {
        long deadline = System.currentTimeMillis() + 60_000;
        while (br.s.store.getMaxOffsetInQueue(topic, queueId) <= Math.max(before, 0)
            && System.currentTimeMillis() < deadline) {
            Thread.sleep(100);
        }
        long max = br.s.store.getMaxOffsetInQueue(topic, queueId);
        if (max <= Math.max(before, 0)) {
            throw new IllegalStateException("the delayed copy of " + uniq + " did not reach " + topic + " in 60 s");
        }
        Thread.sleep(300);
        MessageExt m = br.s.store.lookMessageByOffset(
            br.s.store.getConsumeQueue(topic, queueId).get(max - 1).getPos());
        Map<String, Object> e = event(uniq, "delivered");
        e.put("broker", br.name);
        e.put("topic", topic);
        e.put("queueId", queueId);
        e.put("queueOffset", max - 1);
        e.put("physicalOffset", m.getCommitLogOffset());
        e.put("by", "ScheduleMessageService");
        if (!uniq.equals(m.getProperty(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX))) {
            throw new IllegalStateException("the copy delivered into " + topic + " is not " + uniq);
        }
    }

    /** Flushes a client's trace dispatcher and puts each trace message it handed over into its broker. */
    void flushTraces(Client c) throws Exception {
        c.dispatcher.flush();
        Field f = AsyncTraceDispatcher.class.getDeclaredField("traceExecutor");
        f.setAccessible(true);
        ThreadPoolExecutor ex = (ThreadPoolExecutor) f.get(c.dispatcher);
        long deadline = System.currentTimeMillis() + 10_000;
        while ((ex.getActiveCount() > 0 || !ex.getQueue().isEmpty()) && System.currentTimeMillis() < deadline) {
            Thread.sleep(20);
        }
        Thread.sleep(100);
        List<Object[]> sent;
        synchronized (c.capture.sent) {
            sent = new ArrayList<>(c.capture.sent);
            c.capture.sent.clear();
        }
        for (Object[] pair : sent) {
            Message msg = (Message) pair[0];
            MessageQueue mq = (MessageQueue) pair[1];
            Broker br = mq.getBrokerName().equals(a.name) ? a : bb;
            byte[] body = msg.getBody().clone();
            Client traceClient = new Client(c.capture.getProducerGroup(), c.host, null, null);
            SendResult r = send(traceClient, br, msg, mq.getQueueId(), null, null);
            MessageExt stored = br.s.store.lookMessageByOffset(MessageDecoder.decodeMessageId(r.getOffsetMsgId()).getOffset());
            Map<String, Object> t = new LinkedHashMap<>();
            t.put("client", c.group);
            t.put("broker", br.name);
            t.put("queueId", mq.getQueueId());
            t.put("queueOffset", r.getQueueOffset());
            t.put("physicalOffset", stored.getCommitLogOffset());
            t.put("offsetMsgId", r.getOffsetMsgId());
            t.put("uniqKey", r.getMsgId());
            t.put("keys", msg.getKeys());
            t.put("bornHost", c.hostString());
            t.put("storeTimestamp", stored.getStoreTimestamp());
            t.put("sysFlag", stored.getSysFlag());
            t.put("body", java.util.Base64.getEncoder().encodeToString(body));
            t.putAll(TraceBodies.decode(body));
            traceMessages.add(t);
        }
    }

    // --- the scenario ------------------------------------------------------------------------------------------

    private void run(String rootA, String rootB, long seed) throws Exception {
        List<Broker> both = List.of(a, bb);
        Client producer = client(PG, "192.168.1.100", 40001, TraceDispatcher.Type.PRODUCE, both);
        Client plain = client(PG_PLAIN, "192.168.1.105", 40005, null, both);
        Client tx = client(PG_TX, "192.168.1.104", 40004, TraceDispatcher.Type.PRODUCE, both);
        Client ok = client(G_OK, "192.168.1.101", 40002, TraceDispatcher.Type.CONSUME, both);
        Client retry = client(G_RETRY, "192.168.1.102", 40003, TraceDispatcher.Type.CONSUME, both);
        Client notrace = client(G_NOTRACE, "192.168.1.103", 40006, null, both);
        SendMessageTraceHookImpl pubHook = new SendMessageTraceHookImpl(producer.dispatcher);
        SendMessageTraceHookImpl txHook = new SendMessageTraceHookImpl(tx.dispatcher);

        // Sends (PG_trace traced; PG_plain without trace, as a gRPC client or a client with trace off)
        send(producer, a, message(TOPIC, "tagA", "order-1", 120, rnd), 0, pubHook, "consumed");
        send(producer, bb, message(TOPIC, "tagA", "order-2 vip", 300, rnd), 1, pubHook, "retried-to-dlq");
        send(producer, a, message(TOPIC, "tagB", "order-3", 80, rnd), 1, pubHook, "retried-once");
        Message delayed = message(TOPIC, "tagD", "order-6", 90, rnd);
        delayed.setDelayTimeLevel(2);
        a.s.waitDispatched();
        long delayedBefore = a.s.store.getMaxOffsetInQueue(TOPIC, 1);
        send(producer, a, delayed, 1, pubHook, "delay-level-2");
        send(plain, bb, message(TOPIC, "tagA", "order-7", 60, rnd), 0, null, "untraced-producer");
        send(producer, bb, message(TOPIC, "tagA", "order-8", 70, rnd), 0, pubHook, "not-consumed-by-traced-groups");
        StringBuilder many = new StringBuilder();
        for (int k = 0; k < 200; k++) {
            many.append(k > 0 ? " " : "").append(String.format("bulk-key-%04d-%08x", k, rnd.nextInt()));
        }
        send(producer, bb, message(TOPIC, "tagC", many.toString(), 5000, rnd), 1, pubHook, "many-keys-compressed");
        Message timer = message(TOPIC, "tagT", "order-5", 50, rnd);
        timer.setDeliverTimeMs(System.currentTimeMillis() + 3_600_000L);
        SendResult timerSent = send(producer, bb, timer, 0, pubHook, "timer-recalled");
        recall(producer, bb, timer, timerSent);
        Message txMsg = message(TOPIC, "tagX", "order-4", 100, rnd);
        transaction(tx, a, txMsg, txHook);
        flushTraces(producer);
        flushTraces(tx);

        awaitDelivery(a, uniq("delay-level-2"), TOPIC, 1, delayedBefore);  // level 2 (5 s): broker-a TraceTopic/1
        a.s.waitDispatched();
        bb.s.waitDispatched();
        // GID_ok: everything on both brokers but broker-b queue 0 past order-7 (order-8 not consumed yet)
        consumeAll(ok, a, TOPIC, true);
        consumeUpTo(ok, bb, TOPIC, 0, offsetOf("untraced-producer") + 1);
        consumeAll(ok, bb, TOPIC, 1, true);
        // GID_retry: order-2 fails three times (DLQ), order-3 fails once; the rest succeeds
        consumeRetrying(retry, a);
        consumeRetrying(retry, bb);
        // GID_notrace: consumes everything, without trace (its commits are all that is left of it)
        for (Broker br : both) {
            for (int q = 0; q < 2; q++) {
                long max = br.s.store.getMaxOffsetInQueue(TOPIC, q);
                for (long o = 0; o < max; o++) {
                    consume(notrace, br, TOPIC, q, o, true, 0);
                }
            }
        }
        flushTraces(ok);
        flushTraces(retry);
        for (Broker br : both) {
            br.s.waitDispatched();
        }
        Thread.sleep(500);
        writeExpect(rootA, rootB, seed);
    }

    String uniq(String name) {
        for (Map<String, Object> h : history.values()) {
            if (h.get("name").equals(name)) {
                return (String) h.get("uniqKey");
            }
        }
        throw new IllegalArgumentException(name);
    }

    long offsetOf(String name) {
        @SuppressWarnings("unchecked")
        List<Map<String, Object>> events = (List<Map<String, Object>>) history.get(uniq(name)).get("events");
        return (Long) events.get(0).get("queueOffset");
    }

    void consumeAll(Client c, Broker br, String topic, boolean success) throws Exception {
        for (int q = 0; q < 2; q++) {
            consumeAll(c, br, topic, q, success);
        }
    }

    void consumeAll(Client c, Broker br, String topic, int q, boolean success) throws Exception {
        consumeUpTo(c, br, topic, q, br.s.store.getMaxOffsetInQueue(topic, q));
    }

    void consumeUpTo(Client c, Broker br, String topic, int q, long end) throws Exception {
        for (long o = 0; o < end; o++) {
            consume(c, br, topic, q, o, true, 0);
        }
    }

    /** GID_retry on one broker: the topic's queues, then its retry queue until it is drained. */
    void consumeRetrying(Client c, Broker br) throws Exception {
        String failTwice = uniq("retried-to-dlq");
        String failOnce = uniq("retried-once");
        for (int q = 0; q < 2; q++) {
            long max = br.s.store.getMaxOffsetInQueue(TOPIC, q);
            for (long o = 0; o < max; o++) {
                String u = pull(br, c.group, TOPIC, q, o).getProperty(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX);
                boolean fail = u.equals(failTwice) || u.equals(failOnce);
                consume(c, br, TOPIC, q, o, !fail, u.equals(failOnce) ? 1 : 0);  // 0: the broker's 3 + reconsumeTimes
            }
        }
        String retryTopic = MixAll.getRetryTopic(c.group);
        for (long o = 0; o < br.s.store.getMaxOffsetInQueue(retryTopic, 0); o++) {
            MessageExt m = pull(br, c.group, retryTopic, 0, o);
            boolean fail = m.getProperty(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX).equals(failTwice);
            consume(c, br, retryTopic, 0, o, !fail, 1);
        }
    }

    /** A timer message recalled: RECALL_MESSAGE to the real RecallMessageProcessor, its trace by the real hook. */
    void recall(Client c, Broker br, Message sent, SendResult result) throws Exception {
        // SendMessageProcessor.attachRecallHandle from the record the put hook transformed (imitated lookup)
        MessageExt stored = br.s.store.lookMessageByOffset(MessageDecoder.decodeMessageId(result.getOffsetMsgId()).getOffset());
        String timestampStr = String.valueOf(Long.parseLong(stored.getProperty(MessageConst.PROPERTY_TIMER_OUT_MS)) + 1);
        String handle = RecallMessageHandle.HandleV1.buildHandle(stored.getProperty(MessageConst.PROPERTY_REAL_TOPIC),
            br.name, timestampStr, MessageClientIDSetter.getUniqID(stored));
        RecallMessageRequestHeader h = new RecallMessageRequestHeader();
        h.setProducerGroup(c.group);
        h.setTopic(sent.getTopic());
        h.setRecallHandle(handle);
        h.setBrokerName(br.name);
        RemotingCommand req = RemotingCommand.createRequestCommand(RequestCode.RECALL_MESSAGE, h);
        req.makeCustomHeaderToNet();
        RemotingCommand resp = br.recall.processRequest(channel(c.host), req);
        if (resp.getCode() != ResponseCode.SUCCESS) {
            throw new IllegalStateException("recall: " + resp.getCode() + " " + resp.getRemark());
        }
        resp.makeCustomHeaderToNet();
        new DefaultRecallMessageTraceHook(c.dispatcher).doAfterResponse(br.addr(), req, resp);
        Map<String, Object> e = event(result.getMsgId(), "recalled");
        e.put("broker", br.name);
        e.put("recallHandle", handle);
        e.put("responseCode", resp.getCode());
    }

    /** A transaction committed: the half through the real prepareMessage, the commit through the real
     * EndTransactionProcessor, the EndTransaction trace as EndTransactionTraceHookImpl builds it. */
    void transaction(Client c, Broker br, Message msg, SendMessageTraceHookImpl hook) throws Exception {
        MessageAccessor.putProperty(msg, MessageConst.PROPERTY_TRANSACTION_PREPARED, "true");
        MessageAccessor.putProperty(msg, MessageConst.PROPERTY_PRODUCER_GROUP, c.group);
        SendResult half = send(c, br, msg, 0, hook, "transaction-committed");
        msg.setTransactionId(msg.getProperty(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX));
        Thread.sleep(5);  // the local transaction
        // EndTransactionTraceHookImpl.endTransaction (DefaultMQProducerImpl.doExecuteEndTransactionHook's context)
        TraceContext t = new TraceContext();
        t.setTraceBeans(new ArrayList<>(1));
        t.setTraceType(TraceType.EndTransaction);
        t.setGroupName(c.group);
        TraceBean bean = new TraceBean();
        bean.setTopic(msg.getTopic());
        bean.setTags(msg.getTags());
        bean.setKeys(msg.getKeys());
        bean.setStoreHost(br.addr());
        bean.setMsgType(MessageType.Trans_msg_Commit);
        bean.setClientHost(c.host.getAddress().getHostAddress() + "@1234");
        bean.setMsgId(half.getMsgId());
        bean.setTransactionState(LocalTransactionState.COMMIT_MESSAGE);
        bean.setTransactionId(msg.getTransactionId());
        bean.setFromTransactionCheck(false);
        String regionId = msg.getProperty(MessageConst.PROPERTY_MSG_REGION);
        t.setRegionId(regionId == null || regionId.isEmpty() ? MixAll.DEFAULT_TRACE_REGION_ID : regionId);
        t.getTraceBeans().add(bean);
        t.setTimeStamp(System.currentTimeMillis());
        c.dispatcher.append(t);
        // DefaultMQProducerImpl.endTransaction's request, to the real processor
        EndTransactionRequestHeader h = new EndTransactionRequestHeader();
        h.setTopic(msg.getTopic());
        h.setTransactionId(msg.getTransactionId());
        h.setCommitLogOffset(MessageDecoder.decodeMessageId(half.getOffsetMsgId()).getOffset());
        h.setBrokerName(br.name);
        h.setCommitOrRollback(MessageSysFlag.TRANSACTION_COMMIT_TYPE);
        h.setProducerGroup(c.group);
        h.setTranStateTableOffset(half.getQueueOffset());
        h.setMsgId(half.getMsgId());
        h.setFromTransactionCheck(false);
        RemotingCommand req = RemotingCommand.createRequestCommand(RequestCode.END_TRANSACTION, h);
        req.makeCustomHeaderToNet();
        br.s.waitDispatched();
        long before = br.s.store.getMaxOffsetInQueue(TOPIC, 0);
        RemotingCommand resp = br.endTx.processRequest(channel(c.host), req);
        if (resp == null || resp.getCode() != ResponseCode.SUCCESS) {
            throw new IllegalStateException("end transaction: " + (resp == null ? null : resp.getCode()));
        }
        Map<String, Object> e = event(half.getMsgId(), "committed");
        e.put("broker", br.name);
        e.put("halfQueueOffset", half.getQueueOffset());
        e.put("halfPhysicalOffset", h.getCommitLogOffset());
        br.s.waitDispatched();
        long max = br.s.store.getMaxOffsetInQueue(TOPIC, 0);
        if (max != before + 1) {
            throw new IllegalStateException("the commit copy is not in " + TOPIC + "/0");
        }
        e.put("commitQueueOffset", max - 1);
        e.put("commitPhysicalOffset", br.s.store.getConsumeQueue(TOPIC, 0).get(max - 1).getPos());
        // the op message: TransactionalOpBatchService writes it within transactionOpBatchInterval (3 s)
        long deadline = System.currentTimeMillis() + 20_000;
        while (br.s.store.getMaxOffsetInQueue(TopicValidator.RMQ_SYS_TRANS_OP_HALF_TOPIC, 0) <= 0
            && System.currentTimeMillis() < deadline) {
            Thread.sleep(100);
        }
        if (br.s.store.getMaxOffsetInQueue(TopicValidator.RMQ_SYS_TRANS_OP_HALF_TOPIC, 0) <= 0) {
            throw new IllegalStateException("no op message in 20 s");
        }
    }

    static ChannelHandlerContext channel(InetSocketAddress remote) {
        EmbeddedChannel ch = new EmbeddedChannel(new ChannelInboundHandlerAdapter()) {
            @Override
            public SocketAddress remoteAddress() {
                return remote;
            }
        };
        return ch.pipeline().firstContext();
    }

    // --- expect.json -------------------------------------------------------------------------------------------

    private void writeExpect(String rootA, String rootB, long seed) throws Exception {
        Map<String, Object> offsets = new LinkedHashMap<>();
        Map<String, Map<String, Object>> readBack = new LinkedHashMap<>();
        for (Broker br : List.of(a, bb)) {
            Map<String, Object> table = new TreeMap<>();
            br.b.consumerOffsetManager.getOffsetTable().forEach((k, v) -> table.put(k, new TreeMap<>(v)));
            offsets.put(br.name, table);
            Map<String, Object> rb = new LinkedHashMap<>();
            ReadBack.store(br.s.store, rb);
            readBack.put(br.name, rb);
        }
        for (Broker br : List.of(a, bb)) {
            br.schedule.persist();
            br.schedule.shutdown();
            br.b.consumerOffsetManager.persist();
            br.b.topicConfigManager.persist();
            br.b.subscriptionGroupManager.persist();
            br.b.transactionalMessageService.close();
            br.s.shutdown();
        }
        for (String[] pair : new String[][] {{rootA, a.name}, {rootB, bb.name}}) {
            Map<String, Object> expect = new LinkedHashMap<>();
            expect.put("rocketmqVersion", "5.3.3 (git tag rocketmq-all-5.3.3)");
            expect.put("profile", "trace");
            expect.put("seed", seed);
            expect.put("broker", pair[1]);
            Map<String, Object> config = new LinkedHashMap<>();
            config.put("brokers", Map.of(a.name, a.addr(), bb.name, bb.addr()));
            config.put("mappedFileSizeCommitLog", 1024 * 1024);
            config.put("maxHashSlotNum", 64);
            config.put("maxIndexNum", 4000);
            config.put("maxReconsumeTimes", MAX_RECONSUME);
            expect.put("config", config);
            expect.put("history", new ArrayList<>(history.values()));
            expect.put("traceMessages", traceMessages);
            expect.put("consumerOffsets", offsets);
            expect.putAll(readBack.get(pair[1]));
            ReadBack.checkpoint(pair[0], expect);
            ReadBack.files(pair[0], expect);
            java.nio.file.Files.write(new File(pair[0], "expect.json").toPath(),
                Json.write(expect).getBytes(StandardCharsets.UTF_8));
        }
        Runtime.getRuntime().halt(0);  // the dispatchers' and services' threads would keep the JVM alive
    }
}
