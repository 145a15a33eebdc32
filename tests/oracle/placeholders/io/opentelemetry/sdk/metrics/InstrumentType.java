/* Placeholder for the OpenTelemetry SDK type named in RocketMQ's metric views (metrics never exported). */
package io.opentelemetry.sdk.metrics;

public enum InstrumentType { HISTOGRAM }
