package dev.idem.spring.internal;

import dev.idem.core.LeaseContext;
import dev.idem.spring.Idempotent;
import dev.idem.spring.IdempotentCalls;

/**
 * What the {@link Idempotent} method interceptor leaves on the calling thread for {@link
 * IdempotentCalls} to read. Thread-confined: each value belongs to the thread that set it.
 */
public final class MethodCalls {

  /** The claim of the {@link Idempotent} method running on this thread in lease mode; set by the starter's interceptor. */
  public static final ThreadLocal<LeaseContext> LEASE_CONTEXT = new ThreadLocal<>();

  /** Whether the last {@link Idempotent} call that returned on this thread was a replay; set by the starter's interceptor. */
  public static final ThreadLocal<Boolean> LAST_CALL_REPLAYED = new ThreadLocal<>();

  private MethodCalls() {}
}
