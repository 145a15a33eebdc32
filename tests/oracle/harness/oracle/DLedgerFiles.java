/*
 * The version-neutral half of the DLedger commands: compiled into both the 5.3.3 and the 4.9.8 oracle
 * (both pin DLedger 0.3.1.2; only RocketMQ classes both versions have at the same path are named here).
 *   - configure: the MessageStoreConfig of a one-peer DLedger group on a free local port.
 *   - awaitLeader: what the broker's DLedgerRoleChangeHandler waits for before it turns the store into a master.
 *   - onDisk: the files as they are (no DLedger class opens them): data files walked entry by entry and decoded
 *     with DLedger's own DLedgerEntryCoder, index units, checkpoint / currterm through DLedger's IOUtils.
 *   - recovered / entries: what the real DLedgerMmapFileStore holds after DefaultMessageStore.load() ran its
 *     recovery (DLedgerCommitLog.recoverNormally/Abnormally -> DLedgerMmapFileStore.load + recover).
 *   - records: every commitlog record read as the broker's ReputMessageService reads them (CommitLog.getData,
 *     checkMessageAndReturnSize, rollNextFile on a pad), so a mixed store's classic part comes first.
 *   - walk: the `load` judge's walk of the files as they are, for a DLedger store.
 */
package oracle;

import io.openmessaging.storage.dledger.DLedgerServer;
import io.openmessaging.storage.dledger.MemberState;
import io.openmessaging.storage.dledger.entry.DLedgerEntry;
import io.openmessaging.storage.dledger.entry.DLedgerEntryCoder;
import io.openmessaging.storage.dledger.store.file.DLedgerMmapFileStore;
import io.openmessaging.storage.dledger.store.file.MmapFile;
import io.openmessaging.storage.dledger.store.file.MmapFileList;
import io.openmessaging.storage.dledger.utils.IOUtils;
import java.io.File;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.LinkedHashSet;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Function;
import org.apache.rocketmq.common.UtilAll;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.store.CommitLog;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.DispatchRequest;
import org.apache.rocketmq.store.QueryMessageResult;
import org.apache.rocketmq.store.SelectMappedBufferResult;
import org.apache.rocketmq.store.config.BrokerRole;
import org.apache.rocketmq.store.config.MessageStoreConfig;
import org.apache.rocketmq.store.dledger.DLedgerCommitLog;

public final class DLedgerFiles {
    static final String SELF_ID = "n0";
    static final String GROUP = "RaftNode00";  // distribution/conf/dledger/broker-n0.conf's dLegerGroup
    // RocketMQ's message magic codes (MessageDecoder.MESSAGE_MAGIC_CODE / _V2 in 5.x, CommitLog's in 4.9)
    static final int MESSAGE_MAGIC_V1 = -626843481;
    static final int MESSAGE_MAGIC_V2 = -626843477;

    private DLedgerFiles() {
    }

    /** enableDLegerCommitLog with a one-peer group (selfId-127.0.0.1:free port), as broker-n0.conf sets it. */
    static void configure(MessageStoreConfig c, Geometry g) {
        c.setEnableDLegerCommitLog(true);
        c.setdLegerGroup(g.dledgerGroup);
        c.setdLegerSelfId(g.dledgerSelfId);
        c.setdLegerPeers(g.dledgerSelfId + "-127.0.0.1:" + freePort());
        if (g.dledgerDataPath != null) {
            c.setStorePathDLedgerCommitLog(g.dledgerDataPath);
        }
    }

    static int freePort() {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    static DLedgerCommitLog commitLog(DefaultMessageStore store) {
        return (DLedgerCommitLog) store.getCommitLog();
    }

    static DLedgerServer server(DefaultMessageStore store) {
        return commitLog(store).getdLedgerServer();
    }

    static DLedgerMmapFileStore fileStore(DefaultMessageStore store) {
        return (DLedgerMmapFileStore) server(store).getdLedgerStore();
    }

    /**
     * After store.start(): waits until the one peer elected itself, then as DLedgerRoleChangeHandler's LEADER
     * case (4.9.8 and 5.3.3 broker/dledger/DLedgerRoleChangeHandler.handle): until ledgerEndIndex ==
     * committedIndex and nothing is left to dispatch; then recoverTopicQueueTable and the SYNC_MASTER role
     * (changeToMaster; the rest of it, e.g. starting the schedule service, is the caller's).
     */
    static Map<String, Object> awaitLeader(DefaultMessageStore store, long timeoutMs) throws InterruptedException {
        long start = System.currentTimeMillis();
        DLedgerServer server = server(store);
        MemberState ms = server.getMemberState();
        while (!ms.isLeader()) {
            if (System.currentTimeMillis() - start > timeoutMs) {
                throw new IllegalStateException("no leader after " + timeoutMs + " ms (role " + ms.getRole() + ")");
            }
            Thread.sleep(20);
        }
        long elected = System.currentTimeMillis() - start;
        DLedgerMmapFileStore fs = fileStore(store);
        while (fs.getLedgerEndIndex() != -1
            && (fs.getLedgerEndIndex() != fs.getCommittedIndex() || store.dispatchBehindBytes() != 0)) {
            if (System.currentTimeMillis() - start > timeoutMs) {
                throw new IllegalStateException("leader did not commit its ledger end in " + timeoutMs + " ms");
            }
            Thread.sleep(100);
        }
        store.recoverTopicQueueTable();
        store.getMessageStoreConfig().setBrokerRole(BrokerRole.SYNC_MASTER);
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("term", ms.currTerm());
        m.put("leaderId", ms.getLeaderId());
        m.put("electedAfterMs", elected);
        m.put("readyAfterMs", System.currentTimeMillis() - start);
        return m;
    }

    /** broker.conf: the settings the store was written with (DLedger data paths relative to the store root). */
    static void writeConf(String root, Geometry g, Map<String, Object> info) throws IOException {
        StringBuilder sb = new StringBuilder();
        sb.append("# written by tests/oracle (DLedgerFixture): the settings this store was written with\n");
        sb.append("brokerClusterName=").append("DefaultCluster").append('\n');
        sb.append("brokerName=").append(Stores.BROKER_NAME).append('\n');
        sb.append("enableDLegerCommitLog=true\n");
        sb.append("dLegerGroup=").append(g.dledgerGroup).append('\n');
        sb.append("dLegerSelfId=").append(g.dledgerSelfId).append('\n');
        sb.append("dLegerPeers=").append(info.get("dLegerPeers")).append('\n');
        sb.append("mappedFileSizeCommitLog=").append(g.commitLog).append('\n');
        sb.append("mappedFileSizeConsumeQueue=").append(g.consumeQueue).append('\n');
        sb.append("maxHashSlotNum=").append(g.hashSlots).append('\n');
        sb.append("maxIndexNum=").append(g.indexNum).append('\n');
        if (g.dledgerDataPath != null) {
            List<String> rel = new ArrayList<>();
            for (String d : g.dledgerDataDirs(root)) {
                rel.add(rel(root, d));
            }
            sb.append("# relative to the store root here; a real broker.conf names absolute directories\n");
            sb.append("storePathDLedgerCommitLog=").append(String.join(",", rel)).append('\n');
        }
        Files.write(new File(root, "broker.conf").toPath(), sb.toString().getBytes(java.nio.charset.StandardCharsets.UTF_8));
    }

    // ---------------------------------------------------------------- the files as they are

    static String rel(String root, String path) {
        String r = new File(root).getAbsoluteFile().toPath().normalize().toString();
        String p = new File(path).getAbsoluteFile().toPath().normalize().toString();
        return p.startsWith(r + File.separator) ? p.substring(r.length() + 1) : p;
    }

    static List<File> dataFiles(String root, Geometry g) {
        List<File> out = new ArrayList<>();
        for (String dir : g.dledgerDataDirs(root)) {
            File[] fs = new File(dir).listFiles();
            if (fs != null) {
                out.addAll(Arrays.asList(fs));
            }
        }
        out.sort(Comparator.comparing(File::getName));  // MmapFileList.doLoad's order: by name, over all dirs
        return out;
    }

    static File defaultPath(String root, Geometry g) {
        return new File(root, "dledger-" + g.dledgerSelfId);
    }

    static List<File> indexFiles(String root, Geometry g) {
        File[] fs = new File(defaultPath(root, g), "index").listFiles();
        List<File> out = fs == null ? new ArrayList<>() : new ArrayList<>(Arrays.asList(fs));
        out.sort(Comparator.comparing(File::getName));
        return out;
    }

    /** The data and index files as they are: every entry header, pads, torn tails, index units, checkpoint, currterm. */
    static Map<String, Object> onDisk(String root, Geometry g) throws IOException {
        Map<String, Object> out = new LinkedHashMap<>();
        Map<String, Object> layout = new LinkedHashMap<>();
        layout.put("selfId", g.dledgerSelfId);
        layout.put("defaultPath", rel(root, defaultPath(root, g).getPath()));
        List<String> dirs = new ArrayList<>();
        for (String d : g.dledgerDataDirs(root)) {
            dirs.add(rel(root, d));
        }
        layout.put("dataDirs", dirs);
        layout.put("indexDir", rel(root, new File(defaultPath(root, g), "index").getPath()));
        layout.put("dataFileSize", g.commitLog);
        List<Object> df = new ArrayList<>();
        for (File f : dataFiles(root, g)) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("path", rel(root, f.getPath()));
            m.put("size", f.length());
            df.add(m);
        }
        layout.put("dataFiles", df);
        List<Object> ixf = new ArrayList<>();
        for (File f : indexFiles(root, g)) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("path", rel(root, f.getPath()));
            m.put("size", f.length());
            ixf.add(m);
        }
        layout.put("indexFiles", ixf);
        File[] classic = new File(root, "commitlog").listFiles();
        List<Object> cf = new ArrayList<>();
        if (classic != null) {
            Arrays.sort(classic, Comparator.comparing(File::getName));
            for (File f : classic) {
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("path", rel(root, f.getPath()));
                m.put("size", f.length());
                cf.add(m);
            }
        }
        layout.put("classicCommitLogFiles", cf);
        out.put("layout", layout);

        // Data files: DLedgerMmapFileStore.recover's walk, without its checks (they are reported, not applied).
        List<Object> entries = new ArrayList<>();
        List<Object> pads = new ArrayList<>();
        Map<String, Object> stop = new LinkedHashMap<>();
        long dataEnd = 0;
        boolean stopped = false;
        for (File f : dataFiles(root, g)) {
            long base = Long.parseLong(f.getName());
            byte[] bytes = Files.readAllBytes(f.toPath());
            for (int i = bytes.length - 1; i >= 0; i--) {
                if (bytes[i] != 0) {
                    dataEnd = Math.max(dataEnd, base + i + 1);
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
                    stopped = pos < bytes.length;  // a tail shorter than a pad: the walk cannot go on
                    if (stopped) {
                        stop.put("at", base + pos);
                        stop.put("why", "fewer than 8 bytes left in the file");
                    }
                    break;
                }
                int magic = bb.getInt(pos);
                int size = bb.getInt(pos + 4);
                if (magic == MmapFileList.BLANK_MAGIC_CODE) {
                    Map<String, Object> p = new LinkedHashMap<>();
                    p.put("file", rel(root, f.getPath()));
                    p.put("pos", base + pos);
                    p.put("filePos", pos);
                    p.put("remaining", size);
                    p.put("remainingIsFileRest", size == bytes.length - pos);
                    pads.add(p);
                    break;  // the rest of the file is the pad: on to the next file
                }
                if (magic == 0 && size == 0) {
                    stopped = true;
                    stop.put("at", base + pos);
                    stop.put("why", "zeros (the end of the written entries)");
                    break;
                }
                if (pos + DLedgerEntry.BODY_OFFSET > bytes.length || size <= DLedgerEntry.HEADER_SIZE
                    || pos + size > bytes.length) {
                    stopped = true;
                    stop.put("at", base + pos);
                    stop.put("why", "an entry header whose size does not fit (torn or garbage)");
                    stop.put("magic", magic);
                    stop.put("size", size);
                    stop.put("bytesLeftInFile", bytes.length - pos);
                    break;
                }
                bb.position(pos);
                DLedgerEntry e = DLedgerEntryCoder.decode(bb, true);
                Map<String, Object> m = entry(e, base + pos);
                m.put("file", rel(root, f.getPath()));
                entries.add(m);
                if (e.getBody() == null || (Long) m.get("pos") != base + pos) {
                    stopped = true;
                    stop.put("at", base + pos);
                    stop.put("why", e.getBody() == null ? "bodySize >= size" : "pos field != position");
                    break;
                }
                pos += size;
            }
        }
        Map<String, Object> data = new LinkedHashMap<>();
        data.put("entries", entries);
        data.put("pads", pads);
        data.put("walkStop", stop.isEmpty() ? null : stop);
        data.put("dataEnd", dataEnd);
        out.put("data", data);

        // Index files: 32-byte units, unit i at i * 32 over the concatenated files (a zero magic ends them).
        List<Object> units = new ArrayList<>();
        long indexEnd = 0;
        boolean ended = false;
        for (File f : indexFiles(root, g)) {
            long base = Long.parseLong(f.getName());
            byte[] bytes = Files.readAllBytes(f.toPath());
            for (int i = bytes.length - 1; i >= 0; i--) {
                if (bytes[i] != 0) {
                    indexEnd = Math.max(indexEnd, base + i + 1);
                    break;
                }
            }
            ByteBuffer bb = ByteBuffer.wrap(bytes);
            for (int pos = 0; !ended && pos + DLedgerMmapFileStore.INDEX_UNIT_SIZE <= bytes.length;
                 pos += DLedgerMmapFileStore.INDEX_UNIT_SIZE) {
                int magic = bb.getInt(pos);
                if (magic == 0) {
                    ended = true;
                    break;
                }
                units.add(Arrays.asList(base + pos, magic, bb.getLong(pos + 4), bb.getInt(pos + 12),
                    bb.getLong(pos + 16), bb.getLong(pos + 24)));
            }
        }
        Map<String, Object> index = new LinkedHashMap<>();
        index.put("units[offset,magic,pos,size,index,term]", units);
        index.put("indexEnd", indexEnd);
        out.put("index", index);

        Map<String, Object> meta = new LinkedHashMap<>();
        File dp = defaultPath(root, g);
        meta.put("checkpoint", props(new File(dp, DLedgerMmapFileStore.CHECK_POINT_FILE)));
        meta.put("checkpoint.bak", props(new File(dp, DLedgerMmapFileStore.CHECK_POINT_FILE + ".bak")));
        meta.put("currterm", props(new File(dp, MemberState.TERM_PERSIST_FILE)));
        meta.put("currterm.bak", props(new File(dp, MemberState.TERM_PERSIST_FILE + ".bak")));
        out.put("meta", meta);
        return out;
    }

    /** RocketMQ's own checkpoint file (FORMATS.md: five int64 at 0, 8, 16, 24, 32) as it is, before any load. */
    static Map<String, Object> storeCheckpoint(String root) throws IOException {
        File f = new File(root, "checkpoint");
        if (!f.isFile()) {
            return null;
        }
        ByteBuffer bb = ByteBuffer.wrap(Files.readAllBytes(f.toPath()));
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("physicMsgTimestamp", bb.getLong(0));
        m.put("logicsMsgTimestamp", bb.getLong(8));
        m.put("indexMsgTimestamp", bb.getLong(16));
        m.put("masterFlushedOffset", bb.getLong(24));
        m.put("confirmPhyOffset", bb.getLong(32));
        return m;
    }

    /** One DLedger properties file (checkpoint, currterm) as DLedger's IOUtils reads it: text and parsed keys. */
    static Map<String, Object> props(File f) throws IOException {
        if (!f.exists()) {
            return null;
        }
        Map<String, Object> m = new LinkedHashMap<>();
        String text = IOUtils.file2String(f);
        m.put("text", text);
        Properties p = text == null ? null : IOUtils.string2Properties(text);
        m.put("properties", p == null ? null : new TreeMap<>(p));
        return m;
    }

    /** One entry's header fields and what its body is. */
    static Map<String, Object> entry(DLedgerEntry e, long at) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("index", e.getIndex());
        m.put("term", e.getTerm());
        m.put("pos", e.getPos());
        m.put("size", e.getSize());
        m.put("magic", e.getMagic());
        m.put("channel", e.getChannel());
        m.put("chainCrc", e.getChainCrc());
        m.put("bodyCrc", e.getBodyCrc());
        byte[] body = e.getBody();
        m.put("bodySize", body == null ? null : body.length);
        if (body != null) {
            m.put("bodyCrc32", UtilAll.crc32(body));
            m.put("bodySha256", Judge.sha256(body));
            ByteBuffer b = ByteBuffer.wrap(body);
            boolean message = body.length >= 8 && b.getInt(0) == body.length
                && (b.getInt(4) == MESSAGE_MAGIC_V1 || b.getInt(4) == MESSAGE_MAGIC_V2);
            m.put("bodyIsMessage", message);
            if (message) {
                // MessageDecoder.PHY_POS_POSITION (28): the append hook wrote entry pos + BODY_OFFSET there
                m.put("messagePhysicalOffsetField", b.getLong(28));
            }
        }
        return m;
    }

    // ---------------------------------------------------------------- the store after load()

    /** What the real DLedgerMmapFileStore (and DLedgerCommitLog) hold after DefaultMessageStore.load(). */
    static Map<String, Object> recovered(DefaultMessageStore store, String root) {
        DLedgerCommitLog cl = commitLog(store);
        DLedgerMmapFileStore fs = fileStore(store);
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("ledgerBeginIndex", fs.getLedgerBeginIndex());
        m.put("ledgerEndIndex", fs.getLedgerEndIndex());
        m.put("ledgerEndTerm", fs.getLedgerEndTerm());
        m.put("committedIndex", fs.getCommittedIndex());
        m.put("committedPos", fs.getCommittedPos());
        m.put("currTerm", server(store).getMemberState().currTerm());
        m.put("dividedCommitlogOffset", cl.getDividedCommitlogOffset());
        m.put("data", fileList(fs.getDataFileList(), root));
        m.put("index", fileList(fs.getIndexFileList(), root));
        m.put("commitLogMinOffset", cl.getMinOffset());
        m.put("commitLogMaxOffset", cl.getMaxOffset());
        return m;
    }

    static Map<String, Object> fileList(MmapFileList list, String root) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("minOffset", list.getMinOffset());
        m.put("maxWrotePosition", list.getMaxWrotePosition());
        List<Object> files = new ArrayList<>();
        for (MmapFile f : list.getMappedFiles()) {
            files.add(Arrays.asList(rel(root, f.getFileName()), f.getFileFromOffset(), f.getStartPosition(), f.getWrotePosition()));
        }
        m.put("files[path,fileFromOffset,startPosition,wrotePosition]", files);
        return m;
    }

    /** Every entry from ledgerBeginIndex to ledgerEndIndex as the real DLedgerMmapFileStore.get(index) reads it. */
    static List<Map<String, Object>> entries(DefaultMessageStore store) {
        DLedgerMmapFileStore fs = fileStore(store);
        List<Map<String, Object>> out = new ArrayList<>();
        for (long i = Math.max(0, fs.getLedgerBeginIndex()); i >= 0 && i <= fs.getLedgerEndIndex(); i++) {
            DLedgerEntry e = fs.get(i);
            out.add(entry(e, e.getPos()));
        }
        return out;
    }

    /**
     * Every record from CommitLog.getMinOffset to getMaxOffset, read as ReputMessageService reads them: getData,
     * the commitlog's checkMessageAndReturnSize (DLedgerCommitLog's: it skips the 48-byte entry header and
     * hands a classic record of a mixed store to CommitLog's), the buffer size (entry) or message size (classic),
     * rollNextFile on a pad or blank. `crcErrors` (when not null) collects records the checker refused.
     */
    static List<Map<String, Object>> records(DefaultMessageStore store, Function<ByteBuffer, DispatchRequest> check,
        Function<ByteBuffer, MessageExt> decode, List<Map<String, Object>> crcErrors) {
        List<Map<String, Object>> out = new ArrayList<>();
        CommitLog log = store.getCommitLog();
        long offset = log.getMinOffset();
        long max = log.getMaxOffset();
        while (offset < max) {
            SelectMappedBufferResult sbr = log.getData(offset);
            if (sbr == null) {
                offset = log.rollNextFile(offset);
                continue;
            }
            try {
                ByteBuffer bb = sbr.getByteBuffer();
                int pos = 0;
                boolean rolled = false;
                while (pos < sbr.getSize()) {
                    bb.position(pos);
                    DispatchRequest d = check.apply(bb.slice(pos, sbr.getSize() - pos));
                    if (d.isSuccess() && d.getMsgSize() == 0) {
                        offset = log.rollNextFile(sbr.getStartOffset() + pos);
                        rolled = true;
                        break;
                    }
                    long at = sbr.getStartOffset() + pos;
                    if (!d.isSuccess()) {
                        Judge.crcError(crcErrors, at, bb.getInt(pos));
                        int skip = d.getBufferSize() > 0 ? d.getBufferSize() : d.getMsgSize();
                        if (skip <= 0) {
                            offset = max;  // the dispatcher stops here too
                            rolled = true;
                            break;
                        }
                        pos += skip;
                        continue;
                    }
                    int size = d.getBufferSize() == -1 ? d.getMsgSize() : d.getBufferSize();
                    int header = size - d.getMsgSize();  // 48 for a DLedger entry, 0 for a classic record
                    ByteBuffer msg = bb.slice(pos + header, d.getMsgSize());
                    MessageExt m = decode.apply(msg);
                    String file = UtilAll.offset2FileName(at - at % store.getMessageStoreConfig().getMappedFileSizeCommitLog());
                    Map<String, Object> r = Judge.record(file, d.getCommitLogOffset(), d.getMsgSize(), msg.getInt(4), d, m);
                    r.put("storage", header == 0 ? "commitlog" : "dledger");
                    if (header != 0) {
                        r.put("entryPos", at);
                        r.put("entryIndex", bb.getLong(pos + 8));
                        r.put("entryTerm", bb.getLong(pos + 16));
                    }
                    out.add(r);
                    pos += size;
                }
                if (!rolled) {
                    offset = sbr.getStartOffset() + sbr.getSize();
                }
            } finally {
                sbr.release();
            }
        }
        return out;
    }

    /**
     * `load`'s walk of a DLedger store's files as they are (Judge.walkFiles for the classic part of a mixed
     * store, then the DLedger data files): the store's own checker, entry by entry; a pad (magic -1) ends a file.
     */
    static Judge.Walk walk(Function<ByteBuffer, DispatchRequest> check, String root, Geometry g) throws IOException {
        Judge.Walk w = Judge.walkFiles(check, root, g.commitLog, g.lmq);
        boolean classic = w.end > 0 || new File(root, "commitlog").list() != null
            && new File(root, "commitlog").list().length > 0;
        boolean stopped = !"end".equals(w.stop);
        boolean first = true;
        for (File f : dataFiles(root, g)) {
            long base = Long.parseLong(f.getName());
            if (first && !classic) {
                w.firstFile = base;
            }
            first = false;
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
                    w.end = base + pos;
                    stopped = true;
                    break;
                }
                bb.position(pos);
                DispatchRequest d = check.apply(bb);
                if (!d.isSuccess()) {
                    w.end = base + pos;
                    w.stop = "bad entry at " + (base + pos);
                    stopped = true;
                    break;
                }
                if (d.getMsgSize() == 0) {
                    boolean pad = bb.getInt(pos) == MmapFileList.BLANK_MAGIC_CODE;
                    w.end = pad ? base + bytes.length : base + pos;
                    stopped = !pad;
                    break;
                }
                if (Judge.dispatched(d.getSysFlag())) {
                    long[] unit = {d.getCommitLogOffset(), d.getMsgSize(), d.getTagsCode()};
                    w.dispatch.put(d.getTopic() + "/" + d.getQueueId() + "/" + d.getConsumeQueueOffset(), unit);
                    if (g.lmq) {
                        Judge.lmqUnits(d.getTopic(), d.getQueueId(), d.getPropertiesMap(), unit, w.dispatch);
                    }
                }
                pos += d.getBufferSize() == -1 ? d.getMsgSize() : d.getBufferSize();
            }
        }
        return w;
    }

    /** What the real recovery left out of what the files hold (entries, data bytes, index units, files). */
    static Map<String, Object> cut(Map<String, Object> disk, Map<String, Object> rec, String root, Geometry g) {
        Map<String, Object> m = new LinkedHashMap<>();
        @SuppressWarnings("unchecked")
        Map<String, Object> data = (Map<String, Object>) disk.get("data");
        @SuppressWarnings("unchecked")
        List<Map<String, Object>> entries = (List<Map<String, Object>>) data.get("entries");
        long lastIndexOnDisk = entries.isEmpty() ? -1 : (Long) entries.get(entries.size() - 1).get("index");
        long walkEnd = entries.isEmpty() ? 0 : (Long) entries.get(entries.size() - 1).get("pos")
            + (Integer) entries.get(entries.size() - 1).get("size");
        long end = (Long) rec.get("ledgerEndIndex");
        @SuppressWarnings("unchecked")
        long kept = (Long) ((Map<String, Object>) rec.get("data")).get("maxWrotePosition");
        m.put("entriesOnDisk", entries.size());
        m.put("lastIndexOnDisk", lastIndexOnDisk);
        m.put("entriesCut", lastIndexOnDisk - end);
        m.put("lastEntryEndOnDisk", walkEnd);
        m.put("dataEndOnDisk", data.get("dataEnd"));
        m.put("dataKeptTo", kept);
        m.put("dataBytesCut", Math.max(0, (Long) data.get("dataEnd") - kept));
        @SuppressWarnings("unchecked")
        List<Object> units = (List<Object>) ((Map<String, Object>) disk.get("index")).get("units[offset,magic,pos,size,index,term]");
        @SuppressWarnings("unchecked")
        long indexKept = (Long) ((Map<String, Object>) rec.get("index")).get("maxWrotePosition");
        m.put("indexUnitsOnDisk", units.size());
        m.put("indexUnitsKept", indexKept / 32);
        List<String> gone = new ArrayList<>();
        for (File f : DLedgerFiles.dataFiles(root, g)) {
            gone.add(DLedgerFiles.rel(root, f.getPath()));
        }
        @SuppressWarnings("unchecked")
        Map<String, Object> layout = (Map<String, Object>) disk.get("layout");
        List<String> before = new ArrayList<>();
        for (Object o : (List<?>) layout.get("dataFiles")) {
            before.add((String) ((Map<?, ?>) o).get("path"));
        }
        before.removeAll(gone);
        m.put("dataFilesDeleted", before);
        return m;
    }

    interface TimeSearch {
        List<Object> answers(String topic, int queueId, long timestamp);
    }

    /** getOffsetInQueueByTime per queue at the first, middle and last store time and around them (`search` asks). */
    static List<Object> timeSearches(List<Map<String, Object>> records, String header, TimeSearch search) {
        Map<String, List<Long>> times = new TreeMap<>();
        for (Map<String, Object> r : records) {
            if ("MESSAGE".equals(r.get("kind")) && Judge.dispatched((Integer) r.get("sysFlag"))) {
                times.computeIfAbsent(r.get("topic") + "/" + r.get("queueId"), k -> new ArrayList<>())
                    .add((Long) r.get("storeTimestamp"));
            }
        }
        List<Object> out = new ArrayList<>();
        times.forEach((key, ts) -> {
            String topic = key.substring(0, key.lastIndexOf('/'));
            int q = Integer.parseInt(key.substring(key.lastIndexOf('/') + 1));
            Set<Long> probes = new LinkedHashSet<>();
            long first = ts.get(0);
            long mid = ts.get(ts.size() / 2);
            long last = ts.get(ts.size() - 1);
            for (long t : new long[] {0, first - 1, first, mid, mid + 1, last, last + 1, Long.MAX_VALUE}) {
                probes.add(t);
            }
            for (long t : probes) {
                List<Object> row = new ArrayList<>(List.of(topic, q, t));
                row.addAll(search.answers(topic, q, t));
                out.add(row);
            }
        });
        List<Object> wrapped = new ArrayList<>();
        wrapped.add(header);
        wrapped.addAll(out);
        return wrapped;
    }

    /**
     * store.queryMessage(topic, key, 100000, 0, Long.MAX_VALUE) for every KEYS entry and UNIQ_KEY: the physical
     * offsets of the messages it returns (each message's PHYSICALOFFSET field, MessageDecoder.PHY_POS_POSITION 28).
     */
    static Map<String, Object> lookups(DefaultMessageStore store, List<Map<String, Object>> records) {
        Map<String, Object> out = new TreeMap<>();
        for (Map<String, Object> r : records) {
            if (!"MESSAGE".equals(r.get("kind"))) {
                continue;
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
            String topic = (String) r.get("topic");
            for (String k : keys) {
                String key = topic + "#" + k;
                if (out.containsKey(key)) {
                    continue;
                }
                QueryMessageResult q = store.queryMessage(topic, k, Judge.MAX_KEYS, 0, Long.MAX_VALUE);
                List<Long> hits = new ArrayList<>();
                for (ByteBuffer b : q.getMessageBufferList()) {
                    hits.add(b.getLong(b.position() + 28));
                }
                q.release();
                hits.sort(Long::compare);
                out.put(key, hits);
            }
        }
        return out;
    }
}
