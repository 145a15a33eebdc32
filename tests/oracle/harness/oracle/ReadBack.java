/*
 * What the real classes read back from a store, as JSON-ready maps: every commitlog record (MessageDecoder +
 * CommitLog.checkMessageAndReturnSize), every ConsumeQueue unit (ConsumeQueueInterface.get), every timerlog
 * unit (TimerLog), every non-empty wheel slot (TimerWheel.getRawSlot), timercheck (TimerCheckpoint),
 * checkpoint (StoreCheckpoint) and the file sizes.
 */
package oracle;

import java.io.File;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.DispatchRequest;
import org.apache.rocketmq.store.SelectMappedBufferResult;
import org.apache.rocketmq.store.StoreCheckpoint;
import org.apache.rocketmq.store.logfile.MappedFile;
import org.apache.rocketmq.store.queue.ConsumeQueueInterface;
import org.apache.rocketmq.store.queue.CqUnit;
import org.apache.rocketmq.store.timer.Slot;
import org.apache.rocketmq.store.timer.TimerCheckpoint;
import org.apache.rocketmq.store.timer.TimerLog;
import org.apache.rocketmq.store.timer.TimerMessageStore;
import org.apache.rocketmq.store.timer.TimerWheel;

public final class ReadBack {
    private ReadBack() {
    }

    /** Every record of the commitlog, in physical order, and every ConsumeQueue unit. */
    public static void store(DefaultMessageStore store, Map<String, Object> out) {
        out.put("messages", messages(store, null));
        out.put("consumeQueues", consumeQueues(store));
    }

    /** Walks the commitlog with the real checker; crcErrors (when not null) collects records failing CRC. */
    public static List<Map<String, Object>> messages(DefaultMessageStore store, List<Map<String, Object>> crcErrors) {
        List<Map<String, Object>> out = new ArrayList<>();
        int fileSize = store.getMessageStoreConfig().getMappedFileSizeCommitLog();
        for (MappedFile mf : store.getCommitLog().getMappedFileQueue().getMappedFiles()) {
            SelectMappedBufferResult sbr = mf.selectMappedBuffer(0);
            if (sbr == null) {
                continue;
            }
            try {
                ByteBuffer bb = sbr.getByteBuffer();
                int pos = 0;
                while (pos < sbr.getSize()) {
                    long phy = mf.getFileFromOffset() + pos;
                    bb.position(pos);
                    int totalSize = bb.getInt(pos);
                    int magic = bb.getInt(pos + 4);
                    ByteBuffer forCheck = bb.slice(pos, sbr.getSize() - pos);
                    DispatchRequest d = store.getCommitLog().checkMessageAndReturnSize(forCheck, true, false, true);
                    String file = mf.getFileName().substring(mf.getFileName().lastIndexOf(File.separator) + 1);
                    if (d.isSuccess() && d.getMsgSize() == 0) {
                        if (totalSize != 0) {
                            out.add(Judge.record(file, phy, totalSize, magic, d, null));  // BLANK
                        }
                        break;  // the file's end: a blank or the unwritten rest
                    }
                    if (!d.isSuccess()) {
                        Judge.crcError(crcErrors, phy, totalSize);
                        if (totalSize <= 0 || pos + totalSize > fileSize) {
                            break;
                        }
                        pos += totalSize;
                        continue;
                    }
                    MessageExt m = MessageDecoder.decode(bb.slice(pos, totalSize), true, false, false, true, true);
                    Map<String, Object> r = Judge.record(file, phy, totalSize, magic, d, m);
                    out.add(r);
                    pos += totalSize;
                }
            } finally {
                sbr.release();
            }
        }
        return out;
    }

    /** IndexService.queryOffset(topic, key, maxNum, 0, Long.MAX_VALUE) for each (topic, key). */
    public static List<Map<String, Object>> indexQueries(DefaultMessageStore store, List<String[]> queries, int maxNum) {
        List<Map<String, Object>> out = new ArrayList<>();
        org.apache.rocketmq.store.index.IndexService index = indexService(store);
        for (String[] q : queries) {
            org.apache.rocketmq.store.index.QueryOffsetResult r =
                index.queryOffset(q[0], q[1], maxNum, 0, Long.MAX_VALUE);
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("topic", q[0]);
            m.put("key", q[1]);
            m.put("maxNum", maxNum);
            m.put("phyOffsets", r.getPhyOffsets());
            out.add(m);
        }
        return out;
    }

    /** The store's own IndexService (a protected field of DefaultMessageStore). */
    static org.apache.rocketmq.store.index.IndexService indexService(DefaultMessageStore store) {
        try {
            java.lang.reflect.Field f = DefaultMessageStore.class.getDeclaredField("indexService");
            f.setAccessible(true);
            return (org.apache.rocketmq.store.index.IndexService) f.get(store);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }

    public static Map<String, Object> consumeQueues(DefaultMessageStore store) {
        Map<String, Object> out = new TreeMap<>();
        store.getConsumeQueueTable().forEach((topic, queues) -> queues.forEach((qid, cq) -> {
            out.put(topic + "/" + qid, consumeQueue(cq));
        }));
        return out;
    }

    static Map<String, Object> consumeQueue(ConsumeQueueInterface cq) {
        Map<String, Object> q = new LinkedHashMap<>();
        q.put("topic", cq.getTopic());
        q.put("queueId", cq.getQueueId());
        q.put("minOffset", cq.getMinOffsetInQueue());
        q.put("maxOffset", cq.getMaxOffsetInQueue());
        List<Object> units = new ArrayList<>();
        for (long i = cq.getMinOffsetInQueue(); i < cq.getMaxOffsetInQueue(); i++) {
            CqUnit u = cq.get(i);
            units.add(u == null ? null : List.of(u.getQueueOffset(), u.getPos(), u.getSize(), u.getTagsCode()));
        }
        q.put("units[queueOffset,phyOffset,size,tagsCode]", units);
        return q;
    }

    /** timerlog units, wheel slots and timercheck, read with the real classes after the timer shut down. */
    public static void timer(String root, Geometry g, Map<String, Object> out) throws Exception {
        TimerLog log = new TimerLog(TimerMessageStore.getTimerLogPath(root), g.timerLog);
        log.load();
        List<Map<String, Object>> units = new ArrayList<>();
        for (MappedFile mf : log.getMappedFileQueue().getMappedFiles()) {
            SelectMappedBufferResult sbr = log.getWholeBuffer(mf.getFileFromOffset());
            try {
                ByteBuffer bb = sbr.getByteBuffer();
                int pos = 0;
                while (pos + 16 <= sbr.getSize()) {
                    int size = bb.getInt(pos);
                    if (size == 0) {
                        break;
                    }
                    Map<String, Object> u = new LinkedHashMap<>();
                    u.put("position", mf.getFileFromOffset() + pos);
                    u.put("size", size);
                    int magic = bb.getInt(pos + 12);
                    if (magic == TimerLog.BLANK_MAGIC_CODE) {
                        u.put("kind", "BLANK");
                        units.add(u);
                        break;
                    }
                    u.putAll(unit(log, mf.getFileFromOffset() + pos));
                    units.add(u);
                    pos += size;
                }
            } finally {
                sbr.release();
            }
        }
        out.put("timerLog", units);

        int slotsTotal = TimerMessageStore.TIMER_WHEEL_TTL_DAY * TimerMessageStore.DAY_SECS;
        int precision = 1000;
        TimerWheel wheel = new TimerWheel(TimerMessageStore.getTimerWheelPath(root), slotsTotal, precision);
        List<Map<String, Object>> slots = new ArrayList<>();
        for (int idx = 0; idx < slotsTotal * 2; idx++) {
            Slot s = wheel.getRawSlot((long) idx * precision);
            if (s.timeMs == 0 && s.firstPos == 0 && s.lastPos == 0 && s.num == 0 && s.magic == 0) {
                continue;
            }
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("index", idx);
            m.put("timeMs", s.timeMs);
            m.put("firstPos", s.firstPos);
            m.put("lastPos", s.lastPos);
            m.put("num", s.num);
            m.put("magic", s.magic);
            List<Long> chain = new ArrayList<>();  // lastPos back along prevPos, as the dequeue walks it
            for (long p = s.lastPos; p >= 0 && chain.size() <= 1000; ) {
                chain.add(p);
                if (p == s.firstPos) {
                    break;
                }
                p = (Long) unit(log, p).get("prevPos");
            }
            m.put("chain", chain);
            m.put("slotIndexOfTimeMs", wheel.getSlotIndex(s.timeMs));
            slots.add(m);
        }
        out.put("timerWheel", slots);
        wheel.shutdown(false);
        log.shutdown();

        out.put("timercheck", timercheck(root));
    }

    /** config/timercheck as the real TimerCheckpoint reads it. */
    public static Map<String, Object> timercheck(String root) throws Exception {
        TimerCheckpoint cp = new TimerCheckpoint(root + "/config/timercheck");
        Map<String, Object> c = new LinkedHashMap<>();
        c.put("lastReadTimeMs", cp.getLastReadTimeMs());
        c.put("lastTimerLogFlushPos", cp.getLastTimerLogFlushPos());
        c.put("lastTimerQueueOffset", cp.getLastTimerQueueOffset());
        c.put("masterTimerQueueOffset", cp.getMasterTimerQueueOffset());
        c.put("dataVersionStateVersion", cp.getDataVersion().getStateVersion());
        c.put("dataVersionTimestamp", cp.getDataVersion().getTimestamp());
        c.put("dataVersionCounter", cp.getDataVersion().getCounter().get());
        return c;
    }

    /** One timerlog unit read in the dequeue's order. */
    static Map<String, Object> unit(TimerLog log, long pos) {
        SelectMappedBufferResult sbr = log.getTimerMessage(pos);
        try {
            ByteBuffer bb = sbr.getByteBuffer();
            Map<String, Object> u = new LinkedHashMap<>();
            bb.getInt();
            u.put("prevPos", bb.getLong());
            u.put("magic", bb.getInt());
            long enqueueTime = bb.getLong();
            int delayed = bb.getInt();
            u.put("currWriteTimeMs", enqueueTime);
            u.put("delayedTime", delayed);
            u.put("delayedTimeMs", enqueueTime + delayed);
            u.put("offsetPy", bb.getLong());
            u.put("sizePy", bb.getInt());
            u.put("hashCodeOfRealTopic", bb.getInt());
            u.put("reserved", bb.getLong());
            return u;
        } finally {
            sbr.release();
        }
    }

    public static void checkpoint(String root, Map<String, Object> out) throws Exception {
        StoreCheckpoint cp = new StoreCheckpoint(root + "/checkpoint");
        Map<String, Object> c = new LinkedHashMap<>();
        c.put("physicMsgTimestamp", cp.getPhysicMsgTimestamp());
        c.put("logicsMsgTimestamp", cp.getLogicsMsgTimestamp());
        c.put("indexMsgTimestamp", cp.getIndexMsgTimestamp());
        c.put("masterFlushedOffset", cp.getMasterFlushedOffset());
        c.put("confirmPhyOffset", cp.getConfirmPhyOffset());
        c.put("minTimestamp", cp.getMinTimestamp());
        c.put("minTimestampIndex", cp.getMinTimestampIndex());
        cp.shutdown();
        out.put("checkpoint", c);
    }

    public static void files(String root, Map<String, Object> out) {
        Map<String, Object> files = new TreeMap<>();
        walk(new File(root), "", files);
        out.put("files", files);
    }

    private static void walk(File dir, String prefix, Map<String, Object> files) {
        File[] list = dir.listFiles();
        if (list == null) {
            return;
        }
        for (File f : list) {
            String rel = prefix + f.getName();
            if (f.isDirectory()) {
                walk(f, rel + "/", files);
            } else if (!rel.equals("expect.json") && !rel.equals("README.md")) {
                files.put(rel, f.length());
            }
        }
    }

    static String utf8(byte[] b) {
        return new String(b, StandardCharsets.UTF_8);
    }
}
