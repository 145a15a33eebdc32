/* Placeholder for the OpenTelemetry SDK type named in RocketMQ's metric views (metrics never exported). */
package io.opentelemetry.sdk.metrics;

public final class View {
    public static ViewBuilder builder() {
        return new ViewBuilder();
    }
}
