/*
 * `queue-offsets STORE SLOTS NUM SPEC...` on 4.9.8: the 5.3.3 command's answers (harness/oracle/QueueOffsets)
 * from the real 4.9.8 store, on a temporary copy (file times kept: 4.9's search by time picks the
 * ConsumeQueue file by its modification time). 4.9 has no BatchCQ and no boundary: `byTime` holds
 * DefaultMessageStore.getOffsetInQueueByTime(topic, queueId, timestamp) twice, as [LOWER, UPPER] would be.
 */
package oracle;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.rocketmq.store.DefaultMessageStore;

public final class QueueOffsets {
    private QueueOffsets() {
    }

    public static int run(String storeArg, String[] extra) throws Exception {
        return Judge.onCopy(storeArg, (root, shown) -> answers(root, shown, extra));
    }

    static Map<String, Object> answers(String root, String shown, String[] extra) throws Exception {
        List<String> queues = new ArrayList<>();
        List<Long> times = new ArrayList<>();
        for (int i = 2; i < extra.length; i++) {
            if (extra[i].startsWith("@")) {
                times.add(Long.parseLong(extra[i].substring(1)));
            } else {
                queues.add(extra[i]);
            }
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("store", shown);
        out.put("rocketmq", "4.9.8");
        Stores s = Stores.open(root, Geometry.of(root, extra));
        out.put("loaded", s.loaded);
        DefaultMessageStore store = s.store;
        Map<String, Object> answers = new TreeMap<>();
        for (String spec : queues) {
            int slash = spec.lastIndexOf('/');
            String topic = spec.substring(0, slash);
            int queueId = Integer.parseInt(spec.substring(slash + 1));
            Map<String, Object> q = new LinkedHashMap<>();
            q.put("type", "SimpleCQ");
            q.put("minOffset", store.getMinOffsetInQueue(topic, queueId));
            q.put("maxOffset", store.getMaxOffsetInQueue(topic, queueId));
            Map<String, Object> byTime = new TreeMap<>();
            for (long t : times) {
                long found = store.getOffsetInQueueByTime(topic, queueId, t);
                byTime.put(String.valueOf(t), List.of(found, found));
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
