/**
 * Internal to {@code idem-servlet}: key header parsing, request buffering and response capture,
 * route patterns, form digests, RFC 9457 problem writing. Not API: no other module, and no
 * application, may use it; it changes without notice.
 *
 * <p>Null-marked: parameters, return values and fields are never {@code null} unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package dev.idem.servlet.internal;

import org.jspecify.annotations.NullMarked;
