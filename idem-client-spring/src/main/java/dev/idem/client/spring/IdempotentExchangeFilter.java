package dev.idem.client.spring;

import dev.idem.client.ClientRetryPolicy;
import dev.idem.client.RetryBudget;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotencyKeyReusedException;
import dev.idem.core.InvalidIdempotencyKeyException;
import dev.idem.core.OutcomeUnknownException;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import java.util.function.DoubleSupplier;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Publisher;
import org.springframework.core.io.buffer.DataBuffer;
import org.springframework.core.io.buffer.DataBufferUtils;
import org.springframework.core.io.buffer.DefaultDataBufferFactory;
import org.springframework.http.client.reactive.ClientHttpRequest;
import org.springframework.http.client.reactive.ClientHttpRequestDecorator;
import org.springframework.web.reactive.function.BodyExtractors;
import org.springframework.web.reactive.function.BodyInserter;
import org.springframework.web.reactive.function.client.ClientRequest;
import org.springframework.web.reactive.function.client.ClientResponse;
import org.springframework.web.reactive.function.client.ExchangeFilterFunction;
import org.springframework.web.reactive.function.client.ExchangeFunction;
import org.springframework.web.reactive.function.client.WebClient;
import org.springframework.web.reactive.function.client.WebClientRequestException;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * A WebClient filter that sends one idempotency key per logical operation and retries it safely,
 * without blocking: every attempt of the filter's own retries carries the same {@code
 * Idempotency-Key} (draft-ietf-httpapi-idempotency-key-header section 2) and the same body, and the
 * waits between attempts are {@link Mono#delay} on a scheduler, never a sleeping thread.
 *
 * <pre>{@code
 * WebClient client = WebClient.builder().baseUrl("http://localhost:8080")
 *     .apply(IdempotentExchangeFilter.builder().build()::install)
 *     .build();
 * }</pre>
 *
 * <h2>Where the key comes from</h2>
 *
 * For a request of one of the filter's methods (by default POST, PUT, PATCH and DELETE; others pass
 * through untouched, with no key and no retries), in this order:
 *
 * <ol>
 *   <li>an {@code Idempotency-Key} header the caller set: kept as it is, never replaced (a
 *       caller that resends a stored operation must reach the server's record of it);
 *   <li>the request attribute {@link #KEY_ATTRIBUTE}, set with {@link #newKey()} or {@link
 *       #key(String)} on the request spec, or for every spec by {@link #install}: sent as an
 *       sf-string, as {@code IdempotentHttpClient} sends it;
 *   <li>otherwise a key the filter makes (by default a random UUID) when the request reaches it, kept
 *       for all of the filter's own retries of that request.
 * </ol>
 *
 * <p>WebClient builds a new {@link ClientRequest} from its request spec on every subscription, so
 * a key made by the filter (case 3) lives as long as one subscription. A {@code .retryWhen(...)}
 * placed after {@code .retrieve()} resubscribes and would get a new key per resubscription; binding
 * the key to the request spec (cases 1 and 2) keeps it, since the spec is built once and copied
 * into every request. {@link #install} binds one to every spec. A spec built inside {@code
 * Mono.defer} or a key made there is made again per subscription: that is the mistake this class
 * exists to avoid (docs/client.md shows both).
 *
 * <h2>What is retried</h2>
 *
 * As {@link ClientRetryPolicy} says: failures to exchange ({@link WebClientRequestException}, an
 * {@link IOException}, and an attempt that exceeds {@link ClientRetryPolicy#attemptTimeout()},
 * shortened to the time left) and the answers of {@link ClientRetryPolicy#isRetryableAnswer} (408,
 * 409, 425, 429, 502, 503, 504 not marked {@code Idempotent-Replayed: true}). The wait before a
 * retry is the server's {@code Retry-After} (RFC 9110 section 10.2.3) when it sent one, else the
 * policy's backoff with full jitter. A retry is made only while attempts are left, the next
 * attempt would start before the operation's deadline ({@link ClientRetryPolicy#maxDuration()} from
 * the first attempt), and the {@link RetryBudget}, shared by every operation of this filter, has a
 * token; so a {@code Retry-After} that ends at or past the deadline ends the operation.
 *
 * <h2>Outcomes</h2>
 *
 * <ul>
 *   <li>a final answer is passed on as it is (its body unread, except a 422 that may be the
 *       key-reused problem, {@code application/problem+json}, whose body is read and passed on
 *       whole);
 *   <li>the server's key-reused problem (422, {@link ClientRetryPolicy#isKeyReused}) fails the
 *       exchange with {@link IdempotencyKeyReusedException}; it is never retried;
 *   <li>when the bounds run out on a retried failure the exchange fails with {@link
 *       OutcomeUnknownException} ({@link OutcomeUnknownException.Phase#CLIENT_RETRIES_EXHAUSTED}),
 *       whose {@code key()} resumes the operation; the discarded answers' bodies are released
 *       (drained for at most the attempt timeout, shortened to the time left, then cancelled);
 *   <li>a key (from the header or the attribute) that breaks {@link IdempotencyKey#of}'s rules, or
 *       a header that is not one well-formed field (two fields, a list, characters after the
 *       closing quote: an Idem server answers those with 400), fails the exchange with {@link
 *       InvalidIdempotencyKeyException} before anything is sent.
 * </ul>
 *
 * <p>The body is sent again by each attempt: a {@code bodyValue(...)} or a cold publisher is. A
 * body that can be produced once (an {@code InputStreamResource}, a unicast {@code Flux}) fails the
 * first resend in the body itself, which the filter tells from a connection failure: the exchange
 * then fails with {@link OutcomeUnknownException} and the key, after that one wait (an earlier
 * attempt may have been carried out); a body that fails at the first attempt fails the exchange
 * with its own error, nothing retried. Immutable and thread-safe; share one
 * instance (and so its budget) across a client's requests.
 */
public final class IdempotentExchangeFilter implements ExchangeFilterFunction {

  /**
   * The request attribute that holds the key of a request's operation, a {@link String} that passes
   * {@link IdempotencyKey#of}.
   */
  public static final String KEY_ATTRIBUTE = IdempotentExchangeFilter.class.getName() + ".key";

  private final RetryRules rules;
  private final Supplier<String> keys;
  private final Scheduler scheduler;
  private final Set<String> methods;

  private IdempotentExchangeFilter(Builder b) {
    this.rules = new RetryRules(b.policy, b.budget, b.clock, b.random);
    this.keys = b.keys;
    this.scheduler = b.scheduler;
    this.methods = b.methods;
  }

  /**
   * @return a builder with {@link ClientRetryPolicy#defaults()}, a budget of 10 retries refilled by
   *     0.2 per operation (as {@code IdempotentHttpClient}'s), UUID keys, and POST, PUT, PATCH and
   *     DELETE keyed
   */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * Binds a new key (a random UUID) to a request spec, made once when the spec is built: {@code
   * client.post().uri("/notes").attributes(IdempotentExchangeFilter.newKey())}. Every request
   * WebClient builds from that spec, a resubscription by {@code retryWhen} included, carries it.
   *
   * @return a consumer of the spec's attributes, for {@code RequestHeadersSpec.attributes}
   */
  public static Consumer<Map<String, Object>> newKey() {
    return attributes -> attributes.put(KEY_ATTRIBUTE, UUID.randomUUID().toString());
  }

  /**
   * Binds a given key to a request spec, for example the key of an operation resumed after {@link
   * OutcomeUnknownException}: {@code .attributes(IdempotentExchangeFilter.key(e.key().value()))}.
   *
   * @param key the key, never {@code null}
   * @return a consumer of the spec's attributes, for {@code RequestHeadersSpec.attributes}
   * @throws InvalidIdempotencyKeyException if {@code key} breaks {@link IdempotencyKey#of}'s rules
   */
  public static Consumer<Map<String, Object>> key(String key) {
    String value = IdempotencyKey.of(key).value();
    return attributes -> attributes.put(KEY_ATTRIBUTE, value);
  }

  /**
   * Adds this filter to a WebClient builder and binds a new key (from the key generator) to every
   * request spec the client makes, so that each logical operation has its key from the moment its
   * spec is built and a {@code retryWhen} after {@code retrieve()} resends it with the same key. A
   * key the caller binds with {@link #key(String)} or an {@code Idempotency-Key} header replaces or
   * precedes it. Use it as {@code WebClient.builder().apply(filter::install)}.
   *
   * @param builder the builder, never {@code null}
   */
  public void install(WebClient.Builder builder) {
    builder.filter(this).defaultRequest(spec -> spec.attributes(attributes -> attributes.put(KEY_ATTRIBUTE, IdempotencyKey.of(keys.get()).value())));
  }

  @Override
  public Mono<ClientResponse> filter(ClientRequest request, ExchangeFunction next) {
    if (!methods.contains(request.method().name().toUpperCase(Locale.ROOT))) {
      return next.exchange(request);
    }
    ClientRequest keyed;
    IdempotencyKey key;
    try {
      List<String> header = RetryRules.keyFields(request.headers());
      if (!header.isEmpty()) {
        key = RetryRules.keyOf(header);
        keyed = request;
      } else {
        Object bound = request.attributes().get(KEY_ATTRIBUTE);
        key = IdempotencyKey.of(bound instanceof String s ? s : keys.get());
        String value = RetryRules.fieldValue(key);
        keyed = ClientRequest.from(request).headers(h -> h.set(RetryRules.KEY_HEADER, value)).build();
      }
    } catch (RuntimeException e) {
      return Mono.error(e);
    }
    ClientRequest watched = watchingBody(keyed);
    return Mono.defer(() -> attempt(watched, next, key, rules.start(), 1));
  }

  private Mono<ClientResponse> attempt(ClientRequest request, ExchangeFunction next, IdempotencyKey key, Instant deadline, int number) {
    Duration timeout = rules.attemptTimeout(deadline);
    if (timeout == null) {
      return Mono.error(rules.exhausted(key, number - 1, -1, null, null, deadline, true));
    }
    return next.exchange(request)
        .timeout(timeout)
        .map(response -> answered(number, response))
        .onErrorResume(failure -> BodyFailure.in(failure) != null, failure -> Mono.error(bodyFailed(key, number, failure)))
        .onErrorResume(IdempotentExchangeFilter::isTransportFailure, failure -> Mono.just(failed(number, failure)))
        .flatMap(a -> settle(request, next, key, deadline, a));
  }

  /**
   * A body that failed while it was produced, not while it was sent: the caller's own error on the
   * first attempt (nothing of the request was carried out, as without the filter); on a resend, the
   * end of the operation with its key, since an earlier attempt may have been carried out and this
   * body cannot be sent again (a body that can be sent once: an {@code InputStreamResource}, a
   * unicast {@code Flux}, a buffer released by the first write).
   */
  private static Throwable bodyFailed(IdempotencyKey key, int number, Throwable failure) {
    Throwable cause = Objects.requireNonNull(BodyFailure.in(failure)).getCause();
    Throwable own = cause == null ? failure : cause;
    if (number == 1) {
      return own;
    }
    return OutcomeUnknownException.clientRetriesExhausted(key, number - 1, -1,
        "the request body could not be produced again for attempt " + number + " (a body that can be sent once?): "
            + own.getMessage(), own, null, null);
  }

  /**
   * The request with its body inserter watched: a failure of the body's own publisher, or of the
   * inserter before it writes, is marked ({@link BodyFailure}) so that it is told apart from a
   * failure of the connection, which WebClient wraps in the same {@code WebClientRequestException}.
   */
  private static ClientRequest watchingBody(ClientRequest request) {
    BodyInserter<?, ? super ClientHttpRequest> body = request.body();
    return ClientRequest.from(request).body((ClientHttpRequest message, BodyInserter.Context context) -> {
      AtomicBoolean writing = new AtomicBoolean();
      ClientHttpRequest watched = new ClientHttpRequestDecorator(message) {
        @Override
        public Mono<Void> writeWith(Publisher<? extends DataBuffer> buffers) {
          writing.set(true);
          return super.writeWith(Flux.from(buffers).onErrorMap(e -> !(e instanceof BodyFailure), BodyFailure::new));
        }

        @Override
        public Mono<Void> writeAndFlushWith(Publisher<? extends Publisher<? extends DataBuffer>> buffers) {
          writing.set(true);
          return super.writeAndFlushWith(Flux.from(buffers)
              .map(chunk -> Flux.from(chunk).onErrorMap(e -> !(e instanceof BodyFailure), BodyFailure::new))
              .onErrorMap(e -> !(e instanceof BodyFailure), BodyFailure::new));
        }
      };
      Mono<Void> inserted;
      try {
        inserted = body.insert(watched, context);
      } catch (RuntimeException e) {
        return Mono.error(new BodyFailure(e));
      }
      return inserted.onErrorMap(e -> !writing.get() && !(e instanceof BodyFailure), BodyFailure::new);
    }).build();
  }

  private Mono<ClientResponse> settle(ClientRequest request, ExchangeFunction next, IdempotencyKey key, Instant deadline, Attempt a) {
    ClientResponse response = a.response;
    if (!a.retryable) {
      if (response == null) {
        return Mono.error(Objects.requireNonNull(a.failure));
      }
      return response.statusCode().value() == 422 ? checkKeyReused(response, key) : Mono.just(response);
    }
    // drained (so the connection can be reused) for at most the attempt's timeout, shortened to the time left;
    // a body that stalls longer is cancelled, which closes its connection, rather than holding the operation
    Duration drain = rules.attemptTimeout(deadline);
    Mono<Void> release = response == null ? Mono.empty()
        : response.releaseBody().timeout(drain == null ? Duration.ZERO : drain).onErrorResume(e -> Mono.empty());
    int lastStatus = response == null ? -1 : response.statusCode().value();
    if (!rules.mayRetry(a.number, a.delay, deadline)) {
      return release.then(Mono.error(() -> rules.exhausted(key, a.number, lastStatus, a.failure, a.retryAfter, deadline, false)));
    }
    return release.then(Mono.delay(a.delay, scheduler)).then(Mono.defer(() -> attempt(request, next, key, deadline, a.number + 1)));
  }

  /** Reads a 422's body to tell the key-reused problem from any other 422, which is passed on whole. */
  private Mono<ClientResponse> checkKeyReused(ClientResponse response, IdempotencyKey key) {
    String contentType = response.headers().asHttpHeaders().getFirst("Content-Type");
    if (!rules.mayBeKeyReused(contentType)) {
      return Mono.just(response); // not a problem the policy names (another media type, or no types): passed on unread
    }
    // joined without the codecs' in-memory limit (256 KiB by default): a large 422 is passed on whole, not failed
    Mono<byte[]> read = response.body(BodyExtractors.toDataBuffers()).collect(ByteArrayOutputStream::new, (out, buffer) -> {
      try {
        byte[] chunk = new byte[buffer.readableByteCount()];
        buffer.read(chunk);
        out.write(chunk, 0, chunk.length);
      } finally {
        DataBufferUtils.release(buffer);
      }
    }).map(ByteArrayOutputStream::toByteArray);
    return read.defaultIfEmpty(new byte[0]).flatMap(body -> {
      if (rules.policy().isKeyReused(422, contentType, body)) {
        return Mono.error(new IdempotencyKeyReusedException(key, null));
      }
      // a new response over the bytes read (mutate() would release the consumed body again)
      return Mono.just(ClientResponse.create(response.statusCode(), response.strategies())
          .headers(headers -> response.headers().asHttpHeaders().forEach(headers::addAll))
          .cookies(cookies -> cookies.addAll(response.cookies()))
          .request(response.request())
          .body(Flux.just(DefaultDataBufferFactory.sharedInstance.wrap(body)))
          .build());
    });
  }

  private Attempt answered(int number, ClientResponse response) {
    int status = response.statusCode().value();
    if (!RetryRules.retryable(status, response.headers().asHttpHeaders().getFirst(RetryRules.REPLAYED_HEADER))) {
      return new Attempt(number, response, null, false, Duration.ZERO, null);
    }
    Duration retryAfter = rules.retryAfter(response.headers().asHttpHeaders().getFirst(RetryRules.RETRY_AFTER_HEADER),
        response.headers().asHttpHeaders().getFirst("Date"));
    return new Attempt(number, response, null, true, rules.delayAfter(number, retryAfter), retryAfter);
  }

  private Attempt failed(int number, Throwable failure) {
    return new Attempt(number, null, failure, true, rules.delayAfter(number, null), null);
  }

  /**
   * A failure after which the request may or may not have been carried out: the connection failed
   * or was lost, or the attempt timed out. Anything else (a bad request spec, a codec error) is the
   * caller's, and passed on.
   */
  private static boolean isTransportFailure(Throwable failure) {
    return failure instanceof WebClientRequestException || failure instanceof IOException || failure instanceof TimeoutException;
  }

  /** Marks a failure of the request body itself (its publisher, or its inserter before writing). */
  private static final class BodyFailure extends RuntimeException {
    private static final long serialVersionUID = 1L;

    BodyFailure(Throwable cause) {
      super(cause.getMessage(), cause, false, false);
    }

    /** @return the marker in {@code failure}'s causes, or {@code null} */
    static @Nullable BodyFailure in(Throwable failure) {
      for (Throwable t = failure; t != null; t = t.getCause()) {
        if (t instanceof BodyFailure body) {
          return body;
        }
        if (t.getCause() == t) {
          break;
        }
      }
      return null;
    }
  }

  /** One attempt's result. */
  private static final class Attempt {
    final int number;
    final @Nullable ClientResponse response;
    final @Nullable Throwable failure;
    final boolean retryable;
    final Duration delay;
    final @Nullable Duration retryAfter;

    Attempt(int number, @Nullable ClientResponse response, @Nullable Throwable failure, boolean retryable, Duration delay,
        @Nullable Duration retryAfter) {
      this.number = number;
      this.response = response;
      this.failure = failure;
      this.retryable = retryable;
      this.delay = delay;
      this.retryAfter = retryAfter;
    }
  }

  /** Builds an {@link IdempotentExchangeFilter}. Not thread-safe; every setter validates eagerly. */
  public static final class Builder {
    private ClientRetryPolicy policy = ClientRetryPolicy.defaults();
    private RetryBudget budget = RetryBudget.create(0.2, 10);
    private Supplier<String> keys = () -> UUID.randomUUID().toString();
    private Clock clock = Clock.systemUTC();
    private Scheduler scheduler = Schedulers.parallel();
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

    /**
     * @param scheduler where the waits between attempts run ({@link Mono#delay}); by default {@link
     *     Schedulers#parallel()}, tests pass a virtual-time one. Attempt timeouts run on Reactor's
     *     default timer.
     * @return this builder
     */
    public Builder scheduler(Scheduler scheduler) {
      this.scheduler = Objects.requireNonNull(scheduler, "scheduler");
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

    /** @return a new, thread-safe filter */
    public IdempotentExchangeFilter build() {
      return new IdempotentExchangeFilter(this);
    }
  }
}
