package dev.idem.redis;

import java.util.concurrent.Executor;
import reactor.blockhound.BlockHound;
import reactor.blockhound.integration.BlockHoundIntegration;

/**
 * BlockHound's view of the threads that {@link AsyncRedisNonBlockingTest} starts its chains on:
 * non-blocking threads, as event loops are, so that any blocking call made there is an error
 * (Lettuce's own event loops are watched through Netty's integration). Registered through {@code
 * META-INF/services}, read when the JUnit Platform integration installs BlockHound.
 *
 * <p>Each task runs on a thread of its own that ends with it. A pooled thread would wait for its
 * next task in {@code LinkedBlockingQueue.take}, a blocking call that BlockHound refuses on a
 * watched thread: the refused wait broke the pool's lock, the worker died and its replacement did
 * the same, printing an {@code IllegalMonitorStateException} in a loop until CI's time ran out.
 */
public final class NonBlockingTestThreads implements BlockHoundIntegration {

  /** The name of the thread, which BlockHound watches. */
  static final String NAME = "idem-nonblocking-test";

  private static final Executor THREAD_PER_TASK = task -> {
    Thread t = new Thread(task, NAME);
    t.setDaemon(true);
    t.start();
  };

  /** @return an executor that runs each task on a new watched thread, which ends with the task */
  static Executor executor() {
    return THREAD_PER_TASK;
  }

  @Override
  public void applyTo(BlockHound.Builder builder) {
    builder.nonBlockingThreadPredicate(current -> current.or(thread -> NAME.equals(thread.getName())));
  }
}
