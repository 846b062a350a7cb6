package dev.idem.consumer;

import dev.idem.core.IdempotencyHeaders;
import dev.idem.core.LeaseContext;
import java.sql.Connection;
import dev.idem.core.OutcomeUnknownException;
import dev.idem.core.EffectFailedException;
import dev.idem.core.Fingerprint;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.InvalidIdempotencyKeyException;
import dev.idem.core.LeaseIdempotency;
import dev.idem.core.LeaseLostException;
import dev.idem.core.Outcome;
import dev.idem.core.RequestInProgressException;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.core.AttemptResult;
import dev.idem.core.IdemListener;
import dev.idem.core.IdemStoreException;
import dev.idem.core.StoredResponseUnreadableException;
import dev.idem.core.spi.TraceContextPropagation;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.jdbc.TransactionalIdempotency;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * An idempotent message consumer, in transactional mode or in lease mode, independent of the
 * broker: each broker's adapter, in that broker's module ({@code
 * dev.idem.rabbitmq.RabbitMqIdempotentConsumer} in idem-rabbitmq, {@code
 * dev.idem.jetstream.JetStreamIdempotentConsumer} in idem-jetstream, {@code
 * dev.idem.kafka.KafkaIdempotentConsumer} in idem-kafka), turns a delivery into an {@link
 * InboundMessage}, calls {@link #process} and then acknowledges, redelivers or dead-letters as the
 * {@link Verdict} says.
 *
 * <p>Each message is one operation for Idem: idempotency key = the message's {@code
 * Idempotency-Key} header if it has one, else its message id; scope = (the consumer's name, {@code
 * "consume"}); fingerprint = SHA-256 of the body bytes. The handler's writes, the key and its
 * stored response commit in one transaction of a {@link TransactionalIdempotency} engine: on a
 * {@link dev.idem.jdbc.DataSourceTransactionRunner} ({@link #builder(String, JdbcIdempotency,
 * MessageHandler)}), the handler writes on the {@code Connection} it is given; on a runner that
 * joins a framework's transaction ({@link #builder(String, TransactionalIdempotency,
 * MessageHandler)}, which the Spring starter uses with Spring's transaction manager), whatever the
 * handler writes through that framework on the same DataSource joins it too. So:
 *
 * <ul>
 *   <li>a redelivery after a crash between the commit and the acknowledgement replays: the handler
 *       does not run, and the verdict is {@link Verdict.Action#ACK};
 *   <li>a handler failure rolls back and releases the key: {@link Verdict.Action#RETRY} while the
 *       delivery count is below {@link Builder#maxDeliveries}, then {@link
 *       Verdict.Action#DEAD_LETTER} with the failure as the reason;
 *   <li>a message without a usable key (none, or not a valid idempotency key: printable ASCII, at
 *       most 255 characters), or whose id was already used with another body, is dead-lettered at
 *       once: it is never run without protection, never silently dropped.
 * </ul>
 *
 * <p><b>Lease mode</b> ({@link #leaseBuilder}), for handlers whose effect is outside the database:
 * the handler runs under a claim of {@link LeaseIdempotency} on any {@link
 * dev.idem.core.spi.LeaseStore}, outside any transaction, and the verdict is {@link
 * Verdict.Action#ACK} only after the completion is stored. A redelivery of a completed message
 * replays (runs nothing, acknowledged); a handler failure releases the claim, then {@code RETRY} or
 * {@code DEAD_LETTER} as above; a redelivery that takes over the expired lease of a consumer that
 * died mid-handler runs the handler with {@link dev.idem.core.LeaseContext#recovery()} {@code
 * true} ({@link Outcome#recovery()} says so too). Three answers mean "not now" rather than "failed",
 * so they are {@link Verdict.Action#RETRY} whatever the delivery count and never dead-letter: the
 * claim is held by a live lease of another delivery ({@link RequestInProgressException}; give the
 * engine an {@link dev.idem.core.InProgressPolicy#waitUpTo} to wait in place rather than have the
 * broker redeliver at once), the lease was taken over before the completion ({@link
 * LeaseLostException}), or the completion could not be stored within the lease ({@link
 * OutcomeUnknownException}); in the last two the handler ran, and the redelivery replays or
 * recovers. Such a retry still counts as a delivery for brokers that count (JetStream, quorum
 * queues). Give the lease room for the slowest handler: a lease that ends while the handler still
 * runs lets a redelivery run it a second time, as a recovery.
 *
 * <p>Immutable and thread-safe.
 */
public final class IdempotentConsumer {

  /** {@link IdempotencyHeaders#KEY}: the header that, when present, gives the idempotency key instead of the message id. */
  public static final String KEY_HEADER = IdempotencyHeaders.KEY;
  /** The operation part of every consumer's scope. */
  public static final String OPERATION = "consume";

  private static final Pattern NAME = Pattern.compile("[A-Za-z0-9._:-]{1,200}");
  private static final StoredResponse HANDLED = StoredResponse.of(200, new byte[0]);
  /** The first pause after a store failure; pauses double up to {@link #STORE_MAX_BACKOFF}. */
  static final Duration STORE_FIRST_BACKOFF = Duration.ofMillis(100);
  /** The longest pause after store failures. */
  static final Duration STORE_MAX_BACKOFF = Duration.ofSeconds(30);

  private final String name;
  private final @Nullable TransactionalIdempotency transactional; // transactional mode, else null
  private final @Nullable MessageHandler handler;
  private final @Nullable LeaseIdempotency leases; // lease mode, else null
  private final @Nullable LeaseMessageHandler leaseHandler;
  private final int maxDeliveries;
  private final TraceContextPropagation tracing;
  /** Store failures in a row, across messages; 0 once the store answers. */
  private final AtomicInteger storeFailures = new AtomicInteger();

  private IdempotentConsumer(Builder b) {
    this.name = b.name;
    this.transactional = b.transactional;
    this.handler = b.handler;
    this.leases = b.leases;
    this.leaseHandler = b.leaseHandler;
    this.maxDeliveries = b.maxDeliveries;
    this.tracing = b.tracing;
  }

  /**
   * A consumer in transactional mode on plain JDBC: each message is one transaction Idem begins and
   * commits on a connection of the key table's {@code DataSource}, the one the handler is given.
   *
   * @param name the consumer's name, the principal of its scope: letters, digits, {@code . _ : -},
   *     1 to 200 characters. Two consumers with the same name share their keys; give each logical
   *     consumer its own name.
   * @param idempotency the key table's engine; it must have a {@code DataSource} ({@link
   *     JdbcIdempotency.Builder#dataSource})
   * @param handler the application's handling
   * @return a builder with at most 5 deliveries
   * @throws IllegalArgumentException if the name is not acceptable, or the key table's engine has
   *     no {@code DataSource}
   * @throws NullPointerException if an argument is {@code null}
   */
  public static Builder builder(String name, JdbcIdempotency idempotency, MessageHandler handler) {
    Objects.requireNonNull(idempotency, "idempotency");
    if (idempotency.dataSource() == null) {
      throw new IllegalArgumentException("a transactional idempotent consumer needs a JdbcIdempotency built with a DataSource"
          + " (JdbcIdempotency.Builder.dataSource), or a TransactionalIdempotency engine");
    }
    return builder(name, TransactionalIdempotency.onDataSource(idempotency, idempotency.dataSource(), IdemListener.NONE), handler);
  }

  /**
   * A consumer in transactional mode on a transactional engine: each message is one transaction of
   * the engine's {@link dev.idem.jdbc.TransactionRunner}, and the handler is given its connection.
   * With a runner on a framework's transaction manager (the Spring starter's), the handler's writes
   * through that framework ({@code JdbcTemplate}, {@code JdbcClient}, JPA, {@code @Transactional}
   * services that join) commit with the message's key, as on HTTP.
   *
   * @param name the consumer's name, as for {@link #builder(String, JdbcIdempotency, MessageHandler)}
   * @param engine the transactional-mode engine
   * @param handler the application's handling
   * @return a builder with at most 5 deliveries
   * @throws IllegalArgumentException if the name is not acceptable
   * @throws NullPointerException if an argument is {@code null}
   */
  public static Builder builder(String name, TransactionalIdempotency engine, MessageHandler handler) {
    return new Builder(name, Objects.requireNonNull(engine, "engine"), Objects.requireNonNull(handler, "handler"), null, null);
  }

  /**
   * A consumer in lease mode, for handlers whose effect is outside the database (see the class
   * description).
   *
   * @param name the consumer's name, as for {@link #builder}
   * @param leases the lease-mode engine, with any {@link dev.idem.core.spi.LeaseStore}; its lease
   *     must outlast the slowest handler run
   * @param handler the application's handling
   * @return a builder with at most 5 deliveries
   * @throws IllegalArgumentException if the name is not acceptable
   * @throws NullPointerException if an argument is {@code null}
   */
  public static Builder leaseBuilder(String name, LeaseIdempotency leases, LeaseMessageHandler handler) {
    return new Builder(name, null, null, Objects.requireNonNull(leases, "leases"), Objects.requireNonNull(handler, "handler"));
  }

  /** @return the consumer's name */
  public String name() {
    return name;
  }

  /** @return {@code true} in lease mode, {@code false} in transactional mode */
  public boolean leaseMode() {
    return leases != null;
  }

  /** @return the most deliveries of a failing message before it is dead-lettered */
  public int maxDeliveries() {
    return maxDeliveries;
  }

  /**
   * Handles one message through Idem and says what to do with it. Never throws for a failure of
   * the handler or the store: those become {@link Verdict.Action#RETRY} or {@link
   * Verdict.Action#DEAD_LETTER}; a failure of Idem's store is a {@link Verdict#storeUnavailable}
   * retry, never a dead letter (see the class description). Thread-safe.
   *
   * @param message the message, never {@code null}
   * @return the verdict, never {@code null}
   */
  public Verdict process(InboundMessage message) {
    Objects.requireNonNull(message, "message");
    Verdict verdict = traced(message);
    if (!verdict.storeUnavailable()) {
      storeFailures.set(0);
    }
    return verdict;
  }

  /**
   * {@link #decide} in the span the tracing continues; a tracer's own failure never fails a message:
   * one before the handling, and it is handled without a span; one after it (the span's end), and
   * the handling's verdict stands.
   */
  private Verdict traced(InboundMessage message) {
    if (tracing == TraceContextPropagation.NONE) {
      return decide(message);
    }
    AtomicBoolean ran = new AtomicBoolean();
    AtomicReference<Verdict> decided = new AtomicReference<>(); // decide's verdict, once it returned
    try {
      tracing.continueTrace(name, message.headers(), () -> {
        ran.set(true);
        Verdict v = decide(message);
        decided.set(v);
        return v;
      });
    } catch (RuntimeException e) {
      if (ran.get() && decided.get() == null) {
        throw e; // decide itself threw (it throws no RuntimeException of its own): not the tracer's to swallow
      }
    }
    Verdict v = decided.get();
    if (v != null) {
      return v;
    }
    if (ran.get()) { // decide threw an Error and the tracer returned all the same: never run it twice
      throw new IllegalStateException("the trace propagation " + tracing + " returned from a handling that failed");
    }
    return decide(message); // the tracer failed before the handling, or never ran it: handled without a span
  }

  private Verdict decide(InboundMessage message) {
    Objects.requireNonNull(message, "message");
    String raw = rawKey(message);
    if (raw == null) {
      return new Verdict(Verdict.Action.DEAD_LETTER, null,
          "no idempotency key: the message has neither a message id nor an " + KEY_HEADER + " header");
    }
    IdempotencyKey key;
    try {
      key = IdempotencyKey.of(raw);
    } catch (InvalidIdempotencyKeyException e) {
      return new Verdict(Verdict.Action.DEAD_LETTER, null, "the message id is not a valid idempotency key: " + e.getMessage());
    }
    IdempotentRequest request = request(name, key, message);
    AttemptResult result;
    try {
      LeaseIdempotency leaseEngine = leases;
      if (leaseEngine == null) {
        // transactional mode: the builder was given the engine and its handler
        TransactionalIdempotency engine = Objects.requireNonNull(transactional, "transactional");
        MessageHandler transactionalHandler = Objects.requireNonNull(handler, "handler");
        result = engine.attempt(request, ctx -> {
          Connection connection = ctx.connection();
          transactionalHandler.handle(connection, message);
          return HANDLED;
        });
      } else {
        LeaseMessageHandler givenLeaseHandler = Objects.requireNonNull(leaseHandler, "leaseHandler");
        result = leaseEngine.attempt(request, ctx -> {
          givenLeaseHandler.handle(ctx.lease(), message);
          return HANDLED;
        });
      }
    } catch (RuntimeException e) {
      if (leases == null && isStoreFailure(e)) {
        // Transactional mode: the database failed while the handler ran (a lost connection, the
        // server shutting down), which TransactionalIdempotency throws as the store's failure;
        // nothing committed, and Idem's store is that database: not the message's failure.
        return storeDown(e);
      }
      // Otherwise both engines give every failure of the store and every refusal as a result: what
      // is thrown is the handler's own failure (a checked one wrapped in EffectFailedException).
      return failed(e, message);
    }
    Verdict refused = refusal(result, key, message);
    if (refused != null) {
      return refused;
    }
    return new Verdict(Verdict.Action.ACK, result.outcome().orElseThrow(), null);
  }

  /** Idem's store failed: redeliver after the next backoff, not counted, never dead-lettered. */
  private Verdict storeDown(Throwable failure) {
    int n = storeFailures.incrementAndGet();
    long millis = STORE_FIRST_BACKOFF.toMillis() << Math.min(n - 1, 20);
    Duration pause = millis >= STORE_MAX_BACKOFF.toMillis() ? STORE_MAX_BACKOFF : Duration.ofMillis(millis);
    return Verdict.storeUnavailable(pause, "Idem's store failed (not counted as a delivery; retry after " + pause.toMillis()
        + " ms): " + failure.getClass().getName() + (failure.getMessage() == null ? "" : ": " + failure.getMessage()));
  }

  /**
   * The operation a consumer runs for a message, as {@link #process} builds it: scope ({@code
   * name}, {@value #OPERATION}), the key from the {@value #KEY_HEADER} header or else the message
   * id, and the body's fingerprint. For code the handler calls that names things after the
   * message's key as Idem does (an outbox's intent ids). Stateless and thread-safe.
   *
   * @param name the consumer's name, never {@code null}
   * @param message the message, never {@code null}
   * @return the request, or empty when the message has no key or one that is not a valid
   *     idempotency key (such a message is dead-lettered without running the handler)
   * @throws IllegalArgumentException if {@code name} is not a valid scope part
   */
  public static java.util.Optional<IdempotentRequest> requestOf(String name, InboundMessage message) {
    Objects.requireNonNull(name, "name");
    String raw = rawKey(Objects.requireNonNull(message, "message"));
    if (raw == null) {
      return java.util.Optional.empty();
    }
    try {
      return java.util.Optional.of(request(name, IdempotencyKey.of(raw), message));
    } catch (InvalidIdempotencyKeyException e) {
      return java.util.Optional.empty();
    }
  }

  private static @Nullable String rawKey(InboundMessage message) {
    String header = message.header(KEY_HEADER);
    return header != null ? header : message.messageId();
  }

  private static IdempotentRequest request(String name, IdempotencyKey key, InboundMessage message) {
    return new IdempotentRequest(Scope.of(name, OPERATION), key, Fingerprint.ofBytes(message.body()));
  }

  /**
   * The verdict of an attempt (either mode) that did not end in a committed or replayed handling,
   * by its result's kind.
   *
   * @return the verdict, or {@code null} when the result is executed or replayed, or, in lease
   *     mode, released without a failure (acknowledge)
   */
  private @Nullable Verdict refusal(AttemptResult result, IdempotencyKey key, InboundMessage message) {
    switch (result.kind()) {
      case EXECUTED:
      case REPLAYED:
        return null;
      case KEY_REUSED:
        return new Verdict(Verdict.Action.DEAD_LETTER, null, "message id '" + key.value()
            + "' was already handled with another body: " + result.failure().map(Throwable::getMessage).orElse(""));
      case IN_PROGRESS:
        return new Verdict(Verdict.Action.RETRY, null,
            "message id '" + key.value() + "' is being handled under another claim; retry after " + result.retryAfter());
      case OUTCOME_UNKNOWN:
        return new Verdict(Verdict.Action.RETRY, null, outcomeUnknown(result));
      case STORE_UNAVAILABLE:
        return storeDown(result.failure().orElseGet(() -> new IllegalStateException(result.toString())));
      case ROLLED_BACK:
        if (result.failure().orElse(null) instanceof IdemStoreException failure && !OutcomeUnknownException.thrownByClient(failure)) {
          return storeDown(result.failure().get()); // storing the response or the commit failed: the store's failure
        }
        return failed(result.failure().orElseGet(() -> new IllegalStateException(result.toString())), message);
      case RELEASED:
        if (leases != null) {
          return releasedLease(result, message);
        }
        // The handler's answer is always stored; a released one would mean a policy refused it.
        return failed(new IllegalStateException("the handling was not stored: " + result), message);
      default:
        // REQUEST_FAILED, STORED_RESPONSE_UNREADABLE: nothing committed, and a retry may fail the same way
        return failed(result.failure().orElseGet(() -> new IllegalStateException(result.toString())), message);
    }
  }

  /**
   * Lease mode: the engine's response policy did not store the handler's answer, so the claim was
   * released. The handler ran outside any transaction and its effect happened: acknowledged, since
   * a redelivery would run it again. A release that failed is the store's failure (the claim
   * expires with its lease), as {@link LeaseIdempotency#execute} throws it.
   *
   * @return {@code null} (acknowledge) when the release succeeded, else the release failure's verdict
   */
  private @Nullable Verdict releasedLease(AttemptResult result, InboundMessage message) {
    RuntimeException releaseFailure = result.failure().orElse(null);
    if (releaseFailure == null) {
      return null;
    }
    if (isStoreFailure(releaseFailure)) {
      return storeDown(releaseFailure);
    }
    return failed(releaseFailure, message);
  }

  /**
   * @return whether {@code e} is the store's failure: an {@link IdemStoreException} other than an
   *     unreadable stored response, and other than an unknown outcome that an HTTP client the
   *     handler called threw ({@link OutcomeUnknownException#thrownByClient}: the handler's own)
   */
  private static boolean isStoreFailure(Throwable e) {
    return e instanceof IdemStoreException && !(e instanceof StoredResponseUnreadableException)
        && !OutcomeUnknownException.thrownByClient(e);
  }

    /** Why an attempt whose outcome is unknown is redelivered, in the words of the write left in doubt. */
  private static String outcomeUnknown(AttemptResult result) {
    Throwable failure = result.failure().orElse(null);
    String detail = failure == null || failure.getMessage() == null ? "" : ": " + failure.getMessage();
    if (failure instanceof LeaseLostException) {
      return "the handler ran but its lease was taken over before the completion was stored" + detail;
    }
    if (failure instanceof OutcomeUnknownException unknown && unknown.phase() == OutcomeUnknownException.Phase.COMPLETION) {
      return "the handler ran but its completion could not be stored; retry after " + unknown.retryAfter() + detail;
    }
    return "the handler ran but whether its transaction committed is not known; the redelivery replays it or runs it" + detail;
  }

  /** A failure of the handling: retried up to {@link #maxDeliveries}, then dead-lettered with its reason. */
  private Verdict failed(Throwable e, InboundMessage message) {
    Throwable cause = e instanceof EffectFailedException && e.getCause() != null ? e.getCause() : e;
    String reason = cause.getClass().getName() + (cause.getMessage() == null ? "" : ": " + cause.getMessage());
    if (message.deliveryCount() >= maxDeliveries) {
      return new Verdict(Verdict.Action.DEAD_LETTER, null,
          "failed on delivery " + message.deliveryCount() + " of at most " + maxDeliveries + ": " + reason);
    }
    return new Verdict(Verdict.Action.RETRY, null, reason);
  }

  /** Builds an {@link IdempotentConsumer}. Not thread-safe; setters validate eagerly. */
  public static final class Builder {
    private final String name;
    private final @Nullable TransactionalIdempotency transactional;
    private final @Nullable MessageHandler handler;
    private final @Nullable LeaseIdempotency leases;
    private final @Nullable LeaseMessageHandler leaseHandler;
    private int maxDeliveries = 5;
    private TraceContextPropagation tracing = TraceContextPropagation.NONE;

    private Builder(String name, @Nullable TransactionalIdempotency transactional, @Nullable MessageHandler handler,
        @Nullable LeaseIdempotency leases, @Nullable LeaseMessageHandler leaseHandler) {
      Objects.requireNonNull(name, "name");
      if (!NAME.matcher(name).matches()) {
        throw new IllegalArgumentException("consumer name must be 1 to 200 of [A-Za-z0-9._:-], was '" + name + "'");
      }
      this.name = name;
      this.transactional = transactional;
      this.handler = handler;
      this.leases = leases;
      this.leaseHandler = leaseHandler;
    }

    /**
     * @param maxDeliveries how many deliveries a failing message gets before it is dead-lettered,
     *     1 to 1000; default 5. Counted by the broker where it counts (JetStream; RabbitMQ quorum
     *     queues), else by the adapter (see its documentation).
     */
    public Builder maxDeliveries(int maxDeliveries) {
      if (maxDeliveries < 1 || maxDeliveries > 1000) {
        throw new IllegalArgumentException("maxDeliveries must be between 1 and 1000, was " + maxDeliveries);
      }
      this.maxDeliveries = maxDeliveries;
      return this;
    }

    /**
     * @param tracing continues the trace a message's headers carry ({@code traceparent}, as an
     *     {@link dev.idem.outbox.Outbox} built with the same propagation stores with each intent):
     *     {@link #process} handles each message in a span of its own whose parent is that context,
     *     named after this consumer; default {@link TraceContextPropagation#NONE}, never {@code
     *     null}
     */
    public Builder tracing(TraceContextPropagation tracing) {
      this.tracing = Objects.requireNonNull(tracing, "tracing");
      return this;
    }

    /** @return a new consumer */
    public IdempotentConsumer build() {
      return new IdempotentConsumer(this);
    }
  }
}
