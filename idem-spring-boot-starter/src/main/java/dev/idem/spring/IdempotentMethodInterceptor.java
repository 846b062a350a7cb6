package dev.idem.spring;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JavaType;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idem.core.EffectFailedException;
import dev.idem.core.Fingerprint;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.LeaseContext;
import dev.idem.core.LeaseIdempotency;
import dev.idem.core.Outcome;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.jdbc.JdbcIdempotency;
import java.lang.annotation.Annotation;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import javax.sql.DataSource;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * Runs {@link Idempotent} methods through Idem: transactional mode inside a Spring transaction on
 * the application's DataSource, lease mode otherwise. Thread-safe.
 *
 * <p>In lease mode the method can read its claim with {@link #currentLeaseContext()}: when {@link
 * LeaseContext#recovery()} is {@code true}, an earlier call with the same key may have had its
 * effect (it crashed, or its result could not be stored: {@link
 * dev.idem.core.CompletionUnknownException}), and the method must look that effect up by the key
 * instead of repeating it.
 */
public final class IdempotentMethodInterceptor implements MethodInterceptor {

  private static final ThreadLocal<LeaseContext> LEASE_CONTEXT = new ThreadLocal<>();

  /**
   * The claim of the {@link Idempotent} method running on this thread in lease mode: its scope, key
   * and owner token, and whether it takes over an expired lease ({@code recovery}).
   *
   * @return the context; empty outside an {@link Idempotent} method and in transactional mode
   *     (where a crash leaves nothing behind to reconcile)
   */
  public static Optional<LeaseContext> currentLeaseContext() {
    return Optional.ofNullable(LEASE_CONTEXT.get());
  }

  /** Wraps a Throwable from the method so that it can cross the engine and be rethrown as it was. */
  private static final class MethodFailure extends RuntimeException {
    private static final long serialVersionUID = 1L;

    MethodFailure(Throwable cause) {
      super(cause);
    }
  }

  private final LeaseIdempotency lease;
  private final JdbcIdempotency transactional;
  private final DataSource dataSource;
  private final ObjectMapper json;
  private final IdemPrincipalResolver principals;

  /**
   * @param lease the lease-mode engine
   * @param transactional the transactional engine, or {@code null} without a DataSource
   * @param dataSource the application's DataSource, or {@code null}
   * @param json serializes arguments and results
   * @param principals the scope's principal
   */
  public IdempotentMethodInterceptor(
      LeaseIdempotency lease, JdbcIdempotency transactional, DataSource dataSource, ObjectMapper json, IdemPrincipalResolver principals) {
    this.lease = lease;
    this.transactional = transactional;
    this.dataSource = dataSource;
    this.json = json;
    this.principals = principals;
  }

  @Override
  public Object invoke(MethodInvocation invocation) throws Throwable {
    Method method = invocation.getMethod();
    Idempotent annotation = method.getAnnotation(Idempotent.class);
    String key = null;
    List<Object> payload = new ArrayList<>();
    Annotation[][] parameterAnnotations = method.getParameterAnnotations();
    Object[] args = invocation.getArguments();
    for (int i = 0; i < args.length; i++) {
      boolean isKey = false;
      for (Annotation a : parameterAnnotations[i]) {
        isKey |= a instanceof Idempotent.Key;
      }
      if (isKey) {
        if (!(args[i] instanceof String)) {
          throw new IllegalArgumentException("the @Idempotent.Key parameter of " + method + " must be a non-null String");
        }
        key = (String) args[i];
      } else {
        payload.add(args[i]);
      }
    }
    if (key == null) {
      throw new IllegalStateException(method + " is @Idempotent but has no parameter annotated @Idempotent.Key");
    }
    String operation = annotation.operation().isEmpty()
        ? method.getDeclaringClass().getSimpleName() + "." + method.getName()
        : annotation.operation();
    IdempotentRequest request = new IdempotentRequest(
        Scope.of(principals.currentPrincipal(), operation), IdempotencyKey.of(key), Fingerprint.ofJson(json.writeValueAsBytes(payload)));

    Outcome outcome;
    try {
      if (transactional != null && dataSource != null && TransactionSynchronizationManager.isActualTransactionActive()) {
        outcome = transactional.execute(DataSourceUtils.getConnection(dataSource), request, c -> store(proceed(invocation)));
      } else {
        outcome = lease.execute(request, ctx -> {
          LeaseContext outer = LEASE_CONTEXT.get();
          LEASE_CONTEXT.set(ctx);
          try {
            return store(proceed(invocation));
          } finally {
            if (outer == null) {
              LEASE_CONTEXT.remove();
            } else {
              LEASE_CONTEXT.set(outer);
            }
          }
        });
      }
    } catch (MethodFailure e) {
      throw e.getCause();
    } catch (EffectFailedException e) {
      throw e.getCause() instanceof MethodFailure ? e.getCause().getCause() : e;
    }
    if (method.getReturnType() == void.class) {
      return null;
    }
    JavaType type = json.getTypeFactory().constructType(method.getGenericReturnType());
    return json.readValue(outcome.response().body(), type);
  }

  private static Object proceed(MethodInvocation invocation) {
    try {
      return invocation.proceed();
    } catch (Throwable t) {
      throw new MethodFailure(t);
    }
  }

  private StoredResponse store(Object result) throws JsonProcessingException {
    return StoredResponse.builder(200).header("Content-Type", "application/json").body(json.writeValueAsBytes(result)).build();
  }
}
