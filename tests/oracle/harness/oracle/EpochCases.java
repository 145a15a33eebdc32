/*
 * The controller mode's epoch files through the real 5.3.3 classes (store/ha/autoswitch/EpochFileCache,
 * common/utils/CheckpointFile):
 *
 *   epoch-write FILE EPOCH-START[,EPOCH-START...]   EpochFileCache(FILE).initCacheFromEntries: the file (and
 *                                                   its .bak) as the broker flushes them
 *   epoch-consistent SLAVE_FILE SLAVE_END MASTER_FILE MASTER_END
 *                                                   each file loaded by initCacheFromFile, its last entry's end
 *                                                   set (setLastEpochEntryEndOffset), then the slave cache's
 *                                                   findConsistentPoint(master) as AutoSwitchHAClient.doTruncate
 *                                                   computes it; prints the entries and the point (-1: none)
 */
package oracle;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.remoting.protocol.EpochEntry;
import org.apache.rocketmq.store.ha.autoswitch.EpochFileCache;

public final class EpochCases {
    private EpochCases() {
    }

    public static int write(String file, String spec) {
        List<EpochEntry> entries = new ArrayList<>();
        for (String item : spec.split(",")) {
            String[] parts = item.split("-");
            entries.add(new EpochEntry(Integer.parseInt(parts[0]), Long.parseLong(parts[1])));
        }
        new EpochFileCache(file).initCacheFromEntries(entries);
        return 0;
    }

    static List<Object> entries(EpochFileCache cache) {
        List<Object> out = new ArrayList<>();
        for (EpochEntry e : cache.getAllEntries()) {
            out.add(List.of(e.getEpoch(), e.getStartOffset(), e.getEndOffset()));
        }
        return out;
    }

    public static int consistent(String slaveFile, long slaveEnd, String masterFile, long masterEnd) {
        EpochFileCache slave = new EpochFileCache(slaveFile);
        EpochFileCache master = new EpochFileCache(masterFile);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("slaveLoaded", slave.initCacheFromFile());
        out.put("masterLoaded", master.initCacheFromFile());
        slave.setLastEpochEntryEndOffset(slaveEnd);
        master.setLastEpochEntryEndOffset(masterEnd);
        out.put("slave[epoch,start,end]", entries(slave));
        out.put("master[epoch,start,end]", entries(master));
        out.put("consistentPoint", slave.findConsistentPoint(master));
        System.out.println(Json.write(out));
        return 0;
    }
}
