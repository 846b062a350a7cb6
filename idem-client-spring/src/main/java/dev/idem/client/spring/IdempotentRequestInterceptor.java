package dev.idem.client.spring;

import dev.idem.client.ClientRetryPolicy;
import dev.idem.client.RetryBudget;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotencyKeyReusedException;
import dev.idem.core.InvalidIdempotencyKeyException;
import dev.idem.core.OutcomeUnknownException;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.DoubleSupplier;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpRequest;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.client.ClientHttpRequestExecution;
import org.springframework.http.client.ClientHttpRequestInterceptor;
import org.springframework.http.client.ClientHttpResponse;

/**
 * A RestClient (and RestTemplate) interceptor that sends one idempotency key per logical operation
 * and retries it safely, blocking the calling thread between attempts (for servlet applications;
 * on WebClient use {@link IdempotentExchangeFilter}). Every attempt sends the same {@code
 * Idempotency-Key} (draft-ietf-httpapi-idempotency-key-header section 2) and the same body bytes,
 * the ones given to the interceptor, through {@link ClientHttpRequestExecution#execute} again.
 *
 * <pre>{@code
 * RestClient client = RestClient.builder().baseUrl("http://localhost:8080")
 *     .requestInterceptor(IdempotentRequestInterceptor.builder().build())
 *     .build();
 * }</pre>
 *
 * <p>The key: for a request of one of the interceptor's methods (by default POST, PUT, PATCH and
 * DELETE; others pass through untouched, with no key and no retries), an {@code Idempotency-Key}
 * header the caller set is kept as it is, never replaced; otherwise the interceptor makes one (by
 * default a random UUID) and sets it as an sf-string, once, before the first attempt. A caller
 * that wraps the whole call in its own retry (Spring Retry's {@code @Retryable}, a loop) calls the
 * interceptor again for each try, and so gets a new key each time unless it sets the header itself,
 * with a key made once outside that retry.
 *
 * <p>What is retried, the waits and the bounds are those of {@link IdempotentExchangeFilter} and
 * {@link ClientRetryPolicy}: an {@link IOException} from the execution (connection refused or
 * reset, a read timeout: the request factory's timeouts bound an attempt, the policy's {@code
 * attemptTimeout} is not applied here) and the answers of {@link
 * ClientRetryPolicy#isRetryableAnswer}; the server's {@code Retry-After} (RFC 9110 section
 * 10.2.3) or the policy's backoff between attempts; attempts, the deadline and the {@link
 * RetryBudget} bound them. The outcomes: a final answer is returned (the body of a 422 that may
 * be the key-reused problem, {@code application/problem+json}, read into memory and returned
 * whole); the server's key-reused problem throws {@link IdempotencyKeyReusedException}; bounds
 * that run out on a retried failure throw {@link OutcomeUnknownException} (so does an interrupt
 * during a wait, the thread's interrupt status kept), a caller's key that breaks {@link
 * IdempotencyKey#of}'s rules, or a header that is not one well-formed field (two fields, a list),
 * {@link InvalidIdempotencyKeyException}, before anything is sent. RestClient passes these
 * runtime exceptions on as they are.
 *
 * <p>Register it as the last interceptor: on Spring Framework 6.2 a repeated {@code execute} skips
 * the interceptors registered after this one. Immutable and thread-safe; share one instance (and
 * so its budget).
 */
public final class IdempotentRequestInterceptor implements ClientHttpRequestInterceptor {

  /** Waits between attempts; {@link Thread#sleep} by default, tests record the waits instead. */
  @FunctionalInterface
  public interface Sleeper {
    /**
     * @param duration how long to wait, never negative
     * @throws InterruptedException if interrupted while waiting
     */
    void sleep(Duration duration) throws InterruptedException;
  }

  private final RetryRules rules;
  private final Supplier<String> keys;
  private final Sleeper sleeper;
  private final Set<String> methods;

  private IdempotentRequestInterceptor(Builder b) {
    this.rules = new RetryRules(b.policy, b.budget, b.clock, b.random);
    this.keys = b.keys;
    this.sleeper = b.sleeper;
    this.methods = b.methods;
  }

  /**
   * @return a builder with {@link ClientRetryPolicy#defaults()}, a budget of 10 retries refilled by
   *     0.2 per operation, UUID keys, {@link Thread#sleep} waits, and POST, PUT, PATCH and DELETE
   *     keyed
   */
  public static Builder builder() {
    return new Builder();
  }

  @Override
  public ClientHttpResponse intercept(HttpRequest request, byte[] body, ClientHttpRequestExecution execution) throws IOException {
    if (!methods.contains(request.getMethod().name().toUpperCase(Locale.ROOT))) {
      return execution.execute(request, body);
    }
    List<String> header = RetryRules.keyFields(request.getHeaders());
    IdempotencyKey key;
    if (!header.isEmpty()) {
      key = RetryRules.keyOf(header);
    } else {
      key = IdempotencyKey.of(keys.get());
      request.getHeaders().set(RetryRules.KEY_HEADER, RetryRules.fieldValue(key));
    }
    Instant deadline = rules.start();
    for (int number = 1; ; number++) {
      if (rules.attemptTimeout(deadline) == null) {
        throw rules.exhausted(key, number - 1, -1, null, null, deadline, true);
      }
      ClientHttpResponse response;
      try {
        response = execution.execute(request, body);
      } catch (IOException failure) {
        retryOrThrow(key, deadline, number, -1, failure, null, rules.delayAfter(number, null));
        continue;
      }
      int status = response.getStatusCode().value();
      HttpHeaders headers = response.getHeaders();
      if (!RetryRules.retryable(status, headers.getFirst(RetryRules.REPLAYED_HEADER))) {
        return status == 422 ? checkKeyReused(response, key) : response;
      }
      Duration retryAfter = rules.retryAfter(headers.getFirst(RetryRules.RETRY_AFTER_HEADER), headers.getFirst("Date"));
      response.close();
      retryOrThrow(key, deadline, number, status, null, retryAfter, rules.delayAfter(number, retryAfter));
    }
  }

  /** Waits before the next attempt, or throws the unknown outcome when no retry is allowed. */
  private void retryOrThrow(IdempotencyKey key, Instant deadline, int number, int status, @Nullable IOException failure, @Nullable Duration retryAfter,
      Duration delay) {
    if (!rules.mayRetry(number, delay, deadline)) {
      throw rules.exhausted(key, number, status, failure, retryAfter, deadline, false);
    }
    try {
      sleeper.sleep(delay);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw OutcomeUnknownException.clientRetriesExhausted(key, number, status, "interrupted while waiting to retry", e, retryAfter, null);
    }
  }

  private ClientHttpResponse checkKeyReused(ClientHttpResponse response, IdempotencyKey key) throws IOException {
    if (!rules.mayBeKeyReused(response.getHeaders().getFirst("Content-Type"))) {
      return response; // not a problem the policy names: returned unread
    }
    byte[] bytes;
    try (InputStream in = response.getBody()) {
      bytes = in.readAllBytes();
    }
    if (rules.policy().isKeyReused(422, response.getHeaders().getFirst("Content-Type"), bytes)) {
      response.close();
      throw new IdempotencyKeyReusedException(key, null);
    }
    return new ReadResponse(response, bytes);
  }

  /** A response whose body was read into memory. */
  private static final class ReadResponse implements ClientHttpResponse {
    private final ClientHttpResponse delegate;
    private final byte[] body;

    ReadResponse(ClientHttpResponse delegate, byte[] body) {
      this.delegate = delegate;
      this.body = body;
    }

    @Override
    public HttpStatusCode getStatusCode() throws IOException {
      return delegate.getStatusCode();
    }

    @Override
    public String getStatusText() throws IOException {
      return delegate.getStatusText();
    }

    @Override
    public HttpHeaders getHeaders() {
      return delegate.getHeaders();
    }

    @Override
    public InputStream getBody() {
      return new ByteArrayInputStream(body);
    }

    @Override
    public void close() {
      delegate.close();
    }
  }

  /** Builds an {@link IdempotentRequestInterceptor}. Not thread-safe; every setter validates eagerly. */
  public static final class Builder {
    private ClientRetryPolicy policy = ClientRetryPolicy.defaults();
    private RetryBudget budget = RetryBudget.create(0.2, 10);
    private Supplier<String> keys = () -> UUID.randomUUID().toString();
    private Clock clock = Clock.systemUTC();
    private Sleeper sleeper = d -> Thread.sleep(d.toMillis(), d.toNanosPart() % 1_000_000);
    private DoubleSupplier random = () -> ThreadLocalRandom.current().nextDouble();
    private Set<String> methods = RetryRules.DEFAULT_METHODS;

    private Builder() {}

    /** @param policy the retry policy, never {@code null} @return this builder */
    public Builder retryPolicy(ClientRetryPolicy policy) {
      this.policy = Objects.requireNonNull(policy, "policy");
      return this;
    }

    /** @param budget the retry budget, shared with other clients if the same instance is given @return this builder */
    public Builder retryBudget(RetryBudget budget) {
      this.budget = Objects.requireNonNull(budget, "budget");
      return this;
    }

    /** @param keys makes a key for an operation without one; each must pass {@link IdempotencyKey#of} @return this builder */
    public Builder keyGenerator(Supplier<String> keys) {
      this.keys = Objects.requireNonNull(keys, "keys");
      return this;
    }

    /** @param clock the clock of deadlines and {@code Retry-After} dates (tests pass their own) @return this builder */
    public Builder clock(Clock clock) {
      this.clock = Objects.requireNonNull(clock, "clock");
      return this;
    }

    /** @param sleeper waits between attempts (tests pass their own) @return this builder */
    public Builder sleeper(Sleeper sleeper) {
      this.sleeper = Objects.requireNonNull(sleeper, "sleeper");
      return this;
    }

    /** @param random uniform numbers in [0, 1) for the jitter (tests pass their own) @return this builder */
    public Builder random(DoubleSupplier random) {
      this.random = Objects.requireNonNull(random, "random");
      return this;
    }

    /**
     * @param methods the HTTP methods that get a key and retries (any case; a request's method is
     *     matched in any case too), at least one; requests of other methods pass through untouched
     * @return this builder
     * @throws IllegalArgumentException if {@code methods} is empty
     */
    public Builder methods(Set<String> methods) {
      this.methods = RetryRules.methods(Objects.requireNonNull(methods, "methods"));
      return this;
    }

    /** @return a new, thread-safe interceptor */
    public IdempotentRequestInterceptor build() {
      return new IdempotentRequestInterceptor(this);
    }
  }
}
