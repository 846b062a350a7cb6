/**
 * Helpers that several of the starter's concerns share: the engines behind route, method and
 * consumer policies, the mode decisions, the JSON codecs of {@code @Idempotent} methods' results,
 * the principal sources and the failure analyzers. Not API: the module does not export this
 * package (it opens it to Spring's reflection only), and its types may change in any version.
 *
 * <p>Null-marked: parameters, return values and fields are never {@code null} unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package dev.idem.spring.internal;

import org.jspecify.annotations.NullMarked;
