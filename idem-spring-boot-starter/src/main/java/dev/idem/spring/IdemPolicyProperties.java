package dev.idem.spring;

import dev.idem.servlet.KeyRequirement;
import dev.idem.spring.IdemProperties.InProgress;
import dev.idem.spring.IdemProperties.Mode;
import dev.idem.spring.IdemProperties.StoreType;
import java.time.Duration;
import org.jspecify.annotations.Nullable;

/**
 * What {@link IdemProperties.Policy} holds (that class, in {@link IdemProperties}, is the type that is
 * bound; this one keeps {@code IdemProperties.java} short). Like every properties class, not
 * thread-safe: bound once at start-up, then only read.
 */
public abstract class IdemPolicyProperties {
  /**
   * Whether requests must carry an idempotency key (required: refused without one, HTTP 400 or gRPC
   * INVALID_ARGUMENT) or may (optional: one without runs unprotected).
   */
  private KeyRequirement key = KeyRequirement.REQUIRED;

  /**
   * The mode: lease (for handlers that call other systems: no database transaction of Idem's is
   * open while they run), transactional (the handler's writes and the key commit together), or
   * auto (the application's mode, unless store names Redis or memory: then lease).
   */
  private Mode mode = Mode.AUTO;

  /** Lease mode: where the keys are kept (jdbc, redis, memory); auto: idem.store's choice. */
  private StoreType store = StoreType.AUTO;

  /** How long the keys are kept; unset: idem.retention. */
  private @Nullable Duration retention;

  /** Lease mode: how long claims are held; unset: idem.lease. */
  private @Nullable Duration lease;

  /** What a duplicate of a running request gets (fail-fast or wait); unset: idem.in-progress. */
  private @Nullable InProgress inProgress;

  /** With in-progress=wait: how long a duplicate waits; unset: idem.max-wait. */
  private @Nullable Duration maxWait;

  public KeyRequirement getKey() {
    return key;
  }

  public void setKey(KeyRequirement key) {
    this.key = key;
  }

  public Mode getMode() {
    return mode;
  }

  public void setMode(Mode mode) {
    this.mode = mode;
  }

  public StoreType getStore() {
    return store;
  }

  public void setStore(StoreType store) {
    this.store = store;
  }

  public @Nullable Duration getRetention() {
    return retention;
  }

  public void setRetention(@Nullable Duration retention) {
    this.retention = retention;
  }

  public @Nullable Duration getLease() {
    return lease;
  }

  public void setLease(@Nullable Duration lease) {
    this.lease = lease;
  }

  public @Nullable InProgress getInProgress() {
    return inProgress;
  }

  public void setInProgress(@Nullable InProgress inProgress) {
    this.inProgress = inProgress;
  }

  public @Nullable Duration getMaxWait() {
    return maxWait;
  }

  public void setMaxWait(@Nullable Duration maxWait) {
    this.maxWait = maxWait;
  }
}
