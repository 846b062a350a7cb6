package dev.idem.redis;

import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import reactor.blockhound.BlockHound;
import reactor.blockhound.integration.BlockHoundIntegration;

/**
 * BlockHound's view of the thread that {@link AsyncRedisNonBlockingTest} starts its chains on: a
 * non-blocking thread, as an event loop is, so that any blocking call made there is an error
 * (Lettuce's own event loops are watched through Netty's integration). Registered through {@code
 * META-INF/services}, read when the JUnit Platform integration installs BlockHound.
 */
public final class NonBlockingTestThreads implements BlockHoundIntegration {

  /** The name of the thread, which BlockHound watches. */
  static final String NAME = "idem-nonblocking-test";

  private static final ExecutorService THREAD = Executors.newSingleThreadExecutor(task -> {
    Thread t = new Thread(task, NAME);
    t.setDaemon(true);
    return t;
  });

  /** @return the executor of the watched thread */
  static Executor executor() {
    return THREAD;
  }

  @Override
  public void applyTo(BlockHound.Builder builder) {
    builder.nonBlockingThreadPredicate(current -> current.or(thread -> NAME.equals(thread.getName())));
  }
}
