/**
 * Operations of several named steps under one idempotency key (API): {@link
 * dev.idem.core.steps.StepOperation} is the operation, {@link dev.idem.core.steps.Steps} what it
 * runs its steps through, {@link dev.idem.core.steps.DerivedKeys} the keys its foreign calls carry.
 * A store implementation (idem-jdbc's {@code dev.idem.jdbc.steps.JdbcStepOperations}) records each
 * step's result as its recovery point, so that a retry, or the completer, resumes after the last one.
 *
 * <p>Null-marked: nothing is {@code null} unless annotated {@link org.jspecify.annotations.Nullable}.
 */
@NullMarked
package dev.idem.core.steps;

import org.jspecify.annotations.NullMarked;
