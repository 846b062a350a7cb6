package dev.idem.redis;

import dev.idem.core.LeaseContext;
import dev.idem.core.OutcomeUnknownException;
import dev.idem.core.Fingerprint;
import dev.idem.core.IdempotencyKey;
import dev.idem.core.IdempotencyKeyReusedException;
import dev.idem.core.IdempotentRequest;
import dev.idem.core.InProgressPolicy;
import dev.idem.core.LeaseIdempotency;
import dev.idem.core.LeaseLostException;
import dev.idem.core.Outcome;
import dev.idem.core.Scope;
import dev.idem.core.StoredResponse;
import dev.idem.testclusters.RedisClusterProcesses;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.RedisClusterClient;

/**
 * A bounded failover campaign on a Redis Cluster that this program starts ({@link
 * RedisClusterProcesses}: three masters, one replica each, loopback, {@code cluster-node-timeout}
 * 1 s): lease-mode traffic through {@link LeaseIdempotency} on a {@link RedisLeaseStore} while
 * masters are killed, counting the idempotency keys whose effect ran more than once.
 *
 * <p><b>Load.</b> {@code threads} workers run {@code operations} operations, each with an
 * idempotency key of its own; the effect adds one to the key's count in an in-JVM effect log. An
 * operation is repeated with the same key (new owner token, after 50 ms) until it has a final
 * outcome (executed or replayed); a store failure, an unknown completion, a lost lease or a claim in
 * progress are not final. After the load, every key is sent once more (a client that lost its
 * answer and retries): that must be a replay.
 *
 * <p><b>Faults.</b> Evenly spaced over the run (operations are held back at the next failover's
 * mark until the previous one is over, so each one happens under load), {@code failovers} times:
 * a master is killed ({@code SIGKILL}); its replica is promoted (automatic failover, or {@code
 * CLUSTER FAILOVER TAKEOVER} if none happened within 15 s); the old master is restarted and
 * rejoins as a replica; the run waits until the cluster is healthy. Every {@code droppedLinkEvery}-th
 * failover is the <em>dropped replication link</em> case instead: the replica is frozen ({@code
 * SIGSTOP}) and its link closed by the master ({@code CLIENT KILL TYPE replica}) 200 ms before the
 * master is killed, then thawed and forced to take over, so the writes that only the master
 * acknowledged are lost.
 *
 * <p><b>Counts.</b> A key with a second effect is a <em>duplicate</em>; it is an <em>answered
 * duplicate</em> if an earlier run had already returned a final outcome to its caller (an
 * acknowledged answer taken back by the failover), otherwise an ordinary lease takeover after a
 * completion that did not succeed within the lease. For each duplicate the campaign records
 * whether the later run was told {@code recovery()=true}.
 *
 * <p>Run: {@code java ... dev.idem.redis.RedisClusterFailoverCampaign --operations=20000
 * --failovers=6 --dropped-link-every=2 --durability=both} (see {@code docs/reports/reliability.md}); the
 * test {@code RedisClusterFailoverTest} runs a short one. Not thread-safe; one run at a time.
 */
public final class RedisClusterFailoverCampaign {

  /** The campaign's settings. */
  record Options(int operations, int failovers, int droppedLinkEvery, int threads, Duration lease,
      Duration waitTimeout, Duration operationDeadline) {

    static Options parse(String... args) {
      int operations = 20_000;
      int failovers = 6;
      int droppedLinkEvery = 2;
      int threads = 8;
      Duration lease = Duration.ofSeconds(10);
      Duration wait = Duration.ofMillis(200);
      for (String arg : args) {
        String[] kv = arg.replaceFirst("^--", "").split("=", 2);
        if (kv.length != 2) {
          throw new IllegalArgumentException("options are --name=value: " + arg);
        }
        switch (kv[0]) {
          case "operations" -> operations = Integer.parseInt(kv[1]);
          case "failovers" -> failovers = Integer.parseInt(kv[1]);
          case "dropped-link-every" -> droppedLinkEvery = Integer.parseInt(kv[1]);
          case "threads" -> threads = Integer.parseInt(kv[1]);
          case "lease-seconds" -> lease = Duration.ofSeconds(Long.parseLong(kv[1]));
          case "wait-millis" -> wait = Duration.ofMillis(Long.parseLong(kv[1]));
          case "durability" -> { } // read by main
          default -> throw new IllegalArgumentException("unknown option " + arg);
        }
      }
      return new Options(operations, failovers, droppedLinkEvery, threads, lease, wait, Duration.ofMinutes(3));
    }
  }

  /** What one run measured. */
  record Report(String mode, int operations, int failovers, int droppedLinkFailovers, long millis,
      int duplicates, int answeredDuplicates, int duplicatesWithRecovery, int duplicatesWithoutRecovery,
      int unresolved, long retries, int resendEffects) {

    @Override
    public String toString() {
      return String.format(Locale.ROOT, "%s: %d operations, %d failovers (%d dropped-link), %.1f s; keys with a"
              + " second effect: %d (answered before: %d; later run recovery=true: %d, recovery=false: %d);"
              + " effects on the final resend: %d; unresolved: %d; retries: %d",
          mode, operations, failovers, droppedLinkFailovers, millis / 1000.0, duplicates, answeredDuplicates,
          duplicatesWithRecovery, duplicatesWithoutRecovery, resendEffects, unresolved, retries);
    }
  }

  private RedisClusterFailoverCampaign() {
  }

  public static void main(String[] args) throws Exception {
    String durability = "both";
    for (String arg : args) {
      if (arg.startsWith("--durability=")) {
        durability = arg.substring("--durability=".length());
      }
    }
    Options options = Options.parse(args);
    try (RedisClusterProcesses cluster = RedisClusterProcesses.start(3, 1)) {
      System.out.println("cluster " + cluster.ports() + ", " + cluster.serverVersion() + ", " + options);
      if (durability.equals("none") || durability.equals("both")) {
        System.out.println(run(cluster, "none", RedisDurability.none(), options));
      }
      if (durability.equals("replicas") || durability.equals("both")) {
        System.out.println(run(cluster, "replicas(1, " + options.waitTimeout().toMillis() + " ms)",
            RedisDurability.replicas(1, options.waitTimeout()), options));
      }
    }
  }

  static RedisClusterClient client(RedisClusterProcesses cluster, int socketTimeoutMillis) {
    Set<HostAndPort> nodes = new LinkedHashSet<>();
    for (int port : cluster.ports()) {
      nodes.add(new HostAndPort("127.0.0.1", port));
    }
    return RedisClusterClient.builder().nodes(nodes)
        .clientConfig(DefaultJedisClientConfig.builder().connectionTimeoutMillis(1000)
            .socketTimeoutMillis(socketTimeoutMillis).build())
        .build();
  }

  /**
   * Runs the load and the failovers once.
   *
   * @return the counts; the cluster is healthy again afterwards
   */
  static Report run(RedisClusterProcesses cluster, String mode, RedisDurability durability, Options o)
      throws Exception {
    cluster.awaitHealthy(60_000);
    String prefix = "idem-failover-" + Long.toHexString(System.nanoTime()) + ":";
    try (RedisClusterClient client = client(cluster, 2000)) {
      RedisLeaseStore store = RedisLeaseStore.builder(client).keyPrefix(prefix).durability(durability).build();
      LeaseIdempotency idem = LeaseIdempotency.builder(store).lease(o.lease())
          .retention(o.lease().multipliedBy(100)).inProgress(InProgressPolicy.failFast()).build();
      ConcurrentHashMap<String, AtomicInteger> effects = new ConcurrentHashMap<>();
      Set<String> answered = ConcurrentHashMap.newKeySet();
      Set<String> answeredDuplicates = ConcurrentHashMap.newKeySet();
      Set<String> withRecovery = ConcurrentHashMap.newKeySet();
      Set<String> withoutRecovery = ConcurrentHashMap.newKeySet();
      AtomicInteger next = new AtomicInteger();
      AtomicInteger done = new AtomicInteger();
      AtomicInteger failoversDone = new AtomicInteger();
      AtomicInteger faultsStarted = new AtomicInteger();
      AtomicInteger unresolved = new AtomicInteger();
      AtomicLong retries = new AtomicLong();
      AtomicReference<Throwable> faultFailure = new AtomicReference<>();
      int[] marks = new int[o.failovers()];
      for (int i = 0; i < marks.length; i++) {
        marks[i] = (int) ((long) (i + 1) * o.operations() / (o.failovers() + 1));
      }
      String[] keys = new String[o.operations()];
      for (int i = 0; i < keys.length; i++) {
        keys[i] = prefix + "op-" + i;
      }
      Scope scope = Scope.of("campaign", "POST /effects");
      Fingerprint fingerprint = Fingerprint.ofJson("{\"op\":1}".getBytes(StandardCharsets.UTF_8));

      Operation operation = (key, resend) -> {
        IdempotentRequest request = new IdempotentRequest(scope, IdempotencyKey.of(key), fingerprint);
        long deadline = System.nanoTime() + o.operationDeadline().toNanos();
        while (true) {
          try {
            Outcome outcome = idem.execute(request, ctxCtx -> {
              LeaseContext ctx = ctxCtx.lease();
              int count = effects.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
              if (count > 1) {
                if (answered.contains(key)) {
                  answeredDuplicates.add(key);
                }
                (ctx.recovery() ? withRecovery : withoutRecovery).add(key);
              }
              return StoredResponse.of(201, key);
            });
            if (!outcome.response().bodyAsString().equals(key)) {
              throw new AssertionError("key " + key + " answered with " + outcome.response().bodyAsString());
            }
            answered.add(key);
            return;
          } catch (IdempotencyKeyReusedException e) {
            throw e;
          } catch (RuntimeException e) { // store failure, OutcomeUnknown, LeaseLost, in progress
            retries.incrementAndGet();
            if (System.nanoTime() > deadline) {
              unresolved.incrementAndGet();
              return;
            }
            sleep(50);
          }
        }
      };

      long start = System.nanoTime();
      ExecutorService pool = Executors.newFixedThreadPool(o.threads() + 1);
      try {
        List<Future<?>> workers = new ArrayList<>();
        for (int t = 0; t < o.threads(); t++) {
          workers.add(pool.submit(() -> {
            while (true) {
              int ticket = next.getAndIncrement();
              if (ticket >= keys.length) {
                return null;
              }
              // Hold back at a failover's mark until its first fault is injected, and at the next
              // mark until it is over, so that every fault happens under load.
              while (faultFailure.get() == null) {
                int started = faultsStarted.get();
                int f = failoversDone.get();
                boolean waitForStart = started < marks.length && ticket >= marks[started];
                boolean waitForEnd = f + 1 < marks.length && ticket >= marks[f + 1];
                if (!waitForStart && !waitForEnd) {
                  break;
                }
                sleep(2);
              }
              operation.run(keys[ticket], false);
              done.incrementAndGet();
            }
          }));
        }
        Future<?> faults = pool.submit(() -> {
          Random random = new Random();
          try {
            for (int i = 0; i < marks.length; i++) {
              while (done.get() < marks[i]) {
                sleep(5);
              }
              boolean droppedLink = o.droppedLinkEvery() > 0 && (i + 1) % o.droppedLinkEvery() == 0;
              failover(cluster, random, droppedLink, faultsStarted::incrementAndGet);
              failoversDone.incrementAndGet();
            }
          } catch (Throwable e) {
            faultFailure.set(e);
            failoversDone.set(marks.length);
            faultsStarted.set(marks.length);
          }
          return null;
        });
        for (Future<?> w : workers) {
          w.get();
        }
        faults.get();
      } finally {
        pool.shutdownNow();
        pool.awaitTermination(30, TimeUnit.SECONDS);
      }
      if (faultFailure.get() != null) {
        throw new IllegalStateException("a failover failed", faultFailure.get());
      }
      cluster.awaitHealthy(60_000);
      // A client that lost its answer sends the key again: it must be replayed, never run.
      int before = effects.values().stream().mapToInt(AtomicInteger::get).sum();
      ExecutorService resend = Executors.newFixedThreadPool(o.threads());
      try {
        List<Future<?>> parts = new ArrayList<>();
        for (int t = 0; t < o.threads(); t++) {
          int first = t;
          parts.add(resend.submit(() -> {
            for (int i = first; i < keys.length; i += o.threads()) {
              operation.run(keys[i], true);
            }
            return null;
          }));
        }
        for (Future<?> p : parts) {
          p.get();
        }
      } finally {
        resend.shutdownNow();
      }
      int resendEffects = effects.values().stream().mapToInt(AtomicInteger::get).sum() - before;
      long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
      int duplicates = (int) effects.values().stream().filter(c -> c.get() > 1).count();
      int missing = (int) Arrays.stream(keys).filter(k -> !effects.containsKey(k)).count();
      if (missing > 0) {
        throw new IllegalStateException(missing + " keys answered without their effect having run");
      }
      return new Report(mode, o.operations(), o.failovers(),
          o.droppedLinkEvery() > 0 ? o.failovers() / o.droppedLinkEvery() : 0, millis, duplicates,
          answeredDuplicates.size(), withRecovery.size(), withoutRecovery.size(), unresolved.get(), retries.get(),
          resendEffects);
    }
  }

  /**
   * Kills a master, has its replica promoted and the old master rejoin as a replica, and waits for
   * a healthy cluster.
   */
  static void failover(RedisClusterProcesses cluster, Random random, boolean droppedLink, Runnable injected) {
    List<Integer> masters = cluster.masters();
    int master = masters.get(random.nextInt(masters.size()));
    List<Integer> replicas = cluster.replicasOf(master);
    if (replicas.size() != 1) {
      throw new IllegalStateException("master " + master + " has replicas " + replicas);
    }
    int replica = replicas.get(0);
    if (droppedLink) {
      // SIGSTOP alone drops nothing: the kernel keeps receiving the replication stream into the
      // frozen replica's socket, and it reads it when thawed. So the master also closes the link,
      // and the frozen replica cannot reconnect: what the master acknowledges from now on, it alone has.
      cluster.freeze(replica);
      cluster.command(master, "CLIENT", "KILL", "TYPE", "replica");
      injected.run();
      sleep(200);
      cluster.kill(master);
      cluster.thaw(replica);
      cluster.command(replica, "CLUSTER", "FAILOVER", "TAKEOVER");
    } else {
      cluster.kill(master);
      injected.run();
    }
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
    while (!cluster.role(replica).equals("master")) {
      if (System.nanoTime() > deadline) {
        cluster.command(replica, "CLUSTER", "FAILOVER", "TAKEOVER");
        deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
      }
      sleep(50);
    }
    cluster.restart(master);
    cluster.awaitHealthy(60_000);
    if (!cluster.role(master).equals("slave")) {
      throw new IllegalStateException("the old master " + master + " did not rejoin as a replica: " + cluster.role(master));
    }
  }

  @FunctionalInterface
  private interface Operation {
    void run(String key, boolean resend);
  }

  private static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    }
  }
}
