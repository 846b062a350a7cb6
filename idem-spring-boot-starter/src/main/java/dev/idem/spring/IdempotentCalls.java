package dev.idem.spring;

import dev.idem.core.LeaseContext;
import dev.idem.spring.internal.MethodCalls;
import java.util.Optional;

/**
 * What an {@link Idempotent} method, or its caller, can learn about the call on the current thread:
 * the method's lease-mode claim ({@link #currentLeaseContext()}), and whether the last call was a
 * replay ({@link #lastCallReplayed()}). Both are thread-confined: read them on the thread of the
 * call. Thread-safe; not instantiable.
 */
public final class IdempotentCalls {

  private IdempotentCalls() {}

  /**
   * The claim of the {@link Idempotent} method running on this thread in lease mode: its scope, key
   * and owner token, and whether it takes over an expired lease ({@link LeaseContext#recovery()}):
   * when {@code true}, an earlier call with the same key may have had its effect (it crashed, or
   * its result could not be stored), and the method must look that effect up by the key instead of
   * repeating it.
   *
   * @return the context, never {@code null}; empty outside an {@link Idempotent} method and in
   *     transactional mode (where a crash leaves nothing behind to reconcile)
   */
  public static Optional<LeaseContext> currentLeaseContext() {
    return Optional.ofNullable(MethodCalls.LEASE_CONTEXT.get());
  }

  /**
   * Whether the last {@link Idempotent} method call that returned on this thread was answered from
   * its key's stored result instead of running: how a caller learns that a call was a replay (an
   * HTTP response of the filter says so in {@code Idempotent-Replayed}; a method's result carries
   * nothing). Read it right after the call, on the same thread.
   *
   * @return {@code true} if that call replayed a stored result; {@code false} if it ran, if it was
   *     covered by the protected request around it, or if no call returned on this thread yet
   */
  public static boolean lastCallReplayed() {
    return Boolean.TRUE.equals(MethodCalls.LAST_CALL_REPLAYED.get());
  }
}
