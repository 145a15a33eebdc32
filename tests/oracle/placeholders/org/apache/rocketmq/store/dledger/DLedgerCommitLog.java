/* Placeholder for the DLedger commitlog (enableDLegerCommitLog=false here): building one is an error. */
package org.apache.rocketmq.store.dledger;

import org.apache.rocketmq.store.CommitLog;
import org.apache.rocketmq.store.DefaultMessageStore;

public class DLedgerCommitLog extends CommitLog {
    public DLedgerCommitLog(DefaultMessageStore store) {
        super(store);
        throw new UnsupportedOperationException("DLedger is not part of the oracle");
    }

    public Server getdLedgerServer() {
        throw new UnsupportedOperationException("DLedger is not part of the oracle");
    }

    public interface Server {
        Config getdLedgerConfig();
    }

    public interface Config {
        String getDataStorePath();
    }
}
