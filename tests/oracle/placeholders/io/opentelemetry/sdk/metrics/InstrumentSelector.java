/* Placeholder for the OpenTelemetry SDK type named in RocketMQ's metric views (metrics never exported). */
package io.opentelemetry.sdk.metrics;

public final class InstrumentSelector {
    public static Builder builder() {
        return new Builder();
    }

    public static final class Builder {
        public Builder setType(InstrumentType type) {
            return this;
        }

        public Builder setName(String name) {
            return this;
        }

        public InstrumentSelector build() {
            return new InstrumentSelector();
        }
    }
}
