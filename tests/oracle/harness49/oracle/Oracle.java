/*
 * The 4.9.8 oracle's entry point (built with RMQ_TAG=rocketmq-all-4.9.8, run with ORACLE_VERSION=4.9.8).
 * Commands, as the 5.3.3 oracle's:
 *   recover STORE [SLOTS NUM]  run the real 4.9.8 recovery in place (load, start, clean shutdown)
 *   load STORE [SLOTS NUM]     open STORE with the real 4.9.8 DefaultMessageStore, recover, print one JSON object
 *   trace-bodies SEED [COUNT], trace-decode FILE  the real 4.9.8 TraceDataEncoder (harness/oracle/TraceBodies)
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
            case "load":
                rc = Judge.onCopy(args[1], (root, shown) -> Load.judge(root, shown, extra));
                break;
            default:
                System.err.println("unknown command " + args[0] + " (the 4.9.8 oracle has load and recover)");
                rc = 2;
        }
        System.exit(rc);
    }
}
