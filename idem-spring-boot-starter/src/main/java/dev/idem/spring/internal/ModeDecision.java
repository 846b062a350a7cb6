package dev.idem.spring.internal;

import dev.idem.jdbc.TransactionalIdempotency;
import dev.idem.spring.IdemProperties;
import java.util.Objects;

/**
 * The mode the filter runs in, decided once at start-up ({@link ModeDecisions}, or lease without
 * spring-jdbc and spring-tx), with the reason that the start-up log line gives. Refers to no
 * optional library, so that any configuration may hold one. Immutable and thread-safe.
 */
public final class ModeDecision {

  /** {@link IdemProperties.Mode#LEASE} or {@link IdemProperties.Mode#TRANSACTIONAL}, never auto. */
  public final IdemProperties.Mode mode;
  /** Why, in words for the start-up log line; never {@code null}. */
  public final String reason;
  /** The filter's transactional engine; {@code null} in lease mode. */
  public final TransactionalIdempotency engine;

  private ModeDecision(IdemProperties.Mode mode, String reason, TransactionalIdempotency engine) {
    this.mode = mode;
    this.reason = Objects.requireNonNull(reason, "reason");
    this.engine = engine;
  }

  /** @param reason why, never {@code null} */
  public static ModeDecision lease(String reason) {
    return new ModeDecision(IdemProperties.Mode.LEASE, reason, null);
  }

  /**
   * @param reason why, never {@code null}
   * @param engine the filter's engine, never {@code null}
   */
  public static ModeDecision transactional(String reason, TransactionalIdempotency engine) {
    return new ModeDecision(IdemProperties.Mode.TRANSACTIONAL, reason, Objects.requireNonNull(engine, "engine"));
  }
}
