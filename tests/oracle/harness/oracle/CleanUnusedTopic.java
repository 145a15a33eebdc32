/*
 * `clean-unused-topic STORE [HASH_SLOTS INDEX_NUM]` on 5.3.3: what `mqadmin cleanUnusedTopic` does to a
 * store, on a temporary copy. The topic config is loaded through the real TopicConfigManager (its
 * constructor adds the broker's built-in topics and registers them as system topics, as a broker's start
 * does), the store is loaded as a broker loads it, and AdminBrokerProcessor.cleanUnusedTopic's one call runs:
 * DefaultMessageStore.cleanUnusedTopic(topicConfigTable.keySet()) (5.3.3 AdminBrokerProcessor.java:2294-2299,
 * DefaultMessageStore.java:1440-1452). Prints one JSON object: `topicsLoaded`, `loaded`, `deleted` (the
 * topics it deleted, as it counts them), and `consumeQueues` {TOPIC: [QUEUE_ID, ...]}: the queue directories
 * left under consumequeue/ after a clean shutdown. check.py's caller compares that with what
 * `mqtool rebuild cq --prune-orphans --execute` leaves.
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
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.store.config.MessageStoreConfig;
import org.apache.rocketmq.store.stats.BrokerStatsManager;

public final class CleanUnusedTopic {
    private CleanUnusedTopic() {
    }

    public static int run(String storeArg, String[] extra) throws Exception {
        return Judge.onCopy(storeArg, (root, shown) -> clean(root, shown, extra));
    }

    static Map<String, Object> clean(String root, String shown, String[] extra) throws Exception {
        Geometry g = Geometry.of(root, extra);
        g.timer = false;  // the timer store plays no part in which queues are deleted
        BrokerConfig bc = new BrokerConfig();
        bc.setBrokerName(Stores.BROKER_NAME);
        MessageStoreConfig msc = Stores.config(root, g);
        BrokerController b = new BrokerController(bc, msc, null);
        b.topicConfigManager = new TopicConfigManager(b);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("store", shown);
        out.put("topicsLoaded", b.topicConfigManager.load());
        Stores s = Stores.open(msc, g, b.topicConfigManager.getTopicConfigTable(), bc,
            new BrokerStatsManager("DefaultCluster", true));
        out.put("loaded", s.loaded);
        out.put("deleted", s.store.cleanUnusedTopic(b.topicConfigManager.getTopicConfigTable().keySet()));
        s.shutdown();
        Map<String, Object> queues = new TreeMap<>();
        File[] topics = new File(root, "consumequeue").listFiles();
        for (File t : topics == null ? new File[0] : topics) {
            List<Integer> ids = new ArrayList<>();
            File[] dirs = t.listFiles();
            for (File q : dirs == null ? new File[0] : dirs) {
                ids.add(Integer.parseInt(q.getName()));
            }
            ids.sort(null);
            queues.put(t.getName(), ids);
        }
        out.put("consumeQueues", queues);
        out.put("clean", s.loaded);
        return out;
    }
}
