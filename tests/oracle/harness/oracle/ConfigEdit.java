/*
 * `config-edit SPEC` (5.3.3 and 4.9.8): topic and group edits made by the real TopicConfigManager,
 * SubscriptionGroupManager and ConsumerOffsetManager, as the broker's AdminBrokerProcessor makes them for
 * mqadmin updateTopic / deleteTopic / updateSubGroup / deleteSubGroup, on a copy of a store's config/
 * directory. SPEC is a JSON array of cases {"name", "store", "ops": [...]}; each case starts from a fresh copy
 * of STORE/config and runs its ops in order:
 *   {"op": "topic-update", "topic", "readQueueNums", "writeQueueNums", "perm", "order", "topicFilterType",
 *    "topicSysFlag", "attributes": "+k=v,-k" or null}: the TopicConfig the request header makes
 *    (AdminBrokerProcessor.java:566-574 of 5.3.3), the idempotence check (line 587, 5.x only), then
 *    TopicConfigManager.updateTopicConfig (which persists topics.json);
 *   {"op": "topic-delete", "topic"}: 5.x AdminBrokerProcessor.deleteTopic's topics to clean (the topic, and
 *    with clearRetryTopicWhenDeleteTopic the POP retry topics of ConsumerOffsetManager.whichGroupByTopic's
 *    groups that exist, KeyBuilder), and for each deleteTopicConfig + cleanOffsetByTopic (then, when rows went,
 *    the offsets are persisted, as the broker's next flush does); 4.9.8: deleteTopicConfig only. The consume queue
 *    files deleteTopics / cleanUnusedTopic remove are not judged here (`make oracle-check` loads the store);
 *   {"op": "group-update", "body": SubscriptionGroupConfig JSON}: the body decoded as the broker decodes it
 *    (RemotingSerializable.decode), SubscriptionGroupManager.updateSubscriptionGroupConfig;
 *   {"op": "group-delete", "group", "cleanOffset"}: deleteSubscriptionGroupConfig, and removeOffset + persist
 *    when cleanOffset (and rows went).
 * The managers' constructors add the broker's built-in topics and groups for a BrokerConfig with brokerName
 * broker-a, as the fixture stores' brokers had (and, 5.x, the timer topic when the case says timerWheelEnable,
 * as the store's broker had it).
 * Prints {case name: {file name: text}} for topics.json, subscriptionGroup.json and consumerOffset.json.
 * Version differences (5.x-only methods: attributes, KeyBuilder, cleanOffsetByTopic) are reached by
 * reflection so that the one source compiles against both releases.
 */
package oracle;

import com.alibaba.fastjson.JSON;
import com.alibaba.fastjson.JSONArray;
import com.alibaba.fastjson.JSONObject;
import java.io.File;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.rocketmq.broker.BrokerController;
import org.apache.rocketmq.broker.offset.ConsumerOffsetManager;
import org.apache.rocketmq.broker.subscription.SubscriptionGroupManager;
import org.apache.rocketmq.broker.topic.TopicConfigManager;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.TopicFilterType;
import org.apache.rocketmq.remoting.protocol.RemotingSerializable;
import org.apache.rocketmq.store.config.MessageStoreConfig;

public final class ConfigEdit {
    static final String[] FILES = {"topics.json", "subscriptionGroup.json", "consumerOffset.json"};

    private ConfigEdit() {
    }

    public static int run(String specFile) throws Exception {
        JSONArray cases = JSON.parseArray(new String(Files.readAllBytes(Path.of(specFile)), StandardCharsets.UTF_8));
        Map<String, Object> out = new LinkedHashMap<>();
        java.io.PrintStream stdout = System.out;
        System.setOut(System.err);
        try {
            for (int i = 0; i < cases.size(); i++) {
                JSONObject c = cases.getJSONObject(i);
                out.put(c.getString("name"), runCase(c));
            }
        } finally {
            System.setOut(stdout);
        }
        System.out.print(Json.write(out));
        System.out.flush();
        return 0;
    }

    static Map<String, Object> runCase(JSONObject c) throws Exception {
        Path tmp = Files.createTempDirectory("mqtool-oracle-config-edit");
        try {
            Path root = tmp.resolve("store");
            Judge.copy(Path.of(c.getString("store"), "config"), root.resolve("config"));
            BrokerConfig bc = new BrokerConfig();
            bc.setBrokerName(Stores.BROKER_NAME);
            MessageStoreConfig msc = new MessageStoreConfig();
            msc.setStorePathRootDir(root.toString());
            if (c.containsKey("timerWheelEnable")) {  // 5.x: the timer topic is a built-in topic only with it
                MessageStoreConfig.class.getMethod("setTimerWheelEnable", boolean.class)
                    .invoke(msc, c.getBooleanValue("timerWheelEnable"));
            }
            BrokerController b = new BrokerController(bc, msc, null);
            TopicConfigManager topics = new TopicConfigManager(b);
            b.topicConfigManager = topics;
            SubscriptionGroupManager groups = new SubscriptionGroupManager(b);
            ConsumerOffsetManager offsets = new ConsumerOffsetManager(b);
            b.consumerOffsetManager = offsets;
            if (!topics.load() || !groups.load() || !offsets.load()) {
                throw new IllegalStateException("a config file did not load: " + root);
            }
            JSONArray ops = c.getJSONArray("ops");
            for (int i = 0; i < ops.size(); i++) {
                apply(ops.getJSONObject(i), topics, groups, offsets);
            }
            Map<String, Object> files = new LinkedHashMap<>();
            for (String name : FILES) {
                File f = root.resolve("config").resolve(name).toFile();
                if (f.isFile()) {
                    files.put(name, new String(Files.readAllBytes(f.toPath()), StandardCharsets.UTF_8));
                }
            }
            return files;
        } finally {
            Judge.delete(tmp);
        }
    }

    static boolean v5() {
        try {
            TopicConfig.class.getMethod("setAttributes", Map.class);
            return true;
        } catch (NoSuchMethodException e) {
            return false;
        }
    }

    static void apply(JSONObject op, TopicConfigManager topics, SubscriptionGroupManager groups,
        ConsumerOffsetManager offsets) throws Exception {
        switch (op.getString("op")) {
            case "topic-update": {
                String topic = op.getString("topic");
                TopicConfig tc = new TopicConfig(topic);
                tc.setReadQueueNums(op.getIntValue("readQueueNums"));
                tc.setWriteQueueNums(op.getIntValue("writeQueueNums"));
                tc.setTopicFilterType(TopicFilterType.valueOf(op.getString("topicFilterType")));
                tc.setPerm(op.getIntValue("perm"));
                tc.setTopicSysFlag(op.getIntValue("topicSysFlag"));
                tc.setOrder(op.getBooleanValue("order"));
                if (v5()) {
                    Class<?> parser = Class.forName("org.apache.rocketmq.common.attribute.AttributeParser");
                    Object attributes = parser.getMethod("parseToMap", String.class).invoke(null,
                        op.getString("attributes"));
                    TopicConfig.class.getMethod("setAttributes", Map.class).invoke(tc, attributes);
                    if (tc.equals(topics.getTopicConfigTable().get(topic))) {
                        break;
                    }
                }
                topics.updateTopicConfig(tc);
                break;
            }
            case "topic-delete": {
                String topic = op.getString("topic");
                List<String> clean = new ArrayList<>();
                clean.add(topic);
                if (v5()) {
                    Class<?> kb = Class.forName("org.apache.rocketmq.common.KeyBuilder");
                    Method v2 = kb.getMethod("buildPopRetryTopic", String.class, String.class, boolean.class);
                    Method v1 = kb.getMethod("buildPopRetryTopicV1", String.class, String.class);
                    Set<String> owners = offsets.whichGroupByTopic(topic);
                    for (String group : owners) {
                        String retry2 = (String) v2.invoke(null, topic, group, true);
                        if (topics.selectTopicConfig(retry2) != null) {
                            clean.add(retry2);
                        }
                        String retry1 = (String) v1.invoke(null, topic, group);
                        if (topics.selectTopicConfig(retry1) != null) {
                            clean.add(retry1);
                        }
                    }
                    Method cleanOffsets = ConsumerOffsetManager.class.getMethod("cleanOffsetByTopic", String.class);
                    int before = offsets.getOffsetTable().size();
                    for (String t : clean) {
                        topics.deleteTopicConfig(t);
                        cleanOffsets.invoke(offsets, t);
                    }
                    if (offsets.getOffsetTable().size() != before) {
                        offsets.persist();
                    }
                } else {
                    topics.deleteTopicConfig(topic);
                }
                break;
            }
            case "group-update": {
                Method update = null;
                for (Method m : SubscriptionGroupManager.class.getMethods()) {
                    if (m.getName().equals("updateSubscriptionGroupConfig")) {
                        update = m;
                    }
                }
                Object config = RemotingSerializable.fromJson(op.getString("body"), update.getParameterTypes()[0]);
                update.invoke(groups, config);
                break;
            }
            case "group-delete": {
                String group = op.getString("group");
                groups.deleteSubscriptionGroupConfig(group);
                if (op.getBooleanValue("cleanOffset")) {
                    int before = offsets.getOffsetTable().size();
                    offsets.removeOffset(group);
                    if (offsets.getOffsetTable().size() != before) {
                        offsets.persist();
                    }
                }
                break;
            }
            default:
                throw new IllegalArgumentException("unknown op " + op.getString("op"));
        }
    }
}
