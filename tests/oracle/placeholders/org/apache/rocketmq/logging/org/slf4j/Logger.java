/* Placeholder for RocketMQ's shaded slf4j (rocketmq-logging): the same interface as slf4j 2's Logger. */
package org.apache.rocketmq.logging.org.slf4j;

public interface Logger extends org.slf4j.Logger {
}
