/*
 * subscriptions STORE: the two traces of consumer subscriptions a store keeps, written into STORE/config by the
 * real managers, and what the real classes read back and decide (one JSON object on stdout):
 *   - SubscriptionGroupManager loads STORE's subscriptionGroup.json, gives groupA a subscriptionDataSet
 *     (SimpleSubscriptionData: TopicTest "tag0 || tag1", OrderTopic "*") and adds GID_TAGS (TopicTest
 *     " tag2||Aa ||"), through updateSubscriptionGroupConfig, which persists the file (and its .bak);
 *   - ConsumerFilterManager registers groupB's SQL92 filter on TopicTest (as the broker does at a heartbeat,
 *     DefaultConsumerIdsChangeListener) and persists consumerFilter.json.
 * Printed: what a second pair of managers loads from those files ("groups": group -> its subscriptionDataSet;
 * "filters": topic -> group -> expression, type, isDead), and for each probe (expression, TAGS) the tag set
 * and code set of the real FilterAPI.buildSubscriptionData, the broker's verdict on the tagsCode the store
 * keeps for those TAGS (MessageExtBrokerInner.tagsString2tagsCode; ExpressionMessageFilter and
 * DefaultMessageFilter.isMatchedByConsumeQueue) and the client's (PullAPIWrapper.processPullResult keeps a
 * message when the tag set is empty or holds its TAGS: PullAPIWrapper.java:113-121, restated here since it
 * needs a client instance to run).
 */
package oracle;

import java.io.File;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.rocketmq.broker.BrokerController;
import org.apache.rocketmq.broker.filter.ConsumerFilterData;
import org.apache.rocketmq.broker.filter.ConsumerFilterManager;
import org.apache.rocketmq.broker.filter.ExpressionMessageFilter;
import org.apache.rocketmq.broker.subscription.SubscriptionGroupManager;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.filter.ExpressionType;
import org.apache.rocketmq.common.message.MessageExtBrokerInner;
import org.apache.rocketmq.remoting.protocol.filter.FilterAPI;
import org.apache.rocketmq.remoting.protocol.heartbeat.SubscriptionData;
import org.apache.rocketmq.remoting.protocol.subscription.SimpleSubscriptionData;
import org.apache.rocketmq.remoting.protocol.subscription.SubscriptionGroupConfig;
import org.apache.rocketmq.store.DefaultMessageFilter;
import org.apache.rocketmq.store.config.MessageStoreConfig;

public final class Subscriptions {
    static final String SQL = "a > 5 AND b = 'x'";
    static final String[] EXPRESSIONS = {"tag0 || tag1", "*", "", " tag2||Aa ||", "||", " ||", "||tag1", "TagA || *",
        "tagX||tagY"};
    // TAGS of store-a's messages, none, and two that only share a hash code with a subscribed one ("Aa"/"BB")
    static final String[] TAGS = {"tag0", "tag1", "tag2", "tag3", "TagA", "BB", "Aa", "tagX||tagY", "tagX", "*", null};

    private Subscriptions() {
    }

    public static int run(String root) throws Exception {
        if (!new File(root, "config/subscriptionGroup.json").isFile()) {
            throw new IllegalStateException(root + " has no config/subscriptionGroup.json: run it on a store copy");
        }
        BrokerController b = broker(root);
        SubscriptionGroupManager groups = new SubscriptionGroupManager(b);
        ConsumerFilterManager filters = new ConsumerFilterManager(b);
        if (!groups.load() || !filters.load()) {
            throw new IllegalStateException("the managers did not load " + root);
        }
        SubscriptionGroupConfig a = groups.getSubscriptionGroupTable().get("groupA");
        a.setSubscriptionDataSet(new LinkedHashSet<>(Arrays.asList(
            new SimpleSubscriptionData("TopicTest", ExpressionType.TAG, "tag0 || tag1", 1L),
            new SimpleSubscriptionData("OrderTopic", ExpressionType.TAG, "*", 1L))));
        groups.updateSubscriptionGroupConfig(a);
        SubscriptionGroupConfig tags = new SubscriptionGroupConfig();
        tags.setGroupName("GID_TAGS");
        tags.setSubscriptionDataSet(new LinkedHashSet<>(Arrays.asList(
            new SimpleSubscriptionData("TopicTest", ExpressionType.TAG, " tag2||Aa ||", 2L))));
        groups.updateSubscriptionGroupConfig(tags);
        if (!filters.register("TopicTest", "groupB", SQL, ExpressionType.SQL92, 1L)) {
            throw new IllegalStateException("ConsumerFilterManager did not register the SQL92 filter");
        }
        filters.persist();

        BrokerController reread = broker(root);
        SubscriptionGroupManager groupsBack = new SubscriptionGroupManager(reread);
        ConsumerFilterManager filtersBack = new ConsumerFilterManager(reread);
        if (!groupsBack.load() || !filtersBack.load()) {
            throw new IllegalStateException("the managers did not load what they wrote");
        }
        Map<String, Object> out = new LinkedHashMap<>();
        Map<String, Object> groupsOut = new TreeMap<>();
        for (Map.Entry<String, SubscriptionGroupConfig> e : groupsBack.getSubscriptionGroupTable().entrySet()) {
            List<Object> set = new ArrayList<>();
            if (e.getValue().getSubscriptionDataSet() != null) {
                for (SimpleSubscriptionData s : e.getValue().getSubscriptionDataSet()) {
                    Map<String, Object> m = new LinkedHashMap<>();
                    m.put("topic", s.getTopic());
                    m.put("expressionType", s.getExpressionType());
                    m.put("expression", s.getExpression());
                    set.add(m);
                }
            }
            groupsOut.put(e.getKey(), set);
        }
        out.put("groups", groupsOut);
        Map<String, Object> filtersOut = new TreeMap<>();
        for (String topic : new TreeSet<>(filtersBack.getFilterDataByTopic().keySet())) {
            Map<String, Object> byGroup = new TreeMap<>();
            for (ConsumerFilterData d : filtersBack.getFilterDataByTopic().get(topic).getGroupFilterData().values()) {
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("expression", d.getExpression());
                m.put("expressionType", d.getExpressionType());
                m.put("isDead", d.isDead());
                byGroup.put(d.getConsumerGroup(), m);
            }
            filtersOut.put(topic, byGroup);
        }
        out.put("filters", filtersOut);
        List<Object> probes = new ArrayList<>();
        for (String expression : EXPRESSIONS) {
            SubscriptionData sub;
            try {
                sub = FilterAPI.buildSubscriptionData("TopicTest", expression);
            } catch (Exception e) {  // the client's subscribe() refuses it: no consumer can hold it
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("expression", expression);
                m.put("error", e.getMessage());
                probes.add(m);
                continue;
            }
            ExpressionMessageFilter broker = new ExpressionMessageFilter(sub, null, filtersBack);
            DefaultMessageFilter store = new DefaultMessageFilter(sub);
            for (String tag : TAGS) {
                long tagsCode = MessageExtBrokerInner.tagsString2tagsCode(tag);
                boolean brokerPasses = broker.isMatchedByConsumeQueue(tagsCode, null);
                if (brokerPasses != store.isMatchedByConsumeQueue(tagsCode, null)) {
                    throw new IllegalStateException("the two broker filters disagree on " + expression + " / " + tag);
                }
                boolean clientPasses = sub.getTagsSet().isEmpty() || tag != null && sub.getTagsSet().contains(tag);
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("expression", expression);
                m.put("tags", tag);
                m.put("tagsSet", new ArrayList<>(new TreeSet<>(sub.getTagsSet())));
                m.put("subString", sub.getSubString());
                m.put("tagsCode", tagsCode);
                m.put("brokerPasses", brokerPasses);
                m.put("clientPasses", clientPasses);
                m.put("delivered", brokerPasses && clientPasses);
                probes.add(m);
            }
        }
        out.put("probes", probes);
        System.out.print(Json.write(out));
        return 0;
    }

    private static BrokerController broker(String root) {
        MessageStoreConfig msc = new MessageStoreConfig();
        msc.setStorePathRootDir(root);
        return new BrokerController(new BrokerConfig(), msc, null);
    }
}
