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
 * dev.idem.core.IdempotencyKey#of}). The fingerprint covers every other argument, as canonical
 * JSON ({@link dev.idem.core.Fingerprint#ofJson}: Jackson, then RFC 8785 with numbers compared by
 * exact value, so two {@code BigDecimal} or {@code long} arguments that differ only past a
 * double's precision are different calls). The scope is the principal from an {@link IdemPrincipalResolver}
 * bean (or {@code idem.method-principal}) plus {@link #operation()}.
 *
 * <p>Inside an existing Spring transaction on the application's DataSource, the claim, the method's
 * writes and the stored result join that transaction (transactional mode): they commit or roll back
 * together. Outside a transaction, the call runs in lease mode. The result must be serializable by
 * the application's Jackson {@code ObjectMapper}; {@code void} methods store nothing but the fact.
 */
@Target(ElementType.METHOD)
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface Idempotent {

  /** @return the operation part of the scope; by default {@code SimpleClassName.methodName} */
  String operation() default "";

  /** Marks the parameter that carries the idempotency key. */
  @Target(ElementType.PARAMETER)
  @Retention(RetentionPolicy.RUNTIME)
  @Documented
  @interface Key {}
}
