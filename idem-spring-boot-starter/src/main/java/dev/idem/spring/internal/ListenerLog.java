package dev.idem.spring.internal;

import dev.idem.consumer.Verdict;
import java.time.Duration;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The log lines of one protected listener: an INFO line when it is made, saying what protects it,
 * and WARN lines for its dead letters and for failures of Idem's store, each kind at most once a
 * minute, with the count of the ones left out since. Logger {@code dev.idem.spring.listeners}.
 * Thread-safe.
 */
public final class ListenerLog {

  public static final Logger LOG = LoggerFactory.getLogger("dev.idem.spring.listeners");
  public static final Duration INTERVAL = Duration.ofMinutes(1);

  private final String name;
  private final LongSupplier nanoTime;
  private final Window deadLetters = new Window();
  private final Window storeFailures = new Window();
  private final Window failures = new Window();

  public ListenerLog(String name) {
    this(name, System::nanoTime);
  }

  public ListenerLog(String name, LongSupplier nanoTime) {
    this.name = name;
    this.nanoTime = nanoTime;
  }

  /** The start-up line: {@code Idem: listener 'billing' (transactional, Kafka) keys from ..., dead letters to ...}. */
  public void started(String mode, String broker, String keys, String deadLetters) {
    LOG.info("Idem: listener '{}' ({}, {}) keys from {}, dead letters to {}", name, mode, broker, keys, deadLetters);
  }

  /** Tells of a verdict the broker was told: a WARN, rate-limited, for a dead letter or a store failure. */
  public void verdict(String source, Verdict verdict) {
    if (verdict.action() == Verdict.Action.DEAD_LETTER) {
      warn(deadLetters, "Idem: listener '{}' dead-lettered a message from {}: {}{}", source, verdict.reason());
    } else if (verdict.storeUnavailable()) {
      warn(storeFailures, "Idem: listener '{}' cannot use Idem's store; {} is retried after {} ms, not counted as a delivery: {}{}",
          source, verdict.retryAfter().toMillis(), verdict.reason());
    }
  }

  /** Something unexpected failed in the listener support; the record is retried, not skipped. */
  public void unexpected(String source, RuntimeException e) {
    warn(failures, "Idem: listener '{}' failed unexpectedly on {}; retried, not skipped{}", source, e);
  }

  private void warn(Window window, String format, Object... args) {
    long suppressed = window.admit(nanoTime.getAsLong());
    if (suppressed < 0) {
      return;
    }
    Object[] all = new Object[args.length + 2];
    all[0] = name;
    System.arraycopy(args, 0, all, 1, args.length);
    all[all.length - 1] = suppressed == 0 ? "" : " (" + suppressed + " more like it in the last minute not logged)";
    if (args.length > 0 && args[args.length - 1] instanceof Throwable) {
      // keep the throwable last, for its stack trace
      all[all.length - 1] = args[args.length - 1];
      all[all.length - 2] = suppressed == 0 ? "" : " (" + suppressed + " more like it in the last minute not logged)";
    }
    LOG.warn(format, all);
  }

  /** At most one line per {@link #INTERVAL}, counting the ones held back. */
  private final class Window {
    private boolean logged;
    private long last;
    private long held;

    /** @return -1 to hold the line back, else how many were held back since the last one logged */
    synchronized long admit(long now) {
      if (logged && now - last < INTERVAL.toNanos()) {
        held++;
        return -1;
      }
      long before = held;
      logged = true;
      last = now;
      held = 0;
      return before;
    }
  }
}
