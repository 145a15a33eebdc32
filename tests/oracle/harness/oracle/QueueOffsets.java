/*
 * `queue-offsets STORE SLOTS NUM SPEC...` on 5.3.3: what the real store answers for the offsets of queues, on a
 * temporary copy. SPEC is `TOPIC/QUEUE_ID` (a queue to answer for) or `@TIMESTAMP` (a time to search for in
 * each of them). The store is opened as a broker opens it: topics.json through the real TopicConfigManager
 * (so a BatchCQ topic's queues are BatchConsumeQueues, ConsumeQueueStore.findOrCreateConsumeQueue), the
 * BatchCQ file size from the files, LMQ on when the store has LMQ queues; `load` only (recovery and
 * correctMinOffset run there; nothing is started, so no clean service runs). Prints one JSON object:
 * `loaded`, `queues` {"TOPIC/QUEUE_ID": {type, minOffset, maxOffset, byTime {TIMESTAMP: [LOWER, UPPER]}}}
 * with DefaultMessageStore.getMinOffsetInQueue, getMaxOffsetInQueue and
 * getOffsetInQueueByTime(topic, queueId, timestamp, BoundaryType), and `config` as `load` prints it (the
 * consumer offsets the real ConsumerOffsetManager / LmqConsumerOffsetManager loads). check.py judges each
 * offset `mqtool offsets reset --execute` wrote against these answers.
 */
package oracle;

import java.io.File;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.rocketmq.broker.BrokerController;
import org.apache.rocketmq.broker.topic.TopicConfigManager;
import org.apache.rocketmq.common.BoundaryType;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.config.MessageStoreConfig;
import org.apache.rocketmq.store.stats.BrokerStatsManager;

public final class QueueOffsets {
    private QueueOffsets() {
    }

    public static int run(String storeArg, String[] extra) throws Exception {
        return Judge.onCopy(storeArg, (root, shown) -> answers(root, shown, extra));
    }

    static Map<String, Object> answers(String root, String shown, String[] extra) throws Exception {
        Geometry g = Geometry.of(root, extra);
        g.timer = false;  // the timer store plays no part in a queue's offsets
        List<String> queues = new ArrayList<>();
        List<Long> times = new ArrayList<>();
        for (int i = 2; i < extra.length; i++) {
            if (extra[i].startsWith("@")) {
                times.add(Long.parseLong(extra[i].substring(1)));
            } else {
                queues.add(extra[i]);
            }
        }
        BrokerConfig bc = new BrokerConfig();
        bc.setBrokerName(Stores.BROKER_NAME);
        MessageStoreConfig msc = Stores.config(root, g);
        File[] topicDirs = new File(root, "batchconsumequeue").listFiles();
        for (File t : topicDirs == null ? new File[0] : topicDirs) {
            File[] queueDirs = t.listFiles();
            for (File q : queueDirs == null ? new File[0] : queueDirs) {
                File[] files = q.listFiles();
                if (files != null && files.length > 0) {
                    msc.setMapperFileSizeBatchConsumeQueue((int) files[0].length());
                }
            }
        }
        BrokerController b = new BrokerController(bc, msc, null);
        b.topicConfigManager = new TopicConfigManager(b);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("store", shown);
        out.put("topicsLoaded", b.topicConfigManager.load());
        Stores s = Stores.open(msc, g, b.topicConfigManager.getTopicConfigTable(), bc,
            new BrokerStatsManager("DefaultCluster", true));
        out.put("loaded", s.loaded);
        DefaultMessageStore store = s.store;
        Map<String, Object> answers = new TreeMap<>();
        for (String spec : queues) {
            int slash = spec.lastIndexOf('/');
            String topic = spec.substring(0, slash);
            int queueId = Integer.parseInt(spec.substring(slash + 1));
            Map<String, Object> q = new LinkedHashMap<>();
            q.put("type", store.findConsumeQueue(topic, queueId).getCQType().name());
            q.put("minOffset", store.getMinOffsetInQueue(topic, queueId));
            q.put("maxOffset", store.getMaxOffsetInQueue(topic, queueId));
            Map<String, Object> byTime = new TreeMap<>();
            for (long t : times) {
                byTime.put(String.valueOf(t), List.of(
                    store.getOffsetInQueueByTime(topic, queueId, t, BoundaryType.LOWER),
                    store.getOffsetInQueueByTime(topic, queueId, t, BoundaryType.UPPER)));
            }
            q.put("byTime[lower,upper]", byTime);
            answers.put(spec, q);
        }
        out.put("queues", answers);
        out.put("config", Load.configs(root, s));
        s.shutdown();
        out.put("clean", s.loaded);
        return out;
    }
}
