/*
 * `timer-states DIR [SEED]`: a 5.x timer store where the real TimerMessageStore leaves a message in each
 * state mqtool tells apart. A 6-slot roll window (timerRollWindowSlot=6, precision 1000 ms) makes the
 * roll path run in seconds instead of days. Timer messages (all to TimerTopic):
 *   A +3 s                    delivered by the real dequeue
 *   B +3 s, then recalled     a recall tombstone in the same slot: the dequeue drops both
 *   C +1 h                    waiting
 *   D +1 h, then recalled     waiting, with its tombstone waiting in the same slot
 *   E +14 s                   past the window: rolled (re-put with TIMER_ROLL_TIMES), rolled again, delivered
 *   F +40 s                   still rolling when the store stops
 *   G +1 h, put after the enqueue was stopped (timerStopEnqueue): never enqueued
 * The recall tombstones are built as RecallMessageProcessor.buildMessage builds them (imitated: it needs
 * the broker's request context) and go through the timer transform like any timer message.
 */
package oracle;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExtBrokerInner;
import org.apache.rocketmq.store.timer.TimerMessageStore;

public final class TimerStates {
    static final String TOPIC = TimerFixture.TOPIC;

    private TimerStates() {
    }

    public static void write(String root, long seed) throws Exception {
        Random rnd = new Random(seed);
        Geometry g = new Geometry();
        g.timer = true;
        g.timerRollWindowSlot = 6;
        Stores s = TimerFixture.startNew(root, g);
        int precision = s.config.getTimerPrecisionMs();
        List<Map<String, Object>> events = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            TimerFixture.put(s, TimerFixture.message(rnd, i, TOPIC, i % 2, 200, 300, Map.of()), "ordinary", events, null);
        }
        long now = System.currentTimeMillis();
        String[] names = {"A", "B", "C", "D", "E", "F"};
        long[] delays = {3_000L, 3_000L, 3_600_000L, 3_600_000L, 14_000L, 40_000L};
        String[] uniq = new String[names.length];
        long[] deliver = new long[names.length];
        for (int k = 0; k < names.length; k++) {
            deliver[k] = now + delays[k];
            MessageExtBrokerInner m = TimerFixture.message(rnd, 1000 + k, TOPIC, k % 2, 50, 200,
                Map.of(MessageConst.PROPERTY_TIMER_DELIVER_MS, Long.toString(deliver[k])));
            uniq[k] = m.getProperty(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX);
            TimerFixture.toTimerTopic(m, deliver[k], precision);
            TimerFixture.put(s, m, names[k] + " timer +" + delays[k] + " ms", events, deliver[k]);
        }
        for (int k : new int[] {1, 3}) {  // recall B and D
            MessageExtBrokerInner t = recall(rnd, 2000 + k, uniq[k], deliver[k]);
            TimerFixture.toTimerTopic(t, deliver[k], precision);
            TimerFixture.put(s, t, "recall " + names[k], events, deliver[k]);
        }
        // Wait for E's final delivery (its copy in TimerTopic after two rolls), then a little more.
        long deadline = System.currentTimeMillis() + 60_000;
        while (!delivered(s, uniq[4]) && System.currentTimeMillis() < deadline) {
            Thread.sleep(200);
        }
        if (!delivered(s, uniq[4])) {
            throw new IllegalStateException("E was not delivered in 60 s");
        }
        Thread.sleep(1500);
        s.config.setTimerStopEnqueue(true);
        MessageExtBrokerInner gm = TimerFixture.message(rnd, 1006, TOPIC, 0, 50, 200,
            Map.of(MessageConst.PROPERTY_TIMER_DELIVER_MS, Long.toString(now + 3_600_000L)));
        TimerFixture.toTimerTopic(gm, now + 3_600_000L, precision);
        TimerFixture.put(s, gm, "G timer +3600000 ms (enqueue stopped)", events, now + 3_600_000L);
        s.waitDispatched();
        Thread.sleep(1500);
        s.timer.shutdown();
        s.waitDispatched();
        TimerFixture.writeExpect(s, root, g, seed, "timer-states", events);
    }

    /** RecallMessageProcessor.buildMessage, imitated: the tombstone of message `uniq` due at `deliverMs`. */
    static MessageExtBrokerInner recall(Random rnd, int i, String uniq, long deliverMs) {
        MessageExtBrokerInner t = TimerFixture.message(rnd, i, TOPIC, 0, 1, 1, Map.of(
            MessageConst.PROPERTY_TIMER_DEL_UNIQKEY, TimerMessageStore.buildDeleteKey(TOPIC, uniq),
            MessageConst.PROPERTY_TIMER_DELIVER_MS, Long.toString(deliverMs)));
        t.setBody("0".getBytes(java.nio.charset.StandardCharsets.UTF_8));
        org.apache.rocketmq.common.message.MessageAccessor.putProperty(t,
            MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX, uniq);
        org.apache.rocketmq.common.message.MessageAccessor.putProperty(t, MessageConst.PROPERTY_TAGS, "_RECALL_TAG_");
        org.apache.rocketmq.common.message.MessageAccessor.clearProperty(t, MessageConst.PROPERTY_KEYS);
        t.setPropertiesString(org.apache.rocketmq.common.message.MessageDecoder.messageProperties2String(t.getProperties()));
        t.setTagsCode("_RECALL_TAG_".hashCode());
        return t;
    }

    static boolean delivered(Stores s, String uniq) throws Exception {
        for (int q = 0; q < TimerFixture.QUEUES; q++) {
            long max = s.store.getMaxOffsetInQueue(TOPIC, q);
            for (long o = Math.max(0, max - 20); o < max; o++) {
                org.apache.rocketmq.common.message.MessageExt m = s.store.lookMessageByOffset(
                    s.store.getCommitLogOffsetInQueue(TOPIC, q, o));
                if (m != null && uniq.equals(m.getProperty(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX))) {
                    return true;
                }
            }
        }
        return false;
    }
}
