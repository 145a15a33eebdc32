"""The broker's retention: what `CleanCommitLogService`, `CleanConsumeQueueService` and the index cleaning
of `DefaultMessageStore` delete on their next runs (`settings`, `disk`, `commitlog`, `queues`)."""
