/* Placeholder for errorprone's MustBeClosed (a compile-time check annotation in OpenTelemetry's context). */
package com.google.errorprone.annotations;

public @interface MustBeClosed {
}
