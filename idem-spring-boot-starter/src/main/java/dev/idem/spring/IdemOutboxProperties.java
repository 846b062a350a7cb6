package dev.idem.spring;

import dev.idem.spring.IdemProperties.Relay;
import dev.idem.spring.outbox.IdemOutbox;

/**
 * What {@link IdemProperties.Outbox} holds (that class, in {@link IdemProperties}, is the type that is
 * bound; this one keeps {@code IdemProperties.java} short). Like every properties class, not
 * thread-safe: bound once at start-up, then only read.
 */
public abstract class IdemOutboxProperties {
  /**
   * Whether to configure the outbox (the Outbox and IdemOutbox beans and the relay) when
   * idem-outbox is on the class path and the application has one DataSource.
   */
  private boolean enabled = true;

  /**
   * The outbox table, a plain SQL identifier of at most 48 characters; created at start-up with
   * idem.create-schema.
   */
  private String table = "idem_outbox";

  /** The relay that delivers recorded intents after their commit (idem.outbox.relay.*). */
  private final Relay relay = new Relay();

  public boolean isEnabled() {
    return enabled;
  }

  public void setEnabled(boolean enabled) {
    this.enabled = enabled;
  }

  public String getTable() {
    return table;
  }

  public void setTable(String table) {
    this.table = table;
  }

  public Relay getRelay() {
    return relay;
  }
}
