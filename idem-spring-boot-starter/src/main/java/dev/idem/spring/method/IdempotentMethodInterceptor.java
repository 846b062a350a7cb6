package dev.idem.spring.method;

import dev.idem.core.AsyncLeaseIdempotency;
import dev.idem.core.EffectFailedException;
import dev.idem.core.Fingerprint;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.LeaseContext;
import dev.idem.core.LeaseIdempotency;
import dev.idem.core.Outcome;
import dev.idem.core.ResponseNotStoredException;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.core.spi.PrincipalResolver;
import dev.idem.jdbc.TransactionalIdempotency;
import dev.idem.servlet.IdempotencyFilterConfig;
import dev.idem.spring.IdemAutoConfiguration;
import dev.idem.spring.IdemUnsupportedException;
import dev.idem.spring.IdempotencyKeyMissingException;
import dev.idem.spring.IdempotencyPolicy;
import dev.idem.spring.Idempotent;
import dev.idem.spring.IdempotentCalls;
import dev.idem.spring.internal.IdempotentMethods;
import dev.idem.spring.internal.JsonCodec;
import dev.idem.spring.internal.MethodCalls;
import dev.idem.spring.internal.RequestKeys;
import dev.idem.spring.internal.SpringTransactions;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.stream.Collectors;
import javax.sql.DataSource;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.jspecify.annotations.Nullable;
import org.springframework.aop.support.AopUtils;
import org.springframework.core.MethodParameter;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.core.annotation.AnnotatedMethod;

/**
 * Runs {@link Idempotent} methods through Idem: transactional mode inside a Spring transaction on
 * the application's DataSource, lease mode otherwise. Thread-safe.
 *
 * <p>The stored response is the method's result serialized as JSON, at most {@code
 * maxResponseBytes} bytes ({@code idem.max-response-size}); a longer result is returned to the
 * first caller and its key stays completed with a record without the result ({@link
 * StoredResponse.Builder#bodyNotStored(long)}), so that a repeated call runs nothing and throws
 * {@link ResponseNotStoredException} instead of running the method again.
 *
 * <p>The scope is the caller's principal and the method's operation. The principal is what the
 * {@link PrincipalResolver} answers (called with the invoked {@link Method}), made a valid scope part as the filter does: {@code null} or
 * empty is the anonymous principal, shared by every anonymous caller; an authenticated name equal to
 * the anonymous principal, longer than 200 characters, with a control character or starting with
 * {@code "sha256:"} becomes {@code "sha256:"} and its SHA-256, so distinct callers never share a
 * scope. The operation is {@link Idempotent#operation()}, or by default the method's declaring
 * class, name and parameter types ({@code com.example.Payments.charge(java.lang.String,long)}), hashed
 * the same way if longer than 200 characters: overloads and classes of the same simple name in
 * different packages never share a scope.
 *
 * <p>In lease mode the method can read its claim with {@link IdempotentCalls#currentLeaseContext()}: when {@link
 * LeaseContext#recovery()} is {@code true}, an earlier call with the same key may have had its
 * effect (it crashed, or its result could not be stored: {@link
 * dev.idem.core.OutcomeUnknownException}), and the method must look that effect up by the key
 * instead of repeating it.
 *
 * <p>A method returning a {@code Mono} runs on the application's non-blocking engine when it has
 * one ({@link #monos}, {@link MonoMethods}): the call returns a {@code Mono} at once, and its value
 * is what is stored; without that engine such a method is refused, as every result that comes later.
 *
 * <p>The auto-configuration creates it; its constructors are not public because the JSON codec
 * (Jackson 2 or Jackson 3, whichever the application has) is internal to the starter.
 */
final class IdempotentMethodInterceptor implements MethodInterceptor {

  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(IdemAutoConfiguration.class);

  /** Wraps a Throwable from the method so that it can cross the engine and be rethrown as it was. */
  private static final class MethodFailure extends RuntimeException {
    private static final long serialVersionUID = 1L;

    MethodFailure(Throwable cause) {
      super(cause);
    }
  }

  private final LeaseIdempotency lease;
  private final TransactionalIdempotency transactional;
  private final DataSource dataSource;
  private final JsonCodec json;
  /** A DataSource without the transactional engine: a call inside its transaction cannot join it. */
  private final boolean transactionalEngineMissing;
  private final PrincipalResolver<Object> principals;
  private final String anonymousPrincipal;
  private final int maxResponseBytes;
  /** The key of the HTTP request the filter protects on this thread, if any; see {@link #coveredBy}. */
  private volatile RequestKeys requestKeys = () -> null;
  /** Methods returning a {@code Mono}, when the application has a non-blocking engine; else {@code null}. */
  private volatile @Nullable MonoMethods monos;
  /** The methods whose calls inside a protected request were logged already (once each). */
  private final java.util.Set<Method> toldCovered = java.util.concurrent.ConcurrentHashMap.newKeySet();

  /**
   * A method called with the key of the HTTP request that the Idempotency-Key filter protects on
   * the same thread, in transactional mode and inside that request's own transaction, is covered by
   * that request's record: its writes commit or roll back with the request's key, so a record of its
   * own would add nothing (one key record per request), and a retry of the request replays its
   * answer without calling the method. Anywhere else it keeps its own record: in a lease-mode
   * request, whose answer may be released (a 5xx) after the method's external effect happened, the
   * method's own record is what keeps the retry from running that effect again; likewise in
   * another transaction ({@code REQUIRES_NEW}) or with another key.
   *
   * @param keys where the current request's key is read, never {@code null}
   * @return this interceptor
   */
  IdempotentMethodInterceptor coveredBy(RequestKeys keys) {
    this.requestKeys = Objects.requireNonNull(keys, "keys");
    return this;
  }

  /**
   * Same as the full constructor with the anonymous principal {@value
   * IdempotencyFilterConfig#DEFAULT_ANONYMOUS_PRINCIPAL}, results stored up to {@link
   * IdempotencyFilterConfig#DEFAULT_MAX_RESPONSE_BYTES} bytes, and Spring's transactions taken to
   * be there when a transactional engine is given.
   */
  IdempotentMethodInterceptor(
      LeaseIdempotency lease, TransactionalIdempotency transactional, DataSource dataSource, JsonCodec json, PrincipalResolver<Object> principals) {
    this(lease, transactional, transactional != null, dataSource, json, principals, IdempotencyFilterConfig.DEFAULT_ANONYMOUS_PRINCIPAL,
        IdempotencyFilterConfig.DEFAULT_MAX_RESPONSE_BYTES);
  }

  /**
   * @param lease the lease-mode engine, never {@code null}
   * @param transactional the transactional engine, which joins the caller's Spring transaction, or
   *     {@code null} without a DataSource; used only when spring-jdbc and spring-tx are on the class path (without them there is no Spring
   *     transaction to join)
   * @param springTransactions whether spring-jdbc and spring-tx are on the application's class path
   *     (the configuration knows: {@link IdemMethodAutoConfiguration.MethodTransactions} is a bean then)
   * @param dataSource the application's DataSource, or {@code null}
   * @param json writes arguments and results and reads stored results (Jackson 2 or 3), never
   *     {@code null}
   * @param principals the scope's principal, never {@code null}
   * @param anonymousPrincipal the principal of anonymous callers, never {@code null}
   * @param maxResponseBytes the longest serialized result stored, in bytes, 0 or more; a longer one
   *     is returned once and then refused (see the class description)
   * @throws NullPointerException if a required argument is {@code null}
   * @throws IllegalArgumentException if {@code maxResponseBytes} is negative
   */
  IdempotentMethodInterceptor(LeaseIdempotency lease, TransactionalIdempotency transactional, boolean springTransactions,
      DataSource dataSource, JsonCodec json, PrincipalResolver<Object> principals, String anonymousPrincipal, int maxResponseBytes) {
    if (maxResponseBytes < 0) {
      throw new IllegalArgumentException("maxResponseBytes must not be negative, was " + maxResponseBytes);
    }
    this.lease = Objects.requireNonNull(lease, "lease");
    this.transactional = springTransactions && dataSource != null ? transactional : null;
    this.transactionalEngineMissing = springTransactions && dataSource != null && transactional == null;
    this.dataSource = dataSource;
    this.json = Objects.requireNonNull(json, "json");
    this.principals = Objects.requireNonNull(principals, "principals");
    this.anonymousPrincipal = Objects.requireNonNull(anonymousPrincipal, "anonymousPrincipal");
    this.maxResponseBytes = maxResponseBytes;
  }

  /**
   * @throws IdempotencyKeyMissingException if the key argument is {@code null}
   * @throws dev.idem.core.InvalidIdempotencyKeyException if the key breaks a rule of {@link
   *     IdempotencyKey#of}
   * @throws dev.idem.core.IdempotencyKeyReusedException if the key was used in this scope with other
   *     arguments
   * @throws dev.idem.core.RequestInProgressException if a call with this key is still running
   * @throws IllegalStateException if the method has no {@link Idempotent.Key} parameter of type
   *     {@code String}
   * @throws IdemUnsupportedException if the method's result comes later (a {@code Mono} without
   *     {@link #monos}, a {@code Flux}, a {@code CompletableFuture}, a Kotlin {@code suspend}
   *     function's), before it runs
   * @return the method's result, stored or replayed; for a method returning a {@code Mono} (with
   *     {@link #monos}), a {@code Mono} that runs the attempt when subscribed to and fails with the
   *     exceptions above
   */
  @Override
  public @Nullable Object invoke(MethodInvocation invocation) throws Throwable {
    Class<?> target = invocation.getThis() == null ? invocation.getMethod().getDeclaringClass() : AopUtils.getTargetClass(invocation.getThis());
    Method method = AopUtils.getMostSpecificMethod(invocation.getMethod(), target);
    Idempotent annotation = AnnotatedElementUtils.findMergedAnnotation(method, Idempotent.class);
    if (annotation == null) {
      annotation = AnnotatedElementUtils.findMergedAnnotation(invocation.getMethod(), Idempotent.class);
    }
    if (annotation == null) {
      return invocation.proceed(); // matched through another path; nothing to do
    }
    MonoMethods reactive = monos;
    String unsupported = IdempotentReturnTypes.unsupported(method, reactive != null);
    if (unsupported != null) {
      // Refused at start-up for the beans of the context; this one escaped the scan. Nothing runs.
      throw IdempotentReturnTypes.refusal(null, method, unsupported);
    }
    if (reactive != null && IdempotentReturnTypes.returnsMono(method)) {
      String operation;
      IdempotencyKey key;
      Fingerprint fingerprint;
      try {
        List<Object> payload = new ArrayList<>();
        key = IdempotencyKey.of(keyArgument(method, invocation.getArguments(), payload));
        operation = annotation.operation().isEmpty() ? IdempotentMethods.defaultOperation(method) : annotation.operation();
        fingerprint = Fingerprint.ofJson(json.write(payload));
      } catch (RuntimeException e) {
        return MonoMethods.failed(e); // a caller of a Mono method expects its failures in the Mono
      }
      return reactive.call(invocation, method, operation, key, fingerprint);
    }
    List<Object> payload = new ArrayList<>();
    IdempotencyKey key = IdempotencyKey.of(keyArgument(method, invocation.getArguments(), payload));
    RequestKeys.ProtectedRequest around = requestKeys.current();
    if (around != null && key.equals(around.key()) && transactional != null
        && SpringTransactions.connectionOfCurrentTransaction(dataSource) == around.connection()) {
      if (toldCovered.add(method)) {
        LOG.info("Idem: @Idempotent {}.{} runs inside the transaction of a request that the Idempotency-Key filter protects"
            + " with the same key in transactional mode: the request's record covers it, so it records no key of its own;"
            + " if it calls another system, give the route mode=lease (idem.routes.<name>.mode or @IdempotencyPolicy)",
            method.getDeclaringClass().getSimpleName(), method.getName());
      }
      Object covered = invocation.proceed();
      MethodCalls.LAST_CALL_REPLAYED.set(Boolean.FALSE);
      return covered;
    }
    String operation = annotation.operation().isEmpty() ? IdempotentMethods.defaultOperation(method) : annotation.operation();
    String principal = Scope.principalPart(principals.resolve(method), anonymousPrincipal);
    IdempotentRequest request = new IdempotentRequest(Scope.of(principal, operation), key, Fingerprint.ofJson(json.write(payload)));

    Outcome outcome;
    Object[] result = new Object[1];
    try {
      if (transactionalEngineMissing && SpringTransactions.connectionOfCurrentTransaction(dataSource) != null) {
        // Lease mode here would store the result beside a transaction that may still roll back.
        throw new IllegalStateException(method + " runs inside a transaction of the application's DataSource, but there is"
            + " no JdbcIdempotency bean to join it: it was not created because no DataSource bean was defined yet when Idem's"
            + " auto-configuration ran (the DataSource comes from a configuration ordered after"
            + " dev.idem.spring.IdemAutoConfiguration); declare the DataSource in one of the application's @Configuration"
            + " classes, or order that auto-configuration before Idem's");
      }
      Connection joined = transactional == null ? null : SpringTransactions.connectionOfCurrentTransaction(dataSource);
      if (joined != null) {
        outcome = transactional.attemptIn(joined, request, c -> store(result[0] = proceed(invocation))).outcomeOrThrow();
      } else {
        outcome = lease.execute(request, context -> {
          LeaseContext ctx = context.lease();
          LeaseContext outer = MethodCalls.LEASE_CONTEXT.get();
          MethodCalls.LEASE_CONTEXT.set(ctx);
          try {
            return store(result[0] = proceed(invocation));
          } finally {
            if (outer == null) {
              MethodCalls.LEASE_CONTEXT.remove();
            } else {
              MethodCalls.LEASE_CONTEXT.set(outer);
            }
          }
        });
      }
    } catch (MethodFailure e) {
      throw e.getCause();
    } catch (EffectFailedException e) {
      throw e.getCause() instanceof MethodFailure ? e.getCause().getCause() : e;
    }
    MethodCalls.LAST_CALL_REPLAYED.set(outcome.replayed());
    if (method.getReturnType() == void.class) {
      return null; // nothing to give back, stored or not
    }
    if (!outcome.response().bodyStored()) {
      if (!outcome.replayed()) {
        return result[0]; // this call ran the method; only its repetitions lack the result
      }
      throw new ResponseNotStoredException(request.key(), outcome.response());
    }
    return json.read(outcome.response().body(), method.getGenericReturnType());
  }

  /**
   * @param payload receives the arguments other than the key, in order
   * @return the {@link Idempotent.Key} argument
   * @throws IllegalStateException if there is not exactly one such parameter, of type {@code String}
   * @throws IdempotencyKeyMissingException if the key argument is {@code null}
   */
  private static String keyArgument(Method method, Object[] args, List<Object> payload) {
    MethodParameter[] parameters = new AnnotatedMethod(method).getMethodParameters();
    int keyIndex = -1;
    for (int i = 0; i < args.length; i++) {
      if (parameters[i].hasParameterAnnotation(Idempotent.Key.class)) {
        if (keyIndex >= 0 || parameters[i].getParameterType() != String.class) {
          throw new IllegalStateException(method + " must have exactly one @Idempotent.Key parameter, of type String");
        }
        keyIndex = i;
      } else {
        payload.add(args[i]);
      }
    }
    if (keyIndex < 0) {
      throw new IllegalStateException(method + " is @Idempotent but has no parameter annotated @Idempotent.Key");
    }
    if (args[keyIndex] == null) {
      throw new IdempotencyKeyMissingException(method.getDeclaringClass().getSimpleName() + "." + method.getName());
    }
    return (String) args[keyIndex];
  }

  private static Object proceed(MethodInvocation invocation) {
    try {
      return invocation.proceed();
    } catch (Throwable t) {
      throw new MethodFailure(t);
    }
  }

  /**
   * Lets methods returning a {@code Mono} run on the non-blocking engine ({@link MonoMethods});
   * without it they are refused, as every result that comes later.
   *
   * @param engine the application's non-blocking lease-mode engine, never {@code null}
   * @param reactiveSecurity whether Spring Security's context in the subscriber's Reactor context names the caller
   * @return this interceptor
   */
  IdempotentMethodInterceptor monos(AsyncLeaseIdempotency engine, boolean reactiveSecurity) {
    this.monos = new MonoMethods(engine, json, principals, reactiveSecurity, anonymousPrincipal, this::store);
    return this;
  }

  private StoredResponse store(Object result) {
    byte[] serialized = json.write(result);
    StoredResponse.Builder response = StoredResponse.builder(200).header("Content-Type", "application/json");
    return serialized.length > maxResponseBytes
        ? response.bodyNotStored(serialized.length).build()
        : response.body(serialized).build();
  }
}
