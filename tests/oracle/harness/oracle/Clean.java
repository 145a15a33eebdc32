/*
 * `clean STORE [KEY=VALUE ...] [rounds=N]` (both versions): what the broker's retention really deletes. On a
 * copy of STORE (file times kept), the real DefaultMessageStore is configured as a broker.conf with the
 * KEY=VALUE settings configures it (MixAll.properties2Object, the broker's own parser: deleteWhen,
 * fileReservedTime, diskMaxUsedSpaceRatio, diskSpaceWarningLevelRatio, diskSpaceCleanForciblyRatio,
 * cleanFileForciblyEnable, deleteFileBatchMax, ...; a key starting with "rocketmq." is a system property, as
 * -Drocketmq.broker.diskSpaceCleanForciblyRatio=0.3 is), loaded (recovery), and then N rounds (default 1) of
 * what the store's scheduled tasks run every cleanResourceInterval: CleanCommitLogService.run(), then
 * (5.3.3) CorrectLogicOffsetService.run() and CleanConsumeQueueService.run() - the broker's own inner
 * services, called through reflection (they are package-private inner classes of DefaultMessageStore).
 *
 * deleteWhen=NOW / deleteWhen=OTHER stand for the current hour of the JVM's zone and the hour 12 hours
 * away, so a case can ask for "time to delete" or not whenever it runs. Prints one JSON object: the settings
 * used, `nowMs` (just before the first round), `hour`, `zone`, the disk usage UtilAll reports for the
 * commitlog and consumequeue paths, the files before (name, size, lastModified), and per round the
 * commitlog, ConsumeQueue and index files gone, `cleanImmediately` after the round, the commitlog min offset
 * and every queue's min offset.
 */
package oracle;

import java.io.File;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Calendar;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TimeZone;
import java.util.TreeMap;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.UtilAll;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.config.MessageStoreConfig;

public final class Clean {
    private Clean() {
    }

    public static int run(String storeArg, String[] args) throws Exception {
        return Judge.onCopy(storeArg, (root, shown) -> judge(root, shown, args));
    }

    static Map<String, Object> judge(String root, String shown, String[] args) throws Exception {
        Properties props = new Properties();
        int rounds = 1;
        List<String> geometryArgs = new ArrayList<>();
        int hour = Calendar.getInstance().get(Calendar.HOUR_OF_DAY);
        for (String a : args) {
            int eq = a.indexOf('=');
            if (eq < 0) {
                geometryArgs.add(a);
                continue;
            }
            String key = a.substring(0, eq);
            String value = a.substring(eq + 1);
            if (key.equals("rounds")) {
                rounds = Integer.parseInt(value);
            } else if (key.startsWith("rocketmq.")) {
                System.setProperty(key, value);  // read by CleanCommitLogService's field initialisers
            } else {
                if (key.equals("deleteWhen") && value.equals("NOW")) {
                    value = String.format("%02d", hour);
                } else if (key.equals("deleteWhen") && value.equals("OTHER")) {
                    value = String.format("%02d", (hour + 12) % 24);
                }
                props.setProperty(key, value);
            }
        }
        Geometry g = Geometry.of(root, geometryArgs.toArray(new String[0]));
        MessageStoreConfig c = Stores.config(root, g);
        MixAll.properties2Object(props, c);  // as BrokerStartup applies broker.conf

        Map<String, Object> out = new LinkedHashMap<>();
        out.put("store", shown);
        Map<String, Object> settings = new TreeMap<>();
        props.forEach((k, v) -> settings.put((String) k, v));
        for (String p : System.getProperties().stringPropertyNames()) {
            if (p.startsWith("rocketmq.broker.")) {
                settings.put(p, System.getProperty(p));
            }
        }
        out.put("settings", settings);
        Map<String, Long[]> before = files(root);
        out.put("filesBefore", listing(before));

        Stores s = Stores.openConfigured(c, g);
        out.put("loaded", s.loaded);
        DefaultMessageStore store = s.store;
        List<String[]> queues = queues(root);
        out.put("nowMs", System.currentTimeMillis());
        out.put("hour", Calendar.getInstance().get(Calendar.HOUR_OF_DAY));
        out.put("zone", TimeZone.getDefault().getID());
        out.put("diskUsedCommitLog", UtilAll.getDiskPartitionSpaceUsedPercent(c.getStorePathCommitLog()));
        out.put("diskUsedConsumeQueue", UtilAll.getDiskPartitionSpaceUsedPercent(root + File.separator + "consumequeue"));
        out.put("minPhyOffsetBefore", store.getMinPhyOffset());
        out.put("queueMinBefore", queueMins(store, queues));

        Object commitLogClean = field(store, "cleanCommitLogService");
        Object queueClean = field(store, "cleanConsumeQueueService");
        Object correct = fieldOrNull(store, "correctLogicOffsetService");  // 5.x only
        List<Object> done = new ArrayList<>();
        Map<String, Long[]> previous = before;
        for (int r = 0; r < rounds; r++) {
            invoke(commitLogClean, "run");
            if (correct != null) {
                invoke(correct, "run");
            }
            invoke(queueClean, "run");
            Map<String, Long[]> now = files(root);
            Map<String, Object> round = new LinkedHashMap<>();
            List<String> gone = new ArrayList<>();
            for (String f : previous.keySet()) {
                if (!now.containsKey(f)) {
                    gone.add(f);
                }
            }
            round.put("deleted", gone);
            round.put("cleanImmediately", field(commitLogClean, "cleanImmediately"));
            round.put("minPhyOffset", store.getMinPhyOffset());
            round.put("queueMin", queueMins(store, queues));
            done.add(round);
            previous = now;
        }
        out.put("rounds", done);
        out.put("clean", true);
        s.shutdown();
        return out;
    }

    /** Every commitlog, ConsumeQueue and index file: relative path -> {size, lastModified}. */
    static Map<String, Long[]> files(String root) {
        Map<String, Long[]> out = new TreeMap<>();
        for (String part : new String[] {"commitlog", "consumequeue", "index"}) {
            walk(new File(root), new File(root, part), out);
        }
        return out;
    }

    static void walk(File root, File f, Map<String, Long[]> out) {
        if (f.isDirectory()) {
            File[] children = f.listFiles();
            for (File child : children == null ? new File[0] : children) {
                walk(root, child, out);
            }
        } else if (f.isFile()) {
            out.put(root.toPath().relativize(f.toPath()).toString(), new Long[] {f.length(), f.lastModified()});
        }
    }

    static Map<String, Object> listing(Map<String, Long[]> files) {
        Map<String, Object> out = new TreeMap<>();
        files.forEach((k, v) -> out.put(k, List.of(v[0], v[1])));
        return out;
    }

    static List<String[]> queues(String root) {
        List<String[]> out = new ArrayList<>();
        File[] topics = new File(root, "consumequeue").listFiles();
        for (File t : topics == null ? new File[0] : topics) {
            File[] ids = t.listFiles();
            for (File q : ids == null ? new File[0] : ids) {
                out.add(new String[] {t.getName(), q.getName()});
            }
        }
        return out;
    }

    static Map<String, Object> queueMins(DefaultMessageStore store, List<String[]> queues) {
        Map<String, Object> out = new TreeMap<>();
        for (String[] q : queues) {
            out.put(q[0] + "/" + q[1], store.getMinOffsetInQueue(q[0], Integer.parseInt(q[1])));
        }
        return out;
    }

    static Object field(Object target, String name) throws Exception {
        Object v = fieldOrNull(target, name);
        if (v == null) {
            throw new NoSuchFieldException(name);
        }
        return v;
    }

    static Object fieldOrNull(Object target, String name) throws Exception {
        for (Class<?> k = target.getClass(); k != null; k = k.getSuperclass()) {
            try {
                Field f = k.getDeclaredField(name);
                f.setAccessible(true);
                return f.get(target);
            } catch (NoSuchFieldException e) {
                // try the superclass
            }
        }
        return null;
    }

    static void invoke(Object target, String name) throws Exception {
        Method m = target.getClass().getDeclaredMethod(name);
        m.setAccessible(true);
        m.invoke(target);
    }
}
