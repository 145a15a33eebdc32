/* Placeholder for the OpenTelemetry SDK type named in RocketMQ's metric views (metrics never exported). */
package io.opentelemetry.sdk.metrics;

import java.util.List;

public final class Aggregation {
    public static Aggregation explicitBucketHistogram(List<Double> buckets) {
        return new Aggregation();
    }
}
