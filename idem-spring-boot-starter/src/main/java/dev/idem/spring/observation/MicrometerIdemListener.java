package dev.idem.spring.observation;

import dev.idem.core.IdemListener;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.Outcome;
import dev.idem.spring.Idempotent;
import dev.idem.spring.internal.TimedLeaseStore;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;

/**
 * Counts what the engines do, in lease and in transactional mode, as Micrometer meters:
 *
 * <p>Every meter carries the tag {@code operation}: the scope's operation, a route's pattern such
 * as {@code POST /notes}, an {@code @Idempotent} method's operation, or {@code consume} for the
 * consumers; never a key, nor anything from a body, so its values are as few as the routes and
 * methods.
 *
 * <ul>
 *   <li>{@code idem.executions} (tags {@code stored}, {@code recovery}): effects that ran;
 *   <li>{@code idem.replays}: stored responses replayed;
 *   <li>{@code idem.rejections} (tag {@code reason}: key-reused, in-progress, outcome-unknown,
 *       lease-lost; in transactional mode also rolled-back and request-failed; and the filter's own
 *       refusals before any engine, key-missing, key-malformed, payload-invalid, body-too-large);
 *   <li>{@code idem.waits}: duplicates that waited for an in-progress claim (lease mode only: in
 *       transactional mode a concurrent duplicate waits on the key's row lock inside the database,
 *       which the engine does not see, and then counts as a replay);
 *   <li>{@code idem.takeovers}: expired leases taken over (lease mode only).
 * </ul>
 *
 * Store latency is timed by {@link TimedLeaseStore}. Thread-safe.
 */
public final class MicrometerIdemListener implements IdemListener {

  private final MeterRegistry registry;

  /** @param registry where the meters are registered */
  public MicrometerIdemListener(MeterRegistry registry) {
    this.registry = registry;
  }

  @Override
  public void executed(IdempotentRequest request, Outcome outcome) {
    Counter.builder("idem.executions")
        .description("Idempotent operations that ran their effect")
        .tag("operation", request.scope().operation())
        .tag("stored", String.valueOf(outcome.stored()))
        .tag("recovery", String.valueOf(outcome.recovery()))
        .register(registry)
        .increment();
  }

  @Override
  public void replayed(IdempotentRequest request) {
    Counter.builder("idem.replays").description("Stored responses replayed")
        .tag("operation", request.scope().operation()).register(registry).increment();
  }

  @Override
  public void rejected(IdempotentRequest request, String reason) {
    refused(request.scope().operation(), reason);
  }

  @Override
  public void refused(String operation, String reason) {
    Counter.builder("idem.rejections").description("Requests refused")
        .tag("operation", operation).tag("reason", reason).register(registry).increment();
  }

  @Override
  public void waiting(IdempotentRequest request) {
    Counter.builder("idem.waits").description("Duplicates that waited for an in-progress claim")
        .tag("operation", request.scope().operation()).register(registry).increment();
  }

  @Override
  public void takenOver(IdempotentRequest request) {
    Counter.builder("idem.takeovers").description("Expired leases taken over")
        .tag("operation", request.scope().operation()).register(registry).increment();
  }
}
