package dev.idem.spring;

import java.time.Duration;

/**
 * What {@link IdemProperties.Relay} holds (that class, in {@link IdemProperties}, is the type that is
 * bound; this one keeps {@code IdemProperties.java} short). Like every properties class, not
 * thread-safe: bound once at start-up, then only read.
 */
public abstract class IdemOutboxRelayProperties {
  /**
   * Whether this instance runs the relay, started and stopped with the application context. It
   * runs when there is at least one transport: Spring Kafka's ProducerFactory (with idem-kafka),
   * Spring AMQP's ConnectionFactory (with idem-rabbitmq), or IntentTransport beans of the
   * application. Several instances may run it at once.
   */
  private boolean enabled = true;

  /**
   * The pause between rounds when less than a batch was due (at once again after a full batch),
   * from 1ms. An idle round only reads whether anything is pending.
   */
  private Duration interval = Duration.ofSeconds(1);

  /** The most intents one round claims, 1 to 10000. */
  private int batchSize = 100;

  /**
   * How long a claim keeps intents from other relays, 100ms to 1h; longer than a round takes.
   * A relay that stops mid-round leaves its intents to another once it ends.
   */
  private Duration lease = Duration.ofSeconds(30);

  /** Attempts per intent before it is DEAD (listed by Outbox.dead, retried by Outbox.retry), 1 to 1000. */
  private int maxAttempts = 10;

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

  public int getBatchSize() {
    return batchSize;
  }

  public void setBatchSize(int batchSize) {
    this.batchSize = batchSize;
  }

  public Duration getLease() {
    return lease;
  }

  public void setLease(Duration lease) {
    this.lease = lease;
  }

  public int getMaxAttempts() {
    return maxAttempts;
  }

  public void setMaxAttempts(int maxAttempts) {
    this.maxAttempts = maxAttempts;
  }
}
