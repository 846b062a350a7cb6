package dev.idem.spring;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JavaType;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idem.core.EffectFailedException;
import dev.idem.core.Fingerprint;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.LeaseIdempotency;
import dev.idem.core.Outcome;
import dev.idem.core.ResponseNotStoredException;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.jdbc.JdbcIdempotency;
import java.lang.annotation.Annotation;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * Runs {@link Idempotent} methods through Idem: transactional mode inside a Spring transaction on
 * the application's DataSource, lease mode otherwise. The stored response is the method's result
 * serialized as JSON, at most {@code maxResponseBytes} bytes ({@code idem.max-response-size});
 * a longer result is returned to the first caller and its key stays completed with a record
 * without the result ({@link StoredResponse.Builder#bodyNotStored(long)}), so that a repeated call
 * runs nothing and throws {@link ResponseNotStoredException} instead of running the method again.
 * Thread-safe.
 */
public final class IdempotentMethodInterceptor implements MethodInterceptor {

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
  private final int maxResponseBytes;

  /**
   * An interceptor whose results are stored up to {@link
   * dev.idem.servlet.IdempotencyFilterConfig#DEFAULT_MAX_RESPONSE_BYTES}; the parameters are those
   * of {@link #IdempotentMethodInterceptor(LeaseIdempotency, JdbcIdempotency, DataSource,
   * ObjectMapper, IdemPrincipalResolver, int)}.
   */
  public IdempotentMethodInterceptor(
      LeaseIdempotency lease, JdbcIdempotency transactional, DataSource dataSource, ObjectMapper json, IdemPrincipalResolver principals) {
    this(lease, transactional, dataSource, json, principals, dev.idem.servlet.IdempotencyFilterConfig.DEFAULT_MAX_RESPONSE_BYTES);
  }

  /**
   * @param lease the lease-mode engine
   * @param transactional the transactional engine, or {@code null} without a DataSource
   * @param dataSource the application's DataSource, or {@code null}
   * @param json serializes arguments and results
   * @param principals the scope's principal
   * @param maxResponseBytes the longest serialized result stored, in bytes, 0 or more; a longer one
   *     is returned once and then refused (see the class description)
   * @throws IllegalArgumentException if {@code maxResponseBytes} is negative
   */
  public IdempotentMethodInterceptor(LeaseIdempotency lease, JdbcIdempotency transactional, DataSource dataSource, ObjectMapper json,
      IdemPrincipalResolver principals, int maxResponseBytes) {
    if (maxResponseBytes < 0) {
      throw new IllegalArgumentException("maxResponseBytes must not be negative, was " + maxResponseBytes);
    }
    this.lease = lease;
    this.transactional = transactional;
    this.dataSource = dataSource;
    this.json = json;
    this.principals = principals;
    this.maxResponseBytes = maxResponseBytes;
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
    Object[] result = new Object[1];
    try {
      if (transactional != null && dataSource != null && TransactionSynchronizationManager.isActualTransactionActive()) {
        outcome = transactional.execute(DataSourceUtils.getConnection(dataSource), request, c -> store(result[0] = proceed(invocation)));
      } else {
        outcome = lease.execute(request, ctx -> store(result[0] = proceed(invocation)));
      }
    } catch (MethodFailure e) {
      throw e.getCause();
    } catch (EffectFailedException e) {
      throw e.getCause() instanceof MethodFailure ? e.getCause().getCause() : e;
    }
    if (method.getReturnType() == void.class) {
      return null; // nothing to give back, stored or not
    }
    if (!outcome.response().bodyStored()) {
      if (!outcome.replayed()) {
        return result[0]; // this call ran the method; only its repetitions lack the result
      }
      throw new ResponseNotStoredException(request.key(), outcome.response());
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
    byte[] serialized = json.writeValueAsBytes(result);
    StoredResponse.Builder response = StoredResponse.builder(200).header("Content-Type", "application/json");
    return serialized.length > maxResponseBytes
        ? response.bodyNotStored(serialized.length).build()
        : response.body(serialized).build();
  }
}
