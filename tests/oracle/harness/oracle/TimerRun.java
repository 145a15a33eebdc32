/*
 * `timer-run STORE [SINCE_PHY]`: one broker run of a 5.x timer store, IN PLACE (run it on a copy): the real
 * DefaultMessageStore and TimerMessageStore load (recovery, and the timer's recover(), which clamps the read
 * time to the wheel's span), start as a master broker does (dequeue on, disappearTimeAfterStart 0), run
 * until the timer has caught up, and shut down cleanly. Prints one JSON object: the records appended to the
 * commitlog at or after SINCE_PHY (default: the max physical offset after recovery, before the start), as
 * the real classes read them, and config/timercheck as the broker left it.
 * Timer settings: timerPrecisionMs and timerRollWindowSlot from STORE/broker.conf when it sets them, else
 * from STORE/expect.json's "config" (the fixtures record what wrote them there), else the broker defaults.
 * Caught up: the enqueue has read the timer topic's ConsumeQueue to its end, the dequeue's read time is the
 * current second, the timer's hand-over queues are empty, dispatch is done and the commitlog max offset has
 * not moved for 2 s.
 */
package oracle;

import com.alibaba.fastjson.JSON;
import com.alibaba.fastjson.JSONObject;
import java.io.File;
import java.io.FileInputStream;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.store.queue.ConsumeQueueInterface;
import org.apache.rocketmq.store.queue.CqUnit;
import org.apache.rocketmq.store.timer.TimerMessageStore;

public final class TimerRun {
    static final long QUIET_MS = 2000;
    static final long TIMEOUT_MS = 180_000;

    private TimerRun() {
    }

    public static int run(String root, String[] extra) throws Exception {
        Geometry g = Geometry.of(root, new String[0]);
        if (!g.timer) {
            System.err.println(root + " has no timerwheel: not a 5.x timer store");
            return 2;
        }
        String settingsSource = settings(root, g);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("store", new File(root).getAbsolutePath());
        out.put("recovery", new File(root, "abort").exists() ? "abnormal" : "normal");
        Map<String, Object> settings = new LinkedHashMap<>();
        settings.put("source", settingsSource);
        out.put("settings", settings);
        out.put("timercheckBefore", ReadBack.timercheck(root));

        Stores s = Stores.open(root, g, new ConcurrentHashMap<String, TopicConfig>());
        settings.put("timerPrecisionMs", s.config.getTimerPrecisionMs());
        settings.put("timerRollWindowSlot", s.config.getTimerRollWindowSlot());
        out.put("loaded", s.loaded);
        if (!s.loaded) {
            s.shutdown();
            System.out.print(Json.write(out));
            return 1;
        }
        long maxBefore = s.store.getMaxPhyOffset();
        long since = extra.length > 0 ? Long.parseLong(extra[0]) : maxBefore;
        out.put("maxPhyOffsetAtStart", maxBefore);
        out.put("sincePhyOffset", since);
        Map<String, Object> recovered = new LinkedHashMap<>();
        recovered.put("currReadTimeMs", s.timer.getCurrReadTimeMs());  // recover() clamps it to the wheel
        recovered.put("commitQueueOffset", s.timer.getCommitQueueOffset());
        recovered.put("timerTopicMaxOffset", timerTopicMax(s));
        out.put("timerAtStart", recovered);

        s.config.setDisappearTimeAfterStart(0);
        long started = System.currentTimeMillis();
        s.start();
        long caughtUp = waitCaughtUp(s);
        out.put("startedMs", started);
        out.put("caughtUpMs", caughtUp);
        Map<String, Object> end = new LinkedHashMap<>();
        end.put("currReadTimeMs", s.timer.getCurrReadTimeMs());
        end.put("commitQueueOffset", s.timer.getCommitQueueOffset());
        end.put("timerTopicMaxOffset", timerTopicMax(s));
        out.put("timerAtStop", end);
        s.timer.shutdown();
        s.waitDispatched();
        out.put("stoppedMs", System.currentTimeMillis());
        out.put("maxPhyOffsetAtStop", s.store.getMaxPhyOffset());

        List<Map<String, Object>> crc = new ArrayList<>();
        List<Map<String, Object>> records = new ArrayList<>();
        for (Map<String, Object> r : ReadBack.messages(s.store, crc)) {
            if ("MESSAGE".equals(r.get("kind")) && (Long) r.get("physicalOffset") >= since) {
                r.put("tagsCode", tagsCode(s, r));
                records.add(r);
            }
        }
        out.put("crcErrors", crc.size());
        out.put("records", records);
        s.store.shutdown();
        s.stats.shutdown();
        out.put("timercheck", ReadBack.timercheck(root));
        out.put("clean", s.loaded && crc.isEmpty());
        System.out.print(Json.write(out));
        return crc.isEmpty() ? 0 : 1;
    }

    /** Puts the timer settings into `g`; returns where they came from. */
    static String settings(String root, Geometry g) throws Exception {
        File conf = new File(root, "broker.conf");
        if (conf.isFile()) {
            Properties p = new Properties();
            try (InputStream in = new FileInputStream(conf)) {
                p.load(in);
            }
            g.timerPrecisionMs = Integer.parseInt(p.getProperty("timerPrecisionMs", "0").trim());
            g.timerRollWindowSlot = Integer.parseInt(p.getProperty("timerRollWindowSlot", "0").trim());
            return "broker.conf";
        }
        File expect = new File(root, "expect.json");
        if (expect.isFile()) {
            JSONObject c = JSON.parseObject(new String(Files.readAllBytes(expect.toPath()), StandardCharsets.UTF_8))
                .getJSONObject("config");
            if (c != null) {
                g.timerPrecisionMs = c.getIntValue("timerPrecisionMs");
                g.timerRollWindowSlot = c.getIntValue("timerRollWindowSlot");
                return "expect.json";
            }
        }
        return "default";
    }

    static long timerTopicMax(Stores s) {
        ConsumeQueueInterface cq = s.store.getConsumeQueue(TimerMessageStore.TIMER_TOPIC, 0);
        return cq == null ? 0 : cq.getMaxOffsetInQueue();
    }

    /** Waits until the timer has nothing left to do now; returns when it was first seen so. */
    static long waitCaughtUp(Stores s) throws Exception {
        long deadline = System.currentTimeMillis() + TIMEOUT_MS;
        long lastMax = -1;
        long quietSince = 0;
        while (System.currentTimeMillis() < deadline) {
            Thread.sleep(100);
            long now = System.currentTimeMillis();
            long second = now / s.config.getTimerPrecisionMs() * s.config.getTimerPrecisionMs();
            boolean idle = s.timer.getCommitQueueOffset() >= timerTopicMax(s)
                && s.timer.getCurrReadTimeMs() >= second
                && queued(s.timer) == 0
                && s.store.dispatchBehindBytes() == 0;
            long max = s.store.getMaxPhyOffset();
            if (!idle || max != lastMax) {
                lastMax = max;
                quietSince = idle ? now : 0;
                continue;
            }
            if (quietSince == 0) {
                quietSince = now;
            } else if (now - quietSince >= QUIET_MS) {
                return quietSince;
            }
        }
        throw new IllegalStateException("the timer did not catch up in " + TIMEOUT_MS / 1000 + " s");
    }

    /** Requests in the timer's hand-over queues (enqueue put, dequeue get, dequeue put; protected fields). */
    static int queued(TimerMessageStore timer) throws ReflectiveOperationException {
        int n = 0;
        for (String name : new String[] {"enqueuePutQueue", "dequeueGetQueue", "dequeuePutQueue"}) {
            java.lang.reflect.Field f = TimerMessageStore.class.getDeclaredField(name);
            f.setAccessible(true);
            n += ((BlockingQueue<?>) f.get(timer)).size();
        }
        return n;
    }

    /** The tagsCode of the record's ConsumeQueue unit (null when the queue has no unit for it). */
    static Long tagsCode(Stores s, Map<String, Object> r) {
        ConsumeQueueInterface cq = s.store.getConsumeQueue((String) r.get("topic"), (Integer) r.get("queueId"));
        if (cq == null) {
            return null;
        }
        CqUnit u = cq.get((Long) r.get("queueOffset"));
        return u == null || u.getPos() != (Long) r.get("physicalOffset") ? null : u.getTagsCode();
    }
}
