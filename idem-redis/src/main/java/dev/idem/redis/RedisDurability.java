package dev.idem.redis;

import java.time.Duration;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * How long a {@link RedisLeaseStore} waits, after each write, before it reports the write as done:
 * not at all ({@link #none()}), until {@code n} replicas acknowledged it ({@link #replicas(int,
 * Duration)}, Redis {@code WAIT}), or until {@code n} replicas and the master fsynced it to their
 * append-only files ({@link #replicasAndAof(int, Duration)}, Redis {@code WAITAOF}, Redis 7.2 or
 * later).
 *
 * <p><b>Why.</b> Redis replicates asynchronously: a master acknowledges a script before any replica
 * has it. When that master dies and a replica is promoted, the claim or completion is gone although
 * the store reported it done, and a retry with the same idempotency key runs the effect a second
 * time. With {@code replicas(n, timeout)} the store runs {@code WAIT n timeout} on the very
 * connection that ran the script (a pipeline of the two commands, routed to the node that owns the
 * record's hash slot), and a write that fewer than {@code n} replicas acknowledged within the
 * timeout is reported as {@link dev.idem.core.IdemStoreException}: an <em>unknown outcome</em>,
 * never a success. The lease engine ({@link dev.idem.core.LeaseIdempotency}) answers that by
 * repeating the claim or completion with the same owner token, which the store recognises and
 * acknowledges again; a claim never acknowledged means the effect does not run; a completion never
 * acknowledged within the lease becomes {@link dev.idem.core.OutcomeUnknownException}. A stored
 * response is replayed only after the replay itself was acknowledged, so a replay is never an
 * answer that a failover can take back.
 *
 * <p><b>What each mode survives</b> (Redis Cluster or a master with replicas under Sentinel, with
 * automatic failover promoting the most up-to-date replica):
 *
 * <ul>
 *   <li>{@link #none()}: a replica's loss, a restart of a master with {@code appendonly yes}
 *       (writes since the last fsync aside). <em>Not</em> a failover: the writes the promoted
 *       replica had not received are lost, including whole records, and answered keys may run
 *       again (measured in {@code docs/reports/reliability.md}). No waiting; the fastest.
 *   <li>{@link #replicas(int, Duration) replicas(n, timeout)}: in addition, the failover of a master
 *       as long as the promoted replica is one of those that acknowledged; with {@code n} equal to
 *       the number of replicas of each master, any single failover. The acknowledgement is of
 *       receipt in memory, not of an fsync: losing the master <em>and</em> those replicas at once
 *       (a power cut of the whole shard) loses the writes. While fewer than {@code n} replicas of
 *       a master are connected, every write to its slots fails (the store is unavailable for those
 *       keys rather than unsafe).
 *   <li>{@link #replicasAndAof(int, Duration) replicasAndAof(n, timeout)}: in addition, a
 *       simultaneous crash and restart of the master and those replicas, as each acknowledged
 *       write is in the append-only file of the master and of {@code n} replicas. Needs Redis 7.2
 *       or later ({@code WAITAOF}) and {@code appendonly yes} on every node; on an older server
 *       every write fails with a store exception that says so.
 * </ul>
 *
 * <p><b>What no mode survives.</b> Losing the master and every replica that acknowledged a write
 * for good (disks included); a failover that promotes a replica that did not acknowledge (a
 * manual {@code CLUSTER FAILOVER TAKEOVER} or {@code REPLICAOF} of a lagging replica, or more
 * replicas than {@code n} so that an unacknowledged one wins); a Redis Cluster that loses the
 * majority of its masters (it stops serving, and a forced recovery may come back with older
 * data); a restore from a backup older than the writes; and {@code FLUSHALL} or an eviction
 * policy other than {@code noeviction} removing records. {@code WAIT} does not make Redis a
 * consensus store: it only bounds which failovers lose nothing.
 *
 * <p><b>Time.</b> A write waits at most {@code timeout} for its acknowledgement; the client's own
 * timeout (Jedis's socket timeout, Lettuce's command timeout) must be longer than that, or the
 * client gives up first (which is reported as an unknown outcome too). On the non-blocking {@link
 * AsyncRedisLeaseStore}, {@code WAIT} runs on a connection of its own ({@link
 * AsyncRedisStoreClient#waitsOnDedicatedConnections()}), never on one that other commands share. Keep {@code timeout} well under the lease ({@link
 * dev.idem.core.LeaseIdempotency} retries a completion only within the lease).
 *
 * <p>Immutable and thread-safe.
 */
public final class RedisDurability {

  /** The largest number of replicas accepted: {@value}. */
  public static final int MAX_REPLICAS = 64;

  /** The longest wait accepted: one minute. */
  public static final Duration MAX_TIMEOUT = Duration.ofMinutes(1);

  private static final RedisDurability NONE = new RedisDurability(0, Duration.ZERO, false);

  private final int replicas;
  private final Duration timeout;
  private final boolean aof;

  private RedisDurability(int replicas, Duration timeout, boolean aof) {
    this.replicas = replicas;
    this.timeout = timeout;
    this.aof = aof;
  }

  /**
   * No waiting: a write is done when the master ran its script. The default.
   *
   * @return the mode, never {@code null}
   */
  public static RedisDurability none() {
    return NONE;
  }

  /**
   * After each write, {@code WAIT replicas timeout} on the same connection; fewer acknowledgements
   * make the write an unknown outcome ({@link dev.idem.core.IdemStoreException}).
   *
   * @param replicas how many replicas must acknowledge, 1 to {@value #MAX_REPLICAS}
   * @param timeout how long to wait, 1 ms to {@link #MAX_TIMEOUT}, used in whole milliseconds
   * @return the mode, never {@code null}
   * @throws NullPointerException if {@code timeout} is {@code null}
   * @throws IllegalArgumentException if an argument is out of range
   */
  public static RedisDurability replicas(int replicas, Duration timeout) {
    return new RedisDurability(checkReplicas(replicas), checkTimeout(timeout), false);
  }

  /**
   * After each write, {@code WAITAOF 1 replicas timeout} on the same connection: the master and
   * {@code replicas} replicas must have fsynced the write to their append-only files. Needs Redis
   * 7.2 or later and {@code appendonly yes}; otherwise every write fails with {@link
   * dev.idem.core.IdemStoreException} naming the cause. Not checked here: building the store does
   * not contact Redis.
   *
   * @param replicas how many replicas must acknowledge, 1 to {@value #MAX_REPLICAS}
   * @param timeout how long to wait, 1 ms to {@link #MAX_TIMEOUT}, used in whole milliseconds
   * @return the mode, never {@code null}
   * @throws NullPointerException if {@code timeout} is {@code null}
   * @throws IllegalArgumentException if an argument is out of range
   */
  public static RedisDurability replicasAndAof(int replicas, Duration timeout) {
    return new RedisDurability(checkReplicas(replicas), checkTimeout(timeout), true);
  }

  /** @return true for {@link #none()} */
  public boolean isNone() {
    return replicas == 0;
  }

  /** @return how many replicas must acknowledge each write; 0 for {@link #none()} */
  public int replicas() {
    return replicas;
  }

  /** @return the longest wait per write; {@link Duration#ZERO} for {@link #none()} */
  public Duration timeout() {
    return timeout;
  }

  /** @return true if the master and the replicas must also have fsynced the write ({@code WAITAOF}) */
  public boolean aof() {
    return aof;
  }

  @Override
  public boolean equals(@Nullable Object o) {
    return o instanceof RedisDurability d && d.replicas == replicas && d.timeout.equals(timeout) && d.aof == aof;
  }

  @Override
  public int hashCode() {
    return Objects.hash(replicas, timeout, aof);
  }

  /**
   * @return {@code none}, {@code replicas(<n>, <ms>ms)} or {@code replicasAndAof(<n>, <ms>ms)}
   */
  @Override
  public String toString() {
    if (isNone()) {
      return "none";
    }
    return (aof ? "replicasAndAof(" : "replicas(") + replicas + ", " + timeout.toMillis() + "ms)";
  }

  private static int checkReplicas(int replicas) {
    if (replicas < 1 || replicas > MAX_REPLICAS) {
      throw new IllegalArgumentException("replicas must be 1 to " + MAX_REPLICAS + ", was " + replicas);
    }
    return replicas;
  }

  private static Duration checkTimeout(Duration timeout) {
    Objects.requireNonNull(timeout, "timeout");
    if (timeout.compareTo(MAX_TIMEOUT) > 0 || timeout.toMillis() < 1) {
      throw new IllegalArgumentException("timeout must be 1 ms to " + MAX_TIMEOUT + ", was " + timeout);
    }
    return Duration.ofMillis(timeout.toMillis());
  }
}
