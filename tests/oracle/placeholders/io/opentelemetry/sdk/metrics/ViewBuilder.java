/* Placeholder for the OpenTelemetry SDK type named in RocketMQ's metric views (metrics never exported). */
package io.opentelemetry.sdk.metrics;

public final class ViewBuilder {
    public ViewBuilder setAggregation(Aggregation aggregation) {
        return this;
    }

    public ViewBuilder setDescription(String description) {  // the tiered store's views (TieredStoreMetricsManager)
        return this;
    }
}
