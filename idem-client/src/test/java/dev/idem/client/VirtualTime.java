package dev.idem.client;

import dev.failsafe.spi.Scheduler;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Delayed;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/** A clock that only moves when told to, and a Failsafe scheduler that moves it instead of sleeping. */
final class VirtualTime extends Clock implements Scheduler {

  private volatile Instant now = Instant.parse("2026-11-29T12:00:00Z");

  void advance(Duration d) {
    now = now.plus(d);
  }

  @Override
  public Instant instant() {
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
  public ScheduledFuture<?> schedule(Callable<?> callable, long delay, TimeUnit unit) {
    advance(Duration.ofNanos(unit.toNanos(delay)));
    CompletableFuture<Object> done = new CompletableFuture<>();
    try {
      done.complete(callable.call());
    } catch (Throwable t) {
      done.completeExceptionally(t);
    }
    return new Done(done);
  }

  private static final class Done implements ScheduledFuture<Object> {
    private final CompletableFuture<Object> f;

    Done(CompletableFuture<Object> f) {
      this.f = f;
    }

    @Override
    public long getDelay(TimeUnit unit) {
      return 0;
    }

    @Override
    public int compareTo(Delayed o) {
      return 0;
    }

    @Override
    public boolean cancel(boolean mayInterruptIfRunning) {
      return false;
    }

    @Override
    public boolean isCancelled() {
      return false;
    }

    @Override
    public boolean isDone() {
      return true;
    }

    @Override
    public Object get() throws ExecutionException, InterruptedException {
      return f.get();
    }

    @Override
    public Object get(long timeout, TimeUnit unit) throws ExecutionException, InterruptedException {
      return f.get();
    }
  }
}
