"""Transaction queue (`mqtool txn`): which half messages are pending, committed or rolled back, and ending
them offline exactly as EndTransactionProcessor does.

* `listing` — `list_transactions` (`TransactionalMessageBridge`, `TransactionalMessageServiceImpl.check`):
  halves in `RMQ_SYS_TRANS_HALF_TOPIC` with their re-put copies, the ops of `RMQ_SYS_TRANS_OP_HALF_TOPIC`
  naming them, commit copies in the real queues, discards in `TRANS_CHECK_MAX_TIME_TOPIC`; each
  transaction's state; `filter_state` for `txn list --state`;
* `end_transaction` — `select_halves`, `select_for_resolve`, `plan_end` (the commit copy and the op messages
  EndTransactionProcessor writes) and `execute_end` (dry run by default, `--execute` under the write safety
  rules, idempotent).

The broker's own records (half records, op messages and bodies, the commit copy) are in
`store.broker.transaction`; the message rebuild and write path it shares with `mqtool.delay` is
`store.broker.messagerebuild`.
"""
