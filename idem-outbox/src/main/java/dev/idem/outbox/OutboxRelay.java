package dev.idem.outbox;

import dev.idem.core.IdemStoreException;
import dev.idem.core.spi.TraceContextPropagation;
import dev.idem.outbox.spi.Delivery;
import dev.idem.outbox.spi.IntentTransport;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Locale;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Consumer;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * Delivers pending intents of an {@link Outbox}, at least once, through one {@link IntentTransport}
 * per {@link Intent.Kind}.
 *
 * <p>One round ({@link #runOnce()}): claim up to {@link Builder#batchSize batchSize} due intents
 * of the kinds this relay has transports for, under a lease owned by a token new to the round;
 * deliver them; then mark each delivered intent SENT and each failed one pending again after a
 * backoff, or DEAD. The claim and every mark are statements of their own, fenced by the token:
 *
 * <ul>
 *   <li>Several relays (threads, processes, nodes) can run at once: a claim takes only due rows
 *       and makes them not due for the lease ({@code FOR UPDATE SKIP LOCKED} on PostgreSQL, MySQL 8
 *       and MariaDB 10.6+, so relays do not wait on each other; SQLite has one writer, and the
 *       claim is one conditional {@code UPDATE ... RETURNING}). No intent is delivered by two relays
 *       within one lease.
 *   <li>A relay that stops mid-round (a crash, a kill) leaves its intents claimed; they fall due
 *       again when the lease ends (by the database's clock) and another relay delivers them. Some
 *       may then be delivered twice, with the same id: the receiver dedupes by it (RabbitMQ {@code
 *       message-id}, JetStream {@code Nats-Msg-Id} in the stream's duplicate window, HTTP {@code
 *       Idempotency-Key}).
 *   <li>A round that outlives its lease may race the next claimer, with the same outcome; choose the
 *       lease longer than a round takes.
 *   <li>Every claim counts an attempt. A failed attempt is retried after an exponential backoff
 *       with jitter ({@link Builder#backoff}); after {@link Builder#maxAttempts maxAttempts} the
 *       intent is DEAD with the reason, visible with {@link Outbox#dead} and retried by hand with
 *       {@link Outbox#retry}. A receiver's final refusal ({@link Delivery.Status#REJECTED}) makes it
 *       DEAD at once.
 * </ul>
 *
 * <p>Thread-safe: {@link #runOnce()} may be called from several threads, each round with its own
 * connection. {@link #start} runs rounds on a daemon thread until {@link #close()}.
 */
public final class OutboxRelay implements AutoCloseable {

  private final Outbox outbox;
  private final DataSource dataSource;
  private final Map<Intent.Kind, IntentTransport> transports;
  private final int batchSize;
  private final Duration lease;
  private final int maxAttempts;
  private final Duration initialBackoff;
  private final Duration maxBackoff;
  private final Consumer<RuntimeException> errors;
  private volatile @Nullable Thread worker;
  private volatile boolean stopping;

  private OutboxRelay(Builder b) {
    this.outbox = b.outbox;
    this.dataSource = b.dataSource;
    this.transports = new EnumMap<>(b.transports);
    this.batchSize = b.batchSize;
    this.lease = b.lease;
    this.maxAttempts = b.maxAttempts;
    this.initialBackoff = b.initialBackoff;
    this.maxBackoff = b.maxBackoff;
    this.errors = b.errors;
  }

  /**
   * @param outbox the outbox to deliver from, never {@code null}
   * @param dataSource where rounds borrow their connection (auto-commit mode), never {@code null}
   * @return a builder with batch size 100, lease 30 s, 10 attempts, backoff 1 s to 5 min
   */
  public static Builder builder(Outbox outbox, DataSource dataSource) {
    return new Builder(outbox, dataSource);
  }

  /**
   * What one round did.
   *
   * @param claimed intents claimed
   * @param sent intents delivered and marked SENT
   * @param retried failed attempts set to be tried again later
   * @param dead intents that became DEAD in this round
   * @param lost intents whose lease had passed to another relay before this round could mark them
   */
  public record Round(int claimed, int sent, int retried, int dead, int lost) {}

  /**
   * Runs one round: claim, deliver, mark.
   *
   * @return what it did; {@code claimed() == 0} when nothing was due
   * @throws IdemStoreException if the database fails (claimed intents fall due after the lease)
   * @throws InterruptedException if interrupted while a transport waited (same)
   */
  public Round runOnce() throws InterruptedException {
    String owner = UUID.randomUUID().toString();
    try (Connection c = dataSource.getConnection()) {
      if (!c.getAutoCommit()) {
        c.setAutoCommit(true); // a borrowed connection is the relay's own: its claim and marks commit
      }
      List<OutboxEntry> batch = outbox.claim(c, owner, lease, batchSize, transports.keySet());
      if (batch.isEmpty()) {
        return new Round(0, 0, 0, 0, 0);
      }
      Map<Intent.Kind, List<OutboxEntry>> byKind = new EnumMap<>(Intent.Kind.class);
      Map<String, OutboxEntry> byId = new HashMap<>();
      int dead = 0;
      int lost = 0;
      for (OutboxEntry e : batch) {
        if (e.attempts() > maxAttempts) {
          // Claimed before as the last attempt by a relay that stopped without an outcome.
          if (outbox.markFailed(c, owner, e.id(), true, Duration.ZERO,
              "gave up after " + maxAttempts + " attempts: the last relay holding it stopped before it reported an outcome"
                  + (e.lastError() == null ? "" : "; earlier: " + e.lastError()))) {
            dead++;
          } else {
            lost++;
          }
          continue;
        }
        byKind.computeIfAbsent(e.intent().kind(), k -> new ArrayList<>()).add(e);
        byId.put(e.id(), e);
      }
      Map<String, Delivery> outcomes = new LinkedHashMap<>();
      Map<String, TraceContextPropagation.Publication> publications = new HashMap<>();
      try {
        for (Map.Entry<Intent.Kind, List<OutboxEntry>> group : byKind.entrySet()) {
          // the round claimed only the kinds this relay has transports for
          IntentTransport transport = Objects.requireNonNull(transports.get(group.getKey()), "transport");
          List<Delivery> results;
          try {
            results = transport.deliver(published(group.getValue(), publications));
          } catch (RuntimeException failure) {
            results = new ArrayList<>();
            for (OutboxEntry e : group.getValue()) {
              results.add(Delivery.retry(e.id(), "transport failed: " + failure));
            }
          }
          for (Delivery d : results) {
            if (byId.containsKey(d.id())) {
              outcomes.putIfAbsent(d.id(), d);
            }
          }
          for (OutboxEntry e : group.getValue()) {
            outcomes.putIfAbsent(e.id(), Delivery.retry(e.id(), "the transport reported no outcome"));
          }
        }
      } finally {
        // every publish span ends, whatever the transports did; one without an outcome (a transport
        // interrupted or failing out of the loop) ends as failed
        for (Map.Entry<String, TraceContextPropagation.Publication> p : publications.entrySet()) {
          Delivery d = outcomes.get(p.getKey());
          endQuietly(p.getValue(), d == null ? "no outcome: the round stopped before the transport answered"
              : d.status() == Delivery.Status.DELIVERED ? null : d.status() + (d.reason() == null ? "" : ": " + d.reason()));
        }
      }
      List<String> sentIds = new ArrayList<>();
      int retried = 0;
      for (Delivery d : outcomes.values()) {
        if (d.status() == Delivery.Status.DELIVERED) {
          sentIds.add(d.id());
          continue;
        }
        OutboxEntry e = Objects.requireNonNull(byId.get(d.id()), "outcomes hold the batch's ids only");
        boolean giveUp = d.status() == Delivery.Status.REJECTED || e.attempts() >= maxAttempts;
        String reason = d.status() == Delivery.Status.REJECTED
            ? "rejected: " + d.reason()
            : giveUp ? "gave up after " + e.attempts() + " attempts; last: " + d.reason() : d.reason();
        if (outbox.markFailed(c, owner, d.id(), giveUp, giveUp ? Duration.ZERO : backoff(e.attempts()), reason)) {
          if (giveUp) {
            dead++;
          } else {
            retried++;
          }
        } else {
          lost++;
        }
      }
      int sent = outbox.markSent(c, owner, sentIds);
      lost += sentIds.size() - sent;
      return new Round(batch.size(), sent, retried, dead, lost);
    } catch (SQLException e) {
      throw new IdemStoreException(
          "outbox relay (" + outbox.table() + "): " + e.getMessage() + " [SQLState " + e.getSQLState() + "]", e);
    }
  }

  /**
   * The entries to hand to a transport: with the outbox's tracing, each delivered in a publish
   * span of its own ({@link TraceContextPropagation#publishing}), a child of the context the intent
   * carries, whose context the message carries instead; without it, as they are.
   */
  private List<OutboxEntry> published(List<OutboxEntry> entries, Map<String, TraceContextPropagation.Publication> publications) {
    TraceContextPropagation tracing = outbox.tracing();
    if (tracing == TraceContextPropagation.NONE) {
      return List.copyOf(entries);
    }
    List<OutboxEntry> out = new ArrayList<>(entries.size());
    for (OutboxEntry e : entries) {
      Map<String, String> carrier = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
      e.intent().headers().forEach(h -> carrier.putIfAbsent(h.getKey(), h.getValue()));
      try {
        TraceContextPropagation.Publication publication = tracing.publishing(destination(e.intent()), carrier);
        publications.put(e.id(), publication);
        Intent sent = e.intent().withTraceFields(publication.context());
        out.add(sent == e.intent() ? e : new OutboxEntry(e.id(), e.scope(), e.key(), e.position(), sent, e.state(), e.attempts(),
            e.lastError(), e.createdAtMillis()));
      } catch (RuntimeException tracerFailed) {
        out.add(e); // tracing never fails a delivery
      }
    }
    return out;
  }

  /**
   * @return the low-cardinality name of an intent's delivery: its kind and destination (a topic, a
   *     subject, an exchange), or for HTTP the method and host, never the path, which may hold ids
   */
  static String destination(Intent intent) {
    String kind = intent.kind().name().toLowerCase(Locale.ROOT).replace('_', '-');
    if (intent.kind() != Intent.Kind.HTTP) {
      return intent.target().isEmpty() ? kind + " (default exchange)" : kind + " " + intent.target();
    }
    try {
      String host = java.net.URI.create(intent.target()).getHost();
      return kind + " " + intent.route() + (host == null ? "" : " " + host);
    } catch (IllegalArgumentException e) {
      return kind + " " + intent.route();
    }
  }

  private static void endQuietly(TraceContextPropagation.Publication publication, @Nullable String failure) {
    try {
      publication.ended(failure);
    } catch (RuntimeException ignored) {
      // tracing never fails a delivery
    }
  }

  /**
   * Runs rounds until nothing is due.
   *
   * @return the rounds' totals
   */
  public Round drain() throws InterruptedException {
    int claimed = 0, sent = 0, retried = 0, dead = 0, lost = 0;
    while (true) {
      Round r = runOnce();
      claimed += r.claimed();
      sent += r.sent();
      retried += r.retried();
      dead += r.dead();
      lost += r.lost();
      if (r.claimed() == 0) {
        return new Round(claimed, sent, retried, dead, lost);
      }
    }
  }

  /**
   * Starts a daemon thread that runs rounds: at once again after a full batch, otherwise after
   * {@code pollInterval}. A round's exception goes to the builder's error handler and the thread
   * goes on after the interval.
   *
   * @param pollInterval the pause when nothing (or less than a batch) was due, from 1 ms
   * @throws IllegalStateException if already started
   */
  public synchronized void start(Duration pollInterval) {
    if (pollInterval.toMillis() < 1) {
      throw new IllegalArgumentException("pollInterval must be at least 1 ms");
    }
    if (worker != null) {
      throw new IllegalStateException("already started");
    }
    Thread t = new Thread(() -> {
      while (!stopping) {
        boolean full = false;
        try {
          full = runOnce().claimed() >= batchSize;
        } catch (InterruptedException e) {
          return;
        } catch (RuntimeException e) {
          errors.accept(e);
        }
        if (!full) {
          try {
            Thread.sleep(pollInterval.toMillis());
          } catch (InterruptedException e) {
            return;
          }
        }
      }
    }, "idem-outbox-relay");
    t.setDaemon(true);
    worker = t;
    t.start();
  }

  /** Stops the thread of {@link #start} and waits for its round to end. Transports stay open. */
  @Override
  public void close() throws InterruptedException {
    stopping = true;
    Thread t = worker;
    if (t != null) {
      t.interrupt();
      t.join(lease.toMillis() + 1000);
    }
  }

  /** @return the pause before attempt {@code attempts + 1}: exponential, capped, full jitter in its upper half */
  Duration backoff(int attempts) {
    long base = initialBackoff.toMillis();
    long cap = maxBackoff.toMillis();
    long delay = base;
    for (int i = 1; i < attempts && delay < cap; i++) {
      delay = Math.min(cap, delay * 2);
    }
    delay = Math.min(cap, delay);
    long half = delay / 2;
    return Duration.ofMillis(half + ThreadLocalRandom.current().nextLong(delay - half + 1));
  }

  /** Builds an {@link OutboxRelay}. Not thread-safe; setters validate eagerly. */
  public static final class Builder {
    private final Outbox outbox;
    private final DataSource dataSource;
    private final Map<Intent.Kind, IntentTransport> transports = new EnumMap<>(Intent.Kind.class);
    private int batchSize = 100;
    private Duration lease = Duration.ofSeconds(30);
    private int maxAttempts = 10;
    private Duration initialBackoff = Duration.ofSeconds(1);
    private Duration maxBackoff = Duration.ofMinutes(5);
    private Consumer<RuntimeException> errors = e -> { };

    private Builder(Outbox outbox, DataSource dataSource) {
      this.outbox = Objects.requireNonNull(outbox, "outbox");
      this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
    }

    /**
     * @param transport delivers intents of its kind; one per kind (a later one replaces an
     *     earlier). A relay claims only the kinds it has a transport for.
     */
    public Builder transport(IntentTransport transport) {
      Objects.requireNonNull(transport, "transport");
      transports.put(Objects.requireNonNull(transport.kind(), "transport.kind()"), transport);
      return this;
    }

    /** @param batchSize the most intents one round claims, 1 to 10000; default 100 */
    public Builder batchSize(int batchSize) {
      if (batchSize < 1 || batchSize > 10_000) {
        throw new IllegalArgumentException("batchSize must be between 1 and 10000, was " + batchSize);
      }
      this.batchSize = batchSize;
      return this;
    }

    /**
     * @param lease how long a claim keeps intents from other relays, by the database's clock; from
     *     100 ms to 1 hour; default 30 s. Longer than a round takes; after it, a stopped relay's
     *     intents go to another.
     */
    public Builder lease(Duration lease) {
      Objects.requireNonNull(lease, "lease");
      if (lease.toMillis() < 100 || lease.compareTo(Duration.ofHours(1)) > 0) {
        throw new IllegalArgumentException("lease must be between 100 ms and 1 hour, was " + lease);
      }
      this.lease = lease;
      return this;
    }

    /** @param maxAttempts attempts per intent before it is DEAD, 1 to 1000; default 10 */
    public Builder maxAttempts(int maxAttempts) {
      if (maxAttempts < 1 || maxAttempts > 1000) {
        throw new IllegalArgumentException("maxAttempts must be between 1 and 1000, was " + maxAttempts);
      }
      this.maxAttempts = maxAttempts;
      return this;
    }

    /**
     * @param initial the pause after the first failed attempt, from 0
     * @param max the longest pause, at least {@code initial}; each failure doubles the pause up to
     *     it, and the pause actually used is drawn between half of it and all of it
     */
    public Builder backoff(Duration initial, Duration max) {
      Objects.requireNonNull(initial, "initial");
      Objects.requireNonNull(max, "max");
      if (initial.isNegative() || max.compareTo(initial) < 0 || max.compareTo(Duration.ofDays(1)) > 0) {
        throw new IllegalArgumentException("backoff needs 0 <= initial <= max <= 1 day, was " + initial + ", " + max);
      }
      this.initialBackoff = initial;
      this.maxBackoff = max;
      return this;
    }

    /** @param errors receives the exceptions of rounds run by {@link #start}; default: ignored */
    public Builder onError(Consumer<RuntimeException> errors) {
      this.errors = Objects.requireNonNull(errors, "errors");
      return this;
    }

    /**
     * @return a new relay
     * @throws IllegalStateException if no transport was given
     */
    public OutboxRelay build() {
      if (transports.isEmpty()) {
        throw new IllegalStateException("an outbox relay needs at least one transport");
      }
      return new OutboxRelay(this);
    }
  }
}
