package dev.idem.benchmarks;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.BrokenBarrierException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Runs workloads on client threads, each with its own connection.
 *
 * <p><b>Throughput run.</b> All clients open their connection, then start together and loop,
 * each sending its next request as soon as the previous one answered (a closed loop, no think
 * time), for the warm-up and then the measurement window. An operation counts, and its latency is
 * recorded, when it <em>ends</em> inside the window; ops/s is that count divided by the window's
 * length. Failed operations are counted as errors and kept out of the latencies.
 *
 * <p><b>Race.</b> For each of {@code rounds} new keys, all clients wait at a barrier and then send
 * that same key at once; afterwards the workload counts its effects per key in the store.
 */
final class LoadRunner {

  private LoadRunner() {}

  static Results.Measurement throughput(String database, Workload workload, int clients, Duration warmup, Duration measure)
      throws Exception {
    workload.setUp();
    String[] existing = workload.keySupply() == Workload.KeySupply.EXISTING ? workload.existingKeys() : null;
    CyclicBarrier ready = new CyclicBarrier(clients + 1);
    CountDownLatch go = new CountDownLatch(1);
    long[] window = new long[2]; // start, end: written before go.countDown(), read after go.await()
    AtomicReference<Exception> setupFailure = new AtomicReference<>();
    AtomicReference<String> firstError = new AtomicReference<>();
    LatencyStats[] stats = new LatencyStats[clients];
    long[] ops = new long[clients];
    long[] errors = new long[clients];
    List<Thread> threads = new ArrayList<>();
    for (int i = 0; i < clients; i++) {
      int index = i;
      Thread t = new Thread(() -> {
        LatencyStats mine = new LatencyStats();
        stats[index] = mine;
        Workload.Client client = null;
        try {
          try {
            client = workload.client();
          } catch (Exception e) {
            setupFailure.compareAndSet(null, e);
          }
          ready.await();
          go.await();
          if (client == null || setupFailure.get() != null) {
            return;
          }
          long start = window[0];
          long end = window[1];
          ThreadLocalRandom random = ThreadLocalRandom.current();
          while (true) {
            String key = nextKey(workload.keySupply(), existing, random);
            boolean ok = true;
            long t0 = System.nanoTime();
            try {
              client.run(key);
            } catch (Exception | Error e) {
              ok = false;
              firstError.compareAndSet(null, describe(e));
            }
            long t1 = System.nanoTime();
            if (t1 - start >= 0 && t1 - end < 0) {
              if (ok) {
                mine.recordNanos(t1 - t0);
                ops[index]++;
              } else {
                errors[index]++;
              }
            }
            if (t1 - end >= 0) {
              break;
            }
          }
        } catch (InterruptedException | BrokenBarrierException e) {
          setupFailure.compareAndSet(null, e);
        } finally {
          closeQuietly(client);
        }
      }, "client-" + i);
      t.setDaemon(true);
      threads.add(t);
      t.start();
    }
    ready.await();
    long now = System.nanoTime();
    window[0] = now + warmup.toNanos();
    window[1] = window[0] + measure.toNanos();
    go.countDown();
    for (Thread t : threads) {
      t.join();
    }
    if (setupFailure.get() != null) {
      throw new IllegalStateException("a client could not start: " + describe(setupFailure.get()), setupFailure.get());
    }
    LatencyStats all = new LatencyStats();
    long totalOps = 0;
    long totalErrors = 0;
    for (int i = 0; i < clients; i++) {
      all.add(stats[i]);
      totalOps += ops[i];
      totalErrors += errors[i];
    }
    double seconds = measure.toNanos() / 1e9;
    return new Results.Measurement(database, workload.id(), clients, seconds, totalOps, totalErrors, totalOps / seconds,
        all.percentileMillis(50), all.percentileMillis(99), all.percentileMillis(99.9), all.meanMillis(), all.maxMillis(),
        firstError.get());
  }

  static Results.Race race(String database, Workload workload, int clients, int rounds) throws Exception {
    workload.setUp();
    SplittableRandom random = new SplittableRandom();
    String[] keys = new String[rounds];
    for (int r = 0; r < rounds; r++) {
      keys[r] = Keys.v4(random.nextLong(), random.nextLong());
    }
    CyclicBarrier barrier = new CyclicBarrier(clients);
    AtomicReference<Exception> setupFailure = new AtomicReference<>();
    AtomicReference<String> firstError = new AtomicReference<>();
    long[] errors = new long[clients];
    long[] attempts = new long[clients];
    List<Thread> threads = new ArrayList<>();
    for (int i = 0; i < clients; i++) {
      int index = i;
      Thread t = new Thread(() -> {
        Workload.Client client = null;
        try {
          try {
            client = workload.client();
          } catch (Exception e) {
            setupFailure.compareAndSet(null, e);
          }
          barrier.await(60, TimeUnit.SECONDS);
          if (setupFailure.get() != null) {
            return;
          }
          for (int r = 0; r < rounds; r++) {
            barrier.await(120, TimeUnit.SECONDS);
            attempts[index]++;
            try {
              client.run(keys[r]);
            } catch (Exception | Error e) {
              errors[index]++;
              firstError.compareAndSet(null, describe(e));
            }
          }
        } catch (InterruptedException | BrokenBarrierException | TimeoutException e) {
          setupFailure.compareAndSet(null, e);
          barrier.reset();
        } finally {
          closeQuietly(client);
        }
      }, "racer-" + i);
      t.setDaemon(true);
      threads.add(t);
      t.start();
    }
    for (Thread t : threads) {
      t.join();
    }
    if (setupFailure.get() != null) {
      throw new IllegalStateException("the race could not run: " + describe(setupFailure.get()), setupFailure.get());
    }
    long[] effects = workload.effects();
    long totalErrors = 0;
    long totalAttempts = 0;
    for (int i = 0; i < clients; i++) {
      totalErrors += errors[i];
      totalAttempts += attempts[i];
    }
    return new Results.Race(database, workload.id(), clients, rounds, totalAttempts, effects[0], effects[1],
        effects[0] - effects[1], rounds - effects[1], totalErrors, firstError.get());
  }

  private static String nextKey(Workload.KeySupply supply, String[] existing, ThreadLocalRandom random) {
    switch (supply) {
      case EXISTING:
        return existing[random.nextInt(existing.length)];
      case NEW_V7:
        return Keys.v7(random);
      default:
        return Keys.v4(random);
    }
  }

  static String describe(Throwable e) {
    StringBuilder sb = new StringBuilder(e.getClass().getSimpleName()).append(": ").append(e.getMessage());
    Throwable cause = e.getCause();
    if (cause != null && cause != e) {
      sb.append(" (cause ").append(cause.getClass().getSimpleName()).append(": ").append(cause.getMessage()).append(')');
    }
    String s = sb.toString().replaceAll("\\s+", " ");
    return s.length() > 300 ? s.substring(0, 300) + "..." : s;
  }

  private static void closeQuietly(Workload.Client client) {
    if (client != null) {
      try {
        client.close();
      } catch (Exception ignored) {
        // the connection goes away with the database at the end
      }
    }
  }
}
