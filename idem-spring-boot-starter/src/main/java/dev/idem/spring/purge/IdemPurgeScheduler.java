package dev.idem.spring.purge;

import dev.idem.core.Fingerprint;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.core.spi.ClaimResult;
import dev.idem.core.spi.LeaseStore;
import dev.idem.jdbc.JdbcIdempotency;
import dev.idem.spring.IdemAutoConfiguration;
import dev.idem.spring.IdemProperties;
import dev.idem.spring.internal.BlockingLeaseStore;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;

/**
 * Purges expired keys on a schedule, on one instance at a time: every {@code idem.purge.interval}
 * each instance asks for a lease on one record ({@link #LOCK_SCOPE}) in the shared store (the key
 * table when the application keeps its keys in its DataSource, else the lease store of {@code
 * idem.store}), held for 0.4 of the interval; the instance that gets it deletes expired records in
 * batches of {@code idem.purge.batch-size}, each batch a short transaction of its own (never a long
 * lock: see {@link JdbcIdempotency#purgeExpired}), from the key table and from the lease store,
 * then completes the record, kept half an interval more, so that no other instance purges before
 * the next run (the record is gone by then: the next run starts an interval after this one ended).
 * A lease that outlives its holder (a killed instance) expires and is taken over by the next
 * instance that asks. A purge longer than the lease may have another instance purge beside it
 * (harmless: each batch deletes what is expired, once); it is logged at WARN. A failed purge is logged at WARN and tried again at
 * the next interval; it never stops the schedule.
 *
 * <p>Expired records already count as absent, so a purge only reclaims space; it runs beside live
 * traffic. Stores Redis expires by itself purge nothing. Stores of route policies ({@code
 * idem.routes.*.store}) other than these are not purged here: purge them with {@code idem purge}.
 *
 * <p>Thread-safe: one daemon thread, {@code idem-purge}.
 */
final class IdemPurgeScheduler implements SmartLifecycle {

  private static final Logger LOG = LoggerFactory.getLogger(IdemAutoConfiguration.class);

  /** The scope of the record whose lease says which instance purges: Idem's own, no caller's. */
  static final Scope LOCK_SCOPE = Scope.of("idem:scheduler", "idem:purge");

  private final @Nullable JdbcIdempotency keys;
  private final @Nullable DataSource dataSource;
  private final @Nullable LeaseStore leases;
  private final LeaseStore lock;
  private final String lockKey;
  private final IdemProperties.Purge settings;
  private final String owner = UUID.randomUUID().toString();
  private @Nullable ScheduledExecutorService executor;

  /**
   * @param keys the key table of transactional mode, or {@code null}
   * @param dataSource its DataSource, non-null when {@code keys} is
   * @param leases the lease store of {@code idem.store}, or {@code null}
   * @param lock the store whose record elects the purging instance
   * @param lockName what the elected record is about (the key table's name, or the store's)
   * @param settings {@code idem.purge.*}
   */
  IdemPurgeScheduler(@Nullable JdbcIdempotency keys, @Nullable DataSource dataSource, @Nullable LeaseStore leases, LeaseStore lock,
      String lockName, IdemProperties.Purge settings) {
    this.keys = keys;
    this.dataSource = dataSource;
    this.leases = leases;
    this.lock = Objects.requireNonNull(lock, "lock");
    this.lockKey = "purge-" + lockName;
    this.settings = settings;
    if (keys != null) {
      Objects.requireNonNull(dataSource, "dataSource");
    }
  }

  /** @return what the start-up line says purges */
  String describe() {
    List<String> what = new ArrayList<>();
    if (keys != null) {
      what.add("the key table " + keys.table());
    }
    if (leases instanceof BlockingLeaseStore shared) {
      what.add("the key table of " + shared); // R2DBC: the store names its table
    } else if (leases != null) {
      what.add("the lease store " + leases.getClass().getSimpleName());
    }
    return String.join(" and ", what);
  }

  @Override
  public synchronized void start() {
    ScheduledExecutorService e = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "idem-purge");
      t.setDaemon(true);
      return t;
    });
    e.scheduleWithFixedDelay(this::purgeIfElected, settings.getInitialDelay().toMillis(), settings.getInterval().toMillis(),
        TimeUnit.MILLISECONDS);
    executor = e;
    LOG.info("Idem: expired keys are purged every {} ({} a batch), by one instance at a time: {} (idem.purge.*)",
        settings.getInterval(), settings.getBatchSize(), describe());
  }

  /**
   * One scheduled run: purges when this instance gets the lease; never throws.
   *
   * @return how many records it deleted, or -1 when another instance holds the lease or the purge
   *     failed
   */
  long purgeIfElected() {
    try {
      Duration interval = settings.getInterval();
      IdempotentRequest request = new IdempotentRequest(LOCK_SCOPE, IdempotencyKey.of(lockKey),
          Fingerprint.ofJson("{}".getBytes(StandardCharsets.UTF_8)));
      // A claim's record lives its lease plus its retention (JDBC), and a store wants the retention
      // longer than the lease (Redis): 0.4 + 0.5 of the interval, so that the record is gone before
      // the next run, an interval after this one ended.
      ClaimResult claim = lock.claim(request, owner, lease(interval), keep(interval));
      if (claim.state() != ClaimResult.State.CLAIMED) {
        LOG.debug("Idem: another instance purges this interval ({})", claim.state());
        return -1;
      }
      long started = System.nanoTime();
      long removed = 0;
      if (keys != null) {
        try (Connection c = Objects.requireNonNull(dataSource).getConnection()) {
          c.setAutoCommit(true);
          removed += keys.purgeExpired(c, settings.getBatchSize());
        }
      }
      if (leases != null) {
        removed += leases.purgeExpired(settings.getBatchSize());
      }
      Duration took = Duration.ofNanos(System.nanoTime() - started);
      // kept for half an interval more: no other instance purges again before the next run
      if (!lock.complete(LOCK_SCOPE, request.key(), owner, StoredResponse.of(200,
          ("{\"removed\":" + removed + "}").getBytes(StandardCharsets.UTF_8)), keep(interval))) {
        LOG.warn("Idem: the scheduled purge took {} ms, longer than its lease ({}): another instance may have purged beside it;"
            + " a longer idem.purge.interval or a smaller idem.purge.batch-size keeps one purge at a time", took.toMillis(),
            lease(interval));
      }
      LOG.info("Idem: purged {} expired records in {} ms ({})", removed, took.toMillis(), describe());
      return removed;
    } catch (Exception | Error e) {
      LOG.warn("Idem: the scheduled purge failed; it runs again in {}: {}", settings.getInterval(), e.toString());
      return -1;
    }
  }

  /** How long the elected instance holds the lock while it purges: 0.4 of the interval. */
  static Duration lease(Duration interval) {
    return interval.multipliedBy(2).dividedBy(5);
  }

  /** How long the lock's record is kept after its lease or completion: half the interval. */
  static Duration keep(Duration interval) {
    return interval.dividedBy(2);
  }

  @Override
  public synchronized void stop() {
    if (executor != null) {
      executor.shutdownNow();
      executor = null;
    }
  }

  @Override
  public synchronized boolean isRunning() {
    return executor != null;
  }
}
