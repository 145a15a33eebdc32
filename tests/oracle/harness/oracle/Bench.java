/*
 * `bench STORE [REPEAT]`: decodes every commitlog record with RocketMQ's own MessageDecoder on one thread,
 * once cold and REPEAT times warm, and prints one JSON object (messages, bytes, seconds, messages/s).
 * `make-big DIR [MESSAGES [PRODUCERS [IPV6_PER_MILLE [TOPICS]]]]`: writes a large store through the real put
 * path (DefaultMessageStore.putMessage + ReputMessageService), broker-sized 1 GiB commitlog files, for the
 * benches in bench/. PRODUCERS (default 200) born hosts in turn, or 0: a new born host for every message (a
 * random address and ephemeral port, as short-lived producers leave), IPV6_PER_MILLE of them IPv6 clients;
 * TOPICS topics (default 1: BenchTopic; more: BenchTopic0..), 8 queues each.
 */
package oracle;

import java.io.File;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageExtBrokerInner;
import org.apache.rocketmq.store.CommitLog;
import org.apache.rocketmq.store.PutMessageResult;

public final class Bench {
    private Bench() {
    }

    public static int bench(String root, int repeat) throws Exception {
        File[] files = new File(root, "commitlog").listFiles();
        Arrays.sort(files, Comparator.comparing(File::getName));
        List<MappedByteBuffer> maps = new ArrayList<>();
        for (File f : files) {
            try (FileChannel ch = FileChannel.open(f.toPath(), StandardOpenOption.READ)) {
                maps.add(ch.map(FileChannel.MapMode.READ_ONLY, 0, ch.size()));
            }
        }
        long[] once = pass(maps);
        List<Double> warm = new ArrayList<>();
        List<Double> warmCpu = new ArrayList<>();
        for (int i = 0; i < repeat; i++) {
            long cpu = processCpuNanos();
            long[] r = pass(maps);
            warm.add(r[2] / 1e9);
            warmCpu.add((processCpuNanos() - cpu) / 1e9);
        }
        warm.sort(Double::compare);
        warmCpu.sort(Double::compare);
        double median = warm.get(warm.size() / 2);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("store", root);
        out.put("decoder", "org.apache.rocketmq.common.message.MessageDecoder.decode(buf, readBody=true, "
            + "deCompressBody=false, isClient=false), one thread");
        out.put("messages", once[0]);
        out.put("bytes", once[1]);
        out.put("onceSeconds", once[2] / 1e9);
        out.put("warmSecondsMedian", median);
        out.put("warmRuns", warm);
        // the whole process's CPU (every thread: the collector's, the JIT's) over each warm pass: what a
        // loaded machine does not inflate as it does wall times
        out.put("warmCpuSecondsMedian", warmCpu.get(warmCpu.size() / 2));
        out.put("warmMessagesPerSecond", once[0] / median);
        out.put("onceMessagesPerSecond", once[0] / (once[2] / 1e9));
        System.out.print(Json.write(out));
        return 0;
    }

    static long processCpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory
            .getOperatingSystemMXBean()).getProcessCpuTime();
    }

    /** One decode of every record: {messages, bytes, nanoseconds}. */
    static long[] pass(List<MappedByteBuffer> maps) {
        long start = System.nanoTime();
        long n = 0;
        long bytes = 0;
        long sink = 0;
        for (MappedByteBuffer m : maps) {
            ByteBuffer bb = m.duplicate();
            int pos = 0;
            while (pos + 8 <= bb.limit()) {
                int size = bb.getInt(pos);
                int magic = bb.getInt(pos + 4);
                if (size <= 0 || magic == CommitLog.BLANK_MAGIC_CODE) {
                    break;
                }
                bb.position(pos);
                MessageExt msg = MessageDecoder.decode(bb, true, false, false);
                if (msg == null) {
                    break;
                }
                sink += msg.getQueueOffset() + msg.getBody().length;
                n++;
                bytes += size;
                pos += size;
            }
        }
        long took = System.nanoTime() - start;
        if (sink == 42) {
            System.err.print("");
        }
        return new long[] {n, bytes, took};
    }

    public static int makeBig(String root, long messages) throws Exception {
        return makeBig(root, messages, 200, 0, 1);
    }

    /** The born host of message i: one of `producers` in turn, or (0) a new random one per message. */
    static InetSocketAddress bornHost(long i, int producers, int ipv6PerMille, Random hosts) throws Exception {
        if (producers > 0) {
            return new InetSocketAddress("10.0.0." + (1 + i % producers), 30000 + (int) (i % producers));
        }
        int port = 1024 + hosts.nextInt(64512);
        if (hosts.nextInt(1000) < ipv6PerMille) {
            byte[] a = new byte[16];
            hosts.nextBytes(a);
            a[0] = 0x20;
            a[1] = 0x01;
            a[2] = 0x0d;
            a[3] = (byte) 0xb8;
            if (hosts.nextInt(4) == 0) {
                Arrays.fill(a, 4, 12, (byte) 0);  // runs of zero groups: the "::" of RFC 5952
            }
            return new InetSocketAddress(InetAddress.getByAddress(a), port);
        }
        byte[] a = new byte[4];
        hosts.nextBytes(a);
        a[0] = 10;
        return new InetSocketAddress(InetAddress.getByAddress(a), port);
    }

    public static int makeBig(String root, long messages, int producers, int ipv6PerMille, int topicCount)
        throws Exception {
        Geometry g = new Geometry();
        g.commitLog = 1024 * 1024 * 1024;
        g.consumeQueue = 300000 * 20;
        g.hashSlots = 500000;
        g.indexNum = 2000000;
        ConcurrentMap<String, TopicConfig> topics = new ConcurrentHashMap<>();
        String[] names = new String[topicCount];
        for (int t = 0; t < topicCount; t++) {
            names[t] = topicCount == 1 ? "BenchTopic" : "BenchTopic" + t;
            topics.put(names[t], new TopicConfig(names[t], 8, 8, 6));
        }
        Random hosts = new Random(11);
        Stores s = Stores.open(root, g, topics);
        s.start();
        Random rnd = new Random(7);
        byte[] letters = new byte[4096];
        for (int i = 0; i < letters.length; i++) {
            letters[i] = (byte) ('a' + rnd.nextInt(26));
        }
        long t0 = System.nanoTime();
        for (long i = 0; i < messages; i++) {
            MessageExtBrokerInner m = new MessageExtBrokerInner();
            m.setTopic(names[(int) ((i / 8) % topicCount)]);
            m.setQueueId((int) (i % 8));
            int len = 500 + rnd.nextInt(400);
            int from = rnd.nextInt(letters.length - len);
            m.setBody(Arrays.copyOfRange(letters, from, from + len));
            m.setBornTimestamp(1700000000000L + i);
            m.setBornHost(bornHost(i, producers, ipv6PerMille, hosts));
            m.setStoreHost(new InetSocketAddress("192.168.0.10", 10911));
            String tags = "tag" + (i % 5);
            Map<String, String> p = new LinkedHashMap<>();
            p.put("KEYS", "bench-" + i);
            p.put("TAGS", tags);
            p.put("UNIQ_KEY", String.format("0A000001%08X%016X", (int) (i >>> 32), i));
            org.apache.rocketmq.common.message.MessageAccessor.setProperties(m, p);
            m.setPropertiesString(MessageDecoder.messageProperties2String(p));
            m.setTagsCode(MessageExtBrokerInner.tagsString2tagsCode(tags));
            PutMessageResult r = s.store.putMessage(m);
            if (!r.isOk()) {
                throw new IllegalStateException("put failed at " + i + ": " + r);
            }
        }
        s.waitDispatched();
        double took = (System.nanoTime() - t0) / 1e9;
        long max = s.store.getMaxPhyOffset();
        s.shutdown();
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("store", root);
        out.put("messages", messages);
        out.put("commitlogBytes", max);
        out.put("seconds", took);
        out.put("geometry", List.of(g.commitLog, g.consumeQueue, g.hashSlots, g.indexNum));
        out.put("producers", producers);
        out.put("ipv6PerMille", ipv6PerMille);
        out.put("topics", topicCount);
        System.out.print(Json.write(out));
        return 0;
    }
}
