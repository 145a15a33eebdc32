"""`mqtool sample create`: a realistic broker store, written through the store's own write path.

Every record goes through `store.appender.CommitLogAppender` and is dispatched by `store.dispatch`
exactly as a broker would (ConsumeQueues, index, checkpoint); config files are written with
`formats.config.codec` models through `store.config.configfile` in fastjson's layout. What the store holds,
for a simulated broker `broker-a` (cluster DefaultCluster, 192.168.0.10:10911) and three producers
(`producers` changes how many connections send, 0 = a new connection per message):

* ordinary traffic on `TopicTest` (4 queues) and `OrderTopic` (2 queues, ordered: the queue follows
  the order key), with 0-2 KEYS, TAGS TagA..TagE (or none), user properties, 200-1000 byte bodies,
  about 4% zlib-compressed (SYSFLAG 0x301 on 5.x, 0x1 on 4.x), UNIQ_KEYs as `MessageClientIDSetter`
  makes them (ip + pid + class-loader hash + ms since the month start (UTC) + counter), and property
  order as the broker's `HashMap` iterates (capacity 128 on 5.x, 16 on 4.x; 4.x without the trailing
  \\x02 and without WAIT on plain messages);
* delay messages in `SCHEDULE_TOPIC_XXXX` (queue = level - 1, REAL_TOPIC/REAL_QID/DELAY, tags code =
  delivery time), delivered when the simulated clock reaches their time like `ScheduleMessageService`
  does (the copy keeps the stored properties), with the progress in delayOffset.json;
* transactions: half messages in `RMQ_SYS_TRANS_HALF_TOPIC` (TRAN_MSG, PGROUP, REAL_*, 5.x
  `__transactionId__`), later committed (copy in the real topic, SYSFLAG 0x8, preparedTransactionOffset
  = the half's offset), rolled back or left pending; op messages in `RMQ_SYS_TRANS_OP_HALF_TOPIC` (tag
  `d`; 5.x batches "h1,h2,...,", 4.x one offset per op);
* consumer send-back of groupA: retries through the schedule topic into `%RETRY%groupA`
  (reconsumeTimes + 1, RETRY_TOPIC, ORIGIN_MESSAGE_ID = offsetMsgId, WAIT=false) and dead letters in
  `%DLQ%groupA` (DELAY=0);
* config: topics.json (with the broker's built-in topics), subscriptionGroup.json (built-in groups,
  groupA, groupB), consumerOffset.json (groupA at half of every queue's max, groupB at the max of
  TopicTest, the retry topic, CID_RMQ_SYS_TRANS progress), delayOffset.json, 5.x messageRequestMode.json;
  `lock` ("lock"), 5.x `abort.bak` (empty), no `abort`.

The output is a function of the options: the clock is simulated from `start_time` and every choice
comes from `random.Random(seed)`. Only the index file names depend on the time zone (they are the
simulated creation time in the broker's zone, local unless given). The store is built beside the
target directory and renamed into place at the end, so DIR either does not exist or is complete.

The parts: `options` (SampleOptions, defaults, the simulated cluster's names), `producers` (what the
producers send), `broker` (what the simulated broker stores, and the run), `create` (the staging directory,
the config files, the rename; `create_sample`).
"""
