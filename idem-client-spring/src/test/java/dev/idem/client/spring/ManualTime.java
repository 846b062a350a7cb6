package dev.idem.client.spring;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import reactor.core.Disposable;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * Virtual time for the clients' waits: a {@link Clock}, a Reactor {@link Scheduler} and an {@link
 * IdempotentRequestInterceptor.Sleeper} that record every wait asked of them, move the clock on by
 * it and go on at once (the task on another thread). So a test asserts on the waits, not on how
 * long it ran. Thread-safe.
 */
final class ManualTime extends Clock implements Scheduler, IdempotentRequestInterceptor.Sleeper {

  private final List<Duration> waits = new ArrayList<>();
  private Instant now = Instant.parse("2026-01-01T00:00:00Z");

  /** @return the waits asked for, in order */
  synchronized List<Duration> waits() {
    return List.copyOf(waits);
  }

  private synchronized void pass(Duration d) {
    waits.add(d);
    now = now.plus(d);
  }

  @Override
  public synchronized Instant instant() {
    return now;
  }

  @Override
  public ZoneId getZone() {
    return ZoneOffset.UTC;
  }

  @Override
  public Clock withZone(ZoneId zone) {
    return this;
  }

  @Override
  public void sleep(Duration duration) {
    pass(duration);
  }

  @Override
  public Disposable schedule(Runnable task) {
    return Schedulers.parallel().schedule(task);
  }

  @Override
  public Disposable schedule(Runnable task, long delay, TimeUnit unit) {
    pass(Duration.ofNanos(unit.toNanos(delay)));
    return Schedulers.parallel().schedule(task);
  }

  @Override
  public long now(TimeUnit unit) {
    return unit.convert(instant().toEpochMilli(), TimeUnit.MILLISECONDS);
  }

  @Override
  public Worker createWorker() {
    ManualTime time = this;
    Worker real = Schedulers.parallel().createWorker();
    return new Worker() {
      @Override
      public Disposable schedule(Runnable task) {
        return real.schedule(task);
      }

      @Override
      public Disposable schedule(Runnable task, long delay, TimeUnit unit) {
        time.pass(Duration.ofNanos(unit.toNanos(delay)));
        return real.schedule(task);
      }

      @Override
      public void dispose() {
        real.dispose();
      }
    };
  }
}
