/**
 * For Idem's own tests: launchers of the clusters CI runs the stores on (Galera, Redis Cluster, a
 * PostgreSQL primary with a standby), started from the binaries on the machine and stopped by
 * {@code close()}. Not published.
 *
 * <p>Null-marked: parameters, return values and fields are never {@code null} unless annotated
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package dev.idem.testclusters;

import org.jspecify.annotations.NullMarked;
