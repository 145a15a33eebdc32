/* File sizes of a store: the harness writes small ones, `load` reads them from the files (both versions). */
package oracle;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

public final class Geometry {
    public int commitLog = 1024 * 1024;
    public int consumeQueue = 6000;
    public int timerLog = 1024 * 1024;
    public int hashSlots = 64;
    public int indexNum = 4000;
    public boolean timer;
    public int timerRollWindowSlot;  // 0: the broker's default (2 days of slots)
    public int timerPrecisionMs;  // 0: the broker's default (1000 ms)
    public boolean lmq;  // enableLmq + enableMultiDispatch: the store has %LMQ% queues or lmqConsumerOffset.json
    // DLedger (enableDLegerCommitLog): the store has a dledger-<selfId> directory. dLegerSelfId is the name's
    // tail; the data path is <root>/dledger-<selfId>/data unless broker.conf names storePathDLedgerCommitLog
    // (relative paths there are against the store root; several are joined with MULTI_PATH_SPLITTER ",").
    public String dledgerSelfId;
    public String dledgerGroup = "broker-a";
    public String dledgerDataPath;  // null: DLedger's default (dledger-<selfId>/data)

    /** File sizes from the files; index geometry from the arguments (it cannot be told from one file). */
    static Geometry of(String root, String[] extra) throws IOException {
        Geometry g = new Geometry();
        File[] cl = new File(root, "commitlog").listFiles();
        if (cl != null && cl.length > 0) {
            g.commitLog = (int) cl[0].length();
        }
        String[] top = new File(root).list();
        for (String name : top == null ? new String[0] : top) {
            File d = new File(root, name);
            if (name.startsWith("dledger-") && d.isDirectory() && (new File(d, "index").isDirectory()
                || new File(d, "data").isDirectory() || new File(d, "currterm").isFile())) {
                g.dledgerSelfId = name.substring("dledger-".length());
            }
        }
        if (g.dledgerSelfId != null) {
            File conf = new File(root, "broker.conf");
            if (conf.isFile()) {
                java.util.Properties p = new java.util.Properties();
                try (java.io.InputStream in = Files.newInputStream(conf.toPath())) {
                    p.load(in);
                }
                g.dledgerGroup = p.getProperty("dLegerGroup", g.dledgerGroup).trim();
                String paths = p.getProperty("storePathDLedgerCommitLog");
                if (paths != null && !paths.isBlank()) {
                    StringBuilder abs = new StringBuilder();
                    for (String one : paths.trim().split(",")) {
                        abs.append(abs.length() == 0 ? "" : ",").append(new File(one).isAbsolute() ? one : root + File.separator + one);
                    }
                    g.dledgerDataPath = abs.toString();
                }
            }
            // DLedger's data files have the commitlog's size (DLedgerCommitLog: mappedFileSizeForEntryData)
            for (String dir : g.dledgerDataDirs(root)) {
                File[] data = new File(dir).listFiles();
                if (data != null && data.length > 0) {
                    g.commitLog = (int) data[0].length();
                }
            }
        }
        try (Stream<Path> files = Files.walk(Path.of(root, "consumequeue"))) {
            files.filter(Files::isRegularFile).findFirst().ifPresent(p -> g.consumeQueue = (int) p.toFile().length());
        } catch (java.nio.file.NoSuchFileException e) {
            // no consume queues yet
        }
        File[] tl = new File(root, "timerlog").listFiles();
        if (tl != null && tl.length > 0) {
            java.util.Arrays.sort(tl);  // the first file by name (its offset), not the directory's order
            g.timerLog = (int) tl[0].length();
        }
        g.timer = new File(root, "timerwheel").exists();
        String[] queues = new File(root, "consumequeue").list();
        g.lmq = new File(root, "config/lmqConsumerOffset.json").exists()
            || queues != null && java.util.Arrays.stream(queues).anyMatch(q -> q.startsWith("%LMQ%"));
        if (extra.length >= 2) {
            g.hashSlots = Integer.parseInt(extra[0]);
            g.indexNum = Integer.parseInt(extra[1]);
        }
        return g;
    }

    /** The DLedger data directories (DLedgerConfig.getDataStorePath, split as MultiPathMmapFileList splits it). */
    java.util.List<String> dledgerDataDirs(String root) {
        String path = dledgerDataPath != null ? dledgerDataPath
            : root + File.separator + "dledger-" + dledgerSelfId + File.separator + "data";
        return java.util.Arrays.asList(path.trim().split(","));
    }

    Object json() {
        java.util.Map<String, Object> geo = new java.util.LinkedHashMap<>();
        geo.put("mappedFileSizeCommitLog", commitLog);
        geo.put("mappedFileSizeConsumeQueue", consumeQueue);
        geo.put("maxHashSlotNum", hashSlots);
        geo.put("maxIndexNum", indexNum);
        geo.put("timerWheelEnable", timer);
        if (dledgerSelfId != null) {
            geo.put("enableDLegerCommitLog", true);
            geo.put("dLegerSelfId", dledgerSelfId);
            geo.put("dLegerGroup", dledgerGroup);
        }
        return geo;
    }
}
