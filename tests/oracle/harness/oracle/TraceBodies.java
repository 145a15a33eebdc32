/*
 * `trace-bodies SEED [COUNT]` and `trace-decode FILE` (both oracles: 5.3.3 and 4.9.8): message trace bodies as
 * the real client classes write and read them.
 *   trace-bodies: COUNT seeded TraceContext/TraceBean objects of every TraceType the version has (fields drawn
 *   from ordinary values and edge cases: empty strings, nulls, separators, non-ASCII text, lone surrogates,
 *   extreme numbers; SubBefore/SubAfter with several beans; LOCAL and CLOUD access channels), each encoded by
 *   the real TraceDataEncoder.encoderFromContextBean (transData as UTF-8 bytes, transKey in its HashSet order),
 *   groups of them joined into trace message bodies as AsyncTraceDispatcher.flushData joins them (data appended
 *   in order, keys merged into a new HashSet, Message.setKeys(Collection) joins them with a space), and every
 *   body decoded by the real TraceDataEncoder.decoderFromTraceDataString(new String(body, UTF_8)), read back
 *   through the getters; plus hand-written bodies (old and future field counts, unknown types, numbers the
 *   parsers refuse, booleans in other cases). Prints one JSON object.
 *   trace-decode FILE: FILE holds one base64 body per line (an empty line is the empty body); prints, for each,
 *   what the real decoder returns (or the exception it throws).
 * Compiles against both versions: the enums are read through values() (4.9.8 has no Recall, no Order_Msg).
 */
package oracle;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import org.apache.rocketmq.client.AccessChannel;
import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.trace.TraceBean;
import org.apache.rocketmq.client.trace.TraceContext;
import org.apache.rocketmq.client.trace.TraceDataEncoder;
import org.apache.rocketmq.client.trace.TraceTransferBean;
import org.apache.rocketmq.client.trace.TraceType;
import org.apache.rocketmq.common.MQVersion;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageType;

public final class TraceBodies {
    private TraceBodies() {
    }

    static final String[] WORDS = {
        "TopicA", "%RETRY%GID_a", "GID_trace", "DefaultRegion", "tagA", "k1", "order-7", "192.168.0.10:10911",
        "7F0000010B5818B4AAC2", "C0A8000A00002A9F0000000000001234", "\u4e2d\u6587", "\ud83d\ude00", "caf\u00e9",
    };
    static final String[] ODD = {
        "", " ", "null", "k1 k2", " k1", "k1 ", "  ", "a\u0001b", "a\u0002b", "\u0001", "\u0002", "\ud800", "x\udc00y",
        "true", "TRUE", "\u0661\u0662", "-", "+1",
    };

    static String text(Random r) {
        int p = r.nextInt(100);
        if (p < 6) {
            return null;
        }
        if (p < 30) {
            return ODD[r.nextInt(ODD.length)];
        }
        if (p < 40) {
            StringBuilder sb = new StringBuilder();
            int n = r.nextInt(6);
            for (int i = 0; i < n; i++) {
                sb.append(i > 0 ? " " : "").append(WORDS[r.nextInt(WORDS.length)]);
            }
            return sb.toString();
        }
        return WORDS[r.nextInt(WORDS.length)] + (r.nextBoolean() ? "" : Integer.toString(r.nextInt(1000)));
    }

    static long longValue(Random r) {
        long[] edge = {0L, -1L, Long.MAX_VALUE, Long.MIN_VALUE, Integer.MAX_VALUE + 1L, 1700000000000L};
        return r.nextInt(4) == 0 ? edge[r.nextInt(edge.length)] : 1700000000000L + r.nextInt(1_000_000_000);
    }

    static int intValue(Random r) {
        int[] edge = {0, -1, Integer.MAX_VALUE, Integer.MIN_VALUE, 16};
        return r.nextInt(4) == 0 ? edge[r.nextInt(edge.length)] : r.nextInt(5000);
    }

    static TraceBean bean(Random r) {
        TraceBean b = new TraceBean();
        b.setTopic(text(r));
        b.setMsgId(r.nextInt(10) == 0 ? text(r) : String.format("7F00000100002A9F%016X", r.nextLong()));
        b.setOffsetMsgId(text(r));
        b.setTags(text(r));
        b.setKeys(text(r));
        b.setStoreHost(text(r));
        b.setClientHost(text(r));
        b.setStoreTime(longValue(r));
        b.setRetryTimes(intValue(r));
        b.setBodyLength(intValue(r));
        MessageType[] types = MessageType.values();
        b.setMsgType(r.nextInt(30) == 0 ? null : types[r.nextInt(types.length)]);
        LocalTransactionState[] states = LocalTransactionState.values();
        b.setTransactionState(r.nextInt(30) == 0 ? null : states[r.nextInt(states.length)]);
        b.setTransactionId(text(r));
        b.setFromTransactionCheck(r.nextBoolean());
        return b;
    }

    static TraceContext context(Random r) {
        TraceType[] types = TraceType.values();
        TraceContext c = new TraceContext();
        c.setTraceType(types[r.nextInt(types.length)]);
        c.setTimeStamp(longValue(r));
        c.setRegionId(text(r));
        c.setGroupName(text(r));
        c.setCostTime(intValue(r));
        c.setSuccess(r.nextInt(4) != 0);
        c.setRequestId(r.nextInt(5) == 0 ? text(r) : String.format("7F00000100002A9F%016X", r.nextLong()));
        c.setContextCode(r.nextInt(6) == 0 ? intValue(r) : r.nextInt(5));
        c.setAccessChannel(r.nextInt(5) == 0 ? AccessChannel.CLOUD : AccessChannel.LOCAL);
        List<TraceBean> beans = new ArrayList<>();
        String name = c.getTraceType().name();
        int n = name.startsWith("Sub") ? 1 + r.nextInt(3) : 1;
        for (int i = 0; i < n; i++) {
            beans.add(bean(r));
        }
        c.setTraceBeans(beans);
        return c;
    }

    static Map<String, Object> beanMap(TraceBean b) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("topic", b.getTopic());
        m.put("msgId", b.getMsgId());
        m.put("offsetMsgId", b.getOffsetMsgId());
        m.put("tags", b.getTags());
        m.put("keys", b.getKeys());
        m.put("storeHost", b.getStoreHost());
        m.put("clientHost", b.getClientHost());
        m.put("storeTime", b.getStoreTime());
        m.put("retryTimes", b.getRetryTimes());
        m.put("bodyLength", b.getBodyLength());
        m.put("msgType", b.getMsgType() == null ? null : b.getMsgType().name());
        m.put("transactionId", b.getTransactionId());
        m.put("transactionState", b.getTransactionState() == null ? null : b.getTransactionState().name());
        m.put("fromTransactionCheck", b.isFromTransactionCheck());
        return m;
    }

    static Map<String, Object> contextMap(TraceContext c) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("traceType", c.getTraceType() == null ? null : c.getTraceType().name());
        m.put("timeStamp", c.getTimeStamp());
        m.put("regionId", c.getRegionId());
        m.put("groupName", c.getGroupName());
        m.put("costTime", c.getCostTime());
        m.put("success", c.isSuccess());
        m.put("requestId", c.getRequestId());
        m.put("contextCode", c.getContextCode());
        m.put("accessChannel", c.getAccessChannel() == null ? null : c.getAccessChannel().name());
        List<Object> beans = new ArrayList<>();
        if (c.getTraceBeans() != null) {
            for (TraceBean b : c.getTraceBeans()) {
                beans.add(beanMap(b));
            }
        }
        m.put("traceBeans", beans);
        return m;
    }

    static String b64(byte[] data) {
        return Base64.getEncoder().encodeToString(data);
    }

    /** decoderFromTraceDataString(new String(body, UTF_8)) as TraceView reads a trace message's body. */
    static Map<String, Object> decode(byte[] body) {
        Map<String, Object> m = new LinkedHashMap<>();
        long start = System.currentTimeMillis();
        try {
            List<Object> out = new ArrayList<>();
            for (TraceContext c : TraceDataEncoder.decoderFromTraceDataString(new String(body, StandardCharsets.UTF_8))) {
                out.add(contextMap(c));
            }
            m.put("decoded", out);
        } catch (RuntimeException e) {
            m.put("decodeError", e.getClass().getSimpleName());
        }
        m.put("decodeStartMs", start);
        m.put("decodeEndMs", System.currentTimeMillis());
        return m;
    }

    static String version() {
        return MQVersion.getVersionDesc(MQVersion.CURRENT_VERSION);
    }

    public static int run(long seed, int count) {
        Random r = new Random(seed);
        List<Object> cases = new ArrayList<>();
        List<TraceTransferBean> encoded = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            TraceContext c = context(r);
            Map<String, Object> e = new LinkedHashMap<>();
            e.put("context", contextMap(c));
            try {
                TraceTransferBean t = TraceDataEncoder.encoderFromContextBean(c);
                e.put("transData", b64(t.getTransData().getBytes(StandardCharsets.UTF_8)));
                e.put("transKey", new ArrayList<>(t.getTransKey()));
                e.putAll(decode(t.getTransData().getBytes(StandardCharsets.UTF_8)));
                encoded.add(t);
                e.put("encodedIndex", encoded.size() - 1);
            } catch (RuntimeException ex) {
                e.put("encodeError", ex.getClass().getSimpleName());
            }
            cases.add(e);
        }
        // AsyncTraceDispatcher.flushData: one message per group, data appended, keys merged into a new HashSet
        List<Object> messages = new ArrayList<>();
        for (int i = 0; i < encoded.size(); ) {
            int n = Math.min(1 + r.nextInt(5), encoded.size() - i);
            StringBuilder buffer = new StringBuilder();
            Set<String> keySet = new HashSet<String>();
            List<Integer> members = new ArrayList<>();
            for (int k = i; k < i + n; k++) {
                keySet.addAll(encoded.get(k).getTransKey());
                buffer.append(encoded.get(k).getTransData());
                members.add(k);
            }
            Message message = new Message("RMQ_SYS_TRACE_TOPIC", buffer.toString().getBytes(StandardCharsets.UTF_8));
            message.setKeys(keySet);
            Map<String, Object> e = new LinkedHashMap<>();
            e.put("encoded", members);
            e.put("body", b64(message.getBody()));
            e.put("keys", message.getKeys());
            e.putAll(decode(message.getBody()));
            messages.add(e);
            i += n;
        }
        String[] hand = {
            "", "\u0002", "\u0002\u0002", "\u0001\u0002", "Pub", "X\u0001y\u0002",
            "Pub\u00011\u0001r\u0001g\u0001t\u0001m\u0001tg\u0001k\u0001h\u00015\u00016\u00010\u0002",
            "Pub\u00011\u0001r\u0001g\u0001t\u0001m\u0001tg\u0001k\u0001h\u00015\u00016\u00010\u0001TRUE\u0002",
            "Pub\u00011\u0001r\u0001g\u0001t\u0001m\u0001tg\u0001k\u0001h\u00015\u00016\u00010\u0001off\u0001false\u0001client\u0001more\u0002",
            "Pub\u00011\u0001r\u0001g\u0001t\u0001m\u0001tg\u0001k\u0001h\u00015\u00016\u00014\u0001off\u0001true\u0002",
            "Pub\u0001\u0661\u0662\u0001r\u0001g\u0001t\u0001m\u0001tg\u0001k\u0001h\u0001+5\u0001-0\u00010\u0001o\u0001x\u0002",
            "Pub\u000112a\u0001r\u0001g\u0001t\u0001m\u0001tg\u0001k\u0001h\u00015\u00016\u00010\u0002",
            "Pub\u00011\u0001r\u0001g\u0001t\u0001m\u0001tg\u0001k\u0001h\u00012147483648\u00016\u00010\u0002",
            "Pub\u00019223372036854775808\u0001r\u0001g\u0001t\u0001m\u0001tg\u0001k\u0001h\u00015\u00016\u00010\u0002",
            "SubBefore\u00011\u0001r\u0001g\u0001req\u0001m\u00013\u0001k\u0002",
            "SubBefore\u00011\u0001r\u0001g\u0001req\u0001m\u00013\u0001\u0002",
            "SubAfter\u0001req\u0001m\u00015\u0001yes\u0001k\u0002",
            "SubAfter\u0001req\u0001m\u00015\u0001true\u0001k\u00012\u0002",
            "SubAfter\u0001req\u0001m\u00015\u0001true\u0001k\u00012\u000199\u0002",
            "SubAfter\u0001req\u0001m\u00015\u0001true\u0001k\u00012\u000199\u0001G\u0001extra\u0002",
            "SubAfter\u0001req\u0001m\u00015\u0001true\u0001k\u00012\u0001SubAfter\u0001req\u0001m\u00015\u0001true\u0001k\u00012\u0001",
            "EndTransaction\u00011\u0001r\u0001g\u0001t\u0001m\u0001tg\u0001k\u0001h\u00012\u0001tx\u0001COMMIT_MESSAGE\u0001false\u0002",
            "EndTransaction\u00011\u0001r\u0001g\u0001t\u0001m\u0001tg\u0001k\u0001h\u00012\u0001tx\u0001commit_message\u0001false\u0002",
            "Recall\u00011\u0001r\u0001g\u0001t\u0001m\u0001true\u0002",
            "Recall\u00011\u0001r\u0001g\u0001t\u0001m\u0002",
            "\u0002Pub\u00011\u0001r\u0001g\u0001t\u0001m\u0001tg\u0001k\u0001h\u00015\u00016\u00010\u0002pub\u0001x\u0002",
        };
        List<Object> bodies = new ArrayList<>();
        for (String h : hand) {
            Map<String, Object> e = new LinkedHashMap<>();
            e.put("body", b64(h.getBytes(StandardCharsets.UTF_8)));
            e.putAll(decode(h.getBytes(StandardCharsets.UTF_8)));
            bodies.add(e);
        }
        byte[][] raw = {
            {(byte) 0xff, 0x02, 'P', 'u', 'b'},
            {'R', 'e', 'c', 'a', 'l', 'l', 1, '1', 1, (byte) 0xe4, (byte) 0xb8, 1, 'g', 1, 't', 1, 'm', 1, 't', 2},
        };
        for (byte[] b : raw) {
            Map<String, Object> e = new LinkedHashMap<>();
            e.put("body", b64(b));
            e.putAll(decode(b));
            bodies.add(e);
        }
        Map<String, Object> defaults = new LinkedHashMap<>();
        defaults.put("context", contextMap(new TraceContext()));
        defaults.put("bean", beanMap(new TraceBean()));
        Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("rocketmq", version());
        doc.put("seed", seed);
        List<String> traceTypes = new ArrayList<>();
        for (TraceType t : TraceType.values()) {
            traceTypes.add(t.name());
        }
        List<String> messageTypes = new ArrayList<>();
        for (MessageType t : MessageType.values()) {
            messageTypes.add(t.name());
        }
        doc.put("traceTypes", traceTypes);
        doc.put("messageTypes", messageTypes);
        doc.put("defaults", defaults);
        doc.put("cases", cases);
        doc.put("messages", messages);
        doc.put("bodies", bodies);
        System.out.print(Json.write(doc));
        return 0;
    }

    public static int decodeFile(String file) throws Exception {
        List<Object> out = new ArrayList<>();
        for (String line : Files.readAllLines(Path.of(file), StandardCharsets.US_ASCII)) {
            out.add(decode(Base64.getDecoder().decode(line.trim())));  // an empty line: the empty body
        }
        Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("rocketmq", version());
        doc.put("results", out);
        System.out.print(Json.write(doc));
        return 0;
    }
}
