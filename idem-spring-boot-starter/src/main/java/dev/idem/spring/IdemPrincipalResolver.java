package dev.idem.spring;

/**
 * Supplies the principal of the scope for {@link Idempotent} methods, typically from the security
 * context. Define one as a bean; without it, {@code idem.method-principal} is used. Must be
 * thread-safe and return 1 to 200 characters.
 */
@FunctionalInterface
public interface IdemPrincipalResolver {

  /** @return the current principal, never {@code null} */
  String currentPrincipal();
}
