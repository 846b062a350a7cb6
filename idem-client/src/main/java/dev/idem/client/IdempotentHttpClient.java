package dev.idem.client;

import dev.failsafe.Failsafe;
import dev.failsafe.RetryPolicy;
import dev.failsafe.spi.Scheduler;
import dev.idem.core.IdempotencyHeaders;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotencyKeyReusedException;
import dev.idem.core.OutcomeUnknownException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.DoubleSupplier;
import java.util.function.Function;
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
 * } catch (OutcomeUnknownException e) { // dev.idem.core, phase CLIENT_RETRIES_EXHAUSTED
 *   // every attempt failed; the note may exist: later, client.send(save.withKey(e.key()))
 * }
 * }</pre>
 *
 * <p>Outcomes of {@link #send}: a final response ({@link OperationResult}, whatever its status,
 * when it is not retried: a 422 validation error, a 409 replayed from the server's store, a 500);
 * {@link IdempotencyKeyReusedException} for the server's "key reused" problem ({@link
 * ClientRetryPolicy#isKeyReused}); {@link OutcomeUnknownException} (Idem's one type for an unknown outcome,
 * of phase {@link OutcomeUnknownException.Phase#CLIENT_RETRIES_EXHAUSTED}, with the attempts sent,
 * the last status, the server's {@code Retry-After} and key status) when the attempts, the deadline
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
  private final @Nullable PendingJournal journal;
  private final Clock clock;
  private final Scheduler scheduler;
  private final DoubleSupplier random;
  /** The key status endpoint, without a trailing '/'; {@code null} when the client does not ask it. */
  private final @Nullable String statusEndpoint;
  private final Function<HttpOperation, String> statusOperation;

  private IdempotentHttpClient(Builder b) {
    this.transport = b.transport;
    this.policy = b.policy;
    this.budget = b.budget;
    this.keys = b.keys;
    this.journal = b.journal;
    this.clock = b.clock;
    this.scheduler = b.scheduler;
    this.random = b.random;
    this.statusEndpoint = b.statusEndpoint;
    this.statusOperation = b.statusOperation;
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
      throw OutcomeUnknownException.clientRetriesExhausted(IdempotencyKey.of(key), 0, -1, "unexpected failure", cause, null, null);
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
    return sent.handle((response, failure) -> classify(number, response, failure))
        .thenCompose(a -> settle(op, key, deadline, a));
  }

  /**
   * Asks the key status endpoint, when the client has one, about an attempt whose outcome is
   * unknown (an I/O failure, or 502, 503, 504 without a replay), and waits accordingly before the
   * resend: no backoff when the server says the key is completed (the resend replays its stored
   * answer) or unknown to it (the resend runs the operation), the server's hint when it is in
   * progress. When the endpoint cannot answer, the attempt keeps its backoff. Answers that say
   * what happened (409, 429, a final status) are not asked about.
   */
  private CompletableFuture<Attempt> settle(HttpOperation op, String key, Instant deadline, Attempt a) {
    boolean unknown = a.failure != null || (a.response != null && a.response.statusCode() >= 502 && a.response.statusCode() <= 504);
    if (statusEndpoint == null || !a.retryable || !unknown) {
      return CompletableFuture.completedFuture(a);
    }
    Duration remaining = Duration.between(clock.instant(), deadline);
    if (remaining.isNegative() || remaining.isZero()) {
      return CompletableFuture.completedFuture(a);
    }
    CompletableFuture<ServerKeyStatus> status;
    try {
      status = statusAsync(op, key, remaining.compareTo(policy.attemptTimeout()) < 0 ? remaining : policy.attemptTimeout());
    } catch (RuntimeException e) {
      return CompletableFuture.completedFuture(a);
    }
    return status.handle((s, failure) -> failure != null || s == null ? a : a.settledBy(s));
  }

  /**
   * Asks the server's key status endpoint (set with {@link Builder#keyStatus}) what it recorded for
   * {@code key} under {@code operation}: {@code GET <endpoint>/<key>?operation=<METHOD pattern>}
   * with the operation's header fields (its credentials, so that the server answers about the
   * caller's own key), without its body. For a caller that got {@link OutcomeUnknownException} and
   * wants to know, before it resends, whether the operation completed.
   *
   * @param operation the operation, for its method, URI and header fields; never {@code null}
   * @param key the key it was sent with, never {@code null}
   * @return what the server said, never {@code null}
   * @throws IllegalStateException if the client has no key status endpoint
   * @throws UncheckedIOException if the endpoint cannot be reached or does not answer within the
   *     policy's attempt timeout (body included), or answers anything but 200 with its document or
   *     404 with its own problem details (another 404, such as a server without the endpoint's, is
   *     not "not found")
   * @throws InterruptedException if interrupted while waiting
   */
  public ServerKeyStatus keyStatus(HttpOperation operation, String key) throws InterruptedException {
    Objects.requireNonNull(operation, "operation");
    Objects.requireNonNull(key, "key");
    if (statusEndpoint == null) {
      throw new IllegalStateException("this client has no key status endpoint: set one with Builder.keyStatus");
    }
    try {
      return statusAsync(operation, IdempotencyKey.of(key).value(), policy.attemptTimeout()).get();
    } catch (ExecutionException e) {
      Throwable cause = unwrap(e);
      if (cause instanceof RuntimeException r) {
        throw r;
      }
      throw new UncheckedIOException(cause instanceof IOException io ? io : new IOException(cause));
    }
  }

  private CompletableFuture<ServerKeyStatus> statusAsync(HttpOperation op, String key, Duration timeout) {
    String operation = statusOperation.apply(op);
    URI uri = URI.create(statusEndpoint + "/" + encode(key) + "?operation=" + encode(operation));
    HttpRequest.Builder request = HttpRequest.newBuilder(uri).GET().timeout(timeout);
    for (Map.Entry<String, String> h : op.headers()) {
      String name = h.getKey().toLowerCase(Locale.ROOT);
      if (!name.equals("content-type") && !name.equals("content-encoding") && !name.equals(KEY_HEADER.toLowerCase(Locale.ROOT))) {
        request.header(h.getKey(), h.getValue());
      }
    }
    // The request's timeout ends at the response's header fields; the whole exchange, body
    // included, is bounded too, so that a status read never outlasts the time left.
    return transport.send(request.build()).orTimeout(timeout.toNanos(), TimeUnit.NANOSECONDS).thenApply(r -> {
      if (r.statusCode() == 200 || r.statusCode() == 404) {
        Optional<ServerKeyStatus> parsed = ServerKeyStatus.parse(r.body());
        if (parsed.isPresent() && (parsed.get().state() == ServerKeyStatus.State.NOT_FOUND) == (r.statusCode() == 404)) {
          return parsed.get();
        }
      }
      // Only the endpoint's own 404 says "no record": a 404 from a server without the endpoint or
      // from a proxy says nothing about the key.
      throw new UncheckedIOException(new IOException("the key status endpoint " + statusEndpoint + " answered " + r.statusCode()
          + (r.statusCode() == 200 || r.statusCode() == 404 ? " with a body that is not the endpoint's key status" : "")));
    });
  }

  /** Percent-encodes a path segment or query value (RFC 3986 section 2.1): everything but unreserved characters. */
  private static String encode(String s) {
    return URLEncoder.encode(s, StandardCharsets.UTF_8).replace("+", "%20").replace("*", "%2A").replace("%7E", "~");
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
    if (a.settled != null) {
      reason += switch (a.settled.state()) {
        case COMPLETED -> "; the server's key status says completed with status " + a.settled.status()
            + ": send again with the same key to get its stored answer";
        case IN_PROGRESS -> "; the server's key status says an attempt is still in progress";
        case NOT_FOUND -> "; the server's key status has no record of the key: sending again runs the operation";
      };
    }
    throw OutcomeUnknownException.clientRetriesExhausted(IdempotencyKey.of(key), sent, a.response == null ? -1 : a.response.statusCode(),
        reason, a.failure, a.retryAfter, a.settled);
  }

  /** @return the request's method and URI path, as a route names them ({@code POST /notes}) */
  static String defaultOperation(HttpOperation op) {
    String path = op.uri().getPath();
    return op.method() + " " + (path == null || path.isEmpty() ? "/" : path);
  }

  private static String quoted(String key) {
    // draft-ietf-httpapi-idempotency-key-header section 2: an sf-string (RFC 8941 section 3.3.3)
    return "\"" + key.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
  }

  /** One attempt's result, as the retry policy sees it. */
  static final class Attempt {
    final int number;
    final @Nullable HttpResponse<byte[]> response;
    final @Nullable Throwable failure;
    final boolean retryable;
    final Duration nextDelay;
    final @Nullable Duration retryAfter;
    /** What the key status endpoint said after this attempt, or {@code null} when it was not asked or did not answer. */
    final @Nullable ServerKeyStatus settled;

    Attempt(int number, @Nullable HttpResponse<byte[]> response, @Nullable Throwable failure, boolean retryable, Duration nextDelay,
        @Nullable Duration retryAfter) {
      this(number, response, failure, retryable, nextDelay, retryAfter, null);
    }

    Attempt(int number, @Nullable HttpResponse<byte[]> response, @Nullable Throwable failure, boolean retryable, Duration nextDelay,
        @Nullable Duration retryAfter, @Nullable ServerKeyStatus settled) {
      this.settled = settled;
      this.number = number;
      this.response = response;
      this.failure = failure;
      this.retryable = retryable;
      this.nextDelay = nextDelay;
      this.retryAfter = retryAfter;
    }

    /** @return this attempt with the wait that {@code status} calls for before the resend */
    Attempt settledBy(ServerKeyStatus status) {
      Duration wait = switch (status.state()) {
        case COMPLETED, NOT_FOUND -> Duration.ZERO;
        case IN_PROGRESS -> status.retryAfter() == null ? nextDelay : status.retryAfter();
      };
      return new Attempt(number, response, failure, retryable, wait, retryAfter, status);
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
    private @Nullable PendingJournal journal;
    private Clock clock = Clock.systemUTC();
    private Scheduler scheduler = Scheduler.DEFAULT;
    private DoubleSupplier random = () -> ThreadLocalRandom.current().nextDouble();
    private @Nullable String statusEndpoint;
    private Function<HttpOperation, String> statusOperation = IdempotentHttpClient::defaultOperation;

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

    /**
     * Asks the server's key status endpoint to settle an unknown outcome before resending (off
     * unless set): after an attempt that failed without telling what happened (an I/O failure or
     * timeout, or 502, 503, 504 without a replay) the client sends {@code GET
     * <endpoint>/<key>?operation=<METHOD path>} with the operation's header fields, and then resends
     * at once when the server says the key is completed (the resend gets the stored answer) or
     * unknown to it (the resend runs the operation), or after the server's hint when it is in
     * progress, instead of its backoff. If the endpoint fails the backoff applies. When the attempts
     * run out, {@link OutcomeUnknownException#serverStatus(Class)} with {@link ServerKeyStatus} says what the
     * server last said. The
     * operation is the request's method and URI path ({@code POST /notes}), which Idem's endpoint
     * resolves to the route its filter matches; {@link #keyStatus(URI, Function)} names it
     * otherwise.
     *
     * @param endpoint the endpoint, such as {@code http://127.0.0.1:8080/idempotency-keys}, never
     *     {@code null}; absolute http or https, without query or fragment
     * @return this builder
     * @throws IllegalArgumentException if {@code endpoint} breaks that rule
     */
    public Builder keyStatus(URI endpoint) {
      return keyStatus(endpoint, IdempotentHttpClient::defaultOperation);
    }

    /**
     * As {@link #keyStatus(URI)}, with the operation named by {@code operation} (the server's route
     * as "METHOD pattern", such as {@code PATCH /notes/*}).
     *
     * @param endpoint as for {@link #keyStatus(URI)}
     * @param operation the route of an operation, never {@code null}; must not return {@code null}
     * @return this builder
     * @throws IllegalArgumentException if {@code endpoint} is not an absolute http(s) URI without
     *     query or fragment
     */
    public Builder keyStatus(URI endpoint, Function<HttpOperation, String> operation) {
      Objects.requireNonNull(endpoint, "endpoint");
      this.statusOperation = Objects.requireNonNull(operation, "operation");
      String scheme = endpoint.getScheme();
      if (scheme == null || !(scheme.equalsIgnoreCase("http") || scheme.equalsIgnoreCase("https")) || endpoint.getRawAuthority() == null
          || endpoint.getRawQuery() != null || endpoint.getRawFragment() != null) {
        throw new IllegalArgumentException("the key status endpoint must be an absolute http or https URI without query or fragment: "
            + endpoint);
      }
      String text = endpoint.toString();
      while (text.endsWith("/")) {
        text = text.substring(0, text.length() - 1);
      }
      this.statusEndpoint = text;
      return this;
    }

    /** @return a new, thread-safe client */
    public IdempotentHttpClient build() {
      return new IdempotentHttpClient(this);
    }
  }
}
