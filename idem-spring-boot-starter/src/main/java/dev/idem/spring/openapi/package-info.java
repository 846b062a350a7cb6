/**
 * The OpenAPI concern: puts Idem's header, problem details and expiry policy into the application's
 * springdoc OpenAPI document.
 *
 * <p>Null-marked: parameters, return values and fields are never {@code null} unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package dev.idem.spring.openapi;

import org.jspecify.annotations.NullMarked;
