package dev.idem.webflux;

import dev.idem.core.AsyncEffect;
import dev.idem.core.AsyncLeaseIdempotency;
import dev.idem.core.AttemptResult;
import dev.idem.core.Fingerprint;
import dev.idem.core.IdempotencyHeaders;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.InvalidPayloadException;
import dev.idem.core.LeaseContext;
import dev.idem.core.OutcomeUnknownException;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.core.http.HeaderRules;
import dev.idem.core.http.KeyHeader;
import dev.idem.core.http.ProblemCatalog;
import dev.idem.core.http.ProblemDetails;
import dev.idem.core.http.RouteOperation;
import java.lang.System.Logger.Level;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;
import org.springframework.core.ResolvableType;
import org.springframework.core.io.buffer.DataBuffer;
import org.springframework.core.io.buffer.DataBufferLimitException;
import org.springframework.core.io.buffer.DataBufferUtils;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.MediaType;
import org.springframework.http.codec.FormHttpMessageReader;
import org.springframework.http.server.PathContainer;
import org.springframework.http.server.reactive.ServerHttpRequest;
import org.springframework.http.server.reactive.ServerHttpRequestDecorator;
import org.springframework.http.server.reactive.ServerHttpResponse;
import org.springframework.util.LinkedMultiValueMap;
import org.springframework.util.MultiValueMap;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.ServerWebExchangeDecorator;
import org.springframework.web.server.WebFilter;
import org.springframework.web.server.WebFilterChain;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * A Spring WebFlux {@link WebFilter} that implements the {@code Idempotency-Key} HTTP request
 * header field (IETF draft-ietf-httpapi-idempotency-key-header) without blocking, in lease mode
 * ({@link AsyncLeaseIdempotency} on an {@link dev.idem.core.spi.AsyncLeaseStore}) or in
 * transactional mode ({@link TransactionalEngine}: the handler's writes and the key's record in
 * one reactive transaction): the rest of the chain, the handler, is the effect that runs at most
 * once per key. It answers as the
 * servlet filter of idem-servlet does ({@code dev.idem.servlet.IdempotencyFilter}: the same key
 * rules, fingerprint, problems and header fields, from the same code in {@code dev.idem.core.http}).
 *
 * <h2>What happens to a request</h2>
 *
 * <ol>
 *   <li>A request whose method and decoded path match no {@link IdempotencyWebFilterConfig.Route}
 *       passes through untouched (by default only {@code POST} and {@code PATCH} match, key optional).
 *   <li>The key comes from the {@value #KEY_HEADER} field, quoted ({@code sf-string}, draft section
 *       2.1) or bare ({@link KeyHeader}). Missing on a route that requires it: 400. Missing on
 *       another: the request runs unprotected. Malformed, or the field twice: 400.
 *   <li>The body is read once, without blocking, into memory, at most {@link
 *       IdempotencyWebFilterConfig#maxBodyBytes()} bytes ({@link DataBufferUtils#join(org.reactivestreams.Publisher,
 *       int)}); a longer one, or a {@code Content-Length} announcing one, gets 413 without the
 *       handler running. The handler reads the same bytes again: its request's body, and the form
 *       data of an {@code application/x-www-form-urlencoded} body, come from them.
 *   <li>The fingerprint (draft section 2.4) is {@link Fingerprint#request()} of the method, the
 *       request target as sent (raw path and query), the {@code Content-Type}, the {@code
 *       Content-Encoding} and the body (canonical JSON for JSON, sorted fields for a form, raw
 *       bytes otherwise; multipart bodies count as their bytes, boundary included). A body
 *       declared as JSON that is not JSON gets 400.
 *   <li>The scope is the principal ({@link IdempotencyWebFilterConfig.Builder#principals}, by
 *       default the exchange's principal, else anonymous) and the route's operation, {@code
 *       "<METHOD> <pattern>"} ({@link RouteOperation}).
 *   <li>The engine claims the key. For a first attempt the handler runs against a response whose
 *       body is held in memory up to {@link IdempotencyWebFilterConfig#maxResponseBytes()} bytes
 *       (status and header fields are set on the real response, which is not committed); the
 *       engine's {@link dev.idem.core.ResponsePolicy} then stores the answer or releases the key
 *       (5xx, 408, 425, 429 by default, so a retry runs again), and the filter writes the answer.
 *       In lease mode the handler gets the claim from {@link #leaseContext(ServerWebExchange)}; in
 *       transactional mode the handler runs inside the engine's transaction, so its writes, the
 *       claim and the stored answer commit together, and an answer the policy does not store rolls
 *       back with the handler's writes. A body that grows
 *       past the limit streams to the client from then on; only its status, replayed header fields
 *       and length are stored, and a retry gets the 422 problem {@value #PROBLEM_RESPONSE_TOO_LARGE}.
 *   <li>A retry after completion gets the stored status, body bytes and the configured header
 *       fields ({@link IdempotencyWebFilterConfig#replayedHeaders()}), plus {@code
 *       Idempotent-Replayed: true}.
 * </ol>
 *
 * <p>Every answer to a request with a well-formed key carries the {@value #KEY_HEADER} field back
 * exactly as the request sent it. A handler that fails (an error signal) releases the key, so a
 * retry runs again, and its error goes on to WebFlux's error handling as without the filter.
 *
 * <h2>Errors</h2>
 *
 * <p>The filter's own answers are RFC 9457 problems ({@code application/problem+json}) with the
 * servlet filter's type URIs, by default under {@value #PROBLEM_TYPE_BASE}: 400 {@value
 * #PROBLEM_KEY_MISSING}, {@value #PROBLEM_KEY_MALFORMED} and {@value #PROBLEM_PAYLOAD_INVALID};
 * 409 {@value #PROBLEM_IN_PROGRESS} with {@code Retry-After} (the rest of the first attempt's lease,
 * at most {@link IdempotencyWebFilterConfig#maxRetryAfter()}); 413 {@value #PROBLEM_BODY_TOO_LARGE};
 * 422 {@value #PROBLEM_KEY_REUSED} and {@value #PROBLEM_RESPONSE_TOO_LARGE}; 500 {@value
 * #PROBLEM_STORED_RESPONSE_UNREADABLE}; 503 {@value #PROBLEM_STORE_UNAVAILABLE} and {@value
 * #PROBLEM_OUTCOME_UNKNOWN} (the handler ran but its answer could not be stored within the lease:
 * its answer is not sent, and a retry with the same key after {@code Retry-After} gets the stored
 * answer or resumes as a recovery).
 *
 * <h2>A client that goes away</h2>
 *
 * <p>When the connection closes, WebFlux cancels the filter's chain (or fails the body being
 * read). What was not begun is not begun, what was begun finishes: a request whose body was still
 * being read claims nothing; one whose claim was in flight (or that waited for another attempt)
 * runs no handler, and the engine releases the key it may have won; a handler already running runs
 * on to its end, detached from the exchange (the engine subscribed to it, not the client), and its
 * answer is stored or the key released as for any answer, so the retry gets the replay; an answer
 * stored but not yet written is replayed to the retry. Exactly one effect per key either way, and no
 * key stays claimed past its lease.
 *
 * <p>In transactional mode the cancellation reaches the transaction: a handler still running is
 * cancelled and the transaction rolls back, its writes with the claim, so the retry runs the
 * handler again; once the commit was sent, the retry gets the replay. Never a stored answer for
 * writes that rolled back.
 *
 * <h2>Threads</h2>
 *
 * <p>Nothing on the request path blocks: the body is read and the answer written as Reactor
 * signals, the store is asked through {@link dev.idem.core.spi.AsyncLeaseStore}, and a duplicate
 * that waits for the first attempt ({@link dev.idem.core.InProgressPolicy#waitUpTo}) waits on a
 * delayed stage, not a thread. The filter is immutable and thread-safe.
 *
 * <h2>Observations</h2>
 *
 * <p>Spring WebFlux keeps the request's Micrometer observation in the Reactor context, not in a
 * thread local. With Micrometer's context-propagation library ({@code io.micrometer:context-propagation},
 * 1.1 or later; Micrometer Tracing brings it) on the class path, the filter makes the request's
 * observation, from its Reactor context, current on the calling thread while the engine starts the attempt (in
 * lease mode the call of {@link AsyncLeaseIdempotency#attempt}, in transactional mode the
 * subscription to {@link TransactionalEngine#attempt}), and only then: the engine's listener
 * ({@link dev.idem.core.IdemListener#startedAsync}, such as the starter's observation of each
 * attempt) finds the request's observation current, and the attempt's observation is its child,
 * in the request's trace. Nothing stays current on the thread afterwards. Without the library no
 * observation is current there, and an attempt's observation begins a trace of its own.
 */
public final class IdempotencyWebFilter implements WebFilter {

  /** {@link IdempotencyHeaders#KEY}: the request header field that carries the key (draft section 2). */
  public static final String KEY_HEADER = IdempotencyHeaders.KEY;
  /** {@link IdempotencyHeaders#REPLAYED}: the response header field, with value {@code true}, of a replay. */
  public static final String REPLAYED_HEADER = IdempotencyHeaders.REPLAYED;
  /** The exchange attribute that holds the claim's {@link LeaseContext} while the handler runs. */
  public static final String LEASE_CONTEXT_ATTRIBUTE = "dev.idem.core.LeaseContext";

  /** The default base of the problem type URIs, as the servlet filter's. */
  public static final String PROBLEM_TYPE_BASE = "urn:idem:problem:";
  /** {@link ProblemCatalog#KEY_MISSING} under the default base: {@value}. */
  public static final String PROBLEM_KEY_MISSING = PROBLEM_TYPE_BASE + ProblemCatalog.KEY_MISSING;
  /** {@link ProblemCatalog#KEY_MALFORMED} under the default base: {@value}. */
  public static final String PROBLEM_KEY_MALFORMED = PROBLEM_TYPE_BASE + ProblemCatalog.KEY_MALFORMED;
  /** {@link ProblemCatalog#PAYLOAD_INVALID} under the default base: {@value}. */
  public static final String PROBLEM_PAYLOAD_INVALID = PROBLEM_TYPE_BASE + ProblemCatalog.PAYLOAD_INVALID;
  /** {@link ProblemCatalog#IN_PROGRESS} under the default base: {@value}. */
  public static final String PROBLEM_IN_PROGRESS = PROBLEM_TYPE_BASE + ProblemCatalog.IN_PROGRESS;
  /** {@link ProblemCatalog#BODY_TOO_LARGE} under the default base: {@value}. */
  public static final String PROBLEM_BODY_TOO_LARGE = PROBLEM_TYPE_BASE + ProblemCatalog.BODY_TOO_LARGE;
  /** {@link ProblemCatalog#KEY_REUSED} under the default base: {@value}. */
  public static final String PROBLEM_KEY_REUSED = PROBLEM_TYPE_BASE + ProblemCatalog.KEY_REUSED;
  /** {@link ProblemCatalog#STORE_UNAVAILABLE} under the default base: {@value}. */
  public static final String PROBLEM_STORE_UNAVAILABLE = PROBLEM_TYPE_BASE + ProblemCatalog.STORE_UNAVAILABLE;
  /** {@link ProblemCatalog#RESPONSE_TOO_LARGE} under the default base: {@value}. */
  public static final String PROBLEM_RESPONSE_TOO_LARGE = PROBLEM_TYPE_BASE + ProblemCatalog.RESPONSE_TOO_LARGE;
  /** {@link ProblemCatalog#OUTCOME_UNKNOWN} under the default base: {@value}. */
  public static final String PROBLEM_OUTCOME_UNKNOWN = PROBLEM_TYPE_BASE + ProblemCatalog.OUTCOME_UNKNOWN;
  /** {@link ProblemCatalog#STORED_RESPONSE_UNREADABLE} under the default base: {@value}. */
  public static final String PROBLEM_STORED_RESPONSE_UNREADABLE = PROBLEM_TYPE_BASE + ProblemCatalog.STORED_RESPONSE_UNREADABLE;

  private static final System.Logger LOG = System.getLogger(IdempotencyWebFilter.class.getName());
  private static final ResolvableType FORM_TYPE = ResolvableType.forClassWithGenerics(MultiValueMap.class, String.class, String.class);
  private static final FormHttpMessageReader FORMS = new FormHttpMessageReader();

  private final IdempotencyWebFilterConfig config;
  /** The request's observation (in the Reactor context) made current while an attempt starts. */
  private final SubscriberThreadLocals requestContext;

  /**
   * @param config the configuration, never {@code null}
   * @throws NullPointerException if {@code config} is {@code null}
   */
  public IdempotencyWebFilter(IdempotencyWebFilterConfig config) {
    this.config = Objects.requireNonNull(config, "config");
    this.requestContext = SubscriberThreadLocals.create();
  }

  /** @return the configuration the filter runs on, never {@code null}; immutable and thread-safe */
  public IdempotencyWebFilterConfig config() {
    return config;
  }

  /**
   * The claim of the request the handler is serving: its scope, key, owner token, and whether this
   * run takes over an expired lease ({@link LeaseContext#recovery()}), when the handler must find
   * what a first run did.
   *
   * @param exchange the exchange the handler is serving, never {@code null}
   * @return the claim while the filter runs the handler of a protected request; else empty
   */
  public static Optional<LeaseContext> leaseContext(ServerWebExchange exchange) {
    Object value = Objects.requireNonNull(exchange, "exchange").getAttribute(LEASE_CONTEXT_ATTRIBUTE);
    return value instanceof LeaseContext lease ? Optional.of(lease) : Optional.empty();
  }

  /**
   * Applies the rules described on the class to one exchange, without blocking.
   *
   * @return completes when the answer is written; errors with the handler's error (the key then
   *     released) or the principal function's
   */
  @Override
  public Mono<Void> filter(ServerWebExchange exchange, WebFilterChain chain) {
    ServerHttpRequest request = exchange.getRequest();
    String method = request.getMethod().name();
    IdempotencyWebFilterConfig.Route route = config.routeFor(method, decodedPath(request));
    if (route == null) {
      return chain.filter(exchange);
    }
    String operation = RouteOperation.of(route.method(), request.getPath().contextPath().value(), route.pattern());
    KeyHeader.Result key = KeyHeader.parseValues(values(request.getHeaders(), KEY_HEADER));
    if (key.absent()) {
      return route.keyRequired()
          ? refused(operation, "key-missing", exchange.getResponse(), ProblemCatalog.plain(ProblemCatalog.keyMissing(operation)), null)
          : chain.filter(exchange);
    }
    String problem = key.problem();
    IdempotencyKey idempotencyKey = key.key();
    String echo = key.fieldValue();
    if (problem != null || idempotencyKey == null || echo == null) {
      return refused(operation, "key-malformed", exchange.getResponse(), ProblemCatalog.plain(ProblemCatalog.keyMalformed(
          Objects.requireNonNullElse(problem, "the Idempotency-Key field is malformed"))), null);
    }
    exchange.getResponse().getHeaders().set(KEY_HEADER, echo);
    int max = config.maxBodyBytes();
    long declared = request.getHeaders().getContentLength();
    if (declared > max) {
      return tooLarge(exchange, operation, echo,
          "the request announces a body of " + declared + " bytes (Content-Length); at most " + max + " bytes are accepted");
    }
    return DataBufferUtils.join(request.getBody(), max)
        .map(IdempotencyWebFilter::bytesOf)
        .defaultIfEmpty(new byte[0])
        .map(Optional::of)
        .onErrorResume(DataBufferLimitException.class, e -> Mono.just(Optional.empty()))
        .flatMap(body -> body.isPresent()
            ? protect(exchange, chain, operation, idempotencyKey, echo, body.get())
            : tooLarge(exchange, operation, echo, "the request body is longer than " + max + " bytes, the most accepted"));
  }

  private Mono<Void> protect(ServerWebExchange exchange, WebFilterChain chain, String operation, IdempotencyKey key, String echo,
      byte[] body) {
    ServerHttpRequest request = exchange.getRequest();
    Fingerprint fingerprint;
    try {
      fingerprint = fingerprint(request, body);
    } catch (InvalidPayloadException e) {
      return refused(operation, "payload-invalid", exchange.getResponse(), ProblemCatalog.plain(ProblemCatalog.payloadInvalid(
          "the body is declared as " + request.getHeaders().getFirst(HttpHeaders.CONTENT_TYPE) + " but is not valid: "
              + e.getMessage())), echo);
    }
    TransactionalEngine transactional = config.transactionalEngine().orElse(null);
    if (transactional != null) {
      return config.principalOf(exchange).flatMap(principal ->
          inTransaction(exchange, chain, transactional, new IdempotentRequest(Scope.of(principal, operation), key, fingerprint),
              echo, body));
    }
    AsyncLeaseIdempotency engine = config.leaseEngine().orElseThrow();
    return config.principalOf(exchange).flatMap(principal -> Mono.deferContextual(context -> {
      IdempotentRequest idempotent = new IdempotentRequest(Scope.of(principal, operation), key, fingerprint);
      HandlerRun run = new HandlerRun();
      AsyncEffect effect = claim -> {
        if (!run.start()) {
          // the client left before the handler began: nothing ran, so the engine releases the key
          return CompletableFuture.failedFuture(new CancellationException("the client went away before the handler ran"));
        }
        CapturingResponse captured = new CapturingResponse(exchange.getResponse(), config.maxResponseBytes());
        run.captured = captured;
        ServerWebExchange handlers = withBody(exchange, body, captured);
        handlers.getAttributes().put(LEASE_CONTEXT_ATTRIBUTE, claim.lease());
        return chain.filter(handlers)
            .contextWrite(context)
            .then(Mono.fromSupplier(() -> toStored(captured)))
            .toFuture();
      };
      // Detached on purpose: a cancelled subscription (the client went away) cancels only the stage
      // made by handle(), which CompletableFuture does not pass upstream, so the engine goes on and
      // stores or releases the key; the handler's own subscription (toFuture above) is the engine's.
      // An attempt that failed after the client left is nobody's to answer: it completes empty.
      // the attempt starts (and its observation with it) inside the request's observation, which
      // WebFlux keeps in the Reactor context: made current on this thread for this call only
      return Mono.fromCompletionStage(() -> requestContext.around(context, () -> engine.attempt(idempotent, effect))
              .handle((result, error) -> settledAfterLeaving(result, error, run)))
          .doOnCancel(run::abandon)
          .flatMap(result -> answer(exchange.getResponse(), result, run, echo));
    }));
  }

  /**
   * Transactional mode: the handler runs inside the engine's transaction, subscribed in the
   * engine's Reactor context (which carries the transaction its own writes join); its answer is
   * held until the key's record and the handler's writes committed or rolled back together. A
   * client that goes away cancels the chain and the transaction rolls back, handler's writes and
   * claim alike, unless its commit was already sent: the retry then runs the handler again, or
   * gets the replay.
   */
  private Mono<Void> inTransaction(ServerWebExchange exchange, WebFilterChain chain, TransactionalEngine engine,
      IdempotentRequest idempotent, String echo, byte[] body) {
    HandlerRun run = new HandlerRun();
    Mono<StoredResponse> handler = Mono.defer(() -> {
      run.start();
      CapturingResponse captured = new CapturingResponse(exchange.getResponse(), config.maxResponseBytes());
      run.captured = captured;
      return chain.filter(withBody(exchange, body, captured)).then(Mono.fromSupplier(() -> toStored(captured)));
    });
    // the engine starts its attempt (and its observation) when subscribed to: inside the request's
    // observation, made current on the subscribing thread for the subscription only
    return requestContext.subscribing(engine.attempt(idempotent, handler))
        .flatMap(result -> answer(exchange.getResponse(), result, run, echo));
  }

  /**
   * The engine's result as the answer's input; its failure as it is, unless the client left before
   * the handler began (the key is then released and no one waits for the answer).
   */
  private static @Nullable AttemptResult settledAfterLeaving(@Nullable AttemptResult result, @Nullable Throwable error, HandlerRun run) {
    if (error == null) {
      return result;
    }
    Throwable cause = error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
    if (run.abandoned()) {
      return null;
    }
    throw cause instanceof RuntimeException e ? e : new CompletionException(cause);
  }

  /** The handler's view: the body read again from memory, its form data from it, and the capturing response. */
  private static ServerWebExchange withBody(ServerWebExchange exchange, byte[] body, CapturingResponse captured) {
    ServerHttpRequest original = exchange.getRequest();
    ServerHttpRequest again = new ServerHttpRequestDecorator(original) {
      @Override
      public Flux<DataBuffer> getBody() {
        return Flux.defer(() -> Mono.just(exchange.getResponse().bufferFactory().wrap(body)));
      }
    };
    ServerWebExchange mutated = exchange.mutate().request(again).response(captured).build();
    Mono<MultiValueMap<String, String>> form = isForm(original)
        ? FORMS.readMono(FORM_TYPE, again, Map.of()).cache()
        : Mono.just(new LinkedMultiValueMap<>());
    return new ServerWebExchangeDecorator(mutated) {
      @Override
      public Mono<MultiValueMap<String, String>> getFormData() {
        return form;
      }
    };
  }

  private static boolean isForm(ServerHttpRequest request) {
    MediaType type;
    try {
      type = request.getHeaders().getContentType();
    } catch (RuntimeException invalid) {
      return false;
    }
    return type != null && MediaType.APPLICATION_FORM_URLENCODED.isCompatibleWith(type);
  }

  /** The handler's answer as stored: status, the replayed header fields, and the body or its length. */
  private StoredResponse toStored(CapturingResponse captured) {
    HttpStatusCode code = captured.getStatusCode();
    int status = code == null ? 200 : code.value();
    StoredResponse.Builder b = StoredResponse.builder(status >= 100 && status <= 599 ? status : 500);
    // forEach, not the Map methods: HttpHeaders is no Map from Spring Framework 7 on (see values)
    captured.getHeaders().forEach((name, values) -> {
      if (!config.replayedHeaders().contains(name) || HeaderRules.neverStored(name)) {
        return;
      }
      for (String value : values) {
        try {
          b.header(name, value);
        } catch (IllegalArgumentException e) {
          LOG.log(Level.WARNING, "idempotency filter: response header " + name + " cannot be stored and is left out of replays: "
              + e.getMessage());
        }
      }
    });
    return captured.overflowed() ? b.bodyNotStored(captured.bodyLength()).build() : b.body(captured.body()).build();
  }

  /** Writes what the engine's result says: the handler's answer, a replay, or a problem. */
  private Mono<Void> answer(ServerHttpResponse response, AttemptResult result, HandlerRun run, String echo) {
    switch (result.kind()) {
      case REPLAYED:
        return replay(response, result.outcome().orElseThrow().response(), echo);
      case EXECUTED:
      case RELEASED:
        return handlersAnswer(response, run, echo);
      case OUTCOME_UNKNOWN: {
        CapturingResponse captured = run.captured;
        if (captured != null && captured.overflowed()) {
          if (ProblemCatalog.phaseOf(result) == OutcomeUnknownException.Phase.COMMIT) {
            return streamedNotCommitted(result);
          }
          // lease mode: the effect happened; its answer already streamed to the client and cannot be withdrawn
          return Mono.empty();
        }
        break;
      }
      case ROLLED_BACK:
      case REQUEST_FAILED: {
        CapturingResponse captured = run.captured;
        if (captured != null && captured.overflowed()) {
          return streamedNotCommitted(result);
        }
        break;
      }
      default:
        break;
    }
    return problem(response, ProblemCatalog.forResult(result,
        leaseRemaining -> ProblemCatalog.retryAfterSeconds(leaseRemaining, config.maxRetryAfter())), echo);
  }

  /**
   * Transactional mode: an answer over the response limit streamed to the client before the
   * commit, and the transaction rolled back, or its commit's acknowledgement was lost. Nothing can
   * be taken back or appended, so the exchange fails and the server aborts the answer: the client
   * sees a broken answer (not a clean one for writes that may have rolled back) and retries with the
   * key, as with the servlet filter.
   */
  private static Mono<Void> streamedNotCommitted(AttemptResult result) {
    return Mono.error(new IllegalStateException("idempotency filter: an answer longer than maxResponseBytes had already"
        + " streamed to the client when its transaction did not commit, or may not have (" + result.kind() + "); aborting"
        + " the answer", result.failure().orElse(null)));
  }

  private static Mono<Void> handlersAnswer(ServerHttpResponse response, HandlerRun run, String echo) {
    CapturingResponse captured = run.captured;
    if (captured == null) {
      return Mono.error(new IllegalStateException("the engine answered with the handler's answer but did not run the handler"));
    }
    if (captured.overflowed()) {
      return Mono.empty(); // streamed to the client already
    }
    byte[] body = captured.body();
    response.getHeaders().set(KEY_HEADER, echo); // the handler's own field of that name is not sent
    response.getHeaders().setContentLength(body.length);
    return write(response, body);
  }

  private Mono<Void> replay(ServerHttpResponse response, StoredResponse stored, String echo) {
    if (!stored.bodyStored()) {
      return problem(response, ProblemCatalog.plain(ProblemCatalog.responseTooLarge(stored)), echo);
    }
    response.setStatusCode(HttpStatusCode.valueOf(stored.status()));
    HttpHeaders headers = response.getHeaders();
    for (Map.Entry<String, List<String>> field : stored.headers().entrySet()) {
      String name = field.getKey();
      if (!config.replayedHeaders().contains(name) || HeaderRules.neverStored(name)) {
        continue; // also for records written under another configuration
      }
      for (String value : field.getValue()) {
        headers.add(name, value);
      }
    }
    headers.set(REPLAYED_HEADER, "true");
    headers.set(KEY_HEADER, echo);
    byte[] body = stored.body();
    headers.setContentLength(body.length);
    return write(response, body);
  }

  private Mono<Void> tooLarge(ServerWebExchange exchange, String operation, String echo, String detail) {
    return refused(operation, "body-too-large", exchange.getResponse(), ProblemCatalog.plain(ProblemCatalog.bodyTooLarge(detail)), echo);
  }

  /**
   * A refusal before the engine: the engine's listener is told ({@link
   * dev.idem.core.IdemListener#refused}; it must not change the answer), then the problem is sent.
   */
  private Mono<Void> refused(String operation, String reason, ServerHttpResponse response, ProblemCatalog.Answer answer,
      @Nullable String echo) {
    try {
      config.listener().refused(operation, reason);
    } catch (RuntimeException ignored) {
      // a listener must not change the answer
    }
    return problem(response, answer, echo);
  }

  /**
   * Writes a problem as the whole answer: whatever the handler set is dropped, the key echoed,
   * {@code Retry-After} when the answer has one.
   */
  private Mono<Void> problem(ServerHttpResponse response, ProblemCatalog.Answer answer, @Nullable String echo) {
    ProblemDetails details = config.details(answer.problem());
    byte[] json = details.toJson();
    response.setStatusCode(HttpStatusCode.valueOf(details.status()));
    response.getCookies().clear();
    HttpHeaders headers = response.getHeaders();
    headers.clear();
    if (echo != null) {
      headers.set(KEY_HEADER, echo);
    }
    answer.retryAfterSeconds().ifPresent(seconds -> headers.set(IdempotencyHeaders.RETRY_AFTER, Long.toString(seconds)));
    headers.set(HttpHeaders.CONTENT_TYPE, ProblemDetails.MEDIA_TYPE);
    headers.set(HttpHeaders.CONTENT_LANGUAGE, "en");
    headers.set(HttpHeaders.CACHE_CONTROL, "no-store");
    headers.setContentLength(json.length);
    return write(response, json);
  }

  private static Mono<Void> write(ServerHttpResponse response, byte[] body) {
    if (body.length == 0) {
      return response.setComplete();
    }
    return response.writeWith(Mono.fromSupplier(() -> response.bufferFactory().wrap(body)));
  }

  /**
   * The request's fingerprint, as the servlet filter's: method, request target as sent (raw path
   * and query, not decoded), media type, content coding and body.
   */
  private static Fingerprint fingerprint(ServerHttpRequest request, byte[] body) {
    String query = request.getURI().getRawQuery();
    List<String> encodings = values(request.getHeaders(), HttpHeaders.CONTENT_ENCODING);
    return Fingerprint.request()
        .method(request.getMethod().name())
        .target(request.getURI().getRawPath() + (query == null ? "" : "?" + query))
        .contentType(request.getHeaders().getFirst(HttpHeaders.CONTENT_TYPE))
        .contentEncoding(encodings.isEmpty() ? null : String.join(",", encodings))
        .body(body)
        .build();
  }

  /** The decoded path within the application, as routes match it. */
  private static String decodedPath(ServerHttpRequest request) {
    StringBuilder path = new StringBuilder();
    for (PathContainer.Element element : request.getPath().pathWithinApplication().elements()) {
      path.append(element instanceof PathContainer.PathSegment segment ? segment.valueToMatch() : element.value());
    }
    return path.length() == 0 ? "/" : path.toString();
  }

  /**
   * Every value of the field {@code name} (matched ignoring case), in order. Through {@code
   * forEach} only: {@link HttpHeaders} is a {@code Map} up to Spring Framework 6 and no {@code
   * Map} from 7 on, so its {@code get} and {@code getOrEmpty} have other signatures on each line,
   * and a filter built against one would fail on the other.
   */
  private static List<String> values(HttpHeaders headers, String name) {
    List<String> values = new ArrayList<>(1);
    headers.forEach((field, fieldValues) -> {
      if (field.equalsIgnoreCase(name)) {
        values.addAll(fieldValues);
      }
    });
    return values;
  }

  private static byte[] bytesOf(DataBuffer buffer) {
    try {
      byte[] bytes = new byte[buffer.readableByteCount()];
      buffer.read(bytes);
      return bytes;
    } finally {
      DataBufferUtils.release(buffer);
    }
  }

  /**
   * What the effect left for the answer (the handler's captured response, once it ran), and
   * whether the handler began before the client left: whichever of {@link #start()} and {@link
   * #abandon()} comes first wins, once.
   */
  private static final class HandlerRun {
    private static final int WAITING = 0;
    private static final int STARTED = 1;
    private static final int ABANDONED = 2;

    private final AtomicInteger state = new AtomicInteger(WAITING);
    volatile @Nullable CapturingResponse captured;

    /** @return true if the handler may run: the client had not left */
    boolean start() {
      return state.compareAndSet(WAITING, STARTED);
    }

    /** The client left: a handler that has not begun never will; one that has runs on, detached. */
    void abandon() {
      state.compareAndSet(WAITING, ABANDONED);
    }

    boolean abandoned() {
      return state.get() == ABANDONED;
    }
  }
}
