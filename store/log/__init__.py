"""The commitlog (org.apache.rocketmq.store.logfile + CommitLog's reading side): mapped-file queues, record
walks, the recovery rule, and whole-log scans through the columnar decoder."""
