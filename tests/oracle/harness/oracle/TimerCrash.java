/*
 * `timer-crash DIR [SEED]`: a 5.x timer store whose broker dies in the middle of enqueueing. Timer messages
 * (deliver in 1 to 2 hours) are put one after another while the real TimerMessageStore enqueues them, and
 * the JVM halts (Runtime.halt: no shutdown hook, no flush, no clean-up - as far as the files go, a kill -9)
 * at a moment drawn from the seed. The files are left as the page cache has them: timerlog units written,
 * timercheck as its last periodic flush left it, `abort` present. `events.json` lists the puts.
 *
 * `timer-crash-expect DIR`: expect.json of such a store, from a second JVM: the timer files as the real
 * TimerLog / TimerWheel / TimerCheckpoint read them on disk, and, from a copy that the real recovery runs on,
 * the messages and ConsumeQueues as loaded and where the timer's recover() resumes the enqueue.
 */
package oracle;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExtBrokerInner;
import org.apache.rocketmq.store.timer.Slot;
import org.apache.rocketmq.store.timer.TimerMessageStore;
import org.apache.rocketmq.store.timer.TimerWheel;

public final class TimerCrash {
    static final String TOPIC = TimerFixture.TOPIC;

    private TimerCrash() {
    }

    public static void write(String root, long seed) throws Exception {
        Random rnd = new Random(seed);
        Geometry g = new Geometry();
        g.timer = true;
        Stores s = TimerFixture.startNew(root, g);
        int precision = s.config.getTimerPrecisionMs();
        List<Map<String, Object>> events = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            TimerFixture.put(s, TimerFixture.message(rnd, i, TOPIC, i % 2, 200, 300, Map.of()), "ordinary", events, null);
        }
        int total = 400;
        int haltAfter = 250 + rnd.nextInt(100);  // puts before the halt: the enqueue is still catching up
        long now = System.currentTimeMillis();
        for (int k = 0; k < total; k++) {
            long deliver = now + 3_600_000L + rnd.nextInt(3_600_000);
            MessageExtBrokerInner m = TimerFixture.message(rnd, 1000 + k, TOPIC, k % 2, 50, 200,
                Map.of(MessageConst.PROPERTY_TIMER_DELIVER_MS, Long.toString(deliver)));
            TimerFixture.toTimerTopic(m, deliver, precision);
            TimerFixture.put(s, m, "timer " + k, events, deliver);
            if (k == haltAfter) {
                Map<String, Object> doc = new LinkedHashMap<>();
                doc.put("seed", seed);
                doc.put("haltedAfterPuts", k + 1);
                doc.put("timerCommitQueueOffsetAtHalt", s.timer.getCommitQueueOffset());
                doc.put("events", events);
                Files.write(Path.of(root, "events.json"), Json.write(doc).getBytes(StandardCharsets.UTF_8));
                Runtime.getRuntime().halt(0);
            }
            if (k % 10 == 9) {
                Thread.sleep(1 + rnd.nextInt(20));  // the enqueue services run meanwhile
            }
        }
        throw new IllegalStateException("not halted");
    }

    public static void expect(String root) throws Exception {
        Map<String, Object> expect = new LinkedHashMap<>();
        expect.put("rocketmqVersion", "5.3.3 (git tag rocketmq-all-5.3.3)");
        expect.put("profile", "timer-crash");
        Geometry g = Geometry.of(root, new String[0]);
        Map<String, Object> config = new LinkedHashMap<>();
        config.put("mappedFileSizeCommitLog", g.commitLog);
        config.put("mappedFileSizeConsumeQueue", g.consumeQueue);
        config.put("mappedFileSizeTimerLog", g.timerLog);
        config.put("maxHashSlotNum", g.hashSlots);
        config.put("maxIndexNum", g.indexNum);
        config.put("timerPrecisionMs", 1000);
        config.put("timerWheelSlots", TimerMessageStore.TIMER_WHEEL_TTL_DAY * TimerMessageStore.DAY_SECS);
        expect.put("config", config);
        ReadBack.files(root, expect);  // before anything opens the store
        ReadBack.timer(root, g, expect);  // the timer files as on disk after the crash
        ReadBack.checkpoint(root, expect);
        Path tmp = Files.createTempDirectory("mqtool-oracle-crash");
        Path copy = tmp.resolve("store");
        try {
            Judge.copy(Path.of(root), copy);
            Stores s = Stores.open(copy.toString(), g, new ConcurrentHashMap<String, TopicConfig>());
            ReadBack.store(s.store, expect);
            Map<String, Object> r = new LinkedHashMap<>();
            r.put("loaded", s.loaded);
            r.put("commitQueueOffset", s.timer.getCommitQueueOffset());
            r.put("commitReadTimeMs", s.timer.getCommitReadTimeMs());
            r.put("timerLogMaxOffset", s.timer.getTimerLog().getMappedFileQueue().getMaxOffset());
            r.put("maxPhyOffset", s.store.getMaxPhyOffset());
            // the wheel in memory after load's recover(): the file revised from the timerlog (reviseSlot)
            TimerWheel wheel = s.timer.getTimerWheel();
            List<Object> slots = new ArrayList<>();
            for (int i = 0; i < wheel.slotsTotal * 2; i++) {
                Slot slot = wheel.getRawSlot((long) i * wheel.precisionMs);
                if (slot.timeMs != 0 || slot.firstPos != 0 || slot.lastPos != 0 || slot.num != 0) {
                    Map<String, Object> m = new LinkedHashMap<>();
                    m.put("index", i);
                    m.put("timeMs", slot.timeMs);
                    m.put("firstPos", slot.firstPos);
                    m.put("lastPos", slot.lastPos);
                    m.put("num", slot.num);
                    m.put("magic", slot.magic);
                    slots.add(m);
                }
            }
            r.put("timerWheel", slots);
            expect.put("recovered", r);
            s.shutdown();
        } finally {
            Judge.delete(tmp);
        }
        Files.write(new File(root, "expect.json").toPath(), Json.write(expect).getBytes(StandardCharsets.UTF_8));
    }
}
