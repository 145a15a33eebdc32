"""Transaction queue (`mqtool txn`): which half messages are pending, committed or rolled back, and ending
them offline exactly as EndTransactionProcessor does.

* `listing` — `list_transactions` (`TransactionalMessageBridge`, `TransactionalMessageServiceImpl.check`):
  halves in `RMQ_SYS_TRANS_HALF_TOPIC` with their re-put copies, the ops of `RMQ_SYS_TRANS_OP_HALF_TOPIC`
  naming them, commit copies in the real queues, discards in `TRANS_CHECK_MAX_TIME_TOPIC`; each
  transaction's state; `filter_state` for `txn list --state`;
* `end_transaction` — `select_halves`, `select_for_resolve`, `plan_end` (the commit copy and the op messages
  EndTransactionProcessor writes) and `execute_end` (dry run by default, `--execute` under the write safety
  rules, idempotent).

The broker's own records (half records, op messages and bodies, the commit copy) are in `store.transaction`;
the message rebuild and write path it shares with `mqtool.delay` is `store.messagerebuild`.
"""

from mqtool.transactions.end_transaction import (
    EndPlan,
    EndRequest,
    EndResult,
    execute_end,
    plan_end,
    select_for_resolve,
    select_halves,
)
from mqtool.transactions.listing import STATES, Transaction, TxnReport, filter_state, list_transactions
from store.transaction import (
    CHECK_MAX_TIME_TOPIC,
    HalfRecord,
    OpScan,
    TransactionError,
    end_message_transaction,
    op_bodies,
    op_message,
    op_properties,
    parse_op_body,
    scan_ops,
)

__all__ = [
    "CHECK_MAX_TIME_TOPIC",
    "STATES",
    "EndPlan",
    "EndRequest",
    "EndResult",
    "HalfRecord",
    "OpScan",
    "Transaction",
    "TransactionError",
    "TxnReport",
    "end_message_transaction",
    "execute_end",
    "filter_state",
    "list_transactions",
    "op_bodies",
    "op_message",
    "op_properties",
    "parse_op_body",
    "plan_end",
    "scan_ops",
    "select_for_resolve",
    "select_halves",
]
