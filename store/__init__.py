"""A RocketMQ store directory: mapped-file queues, readers, config files and broker liveness."""
