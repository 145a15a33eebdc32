/*
 * The 4.9.8 oracle's entry point (built with RMQ_TAG=rocketmq-all-4.9.8, run with ORACLE_VERSION=4.9.8).
 * Commands, as the 5.3.3 oracle's:
 *   recover STORE [SLOTS NUM]  run the real 4.9.8 recovery in place (load, start, clean shutdown)
 *   clean STORE [KEY=VALUE...] [rounds=N]  on a copy: the real 4.9.8 retention services' next runs (Clean)
 *   load STORE [SLOTS NUM]     open STORE with the real 4.9.8 DefaultMessageStore, recover, print one JSON object
 *   queue-offsets STORE SLOTS NUM SPEC...  the real 4.9.8 min/max/by-time answers (QueueOffsets)
 *   dledger-store DIR [SEED]   a store of a 4.9.8 DLedger broker (DLedgerFixture49; DLedgerFixture's plain shape)
 *   dledger-read STORE         what the real 4.9.8 and DLedger classes read from a copy of STORE (DLedgerFixture49)
 *   trace-bodies SEED [COUNT], trace-decode FILE  the real 4.9.8 TraceDataEncoder (harness/oracle/TraceBodies)
 *   config-edit SPEC           topic and group edits by the real 4.9.8 managers (harness/oracle/ConfigEdit)
 */
package oracle;

public final class Oracle {
    private Oracle() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            System.err.println("usage: oracle (4.9.8) load STORE [HASH_SLOTS INDEX_NUM] | recover STORE [...]");
            System.exit(2);
        }
        String[] extra = java.util.Arrays.copyOfRange(args, 2, args.length);
        int rc;
        switch (args[0]) {
            case "recover":
                rc = Load.recover(args[1], extra);
                break;
            case "trace-bodies":
                rc = TraceBodies.run(Long.parseLong(args[1]), args.length > 2 ? Integer.parseInt(args[2]) : 200);
                break;
            case "trace-decode":
                rc = TraceBodies.decodeFile(args[1]);
                break;
            case "clean":
                rc = Clean.run(args[1], extra);
                break;
            case "load":
                rc = Judge.onCopy(args[1], (root, shown) -> Load.judge(root, shown, extra));
                break;
            case "queue-offsets":
                rc = QueueOffsets.run(args[1], extra);
                break;
            case "config-edit":
                rc = ConfigEdit.run(args[1]);
                break;
            case "dledger-store": {
                long seed = 20261126L;
                for (int i = 2; i < args.length; i++) {
                    if (args[i].equals("--variant")) {
                        if (!args[++i].equals("plain")) {
                            throw new IllegalArgumentException("the 4.9.8 oracle writes the plain variant only");
                        }
                    } else {
                        seed = Long.parseLong(args[i]);
                    }
                }
                DLedgerFixture49.write(args[1], seed);
                rc = 0;
                break;
            }
            case "dledger-read":
                rc = DLedgerFixture49.read(args[1]);
                break;
            default:
                System.err.println("unknown command " + args[0]
                    + " (the 4.9.8 oracle has load, recover, queue-offsets, dledger-store, dledger-read, config-edit,"
                    + " trace-bodies, trace-decode)");
                rc = 2;
        }
        System.exit(rc);
    }
}
