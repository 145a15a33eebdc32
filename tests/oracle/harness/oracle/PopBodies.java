/*
 * `pop-bodies [SEED [COUNT]]` on 5.3.3: the revive topic's message bodies as the real classes write and read
 * them. For COUNT seeded PopCheckPoint, AckMsg and BatchAckMsg objects (filled through their setters and
 * `addDiff`, as PopMessageProcessor, AckMessageProcessor and PopBufferMergeService fill them), prints one
 * JSON object: each object's body as the broker stores it (`JSON.toJSONString(obj)` in UTF-8, the calls in
 * PopMessageProcessor.buildCkMsg, AckMessageProcessor and PopBufferMergeService) and the fields the real
 * classes give back after `JSON.parseObject(body, Class)` (PopReviveService's decode), through their getters.
 * Also parses a few hand-written bodies (the long alternate names AckMsg accepts, a checkpoint without `d`,
 * unknown keys) and reports what the real parser makes of them.
 */
package oracle;

import com.alibaba.fastjson.JSON;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.apache.rocketmq.store.pop.AckMsg;
import org.apache.rocketmq.store.pop.BatchAckMsg;
import org.apache.rocketmq.store.pop.PopCheckPoint;

public final class PopBodies {
    private PopBodies() {
    }

    private static final String[] TOPICS = {"TopicA", "%RETRY%GroupB_TopicA", "%RETRY%GroupB+TopicA", "t\u00e9st-\u4e2d"};
    private static final String[] GROUPS = {"GroupA", "GroupB", "CID_\"quoted\"\\"};

    public static int run(long seed, int count) {
        Random r = new Random(seed);
        List<Object> out = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            out.add(entry("ck", checkpoint(r, i)));
            out.add(entry("ack", fill(r, new AckMsg())));
            BatchAckMsg b = (BatchAckMsg) fill(r, new BatchAckMsg());
            int n = r.nextInt(5);
            for (int k = 0; k < n; k++) {
                b.getAckOffsetList().add(b.getStartOffset() + r.nextInt(64));
            }
            out.add(entry("bAck", b));
        }
        String[][] handWritten = {
            {"ck", "{\"so\":5,\"pt\":1,\"it\":2,\"bm\":3,\"n\":4,\"q\":1,\"t\":\"T\",\"c\":\"G\",\"ro\":9}"},
            {"ck", "{\"c\":\"G\",\"t\":\"T\",\"so\":5,\"n\":2,\"d\":[0,3],\"extra\":\"x\",\"bn\":null}"},
            {"ack", "{\"ackOffset\":7,\"startOffset\":5,\"consumerGroup\":\"G\",\"topic\":\"T\",\"queueId\":2,\"popTime\":11}"},
            {"bAck", "{\"ackOffsetList\":[5,6],\"so\":5,\"c\":\"G\",\"t\":\"T\",\"q\":0,\"pt\":3,\"bn\":\"b\"}"},
        };
        for (String[] h : handWritten) {
            Map<String, Object> e = new LinkedHashMap<>();
            e.put("kind", h[0]);
            e.put("body", h[1]);
            e.put("parsed", parsed(h[0], h[1]));
            out.add(e);
        }
        Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("rocketmq", "5.3.3");
        doc.put("seed", seed);
        doc.put("bodies", out);
        System.out.println(Json.write(doc));
        return 0;
    }

    private static PopCheckPoint checkpoint(Random r, int i) {
        PopCheckPoint ck = new PopCheckPoint();
        ck.setStartOffset(r.nextInt(4) == 0 ? r.nextLong() & Long.MAX_VALUE : r.nextInt(100000));
        ck.setPopTime(1795600000000L + r.nextInt(100000000));
        ck.setInvisibleTime(r.nextInt(3) == 0 ? 60000 : r.nextInt(3600000));
        ck.setBitMap(r.nextInt());
        byte num = (byte) (1 + r.nextInt(32));
        ck.setNum(num);
        ck.setQueueId(r.nextInt(16));
        ck.setTopic(TOPICS[r.nextInt(TOPICS.length)]);
        ck.setCId(GROUPS[r.nextInt(GROUPS.length)]);
        ck.setReviveOffset(r.nextInt(1000000));
        if (i % 4 != 0) {  // a checkpoint of the old version has no diffs
            int off = 0;
            for (int k = 0; k < num; k++) {
                ck.addDiff(off);
                off += 1 + r.nextInt(3);
            }
        }
        if (r.nextBoolean()) {
            ck.setBrokerName("broker-" + r.nextInt(3));
        }
        if (r.nextInt(3) == 0) {
            ck.setRePutTimes(String.valueOf(r.nextInt(4)));
        }
        return ck;
    }

    private static AckMsg fill(Random r, AckMsg a) {
        a.setAckOffset(r.nextInt(100000));
        a.setStartOffset(r.nextInt(100000));
        a.setConsumerGroup(GROUPS[r.nextInt(GROUPS.length)]);
        a.setTopic(TOPICS[r.nextInt(TOPICS.length)]);
        a.setQueueId(r.nextInt(16));
        a.setPopTime(1795600000000L + r.nextInt(100000000));
        if (r.nextBoolean()) {
            a.setBrokerName("broker-" + r.nextInt(3));
        }
        return a;
    }

    private static Map<String, Object> entry(String kind, Object obj) {
        String body = new String(JSON.toJSONString(obj).getBytes(StandardCharsets.UTF_8), StandardCharsets.UTF_8);
        Map<String, Object> e = new LinkedHashMap<>();
        e.put("kind", kind);
        e.put("body", body);
        e.put("parsed", parsed(kind, body));
        return e;
    }

    private static Map<String, Object> parsed(String kind, String body) {
        Map<String, Object> m = new LinkedHashMap<>();
        if (kind.equals("ck")) {
            PopCheckPoint ck = JSON.parseObject(body, PopCheckPoint.class);
            m.put("startOffset", ck.getStartOffset());
            m.put("popTime", ck.getPopTime());
            m.put("invisibleTime", ck.getInvisibleTime());
            m.put("reviveTime", ck.getReviveTime());
            m.put("bitMap", ck.getBitMap());
            m.put("num", (int) ck.getNum());
            m.put("queueId", ck.getQueueId());
            m.put("topic", ck.getTopic());
            m.put("cid", ck.getCId());
            m.put("reviveOffset", ck.getReviveOffset());
            m.put("queueOffsetDiff", ck.getQueueOffsetDiff());
            m.put("brokerName", ck.getBrokerName());
            m.put("rePutTimes", ck.getRePutTimes());
            m.put("parseRePutTimes", ck.parseRePutTimes());
            List<Object> offsets = new ArrayList<>();
            for (byte k = 0; k < ck.getNum(); k++) {
                offsets.add(ck.ackOffsetByIndex(k));
            }
            m.put("ackOffsets", offsets);
        } else {
            AckMsg a = JSON.parseObject(body, kind.equals("ack") ? AckMsg.class : BatchAckMsg.class);
            m.put("ackOffset", a.getAckOffset());
            m.put("startOffset", a.getStartOffset());
            m.put("consumerGroup", a.getConsumerGroup());
            m.put("topic", a.getTopic());
            m.put("queueId", a.getQueueId());
            m.put("popTime", a.getPopTime());
            m.put("brokerName", a.getBrokerName());
            if (a instanceof BatchAckMsg) {
                m.put("ackOffsetList", ((BatchAckMsg) a).getAckOffsetList());
            }
        }
        return m;
    }
}
