package dev.idem.spring;

import java.time.Duration;

/**
 * What {@link IdemProperties.Durability} holds (that class, in {@link IdemProperties}, is the type that is
 * bound; this one keeps {@code IdemProperties.java} short). Like every properties class, not
 * thread-safe: bound once at start-up, then only read.
 */
public abstract class IdemRedisDurabilityProperties {
  /**
   * How many replicas must acknowledge each claim, completion, release and replay (WAIT); 0
   * (the default) waits for none. 1 to 64 otherwise.
   */
  private int replicas;
  /** The longest wait per write, 1 ms to 1 min (default 1s); keep it well under idem.lease and under the Redis client's socket timeout. */
  private Duration timeout = Duration.ofSeconds(1);
  /** Also wait for the master and the replicas to fsync their AOF (WAITAOF, Redis 7.2+). */
  private boolean aof;

  public int getReplicas() {
    return replicas;
  }

  public void setReplicas(int replicas) {
    this.replicas = replicas;
  }

  public Duration getTimeout() {
    return timeout;
  }

  public void setTimeout(Duration timeout) {
    this.timeout = timeout;
  }

  public boolean isAof() {
    return aof;
  }

  public void setAof(boolean aof) {
    this.aof = aof;
  }
}
