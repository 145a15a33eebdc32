/* Placeholder for RocketMQ's shaded slf4j MDC (broker-container log dirs): no-op. */
package org.apache.rocketmq.logging.org.slf4j;

public final class MDC {
    private MDC() {
    }

    public static void put(String key, String value) {
    }

    public static void clear() {
    }
}
