/*
 * A master with no slaves: registered under META-INF/service/ so DefaultMessageStore takes it instead of
 * DefaultHAService, which would listen on port 10912. It writes nothing; it reports zero slaves.
 */
package oracle;

import java.util.Collections;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.rocketmq.remoting.protocol.body.HARuntimeInfo;
import org.apache.rocketmq.store.CommitLog;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.ha.HAClient;
import org.apache.rocketmq.store.ha.HAConnection;
import org.apache.rocketmq.store.ha.HAConnectionStateNotificationRequest;
import org.apache.rocketmq.store.ha.HAService;
import org.apache.rocketmq.store.ha.WaitNotifyObject;

public class LoneMasterHAService implements HAService {
    private final AtomicInteger connections = new AtomicInteger();
    private final AtomicLong push2Slave = new AtomicLong();
    private final WaitNotifyObject waitNotify = new WaitNotifyObject();

    @Override public void init(DefaultMessageStore store) { }
    @Override public void start() { }
    @Override public void shutdown() { }
    @Override public void updateMasterAddress(String newAddr) { }
    @Override public void updateHaMasterAddress(String newAddr) { }
    @Override public int inSyncReplicasNums(long masterPutWhere) { return 1; }
    @Override public AtomicInteger getConnectionCount() { return connections; }
    @Override public void putRequest(CommitLog.GroupCommitRequest request) {
        request.wakeupCustomer(org.apache.rocketmq.store.PutMessageStatus.PUT_OK);
    }
    @Override public void putGroupConnectionStateRequest(HAConnectionStateNotificationRequest request) { }
    @Override public List<HAConnection> getConnectionList() { return Collections.emptyList(); }
    @Override public HAClient getHAClient() { return null; }
    @Override public AtomicLong getPush2SlaveMaxOffset() { return push2Slave; }
    @Override public HARuntimeInfo getRuntimeInfo(long masterPutWhere) { return new HARuntimeInfo(); }
    @Override public WaitNotifyObject getWaitNotifyObject() { return waitNotify; }
    @Override public boolean isSlaveOK(long masterPutWhere) { return false; }
}
