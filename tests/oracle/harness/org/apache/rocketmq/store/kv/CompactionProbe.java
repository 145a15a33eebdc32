/*
 * Harness access to the package-private parts of the real CompactionStore / CompactionLog (5.3.3
 * store/src/main/java/org/apache/rocketmq/store/kv/): the compaction one CompactionLog's scheduled task runs
 * (`doCompaction`, CompactionLog.java:627, which compactAndReplace(getCompactionFile()) lines 585-625), the
 * table of open CompactionLogs (CompactionStore.java:57) and the current TopicPartitionLog's sanityCheck
 * (CompactionLog.java:1045). Nothing here writes store bytes of its own: every byte is the real classes'.
 */
package org.apache.rocketmq.store.kv;

import java.lang.reflect.Field;
import java.util.Map;
import java.util.TreeMap;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.queue.SparseConsumeQueue;

public final class CompactionProbe {
    private CompactionProbe() {
    }

    public static CompactionStore store(DefaultMessageStore s) throws Exception {
        Field f = DefaultMessageStore.class.getDeclaredField("compactionStore");
        f.setAccessible(true);
        return (CompactionStore) f.get(s);
    }

    /** The open CompactionLogs by "topic_queueId", sorted. */
    @SuppressWarnings("unchecked")
    public static Map<String, CompactionLog> logs(CompactionStore cs) throws Exception {
        Field f = CompactionStore.class.getDeclaredField("compactionLogTable");
        f.setAccessible(true);
        return new TreeMap<>((Map<String, CompactionLog>) f.get(cs));
    }

    /** One run of the scheduled compaction task, as the compactionSchedule thread runs it. */
    public static void compact(CompactionLog log) {
        log.doCompaction();
    }

    /** The first half of one scheduled compaction, as a process killed before `replaceFiles` leaves it:
     * getCompactionFile, getOffsetMap and compaction (the kept records written into compacting/,
     * CompactionLog.java:609-617, 681-705); false when no compaction is due. Nothing is replaced, the
     * position-checkpoint is not written. */
    public static boolean compactUntilReplace(CompactionLog log) throws Exception {
        CompactionLog.ProcessFileList files = log.getCompactionFile();
        if (files == null || files.isEmpty()) {
            return false;
        }
        log.compaction(files.toCompactFiles, log.getOffsetMap(files.newFiles));
        return true;
    }

    /** The current TopicPartitionLog's sanityCheck: null when it passes, else its message. */
    public static String sanityCheck(CompactionLog log) throws Exception {
        Field f = CompactionLog.class.getDeclaredField("current");
        f.setAccessible(true);
        try {
            ((CompactionLog.TopicPartitionLog) f.get(log)).sanityCheck();
            return null;
        } catch (RuntimeException e) {
            return e.getMessage();
        }
    }

    public static SparseConsumeQueue cq(CompactionLog log) {
        return log.getCQ();
    }
}
