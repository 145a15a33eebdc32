/*
 * The oracle's entry point. Commands:
 *   timer-store DIR [SEED]   write the 5.x timer fixture store into the new directory DIR (+ expect.json)
 *   timer-states DIR [SEED]  a 5.x timer store with a message in each timer state (TimerStates)
 *   timer-crash DIR [SEED]   a 5.x timer store whose broker halts mid-enqueue (TimerCrash)
 *   timer-crash-expect DIR   expect.json of it, from a second JVM (the real recovery runs on a copy)
 *   recover STORE [SLOTS NUM]  run the real recovery in place (load, start, clean shutdown), as a broker run
 *   recover-without-timer STORE [SLOTS NUM]  the same with the timer wheel off (timer files untouched)
 *   bench STORE [REPEAT]     decode every record with MessageDecoder: once and warm (one thread)
 *   make-big DIR [MESSAGES [PRODUCERS [IPV6_PER_MILLE [TOPICS]]]]  a ~1.3 GB store (1.6 M messages by
 *                            default) through the real put path; PRODUCERS 0: a born host per message
 *   clean STORE [KEY=VALUE...] [rounds=N]  on a copy: the real retention services' next runs (Clean)
 *   load STORE [SLOTS NUM]   open STORE with the real DefaultMessageStore, recover, print one JSON object
 *   queue-offsets STORE SLOTS NUM SPEC...  the real min/max/by-time answers of queues TOPIC/QID at times @T (QueueOffsets)
 *   config-edit SPEC                   topic and group edits by the real managers, on copies (ConfigEdit)
 *   timer-run STORE [SINCE_PHY]  one broker run of a timer store in place until the timer caught up (TimerRun)
 *   batchcq-store DIR [SEED] a 5.x store with BatchCQ topics (inner-batch records) and an ordinary one (BatchStore)
 *   batchcq-load STORE       on a copy: load and start with topics.json, print every BatchConsumeQueue (BatchStore)
 *   rocksdb-store DIR [SEED] a storeType=defaultRocksDB store with RocksDB config (RocksDBFixture)
 *   rocksdb-read STORE       what the real RocksDB consume queue and config managers read from STORE (RocksDBFixture)
 *   rocksdb-v2-store DIR [SEED] a configManagerVersion=v2 store: topics, groups, offsets in config/rdb (RocksDBV2Fixture)
 *   rocksdb-v2-read STORE    what the real v2 config managers read from STORE (RocksDBV2Fixture)
 *   lmq-store DIR [SEED]     a 5.x store of an LMQ broker: records multi-dispatched to %LMQ% queues (LmqStore)
 *   compaction-store DIR [SEED]  a 5.x store with two compaction topics compacted by the real CompactionLog (CompactionFixture)
 *   compaction-read STORE    on a copy: the compaction queues as the real CompactionStore reads them (CompactionFixture)
 *   compaction-run STORE [PUTS [SEED]]  on a copy: the same after PUTS more puts and one doCompaction of every
 *                            compaction log (CompactionFixture)
 *   epoch-write FILE E-S[,E-S...]  an epoch file as the real EpochFileCache flushes it (EpochCases)
 *   epoch-consistent SLAVE_FILE SLAVE_END MASTER_FILE MASTER_END  the real findConsistentPoint (EpochCases)
 *   ha-pair DIR [SEED]       a master/slave pair under the real classic HA, then a failover and a rejoin (HaPair)
 *   tiered-store DIR [SEED]  a 5.x store behind the real TieredMessageStore (POSIX provider), its oldest
 *                            offsets only in the tiered tree after the local retention ran (TieredStore)
 *   tiered-load DIR OUT      what the real TieredMessageStore serves from DIR/store + DIR/tiered with the
 *                            metadata file it holds now (ranges, getMessage at every offset, key queries)
 *   autoswitch-pair DIR [SEED]  a controller-mode pair under the real AutoSwitchHAService: a failover at epoch 2
 *                            and the old master's rejoin, truncated by the real AutoSwitchHAClient (AutoSwitchPair)
 *   autoswitch-restart MASTER SLAVE EPOCH [--master-a]  in place: MASTER elected at EPOCH, SLAVE its slave (AutoSwitchPair)
 *   autoswitch-read STORE    on a copy: what a controller-mode load and start of STORE serves (AutoSwitchPair)
 *   ha-sync MASTER SLAVE SLOTS NUM  in place: SLAVE synced from MASTER by the real classic HA (HaSync)
 *   compaction-crash STORE   in place: every due compaction run up to replaceFiles, then the process halts (CompactionFixture)
 *   dledger-store DIR [SEED] [--variant plain|mixed|multipath|crash]  a store of a DLedger broker (DLedgerFixture)
 *   dledger-read STORE       what the real DLedger and store classes read from a copy of STORE (DLedgerFixture)
 *   subscriptions STORE      in place: groups' subscriptions and a SQL92 filter into STORE/config, and what the
 *                            real managers and filters make of them (Subscriptions)
 *   trace-bodies SEED [COUNT]  trace bodies written and read by the real TraceDataEncoder (TraceBodies)
 *   trace-decode FILE        the real trace decoder on each base64 body of FILE (TraceBodies)
 *   dlq-store DIR [SEED]     a store whose consumers sent messages to %DLQ% through the real send-back (DlqStore)
 *   group-pull STORE GROUP [TOPIC...]  what a push consumer of GROUP pulls from its committed offsets (GroupPull)
 *   trace-store DIR_A DIR_B [SEED]  two broker stores with traced messages and their trace messages (TraceStore)
 *   controller-store DIR [SEED] [--lone]  a controller-mode master's store with a confirm offset below the log end (ControllerStore)
 *   controller-read STORE    on copies: what the real store serves after four starts (ControllerStore)
 */
package oracle;

public final class Oracle {
    private Oracle() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            System.err.println("usage: oracle timer-store DIR [SEED] | load STORE [HASH_SLOTS INDEX_NUM]");
            System.exit(2);
        }
        int rc = 0;
        switch (args[0]) {
            case "timer-store":
                TimerFixture.write(args[1], args.length > 2 ? Long.parseLong(args[2]) : 20261124L);
                break;
            case "timer-states":
                TimerStates.write(args[1], args.length > 2 ? Long.parseLong(args[2]) : 20261126L);
                break;
            case "timer-crash":
                TimerCrash.write(args[1], args.length > 2 ? Long.parseLong(args[2]) : 20261126L);
                break;
            case "timer-crash-expect":
                TimerCrash.expect(args[1]);
                break;
            case "recover":
            case "recover-without-timer":
                rc = Load.recover(args[1], java.util.Arrays.copyOfRange(args, 2, args.length), args[0].equals("recover"));
                break;
            case "bench":
                rc = Bench.bench(args[1], args.length > 2 ? Integer.parseInt(args[2]) : 5);
                break;
            case "make-big":
                rc = Bench.makeBig(args[1], args.length > 2 ? Long.parseLong(args[2]) : 1_600_000L,
                    args.length > 3 ? Integer.parseInt(args[3]) : 200, args.length > 4 ? Integer.parseInt(args[4]) : 0,
                    args.length > 5 ? Integer.parseInt(args[5]) : 1);
                break;
            case "pop-bodies":
                rc = PopBodies.run(Long.parseLong(args[1]), args.length > 2 ? Integer.parseInt(args[2]) : 50);
                break;
            case "timer-run":
                rc = TimerRun.run(args[1], java.util.Arrays.copyOfRange(args, 2, args.length));
                break;
            case "controller-store":
                ControllerStore.write(args[1], args.length > 2 ? Long.parseLong(args[2]) : 20261127L,
                    java.util.Arrays.asList(args).contains("--lone"));
                break;
            case "controller-read":
                rc = ControllerStore.readCommand(args[1]);
                break;
            case "pop-store":
                PopStore.write(args[1], args.length > 2 ? Long.parseLong(args[2]) : 20261126L);
                break;
            case "batchcq-store":
                BatchStore.write(args[1], args.length > 2 ? Long.parseLong(args[2]) : 20261126L);
                break;
            case "batchcq-load":
                rc = BatchStore.load(args[1]);
                break;
            case "rocksdb-store":
                RocksDBFixture.write(args[1], args.length > 2 ? Long.parseLong(args[2]) : 20261126L);
                break;
            case "rocksdb-read":
                rc = RocksDBFixture.run(args[1]);
                break;
            case "rocksdb-v2-store":
                RocksDBV2Fixture.write(args[1], args.length > 2 ? Long.parseLong(args[2]) : 20261126L);
                break;
            case "rocksdb-v2-read":
                rc = RocksDBV2Fixture.run(args[1]);
                break;
            case "compaction-store":
                CompactionFixture.write(args[1], args.length > 2 ? Long.parseLong(args[2]) : 20261127L);
                break;
            case "tiered-store":
                TieredStore.write(args[1], args.length > 2 ? Long.parseLong(args[2]) : 20261128L);
                break;
            case "tiered-load":
                try {
                    rc = TieredLoad.run(args[1], args[2]);
                } catch (Exception e) {  // the plugin's threads are not daemons: exit, do not hang
                    e.printStackTrace();
                    System.exit(1);
                }
                break;
            case "compaction-read":
                rc = CompactionFixture.read(args[1]);
                break;
            case "compaction-run":
                rc = CompactionFixture.read(args[1], true, args.length > 2 ? Integer.parseInt(args[2]) : 0,
                    args.length > 3 ? Long.parseLong(args[3]) : 20261128L);
                break;
            case "epoch-write":
                rc = EpochCases.write(args[1], args[2]);
                break;
            case "epoch-consistent":
                rc = EpochCases.consistent(args[1], Long.parseLong(args[2]), args[3], Long.parseLong(args[4]));
                break;
            case "autoswitch-pair":
                rc = AutoSwitchPair.write(args[1], args.length > 2 ? Long.parseLong(args[2]) : 20261128L);
                break;
            case "autoswitch-read":
                rc = AutoSwitchPair.readCommand(args[1]);
                break;
            case "autoswitch-restart":
                rc = AutoSwitchPair.restart(args[1], args[2], Integer.parseInt(args[3]),
                    args.length > 4 && args[4].equals("--master-a"));
                break;
            case "ha-sync":
                rc = HaSync.run(args[1], args[2], java.util.Arrays.copyOfRange(args, 3, args.length));
                break;
            case "ha-pair":
                rc = HaPair.write(args[1], args.length > 2 ? Long.parseLong(args[2]) : 20261127L);
                break;
            case "compaction-crash":
                rc = CompactionFixture.crash(args[1]);
                break;
            case "lmq-store":
                LmqStore.write(args[1], args.length > 2 ? Long.parseLong(args[2]) : 20261126L);
                break;
            case "subscriptions":
                rc = Subscriptions.run(args[1]);
                break;
            case "dledger-store": {
                String variant = "plain";
                long seed = 20261126L;
                for (int i = 2; i < args.length; i++) {
                    if (args[i].equals("--variant")) {
                        variant = args[++i];
                    } else {
                        seed = Long.parseLong(args[i]);
                    }
                }
                DLedgerFixture.write(args[1], seed, variant);
                break;
            }
            case "dledger-read":
                rc = DLedgerFixture.read(args[1]);
                break;
            case "trace-bodies":
                rc = TraceBodies.run(Long.parseLong(args[1]), args.length > 2 ? Integer.parseInt(args[2]) : 200);
                break;
            case "trace-store":
                TraceStore.write(args[1], args[2], args.length > 3 ? Long.parseLong(args[3]) : 20261127L);
                break;
            case "trace-decode":
                rc = TraceBodies.decodeFile(args[1]);
                break;
            case "clean":
                rc = Clean.run(args[1], java.util.Arrays.copyOfRange(args, 2, args.length));
                break;
            case "load":
                rc = Load.run(args[1], java.util.Arrays.copyOfRange(args, 2, args.length));
                break;
            case "clean-unused-topic":
                rc = CleanUnusedTopic.run(args[1], java.util.Arrays.copyOfRange(args, 2, args.length));
                break;
            case "dlq-store":
                DlqStore.run(args[1], args.length > 2 ? Long.parseLong(args[2]) : 20261127L);
                rc = 0;
                break;
            case "group-pull":
                rc = GroupPull.run(args[1], java.util.Arrays.copyOfRange(args, 2, args.length));
                break;
            case "queue-offsets":
                rc = QueueOffsets.run(args[1], java.util.Arrays.copyOfRange(args, 2, args.length));
                break;
            case "config-edit":
                rc = ConfigEdit.run(args[1]);
                break;
            default:
                System.err.println("unknown command " + args[0]);
                rc = 2;
        }
        System.exit(rc);
    }
}
