/*
 * The version-neutral half of `load`: compiled into both the 5.3.3 and the 4.9.8 oracle, it uses only
 * classes both versions have at the same path (DispatchRequest, MessageExt, IndexService, MessageSysFlag,
 * MixAll). The walk of the files as they are, raw ConsumeQueue units, the comparison with what the
 * dispatcher computes, the index lookups, ConfigManager.load's file-or-.bak rule, and one record as a map.
 */
package oracle;

import java.io.File;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.stream.Stream;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.sysflag.MessageSysFlag;
import org.apache.rocketmq.store.DispatchRequest;
import org.apache.rocketmq.store.index.IndexService;
import org.apache.rocketmq.store.index.QueryOffsetResult;

public final class Judge {
    static final int SAMPLES = 5;
    static final int BLANK_MAGIC_CODE = -875286124;  // CommitLog.BLANK_MAGIC_CODE in both versions
    // The stores' maxMsgsNumBatch (Stores.config): IndexService caps maxNum at it, and 4.9.8 sizes an
    // ArrayList with maxNum before capping, so Integer.MAX_VALUE would not fit.
    static final int MAX_KEYS = 100000;

    private Judge() {
    }

    /** Prepared and rolled-back transaction records are not dispatched (CommitLogDispatcherBuildConsumeQueue). */
    static boolean dispatched(int sysFlag) {
        int tran = MessageSysFlag.getTransactionValue(sysFlag);
        return tran == MessageSysFlag.TRANSACTION_NOT_TYPE || tran == MessageSysFlag.TRANSACTION_COMMIT_TYPE;
    }

    static final class Walk {
        long end;
        long dataEnd;
        long firstFile;
        String stop = "end";
        boolean lmq;  // the broker multi-dispatches to LMQ queues (enableLmq + enableMultiDispatch)
        final Map<String, long[]> dispatch = new HashMap<>();
    }

    /** The commitlog files as they are on disk, walked with CommitLog.checkMessageAndReturnSize (CRC on). */
    static Walk walkFiles(Function<ByteBuffer, DispatchRequest> check, String root, int fileSize) throws IOException {
        return walkFiles(check, root, fileSize, false);
    }

    static Walk walkFiles(Function<ByteBuffer, DispatchRequest> check, String root, int fileSize, boolean lmq)
        throws IOException {
        Walk w = new Walk();
        w.lmq = lmq;
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
                DispatchRequest d = check.apply(bb);
                if (!d.isSuccess()) {
                    w.end = base + pos;
                    w.stop = "bad record at " + (base + pos);
                    stopped = true;
                    break;
                }
                if (d.getMsgSize() == 0) {
                    boolean blank = bb.getInt(pos + 4) == BLANK_MAGIC_CODE;
                    w.end = blank ? base + fileSize : base + pos;
                    stopped = !blank;
                    break;
                }
                if (dispatched(d.getSysFlag())) {
                    w.dispatch.put(d.getTopic() + "/" + d.getQueueId() + "/" + d.getConsumeQueueOffset(),
                        new long[] {base + pos, d.getMsgSize(), d.getTagsCode()});
                    if (lmq) {
                        lmqUnits(d.getTopic(), d.getQueueId(), d.getPropertiesMap(),
                            new long[] {base + pos, d.getMsgSize(), d.getTagsCode()}, w.dispatch);
                    }
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

    /** What the dispatcher computes from each loaded record: topic/queue/offset -> phyOffset, size, tagsCode. */
    static Map<String, long[]> dispatchOf(List<Map<String, Object>> records, boolean lmq) {
        Map<String, long[]> out = new HashMap<>();
        for (Map<String, Object> r : records) {
            if ("MESSAGE".equals(r.get("kind")) && dispatched((Integer) r.get("sysFlag"))) {
                Map<?, ?> d = (Map<?, ?>) r.get("dispatch");
                long[] unit = {(Long) r.get("physicalOffset"), (Integer) d.get("msgSize"), (Long) d.get("tagsCode")};
                out.put(r.get("topic") + "/" + r.get("queueId") + "/" + d.get("consumeQueueOffset"), unit);
                if (lmq) {
                    @SuppressWarnings("unchecked")
                    Map<String, String> props = (Map<String, String>) r.get("properties");
                    lmqUnits((String) r.get("topic"), (Integer) r.get("queueId"), props, unit, out);
                }
            }
        }
        return out;
    }

    /**
     * The units ConsumeQueue.multiDispatchLmqQueue adds for one record (MultiDispatchUtils.checkMultiDispatchQueue's
     * conditions, names with a path separator skipped, queue id 0 for an LMQ queue).
     */
    static void lmqUnits(String topic, int queueId, Map<String, String> props, long[] unit, Map<String, long[]> out) {
        if (props == null || topic.startsWith(MixAll.RETRY_GROUP_TOPIC_PREFIX) || topic.startsWith("rmq_sys_")
            || topic.equals("SCHEDULE_TOPIC_XXXX")) {
            return;
        }
        String queues = props.get("INNER_MULTI_DISPATCH");
        String offsets = props.get("INNER_MULTI_QUEUE_OFFSET");
        if (queues == null || offsets == null || queues.isBlank() || offsets.isBlank()) {
            return;
        }
        String[] q = queues.split(",");
        String[] o = offsets.split(",");
        if (q.length != o.length) {
            return;
        }
        for (int i = 0; i < q.length; i++) {
            if (!q[i].contains(File.separator)) {
                out.put(q[i] + "/" + (q[i].startsWith(MixAll.LMQ_PREFIX) ? 0 : queueId) + "/" + Long.parseLong(o[i]), unit);
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
    static Map<String, Object> index(IndexService svc, List<Map<String, Object>> records) {
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
                    QueryOffsetResult q = svc.queryOffset(topic, k, MAX_KEYS, 0, Long.MAX_VALUE);
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

    /** The commitlog section of `load`: where the walk of the files ended and what recovery kept. */
    static Map<String, Object> commitlog(Walk before, long minAfter, long maxAfter) {
        Map<String, Object> cl = new LinkedHashMap<>();
        boolean truncated = maxAfter < before.dataEnd;
        cl.put("dataEnd", before.dataEnd);
        cl.put("walkEndBefore", before.end);
        cl.put("walkStopBefore", before.stop);
        cl.put("minPhyOffsetAfter", minAfter);
        cl.put("maxPhyOffsetAfter", maxAfter);
        cl.put("truncated", truncated);
        cl.put("truncatedAt", truncated ? maxAfter : null);
        cl.put("truncatedBytes", truncated ? before.dataEnd - maxAfter : 0);
        cl.put("validRecordsCut", maxAfter < before.end);
        return cl;
    }

    /** Fills messages, crcErrors, consumeQueues, index and clean into `out` from the loaded store's reading. */
    static void verdict(Map<String, Object> out, boolean loaded, Walk before, Map<String, long[]> cqBefore,
        List<Map<String, Object>> records, List<Map<String, Object>> crc, Map<String, long[]> cqAfter,
        long minAfter, long maxAfter, IndexService index) {
        out.put("loaded", loaded);
        out.put("commitlog", commitlog(before, minAfter, maxAfter));
        out.put("messages", records.stream().filter(r -> "MESSAGE".equals(r.get("kind"))).count());
        out.put("crcErrors", crc.size());
        out.put("crcErrorSamples", crc.subList(0, Math.min(SAMPLES, crc.size())));
        Map<String, Object> cqb = compare(before.dispatch, cqBefore, before.firstFile);
        Map<String, Object> cqa = compare(dispatchOf(records, before.lmq), cqAfter, minAfter);
        Map<String, Object> cqs = new LinkedHashMap<>();
        cqs.put("beforeLoad", cqb);
        cqs.put("afterLoad", cqa);
        out.put("consumeQueues", cqs);
        Map<String, Object> idx = index(index, records);
        out.put("index", idx);
        out.put("clean", loaded && maxAfter >= before.dataEnd && maxAfter >= before.end && crc.isEmpty()
            && (Integer) cqa.get("mismatches") == 0 && (Integer) cqb.get("mismatches") == 0
            && (Integer) idx.get("notFound") == 0);
    }

    /** One commitlog record as the real classes read it (MessageDecoder's MessageExt + the checker's request). */
    static Map<String, Object> record(String file, long phy, int totalSize, int magic, DispatchRequest d, MessageExt m) {
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("file", file);
        r.put("physicalOffset", phy);
        r.put("totalSize", totalSize);
        r.put("magicCode", magic);
        r.put("magicCodeHex", String.format("0x%08X", magic));
        if (m == null) {
            r.put("kind", "BLANK");
            return r;
        }
        r.put("kind", "MESSAGE");
        r.put("bodyCRC", m.getBodyCRC());
        r.put("queueId", m.getQueueId());
        r.put("flag", m.getFlag());
        r.put("queueOffset", m.getQueueOffset());
        r.put("sysFlag", m.getSysFlag());
        r.put("bornTimestamp", m.getBornTimestamp());
        r.put("bornHost", host(m.getBornHost()));
        r.put("storeTimestamp", m.getStoreTimestamp());
        r.put("storeHost", host(m.getStoreHost()));
        r.put("reconsumeTimes", m.getReconsumeTimes());
        r.put("preparedTransactionOffset", m.getPreparedTransactionOffset());
        r.put("topic", m.getTopic());
        r.put("topicLengthBytes", m.getTopic().getBytes(StandardCharsets.UTF_8).length);
        Map<String, String> props = new TreeMap<>(m.getProperties());
        props.remove("propertiesString");  // decode() files the raw string under this key
        r.put("properties", props);
        r.put("propertiesRaw", m.getProperty("propertiesString"));
        r.put("bodyLength", m.getBody() == null ? 0 : m.getBody().length);
        byte[] body = m.getBody() == null ? new byte[0] : m.getBody();
        r.put("bodySha256", sha256(body));
        if (body.length <= 1024) {
            r.put("bodyBase64", Base64.getEncoder().encodeToString(body));
        }
        r.put("offsetMsgId", m.getMsgId());
        r.put("uniqKey", m.getProperty("UNIQ_KEY"));
        r.put("tags", m.getTags());
        r.put("keys", m.getKeys());
        Map<String, Object> dm = new LinkedHashMap<>();
        dm.put("success", d.isSuccess());
        dm.put("msgSize", d.getMsgSize());
        dm.put("tagsCode", d.getTagsCode());
        dm.put("keys", d.getKeys());
        dm.put("uniqKey", d.getUniqKey());
        dm.put("consumeQueueOffset", d.getConsumeQueueOffset());
        r.put("dispatch", dm);
        return r;
    }

    /** A record the checker refused: kept in crcErrors (when not null). */
    static void crcError(List<Map<String, Object>> crcErrors, long phy, int totalSize) {
        if (crcErrors != null) {
            Map<String, Object> e = new LinkedHashMap<>();
            e.put("physicalOffset", phy);
            e.put("totalSize", totalSize);
            crcErrors.add(e);
        }
    }

    static String host(SocketAddress a) {
        InetSocketAddress i = (InetSocketAddress) a;
        return i.getAddress().getHostAddress() + ":" + i.getPort();
    }

    static String sha256(byte[] b) {
        try {
            StringBuilder sb = new StringBuilder();
            for (byte x : java.security.MessageDigest.getInstance("SHA-256").digest(b)) {
                sb.append(String.format("%02x", x));
            }
            return sb.toString();
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
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

    /** `load` judges a temporary copy (recovery rewrites files): run `judge` on it, print, remove it. */
    interface Judgement {
        Map<String, Object> judge(String root, String shown) throws Exception;
    }

    /**
     * Stdout carries only the JSON: while the judge runs, System.out is stderr, so the log lines the store code
     * prints (log4j2's default console appender is set up on first use, i.e. during the judge) cannot corrupt it.
     */
    static int onCopy(String storeArg, Judgement j) throws Exception {
        Path original = Path.of(storeArg).toAbsolutePath();
        Path tmp = Files.createTempDirectory("mqtool-oracle-load");
        Path root = tmp.resolve("store");
        java.io.PrintStream stdout = System.out;
        try {
            System.setOut(System.err);
            copy(original, root);
            Map<String, Object> out = j.judge(root.toString(), original.toString());
            String keep = System.getenv("MQTOOL_ORACLE_KEEP");  // where to leave the store as the judge left it
            if (keep != null && !keep.isEmpty()) {
                copy(root, Path.of(keep));
            }
            System.setOut(stdout);
            System.out.print(Json.write(out));
            System.out.flush();
            return Boolean.TRUE.equals(out.get("clean")) ? 0 : 1;
        } finally {
            System.setOut(stdout);
            delete(tmp);
        }
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
}
