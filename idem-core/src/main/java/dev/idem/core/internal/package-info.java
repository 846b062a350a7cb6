/**
 * Internal to {@code idem-core}: the JSON and form canonicalizers behind {@link
 * dev.idem.core.Fingerprint}, media types, SHA-256 helpers. Not API: no other module, and no
 * application, may use it; it changes without notice.
 *
 * <p>Null-marked: parameters, return values and fields are never {@code null} unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package dev.idem.core.internal;

import org.jspecify.annotations.NullMarked;
