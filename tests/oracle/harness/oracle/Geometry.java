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

    /** File sizes from the files; index geometry from the arguments (it cannot be told from one file). */
    static Geometry of(String root, String[] extra) throws IOException {
        Geometry g = new Geometry();
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
        String[] queues = new File(root, "consumequeue").list();
        g.lmq = new File(root, "config/lmqConsumerOffset.json").exists()
            || queues != null && java.util.Arrays.stream(queues).anyMatch(q -> q.startsWith("%LMQ%"));
        if (extra.length >= 2) {
            g.hashSlots = Integer.parseInt(extra[0]);
            g.indexNum = Integer.parseInt(extra[1]);
        }
        return g;
    }

    Object json() {
        java.util.Map<String, Object> geo = new java.util.LinkedHashMap<>();
        geo.put("mappedFileSizeCommitLog", commitLog);
        geo.put("mappedFileSizeConsumeQueue", consumeQueue);
        geo.put("maxHashSlotNum", hashSlots);
        geo.put("maxIndexNum", indexNum);
        geo.put("timerWheelEnable", timer);
        return geo;
    }
}
