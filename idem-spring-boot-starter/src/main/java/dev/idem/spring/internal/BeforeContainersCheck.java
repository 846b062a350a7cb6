package dev.idem.spring.internal;

import org.springframework.context.SmartLifecycle;

/**
 * A check of the application's listener containers that runs once, when the application context
 * starts, in a lifecycle phase before the containers': a failure stops the start-up before any
 * container polls or consumes. Thread-safe.
 */
public abstract class BeforeContainersCheck implements SmartLifecycle {

  private final int phase;
  private volatile boolean running;

  /** @param phase a lifecycle phase lower than the containers' */
  public BeforeContainersCheck(int phase) {
    this.phase = phase;
  }

  /** Checks (and may adjust) the containers; throws to stop the start-up. */
  public abstract void check();

  @Override
  public final void start() {
    check();
    running = true;
  }

  @Override
  public final void stop() {
    running = false;
  }

  @Override
  public final boolean isRunning() {
    return running;
  }

  @Override
  public final int getPhase() {
    return phase;
  }
}
