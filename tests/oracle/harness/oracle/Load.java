/*
 * `load STORE [HASH_SLOTS INDEX_NUM]`: judges a store (one mqtool wrote) with the real code. Works on a
 * temporary copy (recovery rewrites files), geometry from the files. Prints one JSON object: whether it
 * loaded, normal or abnormal recovery, whether recovery truncated the commitlog and where, CRC errors in a
 * full walk, ConsumeQueue units that differ from what the dispatcher computes (before and after load),
 * index keys the real IndexService cannot find, and the config files as the real managers read them.
 */
package oracle;

import java.io.File;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.apache.rocketmq.broker.BrokerController;
import org.apache.rocketmq.broker.loadbalance.MessageRequestModeManager;
import org.apache.rocketmq.broker.offset.ConsumerOffsetManager;
import org.apache.rocketmq.broker.schedule.DelayOffsetSerializeWrapper;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.sysflag.MessageSysFlag;
import org.apache.rocketmq.remoting.protocol.body.SubscriptionGroupWrapper;
import org.apache.rocketmq.remoting.protocol.body.TopicConfigSerializeWrapper;
import org.apache.rocketmq.remoting.protocol.subscription.SubscriptionGroupConfig;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.DispatchRequest;
import org.apache.rocketmq.store.index.IndexService;
import org.apache.rocketmq.store.index.QueryOffsetResult;
import org.apache.rocketmq.store.queue.ConsumeQueueInterface;
import org.apache.rocketmq.store.queue.CqUnit;
import org.apache.rocketmq.store.timer.TimerMessageStore;

public final class Load {
    private static final int SAMPLES = 5;

    private Load() {
    }

    public static int run(String storeArg, String[] extra) throws Exception {
        Path original = Path.of(storeArg).toAbsolutePath();
        Path tmp = Files.createTempDirectory("mqtool-oracle-load");
        Path root = tmp.resolve("store");
        try {
            copy(original, root);
            Map<String, Object> out = judge(root.toString(), original.toString(), extra);
            System.out.print(Json.write(out));
            return Boolean.TRUE.equals(out.get("clean")) ? 0 : 1;
        } finally {
            delete(tmp);
        }
    }

    static Map<String, Object> judge(String root, String shown, String[] extra) throws Exception {
        Stores.Geometry g = geometry(root, extra);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("store", shown);
        Map<String, Object> geo = new LinkedHashMap<>();
        geo.put("mappedFileSizeCommitLog", g.commitLog);
        geo.put("mappedFileSizeConsumeQueue", g.consumeQueue);
        geo.put("maxHashSlotNum", g.hashSlots);
        geo.put("maxIndexNum", g.indexNum);
        geo.put("timerWheelEnable", g.timer);
        out.put("geometry", geo);
        boolean abort = new File(root, "abort").exists();
        out.put("recovery", abort ? "abnormal" : "normal");

        // Before load: walk the files as they are with the real record checker; raw ConsumeQueue units.
        BrokerConfig bc = new BrokerConfig();
        bc.setBrokerName(Stores.BROKER_NAME);
        org.apache.rocketmq.store.stats.BrokerStatsManager probeStats =
            new org.apache.rocketmq.store.stats.BrokerStatsManager("DefaultCluster", true);
        DefaultMessageStore probe = new DefaultMessageStore(Stores.config(root, g), probeStats, null, bc,
            new ConcurrentHashMap<>());
        Walk before = walkFiles(probe, root, g.commitLog);
        Map<String, long[]> cqBefore = rawConsumeQueues(root);
        probeStats.shutdown();
        Map<String, Object> cqb = compare(before.dispatch, cqBefore, before.firstFile);

        // Load: the real store (and timer store) recover.
        Stores s = Stores.open(root, g, new ConcurrentHashMap<String, TopicConfig>());
        out.put("loaded", s.loaded);
        long maxAfter = s.store.getMaxPhyOffset();
        Map<String, Object> cl = new LinkedHashMap<>();
        cl.put("dataEnd", before.dataEnd);
        cl.put("walkEndBefore", before.end);
        cl.put("walkStopBefore", before.stop);
        cl.put("minPhyOffsetAfter", s.store.getMinPhyOffset());
        cl.put("maxPhyOffsetAfter", maxAfter);
        boolean truncated = maxAfter < before.dataEnd;
        cl.put("truncated", truncated);
        cl.put("truncatedAt", truncated ? maxAfter : null);
        cl.put("truncatedBytes", truncated ? before.dataEnd - maxAfter : 0);
        cl.put("validRecordsCut", maxAfter < before.end);
        out.put("commitlog", cl);

        List<Map<String, Object>> crc = new ArrayList<>();
        List<Map<String, Object>> records = ReadBack.messages(s.store, crc);
        Map<String, long[]> dispatchAfter = new HashMap<>();
        int messages = 0;
        for (Map<String, Object> r : records) {
            if ("MESSAGE".equals(r.get("kind"))) {
                messages++;
                Map<?, ?> d = (Map<?, ?>) r.get("dispatch");
                if (dispatched((Integer) r.get("sysFlag"))) {
                    dispatchAfter.put(r.get("topic") + "/" + r.get("queueId") + "/" + d.get("consumeQueueOffset"),
                        new long[] {(Long) r.get("physicalOffset"), (Integer) d.get("msgSize"), (Long) d.get("tagsCode")});
                }
            }
        }
        out.put("messages", messages);
        out.put("crcErrors", crc.size());
        out.put("crcErrorSamples", crc.subList(0, Math.min(SAMPLES, crc.size())));

        Map<String, long[]> cqAfter = new HashMap<>();
        s.store.getConsumeQueueTable().forEach((topic, queues) -> queues.forEach((qid, cq) -> units(cq, cqAfter)));
        Map<String, Object> cqs = new LinkedHashMap<>();
        cqs.put("beforeLoad", cqb);
        cqs.put("afterLoad", compare(dispatchAfter, cqAfter, s.store.getMinPhyOffset()));
        out.put("consumeQueues", cqs);
        out.put("index", index(s.store, records));
        out.put("config", configs(root, s));
        if (s.timer != null) {
            Map<String, Object> t = new LinkedHashMap<>();
            t.put("timerLogMaxOffset", s.timer.getTimerLog().getMappedFileQueue().getMaxOffset());
            t.put("commitQueueOffset", s.timer.getCommitQueueOffset());
            t.put("timercheckLastReadTimeMs", s.timer.getTimerCheckpoint().getLastReadTimeMs());
            out.put("timer", t);
        }
        s.shutdown();
        boolean clean = s.loaded && !truncated && maxAfter >= before.end && crc.isEmpty()
            && (Integer) ((Map<?, ?>) cqs.get("afterLoad")).get("mismatches") == 0
            && (Integer) cqb.get("mismatches") == 0
            && (Integer) ((Map<?, ?>) out.get("index")).get("notFound") == 0;
        out.put("clean", clean);
        return out;
    }

    /** `recover STORE`: the real recovery in place (load, start, dispatch, clean shutdown), as a broker run. */
    public static int recover(String root, String[] extra) throws Exception {
        Stores s = Stores.open(root, geometry(root, extra), new ConcurrentHashMap<String, TopicConfig>());
        if (!s.loaded) {
            System.err.println("the store did not load");
            return 1;
        }
        s.start();
        s.waitDispatched();
        s.shutdown();
        return 0;
    }

    static boolean dispatched(int sysFlag) {
        int tran = MessageSysFlag.getTransactionValue(sysFlag);
        return tran == MessageSysFlag.TRANSACTION_NOT_TYPE || tran == MessageSysFlag.TRANSACTION_COMMIT_TYPE;
    }

    /** File sizes from the files; index geometry from the arguments (it cannot be told from one file). */
    static Stores.Geometry geometry(String root, String[] extra) throws IOException {
        Stores.Geometry g = new Stores.Geometry();
        File[] cl = new File(root, "commitlog").listFiles();
        if (cl != null && cl.length > 0) {
            g.commitLog = (int) cl[0].length();
        }
        try (Stream<Path> files = Files.walk(Path.of(root, "consumequeue"))) {
            files.filter(Files::isRegularFile).findFirst().ifPresent(p -> g.consumeQueue = (int) p.toFile().length());
        } catch (java.nio.file.NoSuchFileException e) {
            // no consume queues yet
        }
        File[] tl = new File(root, "timerlog").listFiles();
        if (tl != null && tl.length > 0) {
            g.timerLog = (int) tl[0].length();
        }
        g.timer = new File(root, "timerwheel").exists();
        if (extra.length >= 2) {
            g.hashSlots = Integer.parseInt(extra[0]);
            g.indexNum = Integer.parseInt(extra[1]);
        }
        return g;
    }

    static final class Walk {
        long end;
        long dataEnd;
        long firstFile;
        String stop = "end";
        final Map<String, long[]> dispatch = new HashMap<>();
    }

    /** The commitlog files as they are on disk, walked with CommitLog.checkMessageAndReturnSize (CRC on). */
    static Walk walkFiles(DefaultMessageStore probe, String root, int fileSize) throws IOException {
        Walk w = new Walk();
        File[] files = new File(root, "commitlog").listFiles();
        if (files == null) {
            return w;
        }
        Arrays.sort(files, Comparator.comparing(File::getName));
        w.firstFile = files.length > 0 ? Long.parseLong(files[0].getName()) : 0;
        boolean stopped = false;
        for (File f : files) {
            long base = Long.parseLong(f.getName());
            byte[] bytes = Files.readAllBytes(f.toPath());
            for (int i = bytes.length - 1; i >= 0; i--) {
                if (bytes[i] != 0) {
                    w.dataEnd = Math.max(w.dataEnd, base + i + 1);
                    break;
                }
            }
            if (stopped) {
                continue;
            }
            ByteBuffer bb = ByteBuffer.wrap(bytes);
            int pos = 0;
            while (true) {
                if (pos + 8 > bytes.length) {
                    w.end = base + pos;
                    break;
                }
                if (bb.getInt(pos) == 0 && bb.getInt(pos + 4) == 0) {
                    w.end = base + pos;  // zeros: the end of the written data
                    stopped = true;
                    break;
                }
                bb.position(pos);
                DispatchRequest d = probe.getCommitLog().checkMessageAndReturnSize(bb, true, false, true);
                if (!d.isSuccess()) {
                    w.end = base + pos;
                    w.stop = "bad record at " + (base + pos);
                    stopped = true;
                    break;
                }
                if (d.getMsgSize() == 0) {
                    boolean blank = bb.getInt(pos + 4) == org.apache.rocketmq.store.CommitLog.BLANK_MAGIC_CODE;
                    w.end = blank ? base + fileSize : base + pos;
                    stopped = !blank;
                    break;
                }
                if (dispatched(d.getSysFlag())) {
                    w.dispatch.put(d.getTopic() + "/" + d.getQueueId() + "/" + d.getConsumeQueueOffset(),
                        new long[] {base + pos, d.getMsgSize(), d.getTagsCode()});
                }
                pos += d.getMsgSize();
            }
        }
        return w;
    }

    /** ConsumeQueue units as the files hold them before recovery (20 bytes: phyOffset, size, tagsCode). */
    static Map<String, long[]> rawConsumeQueues(String root) throws IOException {
        Map<String, long[]> out = new HashMap<>();
        File[] topics = new File(root, "consumequeue").listFiles();
        if (topics == null) {
            return out;
        }
        for (File t : topics) {
            File[] queues = t.listFiles();
            for (File q : queues == null ? new File[0] : queues) {
                File[] files = q.listFiles();
                for (File f : files == null ? new File[0] : files) {
                    long start = Long.parseLong(f.getName());
                    ByteBuffer bb = ByteBuffer.wrap(Files.readAllBytes(f.toPath()));
                    for (int pos = 0; pos + 20 <= bb.capacity(); pos += 20) {
                        long phy = bb.getLong(pos);
                        int size = bb.getInt(pos + 8);
                        long tags = bb.getLong(pos + 12);
                        if (phy == 0 && size == 0 && tags == 0) {
                            continue;
                        }
                        out.put(t.getName() + "/" + q.getName() + "/" + (start + pos) / 20, new long[] {phy, size, tags});
                    }
                }
            }
        }
        return out;
    }

    static void units(ConsumeQueueInterface cq, Map<String, long[]> out) {
        for (long i = cq.getMinOffsetInQueue(); i < cq.getMaxOffsetInQueue(); i++) {
            CqUnit u = cq.get(i);
            if (u != null) {
                out.put(cq.getTopic() + "/" + cq.getQueueId() + "/" + i, new long[] {u.getPos(), u.getSize(), u.getTagsCode()});
            }
        }
    }

    /** ConsumeQueue units against what the dispatcher computes from the commitlog records. */
    static Map<String, Object> compare(Map<String, long[]> dispatch, Map<String, long[]> onDisk, long minPhy) {
        int expired = 0;
        List<String> missing = new ArrayList<>();
        List<String> differing = new ArrayList<>();
        List<String> extra = new ArrayList<>();
        for (Map.Entry<String, long[]> e : dispatch.entrySet()) {
            long[] u = onDisk.get(e.getKey());
            if (u == null) {
                missing.add(e.getKey());
            } else if (!Arrays.equals(u, e.getValue())) {
                differing.add(e.getKey() + " disk " + Arrays.toString(u) + " dispatch " + Arrays.toString(e.getValue()));
            }
        }
        for (String k : onDisk.keySet()) {
            if (!dispatch.containsKey(k) && onDisk.get(k)[0] < minPhy) {
                expired++;  // points into commitlog files already deleted: the broker skips these
            } else if (!dispatch.containsKey(k)) {
                extra.add(k + " " + Arrays.toString(onDisk.get(k)));
            }
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("units", onDisk.size());
        m.put("dispatched", dispatch.size());
        m.put("missing", missing.size());
        m.put("differing", differing.size());
        m.put("extra", extra.size());
        m.put("belowCommitLogMin", expired);
        m.put("mismatches", missing.size() + differing.size() + extra.size());
        List<String> samples = new ArrayList<>();
        Stream.of(missing, differing, extra).forEach(l -> l.stream().sorted().limit(SAMPLES).forEach(samples::add));
        m.put("samples", samples);
        return m;
    }

    /** Every KEYS entry and UNIQ_KEY of every indexed record, looked up with the real IndexService. */
    static Map<String, Object> index(DefaultMessageStore store, List<Map<String, Object>> records) {
        IndexService svc = ReadBack.indexService(store);
        Map<String, Set<Long>> cache = new HashMap<>();
        int checked = 0;
        List<String> notFound = new ArrayList<>();
        for (Map<String, Object> r : records) {
            if (!"MESSAGE".equals(r.get("kind"))) {
                continue;
            }
            int tran = MessageSysFlag.getTransactionValue((Integer) r.get("sysFlag"));
            if (tran == MessageSysFlag.TRANSACTION_ROLLBACK_TYPE) {
                continue;  // IndexService.buildIndex skips rollbacks
            }
            Map<?, ?> d = (Map<?, ?>) r.get("dispatch");
            List<String> keys = new ArrayList<>();
            if (d.get("keys") != null) {
                for (String k : ((String) d.get("keys")).split(" ")) {
                    if (!k.isEmpty()) {
                        keys.add(k);
                    }
                }
            }
            if (d.get("uniqKey") != null) {
                keys.add((String) d.get("uniqKey"));
            }
            for (String k : keys) {
                String topic = (String) r.get("topic");
                Set<Long> hits = cache.computeIfAbsent(topic + "#" + k, x -> {
                    QueryOffsetResult q = svc.queryOffset(topic, k, Integer.MAX_VALUE, 0, Long.MAX_VALUE);
                    return new HashSet<>(q.getPhyOffsets());
                });
                checked++;
                if (!hits.contains((Long) r.get("physicalOffset"))) {
                    notFound.add(topic + "#" + k + " @" + r.get("physicalOffset"));
                }
            }
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("keysChecked", checked);
        m.put("notFound", notFound.size());
        m.put("samples", notFound.subList(0, Math.min(SAMPLES, notFound.size())));
        return m;
    }

    /** ConfigManager.load's rule: the file when it is non-empty and decodes, else the .bak. */
    static String source(String path, Consumer<String> decode) {
        try {
            String text = MixAll.file2String(path);
            if (text != null && !text.isEmpty()) {
                decode.accept(text);
                return "file";
            }
        } catch (Exception e) {
            // falls back to the .bak, as ConfigManager.load does
        }
        try {
            String bak = MixAll.file2String(path + ".bak");
            if (bak != null && !bak.isEmpty()) {
                decode.accept(bak);
                return "bak";
            }
        } catch (Exception e) {
            return "unreadable";
        }
        return new File(path).exists() ? "unreadable" : "missing";
    }

    static String text(String path, String source) throws IOException {
        return MixAll.file2String("bak".equals(source) ? path + ".bak" : path);
    }

    static Map<String, Object> configs(String root, Stores s) throws Exception {
        Map<String, Object> out = new LinkedHashMap<>();
        String dir = root + "/config/";
        BrokerConfig bc = new BrokerConfig();
        BrokerController broker = new BrokerController(bc, s.config, s.store);

        ConsumerOffsetManager offsets = new ConsumerOffsetManager(broker);
        Map<String, Object> co = new LinkedHashMap<>();
        co.put("source", source(dir + "consumerOffset.json", t -> new ConsumerOffsetManager().decode(t)));
        co.put("loaded", offsets.load());
        Map<String, Object> table = new TreeMap<>();
        offsets.getOffsetTable().forEach((k, v) -> table.put(k, new TreeMap<>(v)));
        co.put("offsetTable", table);
        out.put("consumerOffset", co);

        MessageRequestModeManager modes = new MessageRequestModeManager(broker);
        Map<String, Object> mr = new LinkedHashMap<>();
        mr.put("source", source(dir + "messageRequestMode.json", t -> new MessageRequestModeManager().decode(t)));
        mr.put("loaded", modes.load());
        Map<String, Object> mt = new TreeMap<>();
        modes.getMessageRequestModeMap().forEach((topic, groups) -> groups.forEach((group, body) -> {
            Map<String, Object> b = new LinkedHashMap<>();
            b.put("mode", body.getMode().name());
            b.put("popShareQueueNum", body.getPopShareQueueNum());
            mt.put(topic + "@" + group, b);
        }));
        mr.put("table", mt);
        out.put("messageRequestMode", mr);

        // ScheduleMessageService / TopicConfigManager / SubscriptionGroupManager decode with these wrappers.
        String delayPath = dir + "delayOffset.json";
        String src = source(delayPath, t -> DelayOffsetSerializeWrapper.fromJson(t, DelayOffsetSerializeWrapper.class).getOffsetTable().size());
        Map<String, Object> dl = new LinkedHashMap<>();
        dl.put("source", src);
        if (src.equals("file") || src.equals("bak")) {
            dl.put("offsetTable", new TreeMap<>(DelayOffsetSerializeWrapper.fromJson(text(delayPath, src),
                DelayOffsetSerializeWrapper.class).getOffsetTable()));
        }
        out.put("delayOffset", dl);

        String topicsPath = dir + "topics.json";
        src = source(topicsPath, t -> TopicConfigSerializeWrapper.fromJson(t, TopicConfigSerializeWrapper.class).getTopicConfigTable().size());
        Map<String, Object> tp = new LinkedHashMap<>();
        tp.put("source", src);
        if (src.equals("file") || src.equals("bak")) {
            Map<String, Object> tt = new TreeMap<>();
            TopicConfigSerializeWrapper.fromJson(text(topicsPath, src), TopicConfigSerializeWrapper.class)
                .getTopicConfigTable().forEach((k, v) -> tt.put(k,
                    List.of(v.getReadQueueNums(), v.getWriteQueueNums(), v.getPerm(), v.isOrder() ? 1 : 0)));
            tp.put("topics[read,write,perm,order]", tt);
        }
        out.put("topics", tp);

        String groupsPath = dir + "subscriptionGroup.json";
        src = source(groupsPath, t -> SubscriptionGroupWrapper.fromJson(t, SubscriptionGroupWrapper.class).getSubscriptionGroupTable().size());
        Map<String, Object> gp = new LinkedHashMap<>();
        gp.put("source", src);
        if (src.equals("file") || src.equals("bak")) {
            Map<String, Object> gt = new TreeMap<>();
            Map<String, SubscriptionGroupConfig> table2 = SubscriptionGroupWrapper.fromJson(text(groupsPath, src),
                SubscriptionGroupWrapper.class).getSubscriptionGroupTable();
            table2.forEach((k, v) -> gt.put(k, List.of(v.isConsumeEnable(), v.getRetryMaxTimes())));
            gp.put("groups[consumeEnable,retryMaxTimes]", gt);
        }
        out.put("subscriptionGroup", gp);
        return out;
    }

    static void copy(Path from, Path to) throws IOException {
        try (Stream<Path> files = Files.walk(from)) {
            for (Path p : (Iterable<Path>) files::iterator) {
                Path target = to.resolve(from.relativize(p).toString());
                if (Files.isDirectory(p)) {
                    Files.createDirectories(target);
                } else {
                    Files.copy(p, target, StandardCopyOption.COPY_ATTRIBUTES);
                }
            }
        }
    }

    static void delete(Path dir) throws IOException {
        try (Stream<Path> files = Files.walk(dir)) {
            files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }

    static String timerPath(String root) {
        return TimerMessageStore.getTimerWheelPath(root);
    }
}
