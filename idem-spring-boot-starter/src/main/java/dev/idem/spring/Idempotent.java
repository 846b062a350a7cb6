package dev.idem.spring;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Runs a Spring bean's method at most once per idempotency key: a repeated call with the same key
 * and the same arguments returns the first call's result (deserialized from the store) without
 * running the method again; the same key with other arguments throws {@link
 * dev.idem.core.IdempotencyKeyReusedException}.
 *
 * <p>The key is the method parameter annotated {@link Key} (a {@code String}, validated by {@link
 * dev.idem.core.IdempotencyKey#of}; {@code null} throws {@link IdempotencyKeyMissingException}). The
 * fingerprint covers every other argument, as canonical JSON ({@link dev.idem.core.Fingerprint#ofJson}:
 * Jackson, then RFC 8785 with numbers compared by exact value, so two {@code BigDecimal} or {@code
 * long} arguments that differ only past a double's precision are different calls). The scope is
 * the caller's principal plus {@link #operation()}. The principal comes from the application's
 * {@code PrincipalResolver<Object>} bean ({@link dev.idem.core.spi.PrincipalResolver}, called with the
 * invoked {@link java.lang.reflect.Method}), else, when Spring Security is on the class path, from its
 * authenticated user (anonymous callers share {@code idem.anonymous-principal}), else from what
 * {@code idem.principal} says ({@code servlet}, or {@code shared}: one scope for every caller, for
 * single-tenant applications only); with no source at all the application does not start.
 *
 * <p>In a Spring MVC application, the starter answers the refusals as the Idempotency-Key filter
 * does ({@code IdemHandlerExceptionResolver}): key reused 422, key missing or malformed 400, in
 * progress 409 with a short {@code Retry-After}, store failure 503, as RFC 9457 problem details;
 * an {@code @ExceptionHandler} of the application for those exceptions takes precedence.
 *
 * <p>Inside an existing Spring transaction on the application's DataSource, the claim, the method's
 * writes and the stored result join that transaction (transactional mode): they commit or roll back
 * together. Outside a transaction, the call runs in lease mode. The result must be serializable by
 * the application's Jackson {@code ObjectMapper}; {@code void} methods store nothing but the fact.
 *
 * <p>In lease mode, a method whose result cannot be stored within the lease (the store failed on
 * every completion) does not return it: the call throws {@link
 * dev.idem.core.OutcomeUnknownException}, since a later call could contradict that result. Call
 * again with the same key after its {@code retryAfter()}: the call then returns the stored result,
 * or runs the method again as a recovery, where {@link
 * IdempotentCalls#currentLeaseContext()} has {@code recovery() == true} and the method
 * must find the effect of the earlier run by its key rather than repeat it.
 */
@Target(ElementType.METHOD)
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface Idempotent {

  /**
   * @return the operation part of the scope, 1 to 200 characters without a control character; by
   *     default the declaring class's full name, the method's name and its parameter types, such
   *     as {@code com.example.Payments.charge(java.lang.String,long)} (its SHA-256 when longer than
   *     200 characters), so that overloads and classes of one simple name never share a scope.
   *     Two methods given the same operation share their keys' scope on purpose.
   */
  String operation() default "";

  /** Marks the parameter that carries the idempotency key. */
  @Target(ElementType.PARAMETER)
  @Retention(RetentionPolicy.RUNTIME)
  @Documented
  @interface Key {}
}
