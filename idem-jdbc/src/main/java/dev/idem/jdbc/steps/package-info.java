/**
 * Multi-step operations on a JDBC database (API): {@link dev.idem.jdbc.steps.JdbcStepOperations}
 * runs a {@link dev.idem.core.steps.StepOperation} under a lease-mode claim of the key table and
 * records each step's result in a step table, so that a retry or the completer resumes after the
 * last recovery point.
 *
 * <p>Null-marked: nothing is {@code null} unless annotated {@link org.jspecify.annotations.Nullable}.
 */
@NullMarked
package dev.idem.jdbc.steps;

import org.jspecify.annotations.NullMarked;
