package dev.idem.spring;

import dev.idem.servlet.KeyRequirement;
import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * A Spring MVC handler method's own idempotency policy, beside the code: the starter reads it from
 * the application's handler mappings at start-up and protects each of the method's routes (its
 * request methods and path patterns) with it, as an {@code idem.routes.<name>.*} entry would. Such
 * routes are tried before {@code idem.required-key-routes} and {@code idem.optional-key-routes}.
 *
 * <pre>{@code
 * @PostMapping("/payments")
 * @IdempotencyPolicy(mode = IdemProperties.Mode.LEASE, store = IdemProperties.StoreType.REDIS, retention = "48h")
 * ResponseEntity<Payment> pay(@RequestBody PaymentRequest request) { ... }
 * }</pre>
 *
 * <p>The mapping must name its request methods ({@code @PostMapping}, or {@code
 * @RequestMapping(method = ...)}), and its path patterns must be made of whole segments: literal
 * ones, {@code {variable}} (one segment), and {@code {*rest}} or {@code **} at the end. A mapping
 * that breaks either rule, or a route that a property names too, stops the start-up with a message
 * saying so: nothing is silently left unprotected. Durations take Spring Boot's forms ({@code
 * 30s}, {@code 48h}, ISO-8601 {@code PT48H}); an empty one takes the {@code idem.*} property's value.
 */
@Target(ElementType.METHOD)
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface IdempotencyPolicy {

  /**
   * @return lease (the handler calls other systems: no database transaction of Idem's is open while
   *     it runs), transactional (its writes and the key commit together), or auto (the filter's
   *     mode, unless {@link #store()} names Redis or memory: then lease)
   */
  IdemProperties.Mode mode() default IdemProperties.Mode.AUTO;

  /** @return lease mode: where the keys are kept; auto: {@code idem.store}'s choice */
  IdemProperties.StoreType store() default IdemProperties.StoreType.AUTO;

  /** @return whether requests must carry an {@code Idempotency-Key} (400 without one) */
  KeyRequirement key() default KeyRequirement.REQUIRED;

  /** @return how long the keys are kept, such as {@code "48h"}; empty: {@code idem.retention} */
  String retention() default "";

  /** @return lease mode: how long a claim is held, such as {@code "2m"}; empty: {@code idem.lease} */
  String lease() default "";

  /** @return {@code "fail-fast"} or {@code "wait"}; empty: {@code idem.in-progress} */
  String inProgress() default "";

  /** @return with in-progress wait: how long a duplicate waits; empty: {@code idem.max-wait} */
  String maxWait() default "";
}
