package dev.idem.spring;

import java.time.Duration;

/**
 * What {@link IdemProperties.Purge} holds (that class, in {@link IdemProperties}, is the type that is
 * bound; this one keeps {@code IdemProperties.java} short). Like every properties class, not
 * thread-safe: bound once at start-up, then only read.
 */
public abstract class IdemPurgeProperties {
  /**
   * Whether this instance takes part in the scheduled purge of expired keys: the key table of
   * transactional mode and the lease store of idem.store. Several instances may run it; one purges
   * at a time (a lease on a record of the key table, else of the lease store).
   */
  private boolean enabled = true;

  /** How often expired keys are purged; from one minute. */
  private Duration interval = Duration.ofHours(1);

  /** How long after start-up the first purge runs; from 0. */
  private Duration initialDelay = Duration.ofMinutes(5);

  /** The most records one batch deletes, each batch its own short transaction; 1 to 100000. */
  private int batchSize = 1000;

  public boolean isEnabled() {
    return enabled;
  }

  public void setEnabled(boolean enabled) {
    this.enabled = enabled;
  }

  public Duration getInterval() {
    return interval;
  }

  public void setInterval(Duration interval) {
    this.interval = interval;
  }

  public Duration getInitialDelay() {
    return initialDelay;
  }

  public void setInitialDelay(Duration initialDelay) {
    this.initialDelay = initialDelay;
  }

  public int getBatchSize() {
    return batchSize;
  }

  public void setBatchSize(int batchSize) {
    this.batchSize = batchSize;
  }
}
