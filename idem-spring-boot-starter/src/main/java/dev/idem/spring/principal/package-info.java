/**
 * The principal concern: where the principal of a key's scope comes from for servlet requests
 * (Spring Security's authentication, the servlet request's user principal, or the application's
 * {@code PrincipalResolver} bean).
 *
 * <p>Null-marked: parameters, return values and fields are never {@code null} unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package dev.idem.spring.principal;

import org.jspecify.annotations.NullMarked;
