"""The commitlog (org.apache.rocketmq.store.logfile + CommitLog): mapped-file queues, record walks, the
recovery rule, appending, whole-log scans."""
