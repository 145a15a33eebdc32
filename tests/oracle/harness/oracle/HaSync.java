/*
 * `ha-sync MASTER SLAVE HASH_SLOTS INDEX_NUM`: in place, MASTER started as the master and SLAVE as its slave
 * under the real classic HA of 5.3.3 (DefaultHAService on 127.0.0.1, as HaPair runs it), until the slave's
 * commitlog reaches the master's end (60 s at most) and its reput has dispatched it; then both stop. SLAVE
 * may be an empty directory (a new replica: DefaultHAConnection ships from the start of the master's last
 * file, DefaultHAConnection.java:221-232). The file sizes are MASTER's (Geometry.of), the index geometry the
 * arguments'.
 *
 * Prints: each side's min/max physical offset (the slave's before and after), whether the slave reached the
 * master's end, and per queue of the master's consumequeue/ both sides' max queue offsets. Exit 0 when the
 * slave reached the end and every queue's max offset is the master's; 1 otherwise (the JSON says which).
 * The caller compares the bytes and loads the slave (`load`) itself.
 */
package oracle;

import java.io.File;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;
import org.apache.rocketmq.store.config.BrokerRole;

public final class HaSync {
    private HaSync() {
    }

    public static int run(String master, String slave, String[] indexGeometry) throws Exception {
        java.io.PrintStream stdout = System.out;
        System.setOut(System.err);  // the store's log lines go to stderr; stdout carries only the JSON
        Geometry g = Geometry.of(master, indexGeometry);
        new File(slave).mkdirs();
        Stores m = HaPair.open(master, BrokerRole.ASYNC_MASTER, 0, g);
        m.start();
        m.waitDispatched();
        Stores s = HaPair.open(slave, BrokerRole.SLAVE, 1, g);
        long before = s.store.getMaxPhyOffset();
        s.start();
        HaPair.follow(s, m);
        long end = m.store.getMaxPhyOffset();
        for (int i = 0; i < 1200 && s.store.getMaxPhyOffset() < end; i++) {
            Thread.sleep(50);
        }
        s.waitDispatched();
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("master", Map.of("minPhyOffset", m.store.getMinPhyOffset(), "maxPhyOffset", end));
        Map<String, Object> sl = new LinkedHashMap<>();
        sl.put("maxPhyOffsetBefore", before);
        sl.put("minPhyOffset", s.store.getMinPhyOffset());
        sl.put("maxPhyOffset", s.store.getMaxPhyOffset());
        out.put("slave", sl);
        boolean synced = s.store.getMaxPhyOffset() == end;
        out.put("reachedMasterEnd", synced);
        Map<String, Object> queues = new TreeMap<>();
        String[] topics = new File(master, "consumequeue").list();
        for (String topic : topics == null ? new String[0] : topics) {
            String[] ids = new File(master, "consumequeue/" + topic).list();
            for (String id : ids == null ? new String[0] : ids) {
                int q = Integer.parseInt(id);
                long mo = m.store.getMaxOffsetInQueue(topic, q);
                long so = s.store.getMaxOffsetInQueue(topic, q);
                queues.put(topic + "/" + q, Map.of("master", mo, "slave", so));
            }
        }
        out.put("maxOffsetInQueue", queues);
        s.shutdown();
        m.shutdown();
        stdout.print(Json.write(out));
        stdout.flush();
        Runtime.getRuntime().halt(synced ? 0 : 1);  // the HA services' threads would keep the JVM alive
        return 0;
    }
}
