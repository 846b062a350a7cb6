package dev.idem.spring.outbox;

import dev.idem.outbox.Intent;
import dev.idem.outbox.Outbox;
import dev.idem.outbox.OutboxRelay;
import dev.idem.outbox.spi.IntentTransport;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.stream.Collectors;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.context.SmartLifecycle;

/**
 * The starter's outbox relay: an {@link OutboxRelay} on the application's DataSource whose rounds
 * run on a daemon thread from the start of the application context to its stop ({@link
 * SmartLifecycle}, in the last phase to start and the first to stop, so its transports are still
 * open while it stops). Each pause of {@code idem.outbox.relay.interval} ends with a read of
 * whether any intent is pending; only then does a round claim, deliver and mark (at once again
 * after a full batch). A round's failure is logged at WARN, at most once a minute, and the next
 * round runs after the interval. Several instances may run their relays at once (see {@link
 * OutboxRelay}).
 *
 * <p>Thread-safe.
 */
public final class IdemOutboxRelay implements SmartLifecycle, DisposableBean {

  private static final Logger LOG = LoggerFactory.getLogger(IdemOutboxRelay.class);
  private static final long WARN_EVERY_NANOS = Duration.ofMinutes(1).toNanos();

  private final Outbox outbox;
  private final DataSource dataSource;
  private final @Nullable OutboxRelay relay;
  private final Map<Intent.Kind, String> transports;
  private final Duration interval;
  private final int batchSize;
  private final List<AutoCloseable> own;
  private volatile @Nullable Thread worker;
  private volatile boolean running;
  private long lastWarning = System.nanoTime() - WARN_EVERY_NANOS;

  /**
   * @param relay the relay, or {@code null} when there is no transport (then it never runs)
   * @param transports the transport of each kind, described, for the start-up line
   * @param own the transports the starter made, closed with this bean
   */
  IdemOutboxRelay(Outbox outbox, DataSource dataSource, @Nullable OutboxRelay relay, Map<Intent.Kind, String> transports,
      Duration interval, int batchSize, List<AutoCloseable> own) {
    this.outbox = Objects.requireNonNull(outbox, "outbox");
    this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
    this.relay = relay;
    this.transports = Map.copyOf(transports);
    this.interval = Objects.requireNonNull(interval, "interval");
    this.batchSize = batchSize;
    this.own = List.copyOf(own);
  }

  /** Stops the rounds, then closes the transports the starter made (not the application's). */
  @Override
  public void destroy() {
    stop();
    for (AutoCloseable transport : own) {
      try {
        transport.close();
      } catch (Exception e) {
        LOG.debug("Idem: closing an outbox transport failed", e);
      }
    }
  }

  /** @return the relay it runs, or {@code null} when it has no transport */
  public @Nullable OutboxRelay relay() {
    return relay;
  }

  /** Starts the rounds' thread, or logs why there is none (no transport). */
  @Override
  public synchronized void start() {
    if (running) {
      return;
    }
    if (relay == null) {
      LOG.info("Idem: outbox relay on {} not started: no transport (add spring-kafka with idem-kafka, spring-rabbit, or an"
          + " IntentTransport bean)", outbox.table());
      return;
    }
    running = true;
    Thread t = new Thread(this::loop, "idem-outbox-relay");
    t.setDaemon(true);
    worker = t;
    t.start();
    LOG.info("Idem: outbox relay on {}: {}, every {} when idle, up to {} intents a round", outbox.table(),
        transports.entrySet().stream().sorted(Map.Entry.comparingByKey())
            .map(e -> e.getKey() + " by " + e.getValue()).collect(Collectors.joining(", ")),
        interval.toMillis() + " ms", batchSize);
  }

  /** Stops the thread and waits for its round to end (at most the lease and a second). */
  @Override
  public void stop() {
    Thread t;
    synchronized (this) {
      running = false;
      t = worker;
      worker = null;
    }
    if (t != null) {
      t.interrupt();
      try {
        t.join(Duration.ofSeconds(31).toMillis());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  @Override
  public boolean isRunning() {
    return running;
  }

  private void loop() {
    OutboxRelay r = Objects.requireNonNull(relay);
    while (running) {
      boolean full = false;
      try {
        if (pending()) {
          full = r.runOnce().claimed() >= batchSize;
        }
      } catch (InterruptedException e) {
        return;
      } catch (RuntimeException e) {
        warn(e);
      }
      if (!full) {
        try {
          Thread.sleep(interval.toMillis());
        } catch (InterruptedException e) {
          return;
        }
      }
    }
  }

  /** @return whether an intent is pending: a read, which takes no write lock (SQLite) while the outbox is idle */
  private boolean pending() {
    try (Connection c = dataSource.getConnection();
        Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT 1 FROM " + outbox.table() + " WHERE state = 'PENDING' LIMIT 1")) {
      return rs.next();
    } catch (SQLException e) {
      throw new dev.idem.core.IdemStoreException("outbox relay (" + outbox.table() + "): cannot read the outbox: "
          + e.getMessage() + " [SQLState " + e.getSQLState() + "]", e);
    }
  }

  private void warn(RuntimeException e) {
    long now = System.nanoTime();
    synchronized (this) {
      if (now - lastWarning < WARN_EVERY_NANOS) {
        LOG.debug("Idem: outbox relay round failed", e);
        return;
      }
      lastWarning = now;
    }
    LOG.warn("Idem: outbox relay round on {} failed (its intents are retried after the lease; further failures within a"
        + " minute at DEBUG): {}", outbox.table(), e.toString());
  }

  /** @return the transports' kinds, in order, for messages */
  List<Intent.Kind> kinds() {
    return transports.keySet().stream().sorted().toList();
  }

  /** @return how the transports are named, for the start-up line */
  static String describe(IntentTransport transport) {
    return transport instanceof SpringKafkaTransport || transport instanceof SpringRabbitTransport
        ? transport.toString() : transport.getClass().getName();
  }
}
