/**
 * The JMH benchmark of multi-step operations (internal to the benchmarks): {@link
 * dev.idem.benchmarks.steps.StepsBenchmark}. Not in the {@code jmh} package, so the load harness's
 * JMH suite does not run it; run it with {@code java -jar tools/idem-benchmarks/target/benchmarks.jar StepsBenchmark}.
 */
@NullMarked
package dev.idem.benchmarks.steps;

import org.jspecify.annotations.NullMarked;
