/* Opening a store with the real DefaultMessageStore (and its TimerMessageStore) on the harness geometry. */
package oracle;

import java.io.File;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.config.BrokerRole;
import org.apache.rocketmq.store.config.FlushDiskType;
import org.apache.rocketmq.store.config.MessageStoreConfig;
import org.apache.rocketmq.store.stats.BrokerStatsManager;
import org.apache.rocketmq.store.timer.TimerCheckpoint;
import org.apache.rocketmq.store.timer.TimerMessageStore;
import org.apache.rocketmq.store.timer.TimerMetrics;

public final class Stores {
    public static final String BROKER_NAME = "broker-a";

    public final DefaultMessageStore store;
    public final TimerMessageStore timer;
    public final BrokerStatsManager stats;
    public final MessageStoreConfig config;
    public final boolean loaded;

    private Stores(DefaultMessageStore store, TimerMessageStore timer, BrokerStatsManager stats,
        MessageStoreConfig config, boolean loaded) {
        this.store = store;
        this.timer = timer;
        this.stats = stats;
        this.config = config;
        this.loaded = loaded;
    }

    public static MessageStoreConfig config(String root, Geometry g) {
        MessageStoreConfig c = new MessageStoreConfig();
        c.setStorePathRootDir(root);
        c.setStorePathCommitLog(root + File.separator + "commitlog");
        c.setMappedFileSizeCommitLog(g.commitLog);
        c.setMappedFileSizeConsumeQueue(g.consumeQueue);
        c.setMappedFileSizeTimerLog(g.timerLog);
        c.setMaxHashSlotNum(g.hashSlots);
        c.setMaxIndexNum(g.indexNum);
        c.setTimerWheelEnable(g.timer);
        if (g.timerRollWindowSlot > 0) {
            c.setTimerRollWindowSlot(g.timerRollWindowSlot);
        }
        if (g.timerPrecisionMs > 0) {
            c.setTimerPrecisionMs(g.timerPrecisionMs);
        }
        c.setFlushDiskType(FlushDiskType.ASYNC_FLUSH);
        c.setBrokerRole(BrokerRole.ASYNC_MASTER);
        c.setDuplicationEnable(false);
        c.setEnableCompaction(false);
        c.setMaxMsgsNumBatch(100000);
        c.setEnableLmq(g.lmq);
        c.setEnableMultiDispatch(g.lmq);
        if (g.dledgerSelfId != null) {
            DLedgerFiles.configure(c, g);  // enableDLegerCommitLog, a one-peer group on a free local port
        }
        return c;
    }

    /** Builds the store (and the timer store when the geometry says so), loads it (recovery runs here). */
    public static Stores open(String root, Geometry g, ConcurrentMap<String, TopicConfig> topics) throws Exception {
        BrokerConfig bc = new BrokerConfig();
        bc.setBrokerName(BROKER_NAME);
        return open(config(root, g), g, topics, bc, new BrokerStatsManager("DefaultCluster", true));
    }

    /** The same with the broker's own config objects (PopStore shares them with its broker holder). */
    public static Stores open(MessageStoreConfig c, Geometry g, ConcurrentMap<String, TopicConfig> topics,
        BrokerConfig bc, BrokerStatsManager stats) throws Exception {
        String root = c.getStorePathRootDir();
        DefaultMessageStore store = new DefaultMessageStore(c, stats, null, bc,
            topics == null ? new ConcurrentHashMap<>() : topics);
        TimerMessageStore timer = null;
        if (g.timer) {
            TimerCheckpoint cp = new TimerCheckpoint(root + "/config/timercheck");
            TimerMetrics metrics = new TimerMetrics(root + "/config/timermetrics");
            timer = new TimerMessageStore(store, c, cp, metrics, stats);
            store.setTimerMessageStore(timer);
        }
        boolean loaded = store.load();
        if (timer != null) {
            loaded = timer.load() && loaded;
        }
        return new Stores(store, timer, stats, c, loaded);
    }

    public void start() throws Exception {
        store.start();
        if (timer != null) {
            timer.start(true);
        }
    }

    public void waitDispatched() throws InterruptedException {
        for (int i = 0; i < 600 && store.dispatchBehindBytes() != 0; i++) {
            Thread.sleep(50);
        }
        Thread.sleep(200);
    }

    public void shutdown() {
        if (timer != null) {
            timer.shutdown();
        }
        store.shutdown();
        stats.shutdown();
    }
}
