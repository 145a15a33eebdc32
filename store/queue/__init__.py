"""Consume queues (org.apache.rocketmq.store.queue): ConsumeQueue files, their writer and time search,
BatchConsumeQueue, LMQ multi-dispatch."""
