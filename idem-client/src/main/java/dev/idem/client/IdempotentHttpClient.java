package dev.idem.client;

import dev.failsafe.Failsafe;
import dev.failsafe.RetryPolicy;
import dev.failsafe.spi.Scheduler;
import dev.idem.core.IdempotencyHeaders;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotencyKeyReusedException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.DoubleSupplier;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * An HTTP client that retries an operation safely: one operation has one idempotency key, made
 * before the first attempt (or supplied by the caller, and then never replaced), and every attempt
 * sends that key and the same body bytes. The server (with Idem, or any implementation of the IETF
 * draft "The Idempotency-Key HTTP Header Field") then answers a retry with the first result
 * instead of a second effect.
 *
 * <p>Retries follow a {@link ClientRetryPolicy} (bounded attempts and total time, exponential
 * backoff with full jitter, {@code Retry-After}) and draw from a {@link RetryBudget} shared by all
 * operations of this client. They run on Failsafe's retry policy and scheduler rather than on a
 * hand-written loop.
 *
 * <pre>{@code
 * IdempotentHttpClient client = IdempotentHttpClient.builder(HttpClient.newHttpClient()).build();
 * HttpOperation save = HttpOperation.postJson(URI.create("http://localhost:8080/notes"), "{\"title\":\"milk\"}");
 * try {
 *   OperationResult result = client.send(save);
 *   // result.status() 201, result.replayed() tells whether the server answered from its store
 * } catch (OutcomeUnknownException e) {
 *   // every attempt failed; the note may exist: later, client.send(save.withKey(e.key()))
 * }
 * }</pre>
 *
 * <p>Outcomes of {@link #send}: a final response ({@link OperationResult}, whatever its status,
 * when it is not retried: a 422 validation error, a 409 replayed from the server's store, a 500);
 * {@link IdempotencyKeyReusedException} for the server's "key reused" problem ({@link
 * ClientRetryPolicy#isKeyReused}); {@link OutcomeUnknownException} when the attempts, the deadline
 * or the budget ran out on failures that may hide a success (see {@link ClientRetryPolicy} for what
 * is retried), or the server asked for a wait ({@code Retry-After}) that ends past the deadline.
 * With a {@link PendingJournal}, the operation leaves the journal only with a final response or a
 * key-reused rejection; while the outcome is unknown it stays. Thread-safe; share one instance.
 */
public final class IdempotentHttpClient {

  /** {@link IdempotencyHeaders#KEY}: the request header field that carries the key (draft-ietf-httpapi-idempotency-key-header, section 2). */
  public static final String KEY_HEADER = IdempotencyHeaders.KEY;
  /** {@link IdempotencyHeaders#REPLAYED}: the response header field with which Idem marks a replay. */
  public static final String REPLAYED_HEADER = IdempotencyHeaders.REPLAYED;

  /** Sends one HTTP request; the JDK client in production, a stand-in in tests. */
  @FunctionalInterface
  interface Transport {
    CompletableFuture<HttpResponse<byte[]>> send(HttpRequest request);
  }

  private final Transport transport;
  private final ClientRetryPolicy policy;
  private final RetryBudget budget;
  private final Supplier<String> keys;
  private final PendingJournal journal;
  private final Clock clock;
  private final Scheduler scheduler;
  private final DoubleSupplier random;

  private IdempotentHttpClient(Builder b) {
    this.transport = b.transport;
    this.policy = b.policy;
    this.budget = b.budget;
    this.keys = b.keys;
    this.journal = b.journal;
    this.clock = b.clock;
    this.scheduler = b.scheduler;
    this.random = b.random;
  }

  /**
   * @param http the JDK client that sends each attempt, never {@code null}
   * @return a builder with {@link ClientRetryPolicy#defaults()}, a budget of 10 retries refilled by
   *     0.2 per operation, UUID keys and no journal
   */
  public static Builder builder(HttpClient http) {
    Objects.requireNonNull(http, "http");
    return new Builder(request -> http.sendAsync(request, HttpResponse.BodyHandlers.ofByteArray()));
  }

  static Builder builder(Transport transport) {
    return new Builder(transport);
  }

  /**
   * Sends the operation, retrying per the policy, and waits for the final outcome.
   *
   * @param operation the operation, never {@code null}
   * @return the final response
   * @throws OutcomeUnknownException if the attempts, the deadline or the budget ran out on failures
   *     that may hide a success; carries the key to resume with
   * @throws IdempotencyKeyReusedException if the server answered 422 with its key-reused problem (the
   *     key was used with another payload; {@link ClientRetryPolicy#isKeyReused})
   * @throws dev.idem.core.InvalidIdempotencyKeyException if the key generator made an invalid key
   * @throws java.io.UncheckedIOException if the journal cannot record the operation (nothing was sent)
   * @throws InterruptedException if interrupted while waiting
   */
  public OperationResult send(HttpOperation operation) throws InterruptedException {
    Objects.requireNonNull(operation, "operation");
    String key = keyOf(operation);
    try {
      return sendAsync(operation, key).get();
    } catch (ExecutionException e) {
      Throwable cause = unwrap(e);
      if (cause instanceof RuntimeException) {
        throw (RuntimeException) cause;
      }
      if (cause instanceof Error) {
        throw (Error) cause;
      }
      throw new OutcomeUnknownException(key, 0, -1, "unexpected failure", cause);
    }
  }

  /**
   * As {@link #send}, without blocking: the future completes with the result or with one of the
   * exceptions {@link #send} throws.
   *
   * @param operation the operation, never {@code null}
   * @return the future final outcome
   */
  public CompletableFuture<OperationResult> sendAsync(HttpOperation operation) {
    Objects.requireNonNull(operation, "operation");
    return sendAsync(operation, keyOf(operation));
  }

  private String keyOf(HttpOperation operation) {
    return operation.key().orElseGet(() -> IdempotencyKey.of(keys.get()).value());
  }

  private CompletableFuture<OperationResult> sendAsync(HttpOperation operation, String key) {
    if (journal != null) {
      journal.record(key, operation);
    }
    budget.onOperation();
    Instant deadline = clock.instant().plus(policy.maxDuration());
    byte[] body = operation.body();
    RetryPolicy<Attempt> retry =
        RetryPolicy.<Attempt>builder()
            .handleResultIf(Attempt::retryable)
            .abortIf(a -> a.retryable() && !mayRetry(a, deadline))
            .withMaxAttempts(policy.maxAttempts())
            .withDelayFn(ctx -> ctx.getLastResult().nextDelay)
            .build();
    return Failsafe.with(retry)
        .with(scheduler)
        .getStageAsync(ctx -> attempt(operation, key, body, deadline, ctx.getAttemptCount() + 1))
        .thenApply(a -> finish(a, key, deadline));
  }

  /**
   * Resumes every operation left in the journal (after a restart), each with its own key. A corrupt
   * entry is reported and does not stop the others.
   *
   * @return what happened to each entry
   * @throws IllegalStateException if the client has no journal
   * @throws InterruptedException if interrupted
   */
  public ResumeReport resumePending() throws InterruptedException {
    if (journal == null) {
      throw new IllegalStateException("this client has no journal: set one with Builder.journal");
    }
    PendingJournal.Scan scan = journal.scan();
    List<Resumed> resumed = new ArrayList<>();
    for (PendingJournal.Pending p : scan.pending()) {
      try {
        resumed.add(new Resumed(p.key(), send(p.operation()), null));
      } catch (RuntimeException e) {
        resumed.add(new Resumed(p.key(), null, e));
      }
    }
    return new ResumeReport(List.copyOf(resumed), scan.corrupt());
  }

  private boolean mayRetry(Attempt a, Instant deadline) {
    if (a.number >= policy.maxAttempts()) {
      return false;
    }
    if (!clock.instant().plus(a.nextDelay).isBefore(deadline)) {
      return false; // the next attempt would start at or after the deadline
    }
    return budget.tryRetry();
  }

  private CompletableFuture<Attempt> attempt(HttpOperation op, String key, byte[] body, Instant deadline, int number) {
    Instant now = clock.instant();
    Duration remaining = Duration.between(now, deadline);
    if (remaining.isNegative() || remaining.isZero()) {
      return CompletableFuture.completedFuture(Attempt.notSent(number));
    }
    HttpRequest.Builder request =
        HttpRequest.newBuilder(op.uri())
            .method(op.method(), body.length == 0 && !op.method().equals("POST") && !op.method().equals("PUT") && !op.method().equals("PATCH")
                ? HttpRequest.BodyPublishers.noBody()
                : HttpRequest.BodyPublishers.ofByteArray(body))
            .timeout(remaining.compareTo(policy.attemptTimeout()) < 0 ? remaining : policy.attemptTimeout())
            .header(KEY_HEADER, quoted(key));
    for (Map.Entry<String, String> h : op.headers()) {
      request.header(h.getKey(), h.getValue());
    }
    CompletableFuture<HttpResponse<byte[]>> sent;
    try {
      sent = transport.send(request.build());
    } catch (RuntimeException e) {
      sent = CompletableFuture.failedFuture(e);
    }
    return sent.handle((response, failure) -> classify(number, response, failure));
  }

  private Attempt classify(int number, HttpResponse<byte[]> response, Throwable failure) {
    Throwable f = unwrap(failure);
    if (f != null) {
      // An I/O failure (connection refused or reset, a timeout, a response cut short) may come
      // after the server received the request: the outcome is unknown, and a retry is safe.
      boolean io = f instanceof IOException || f instanceof UncheckedIOException;
      return new Attempt(number, null, f, io, io ? policy.backoff(number, random.getAsDouble()) : Duration.ZERO, null);
    }
    boolean retryable = ClientRetryPolicy.isRetryableAnswer(response.statusCode(), isReplayed(response));
    Duration delay = Duration.ZERO;
    Duration retryAfter = null;
    if (retryable) {
      retryAfter = RetryAfter.parse(response.headers().firstValue(IdempotencyHeaders.RETRY_AFTER).orElse(null),
          response.headers().firstValue("Date").orElse(null), clock.instant()).orElse(null);
      delay = retryAfter != null ? retryAfter : policy.backoff(number, random.getAsDouble());
    }
    return new Attempt(number, response, null, retryable, delay, retryAfter);
  }

  private static boolean isReplayed(HttpResponse<byte[]> response) {
    return response.headers().firstValue(REPLAYED_HEADER).map(v -> v.trim().equalsIgnoreCase("true")).orElse(false);
  }

  private static Throwable unwrap(Throwable failure) {
    Throwable f = failure;
    while ((f instanceof CompletionException || f instanceof ExecutionException) && f.getCause() != null) {
      f = f.getCause();
    }
    return f;
  }

  private OperationResult finish(Attempt a, String key, Instant deadline) {
    if (a.response != null && !a.retryable) {
      // A final answer: the outcome is known, the journal lets go of the operation.
      if (journal != null) {
        journal.remove(key);
      }
      HttpResponse<byte[]> r = a.response;
      if (policy.isKeyReused(r.statusCode(), r.headers().firstValue("Content-Type").orElse(null), r.body())) {
        String detail = ClientRetryPolicy.problemMember(r.body(), "detail")
            .or(() -> ClientRetryPolicy.problemMember(r.body(), "title")).orElse("");
        throw new IdempotencyKeyReusedException(IdempotencyKey.of(key), detail.length() > 300 ? detail.substring(0, 300) : detail);
      }
      return new OperationResult(key, a.number, r.statusCode(), r.headers(), r.body(), isReplayed(r));
    }
    if (a.failure != null && !a.retryable) {
      throw new CompletionException(a.failure); // a programming error, not a transport failure
    }
    int sent = a.response == null && a.failure == null ? a.number - 1 : a.number;
    String reason;
    if (a.response == null && a.failure == null) {
      reason = "the deadline passed";
    } else if (sent >= policy.maxAttempts()) {
      reason = "no attempts left";
    } else if (a.retryAfter != null && !clock.instant().plus(a.retryAfter).isBefore(deadline)) {
      reason = "the server asked to retry after " + a.retryAfter.toSeconds() + " s (Retry-After), past the deadline";
    } else {
      reason = "the retry budget or the deadline does not allow another attempt";
    }
    throw new OutcomeUnknownException(key, sent, a.response == null ? -1 : a.response.statusCode(), reason, a.failure, a.retryAfter);
  }

  private static String quoted(String key) {
    // draft-ietf-httpapi-idempotency-key-header section 2: an sf-string (RFC 8941 section 3.3.3)
    return "\"" + key.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
  }

  /** One attempt's result, as the retry policy sees it. */
  static final class Attempt {
    final int number;
    final HttpResponse<byte[]> response;
    final Throwable failure;
    final boolean retryable;
    final Duration nextDelay;
    final Duration retryAfter;

    Attempt(int number, HttpResponse<byte[]> response, Throwable failure, boolean retryable, Duration nextDelay, Duration retryAfter) {
      this.number = number;
      this.response = response;
      this.failure = failure;
      this.retryable = retryable;
      this.nextDelay = nextDelay;
      this.retryAfter = retryAfter;
    }

    static Attempt notSent(int number) {
      return new Attempt(number, null, null, false, Duration.ZERO, null);
    }

    boolean retryable() {
      return retryable;
    }
  }

  /**
   * What {@link #resumePending()} did with one journal entry: a result or a failure.
   *
   * @param key the entry's key
   * @param result the final response, or {@code null} on failure
   * @param failure why it did not finish (for example {@link OutcomeUnknownException} again), or
   *     {@code null}
   */
  public record Resumed(String key, @Nullable OperationResult result, @Nullable RuntimeException failure) {}

  /**
   * @param resumed one element per readable entry
   * @param corrupt the entries that could not be read, left in place
   */
  public record ResumeReport(List<Resumed> resumed, List<PendingJournal.Corrupt> corrupt) {}

  /** Builds an {@link IdempotentHttpClient}. Not thread-safe; every setter validates eagerly. */
  public static final class Builder {
    private final Transport transport;
    private ClientRetryPolicy policy = ClientRetryPolicy.defaults();
    private RetryBudget budget = RetryBudget.create(0.2, 10);
    private Supplier<String> keys = () -> UUID.randomUUID().toString();
    private PendingJournal journal;
    private Clock clock = Clock.systemUTC();
    private Scheduler scheduler = Scheduler.DEFAULT;
    private DoubleSupplier random = () -> ThreadLocalRandom.current().nextDouble();

    private Builder(Transport transport) {
      this.transport = transport;
    }

    /** @param policy the retry policy, never {@code null} */
    public Builder retryPolicy(ClientRetryPolicy policy) {
      this.policy = Objects.requireNonNull(policy, "policy");
      return this;
    }

    /** @param budget the retry budget, shared with other clients if the same instance is given */
    public Builder retryBudget(RetryBudget budget) {
      this.budget = Objects.requireNonNull(budget, "budget");
      return this;
    }

    /** @param keys makes a key per operation without one; each must pass {@link IdempotencyKey#of} */
    public Builder keyGenerator(Supplier<String> keys) {
      this.keys = Objects.requireNonNull(keys, "keys");
      return this;
    }

    /** @param journal where pending operations are recorded before their first attempt */
    public Builder journal(PendingJournal journal) {
      this.journal = Objects.requireNonNull(journal, "journal");
      return this;
    }

    /** @param clock the clock for deadlines and {@code Retry-After} dates (tests pass their own) */
    public Builder clock(Clock clock) {
      this.clock = Objects.requireNonNull(clock, "clock");
      return this;
    }

    /** @param scheduler where Failsafe runs attempts and waits (tests pass a virtual-time one) */
    public Builder scheduler(Scheduler scheduler) {
      this.scheduler = Objects.requireNonNull(scheduler, "scheduler");
      return this;
    }

    /** @param random uniform numbers in [0, 1) for the jitter (tests pass their own) */
    public Builder random(DoubleSupplier random) {
      this.random = Objects.requireNonNull(random, "random");
      return this;
    }

    /** @return a new, thread-safe client */
    public IdempotentHttpClient build() {
      return new IdempotentHttpClient(this);
    }
  }
}
