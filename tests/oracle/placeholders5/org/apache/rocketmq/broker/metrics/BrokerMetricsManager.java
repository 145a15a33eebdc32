/*
 * Placeholder for the broker's metrics manager (the real one needs the OpenTelemetry SDK and exporters and the
 * whole broker). The POP classes and EndTransactionProcessor record into its static instruments, which start as
 * no-ops in the real class too (no exporter is set up); here they stay no-ops. Nothing is written.
 */
package org.apache.rocketmq.broker.metrics;

import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.common.AttributesBuilder;
import io.opentelemetry.api.metrics.LongCounter;
import io.opentelemetry.api.metrics.LongHistogram;
import org.apache.rocketmq.common.metrics.NopLongCounter;
import org.apache.rocketmq.common.metrics.NopLongHistogram;

public class BrokerMetricsManager {
    public static LongCounter messagesInTotal = new NopLongCounter();
    public static LongCounter messagesOutTotal = new NopLongCounter();
    public static LongCounter throughputInTotal = new NopLongCounter();
    public static LongCounter throughputOutTotal = new NopLongCounter();
    public static LongHistogram messageSize = new NopLongHistogram();
    public static LongCounter sendToDlqMessages = new NopLongCounter();
    public static LongHistogram topicCreateExecuteTime = new NopLongHistogram();
    public static LongHistogram consumerGroupCreateExecuteTime = new NopLongHistogram();
    public static LongCounter commitMessagesTotal = new NopLongCounter();
    public static LongCounter rollBackMessagesTotal = new NopLongCounter();
    public static LongHistogram transactionFinishLatency = new NopLongHistogram();

    public static AttributesBuilder newAttributesBuilder() {
        return Attributes.builder();
    }

    /** A label of the send-back's DLQ counter (no-op here); the real test is TopicValidator.isSystemTopic or a
     * system group (5.3.3 BrokerMetricsManager.java:218-220): only a label, so a system topic suffices. */
    public static boolean isSystem(String topic, String group) {
        return org.apache.rocketmq.common.topic.TopicValidator.isSystemTopic(topic);
    }
}
