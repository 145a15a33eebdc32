/* Opening a store with the real 4.9.8 DefaultMessageStore (no timer wheel in 4.9) on the harness geometry. */
package oracle;

import java.io.File;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.config.BrokerRole;
import org.apache.rocketmq.store.config.FlushDiskType;
import org.apache.rocketmq.store.config.MessageStoreConfig;
import org.apache.rocketmq.store.stats.BrokerStatsManager;

public final class Stores {
    public static final String BROKER_NAME = "broker-a";

    public final DefaultMessageStore store;
    public final BrokerStatsManager stats;
    public final MessageStoreConfig config;
    public final boolean loaded;

    private Stores(DefaultMessageStore store, BrokerStatsManager stats, MessageStoreConfig config, boolean loaded) {
        this.store = store;
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
        c.setMaxHashSlotNum(g.hashSlots);
        c.setMaxIndexNum(g.indexNum);
        c.setFlushDiskType(FlushDiskType.ASYNC_FLUSH);
        c.setBrokerRole(BrokerRole.ASYNC_MASTER);
        c.setDuplicationEnable(false);
        c.setMaxMsgsNumBatch(100000);
        c.setHaListenPort(0);  // 4.9's HAService listens when the store starts: any free port, not 10912
        if (g.dledgerSelfId != null) {
            DLedgerFiles.configure(c, g);  // enableDLegerCommitLog, a one-peer group on a free local port
        }
        return c;
    }

    static BrokerConfig brokerConfig() {
        BrokerConfig bc = new BrokerConfig();
        bc.setBrokerName(BROKER_NAME);
        return bc;
    }

    /** Builds the store and loads it (recovery runs here). */
    public static Stores open(String root, Geometry g) throws Exception {
        MessageStoreConfig c = config(root, g);
        BrokerStatsManager stats = new BrokerStatsManager("DefaultCluster", true);
        DefaultMessageStore store = new DefaultMessageStore(c, stats, null, brokerConfig());
        boolean loaded = store.load();
        return new Stores(store, stats, c, loaded);
    }

    /** The same with the broker's own config objects (DLedgerFixture49 shares them with its broker holder). */
    public static Stores open(MessageStoreConfig c, BrokerConfig bc, BrokerStatsManager stats) throws Exception {
        DefaultMessageStore store = new DefaultMessageStore(c, stats, null, bc);
        boolean loaded = store.load();
        return new Stores(store, stats, c, loaded);
    }

    public void start() throws Exception {
        store.start();
    }

    public void waitDispatched() throws InterruptedException {
        for (int i = 0; i < 600 && store.dispatchBehindBytes() != 0; i++) {
            Thread.sleep(50);
        }
        Thread.sleep(200);
    }

    public void shutdown() {
        store.shutdown();
        stats.shutdown();
    }
}
