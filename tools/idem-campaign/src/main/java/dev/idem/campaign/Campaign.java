package dev.idem.campaign;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idem.client.ClientRetryPolicy;
import dev.idem.client.HttpOperation;
import dev.idem.client.IdempotentHttpClient;
import dev.idem.client.OperationResult;
import dev.idem.client.RetryBudget;
import dev.idem.core.IdempotencyKeyReusedException;
import dev.idem.core.OutcomeUnknownException;
import java.io.IOException;
import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.Collections;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;

/**
 * The fault campaign: for each store (SQLite, PostgreSQL, and Redis in lease mode with the notes in
 * SQLite) and mode (transactional, lease), the notes service runs as a separate process with two
 * users ({@link #USERS}, each key scoped to its user) and a pool of clients sends randomised {@code
 * POST /notes} operations through {@link IdempotentHttpClient}, one idempotency key per operation,
 * kept until the operation has a final answer (half of them in cross-scope pairs: the same key and
 * body from both users), while faults are injected for real:
 *
 * <ul>
 *   <li>{@code service-kill}: the service process is killed with SIGKILL and started again at the
 *       same address (every store);
 *   <li>{@code database-kill}: a private PostgreSQL server that the campaign made with {@code
 *       initdb} is killed with SIGKILL and started again ({@link PostgresInstance});
 *   <li>{@code cut-before-commit} and {@code cut-after-commit}: a loopback proxy between the
 *       service and PostgreSQL cuts one connection at its COMMIT, before the COMMIT reaches the
 *       server or after the server acknowledged it ({@link CommitCuttingProxy});
 *   <li>{@code redis-kill}: a private Redis that the campaign started ({@link RedisInstance}) is
 *       killed with SIGKILL and started again on its append-only file.
 * </ul>
 *
 * <p>Then {@link Fuzzer} sends malformed and odd requests (no fault meanwhile): none may get a 5xx.
 *
 * <p>Each operation's note title is its marker (unique per operation). After the load, every
 * operation answered 2xx is sent once more with its key and must get the same answer, and the
 * notes table is read directly: rows per marker give duplicates and lost writes ({@link RunResult}).
 * Only processes the campaign started are ever killed. SQLite is embedded in the service, so a
 * database kill there is the service kill, and there is no connection to cut.
 *
 * <p>Run it: {@code java -cp "tools/idem-campaign/target/classes:$(cat tools/idem-campaign/target/classpath.txt)"
 * dev.idem.campaign.Campaign --operations 20000 --faults 50} (see {@code docs/reports/reliability.md}).
 */
public final class Campaign {

  /** A kind of injected fault. */
  public enum Fault {
    SERVICE_KILL("service-kill"),
    DATABASE_KILL("database-kill"),
    CUT_BEFORE_COMMIT("cut-before-commit"),
    CUT_AFTER_COMMIT("cut-after-commit"),
    REDIS_KILL("redis-kill");

    private final String label;

    Fault(String label) {
      this.label = label;
    }

    /** @return the name in reports, for example {@code service-kill} */
    public String label() {
      return label;
    }
  }

  /**
   * The campaign's settings.
   *
   * @param notesJar the notes service jar
   * @param workDir where databases and logs go (the caller deletes it)
   * @param stores {@code sqlite}, {@code postgresql} and/or {@code redis} (lease mode only: keys in a
   *     private Redis, notes in SQLite)
   * @param modes {@code transactional} and/or {@code lease}
   * @param operations operations per store and mode
   * @param faultsPerKind faults of each applicable kind per store and mode
   * @param fuzzRequests malformed and odd requests sent per store and mode after the load ({@link Fuzzer})
   * @param concurrency client threads
   * @param lease the service's {@code idem.lease} in lease mode
   * @param seed the seed of the random schedule and titles
   * @param log where progress goes
   */
  public record Config(Path notesJar, Path workDir, List<String> stores, List<String> modes, int operations, int faultsPerKind,
      int fuzzRequests, int concurrency, Duration lease, long seed, PrintStream log) {

    public Config {
      Objects.requireNonNull(notesJar, "notesJar");
      Objects.requireNonNull(workDir, "workDir");
      stores = List.copyOf(stores);
      modes = List.copyOf(modes);
      Objects.requireNonNull(lease, "lease");
      Objects.requireNonNull(log, "log");
      if (operations < 2 || faultsPerKind < 0 || fuzzRequests < 0 || concurrency < 1) {
        throw new IllegalArgumentException("operations (at least 2) and concurrency must be positive, faults and fuzz requests not negative");
      }
    }
  }

  private static final ObjectMapper JSON = new ObjectMapper();
  /** How long an operation keeps retrying (with its key) before it is counted unanswered. */
  private static final Duration OPERATION_DEADLINE = Duration.ofMinutes(3);

  /** The service's users (HTTP Basic, {@code notes.users}); every key's scope is its user's. */
  static final List<String> USERS = List.of("alice", "bob");

  private final Config config;
  private PostgresInstance postgres;
  private RedisInstance redis;

  public Campaign(Config config) {
    this.config = Objects.requireNonNull(config, "config");
  }

  /**
   * Runs every store and mode.
   *
   * @return one result per store and mode, in order
   * @throws IOException if a process or server cannot be started
   * @throws InterruptedException if interrupted
   */
  public List<RunResult> run() throws IOException, InterruptedException {
    List<RunResult> results = new ArrayList<>();
    try {
      for (String store : config.stores()) {
        for (String mode : config.modes()) {
          if (store.equals("redis") && !mode.equals("lease")) {
            config.log().println("[campaign] redis/" + mode + ": skipped (Redis shares no transaction with the notes database: lease mode only)");
            continue;
          }
          RunResult r = run(store, mode);
          config.log().println("[campaign] " + summary(r));
          results.add(r);
        }
      }
    } finally {
      if (postgres != null) {
        postgres.close();
      }
      if (redis != null) {
        redis.close();
      }
    }
    return results;
  }

  /** @return a one-line summary of a result */
  public static String summary(RunResult r) {
    return r.store() + "/" + r.mode() + ": " + r.operations() + " operations, " + r.attempts() + " attempts, faults " + r.faults()
        + ", duplicates " + r.duplicates() + ", lost writes " + r.lostWrites() + ", answers naming another row "
        + r.answersNamingAnotherRow() + ", keys with two different 2xx " + r.twoDifferent2xx() + ", unanswered "
        + r.unanswered() + ", final non-2xx " + r.finalOther() + ", rows without 2xx " + r.rowsWithout2xx() + ", 5xx "
        + r.fiveXx() + ", no answer " + r.ioFailures() + ", cross-scope replays " + r.crossScopeReplays() + ", fuzz requests "
        + r.fuzzRequests() + ", fuzz 5xx " + r.fuzzFiveXx() + ", " + r.took().toSeconds() + " s";
  }

  private RunResult run(String store, String mode) throws IOException, InterruptedException {
    long started = System.nanoTime();
    String name = store + "-" + mode;
    Path dir = config.workDir().resolve(name);
    Files.createDirectories(dir);
    List<Fault> kinds = new ArrayList<>(List.of(Fault.SERVICE_KILL));
    String serviceUrl;
    String countUrl;
    CommitCuttingProxy proxy = null;
    String database = "notes_" + mode;
    switch (store) {
      case "sqlite" -> {
        Path db = dir.resolve("notes.db");
        serviceUrl = "jdbc:sqlite:" + db + "?journal_mode=WAL&busy_timeout=10000";
        countUrl = "jdbc:sqlite:" + db;
      }
      case "postgresql" -> {
        if (postgres == null) {
          postgres = PostgresInstance.create(config.workDir().resolve("postgresql"));
        }
        try (Connection c = DriverManager.getConnection(postgres.url("campaign")); Statement s = c.createStatement()) {
          s.execute("CREATE DATABASE " + database);
        } catch (SQLException e) {
          throw new IOException("could not create the database " + database + ": " + e.getMessage(), e);
        }
        proxy = CommitCuttingProxy.start(postgres.port());
        serviceUrl = "jdbc:postgresql://127.0.0.1:" + proxy.port() + "/" + database + "?user=postgres&connectTimeout=3&socketTimeout=30"
            // the query text COMMIT on every commit (pgjdbc otherwise names it after 5 uses and sends only the name),
            // so that the proxy sees each COMMIT
            + "&prepareThreshold=0";
        countUrl = postgres.url(database);
        kinds.add(Fault.DATABASE_KILL);
        if (mode.equals("transactional")) {
          kinds.addAll(List.of(Fault.CUT_BEFORE_COMMIT, Fault.CUT_AFTER_COMMIT));
        } else {
          // lease mode runs no transaction of its own: the claim, the note and the completion each commit
          // as one auto-committed statement, so no COMMIT crosses the wire for the proxy to cut
          config.log().println("[campaign] " + store + "/" + mode + ": no cuts at COMMIT (lease mode auto-commits each statement)");
        }
      }
      case "redis" -> {
        // the notes in SQLite, the keys and stored responses in a private Redis (RedisLeaseStore)
        Path db = dir.resolve("notes.db");
        serviceUrl = "jdbc:sqlite:" + db + "?journal_mode=WAL&busy_timeout=10000";
        countUrl = "jdbc:sqlite:" + db;
        if (redis == null) {
          redis = RedisInstance.create(config.workDir().resolve("redis"));
        }
        kinds.add(Fault.REDIS_KILL);
      }
      default -> throw new IllegalArgumentException("unknown store: " + store + " (sqlite, postgresql or redis)");
    }
    List<String> args = new ArrayList<>(List.of("--idem.mode=" + mode,
        // two users, each key scoped to its user (HTTP Basic, BasicUsersFilter of the notes service)
        "--notes.users=" + USERS.stream().map(u -> u + ":" + password(u)).collect(Collectors.joining(",")),
        "--idem.principal=servlet"));
    if (store.equals("redis")) {
      args.addAll(List.of("--idem.store=redis", "--notes.redis.url=" + redis.url(), "--notes.redis.timeout=2s"));
    }
    if (mode.equals("lease")) {
      args.add("--idem.lease=" + config.lease().toMillis() + "ms");
    } else if (!mode.equals("transactional")) {
      throw new IllegalArgumentException("unknown mode: " + mode + " (transactional or lease)");
    }
    ServiceProcess service = new ServiceProcess(config.notesJar(), dir.resolve("service.log"), serviceUrl, args);
    try {
      service.start();
      Load load = new Load(service.base(), new Random(config.seed() ^ name.hashCode()), name);
      Map<Fault, Integer> faults = load.run(service, proxy, kinds);
      config.log().println("[campaign] " + name + ": fuzzing with " + config.fuzzRequests() + " requests");
      Fuzzer.Result fuzz = new Fuzzer(service.base().getPort(), new Random(config.seed() ^ name.hashCode() ^ 0x5eed),
          USERS.stream().map(Campaign::basic).toList(), config.log(), name).run(config.fuzzRequests());
      service.close();
      return load.result(store, mode, faults, fuzz, countUrl, Duration.ofNanos(System.nanoTime() - started));
    } finally {
      service.close();
      if (proxy != null) {
        proxy.close();
      }
      if (postgres != null) {
        postgres.start(); // a failure in the middle of a database kill must not leave it down for the next run
      }
      if (redis != null) {
        redis.start();
      }
    }
  }

  /** @return the password of a user of the service (fixed: these are test users on a loopback port) */
  static String password(String user) {
    return user + "-campaign-secret";
  }

  /** @return the {@code Authorization} value of a user */
  static String basic(String user) {
    return "Basic " + Base64.getEncoder().encodeToString((user + ":" + password(user)).getBytes(StandardCharsets.UTF_8));
  }

  /**
   * One operation: its marker (the note title), its user, its key (chosen up front), its final
   * answer. A cross-scope pair is two operations of different users with the same title and key,
   * sent one after the other: each must get a note of its own, never the other user's answer.
   */
  private static final class Operation {
    final String title;
    final String user;
    final String key;
    Operation partner;
    /** Whether this is the first (or only) operation of its title. */
    boolean leads = true;
    volatile OperationResult answer;
    volatile String failure;

    Operation(String title, String user, String key) {
      this.title = title;
      this.user = user;
      this.key = key;
    }
  }

  private final class Load {
    final URI base;
    final Random random;
    final String name;
    final List<Operation> operations = new ArrayList<>();
    /** What one client thread sends in order: one operation, or a cross-scope pair. */
    final List<List<Operation>> tasks = new ArrayList<>();
    final AtomicInteger done = new AtomicInteger();
    /**
     * Workers start no new task while {@code done >= gate}: the load runs on while a fault is
     * injected, but never past the next fault's position until that fault's turn, so that no fault
     * finds the load already over (on an idle machine the operations after a restart finish in
     * milliseconds, before the next fault was even armed); a cut waiting for a COMMIT raises it.
     */
    final AtomicInteger gate = new AtomicInteger(Integer.MAX_VALUE);
    final AtomicLong attempts = new AtomicLong();
    final Map<String, Integer> fiveXx = new ConcurrentHashMap<>();
    final Map<String, Integer> ioFailures = new ConcurrentHashMap<>();
    final Map<String, JsonNode> verification = new ConcurrentHashMap<>();
    /** Operations whose resend got the other user's answer. */
    final Set<String> crossScopeOnResend = ConcurrentHashMap.newKeySet();
    volatile boolean verifying;

    Load(URI base, Random random, String name) {
      this.base = base;
      this.random = random;
      this.name = name;
      String run = Long.toString(random.nextLong() & Long.MAX_VALUE, 36);
      for (int i = 0; operations.size() < config.operations(); i++) {
        // the marker: unique per operation (or pair), with a random tail so that bodies vary in
        // length (no surrounding blanks: the service strips them from a title)
        String title = "campaign " + run + " op " + i + " " + "x".repeat(1 + random.nextInt(40));
        String key = new UUID(random.nextLong(), random.nextLong()).toString();
        if (i % 3 == 0 && config.operations() - operations.size() >= 2) {
          // every third task (so half of the operations): the same key and body from both users, the first user's
          // answer stored before the second asks
          Operation first = new Operation(title, USERS.get(i % 2), key);
          Operation second = new Operation(title, USERS.get((i + 1) % 2), key);
          first.partner = second;
          second.partner = first;
          second.leads = false;
          tasks.add(List.of(first, second));
        } else {
          tasks.add(List.of(new Operation(title, USERS.get(i % 2), key)));
        }
        operations.addAll(tasks.get(tasks.size() - 1));
      }
    }

    void observe(HttpResponse<?> response, Throwable failure) {
      if (verifying) {
        return;
      }
      attempts.incrementAndGet();
      if (response != null && response.statusCode() >= 500) {
        String type = "";
        Object body = response.body();
        if (body instanceof byte[] bytes) {
          try {
            JsonNode problem = JSON.readTree(bytes);
            type = problem.path("type").asText("");
            // Idem's problem types by their last segment; the application's own (about:blank) by title
            type = type.isEmpty() || type.equals("about:blank") ? problem.path("title").asText("") : type.substring(type.lastIndexOf('/') + 1);
            String detail = problem.path("detail").asText("");
            type = detail.isEmpty() ? type : type + ": " + detail;
          } catch (IOException notJson) {
            type = "(not JSON)";
          }
        }
        if (fiveXx.merge(response.statusCode() + " " + type, 1, Integer::sum) == 1 && body instanceof byte[] bytes) {
          // the first of each kind, so that its text can be read (does it tell the truth about the outcome?)
          config.log().println("[campaign] " + name + ": first " + response.statusCode() + " " + type + ": "
              + new String(bytes, StandardCharsets.UTF_8));
        }
      } else if (failure != null) {
        ioFailures.merge(failure.getClass().getSimpleName(), 1, Integer::sum);
      }
    }

    Map<Fault, Integer> run(ServiceProcess service, CommitCuttingProxy proxy, List<Fault> kinds) throws InterruptedException, IOException {
      HttpClient http = new RecordingHttpClient(HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build(), this::observe);
      IdempotentHttpClient client = IdempotentHttpClient.builder(http)
          .retryPolicy(ClientRetryPolicy.builder().maxAttempts(10).maxDuration(Duration.ofSeconds(30))
              .baseDelay(Duration.ofMillis(50)).maxDelay(Duration.ofSeconds(1)).attemptTimeout(Duration.ofSeconds(15)).build())
          .retryBudget(RetryBudget.unlimited())
          .build();
      // the schedule: faults of every kind, shuffled, spread evenly over the operations
      List<Fault> schedule = new ArrayList<>();
      for (Fault f : kinds) {
        schedule.addAll(Collections.nCopies(config.faultsPerKind(), f));
      }
      Collections.shuffle(schedule, random);
      ExecutorService pool = Executors.newFixedThreadPool(config.concurrency());
      AtomicInteger next = new AtomicInteger();
      List<Future<?>> workers = new ArrayList<>();
      int slack = 2 * config.concurrency();
      gate.set(schedule.isEmpty() ? Integer.MAX_VALUE : (int) ((long) operations.size() / (schedule.size() + 1)) + slack);
      for (int w = 0; w < config.concurrency(); w++) {
        workers.add(pool.submit(() -> {
          for (int i = next.getAndIncrement(); i < tasks.size(); i = next.getAndIncrement()) {
            while (done.get() >= gate.get()) {
              Thread.sleep(2);
            }
            for (Operation op : tasks.get(i)) {
              perform(client, op);
              done.incrementAndGet();
            }
          }
          return null;
        }));
      }
      pool.shutdown();
      Map<Fault, Integer> happened = new EnumMap<>(Fault.class);
      try {
        for (int j = 0; j < schedule.size(); j++) {
          int at = (int) ((long) (j + 1) * operations.size() / (schedule.size() + 1));
          gate.set(at + slack);
          while (done.get() < at && !pool.isTerminated()) {
            Thread.sleep(5);
          }
          if (pool.isTerminated()) {
            break;
          }
          // while this fault is injected the load goes on, up to the next fault's position
          gate.set(j + 1 < schedule.size() ? (int) ((long) (j + 2) * operations.size() / (schedule.size() + 1)) : Integer.MAX_VALUE);
          Fault f = schedule.get(j);
          if (inject(f, service, proxy)) {
            happened.merge(f, 1, Integer::sum);
          }
          config.log().println("[campaign] " + name + ": " + f.label() + " at operation " + done.get() + "/" + operations.size()
              + " (" + happened.getOrDefault(f, 0) + " so far)");
        }
      } finally {
        gate.set(Integer.MAX_VALUE); // the rest of the load, whatever happened to the schedule
        if (!pool.awaitTermination(OPERATION_DEADLINE.toMillis() + 60_000, TimeUnit.MILLISECONDS)) {
          pool.shutdownNow();
        }
      }
      for (Future<?> w : workers) {
        try {
          w.get();
        } catch (ExecutionException e) {
          throw new IllegalStateException("a client thread failed", e.getCause());
        }
      }
      verify();
      return happened;
    }

    /** Sends one operation until it has a final answer, resending with the same key after an unknown outcome. */
    void perform(IdempotentHttpClient client, Operation op) throws InterruptedException {
      String body;
      try {
        body = JSON.writeValueAsString(Map.of("title", op.title));
      } catch (IOException e) {
        throw new IllegalStateException(e);
      }
      HttpOperation request = HttpOperation.builder("POST", base.resolve("/notes"))
          .header("Content-Type", "application/json")
          .header("Authorization", basic(op.user))
          .body(body.getBytes(StandardCharsets.UTF_8))
          .idempotencyKey(op.key)
          .build();
      long deadline = System.nanoTime() + OPERATION_DEADLINE.toNanos();
      while (true) {
        try {
          op.answer = client.send(request);
          return;
        } catch (OutcomeUnknownException e) {
          // the same operation: never a new key (the request carries the operation's own key)
          if (System.nanoTime() > deadline) {
            op.failure = "outcome unknown after " + OPERATION_DEADLINE.toMinutes() + " min: " + e.getMessage();
            return;
          }
          Thread.sleep(200);
        } catch (IdempotencyKeyReusedException e) {
          op.failure = "key reused: " + e.getMessage();
          return;
        }
      }
    }

    boolean inject(Fault f, ServiceProcess service, CommitCuttingProxy proxy) throws InterruptedException, IOException {
      switch (f) {
        case SERVICE_KILL -> {
          Thread.sleep(random.nextInt(200)); // a random moment of the load
          service.kill();
          service.start();
          return true;
        }
        case DATABASE_KILL -> {
          Thread.sleep(random.nextInt(200));
          postgres.kill();
          Thread.sleep(random.nextInt(1000));
          postgres.start();
          return true;
        }
        case REDIS_KILL -> {
          Thread.sleep(random.nextInt(200));
          redis.kill();
          Thread.sleep(random.nextInt(1000));
          redis.start();
          return true;
        }
        case CUT_BEFORE_COMMIT, CUT_AFTER_COMMIT -> {
          CommitCuttingProxy.Cut cut = f == Fault.CUT_BEFORE_COMMIT ? CommitCuttingProxy.Cut.BEFORE_COMMIT : CommitCuttingProxy.Cut.AFTER_COMMIT;
          int before = proxy.fired(cut);
          proxy.arm(cut);
          long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
          while (proxy.fired(cut) == before && System.nanoTime() < until) {
            if (done.get() >= gate.get() - config.concurrency()) {
              gate.addAndGet(config.concurrency()); // more operations, so that a COMMIT comes
            }
            Thread.sleep(2);
          }
          proxy.disarm();
          return proxy.fired(cut) > before;
        }
        default -> throw new IllegalStateException(f.toString());
      }
    }

    /** Sends every operation answered 2xx once more, with its key and body; the answer must be the same. */
    void verify() throws InterruptedException {
      verifying = true;
      HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
      for (Operation op : operations) {
        OperationResult first = op.answer;
        if (first == null || first.status() / 100 != 2) {
          continue;
        }
        String body;
        try {
          body = JSON.writeValueAsString(Map.of("title", op.title));
        } catch (IOException e) {
          throw new IllegalStateException(e);
        }
        HttpRequest request = HttpRequest.newBuilder(base.resolve("/notes"))
            .header("Content-Type", "application/json")
            .header("Authorization", basic(op.user))
            .header(IdempotentHttpClient.KEY_HEADER, "\"" + op.key + "\"")
            .timeout(Duration.ofSeconds(15))
            .POST(HttpRequest.BodyPublishers.ofString(body, StandardCharsets.UTF_8)).build();
        for (int tries = 0; tries < 50; tries++) {
          try {
            HttpResponse<byte[]> again = http.send(request, HttpResponse.BodyHandlers.ofByteArray());
            if (again.statusCode() == 409 || again.statusCode() == 503) {
              Thread.sleep(200);
              continue;
            }
            boolean same = again.statusCode() == first.status() && Arrays.equals(again.body(), first.body());
            if (!same && again.statusCode() / 100 == 2) {
              verification.put(op.user + " " + op.key, JSON.createObjectNode().put("first", first.bodyAsString())
                  .put("again", new String(again.body(), StandardCharsets.UTF_8)));
            }
            OperationResult other = op.partner == null ? null : op.partner.answer;
            if (other != null && other.status() / 100 == 2 && !Arrays.equals(other.body(), first.body())
                && again.statusCode() / 100 == 2 && Arrays.equals(again.body(), other.body())) {
              crossScopeOnResend.add(op.user + " " + op.key);
            }
            break;
          } catch (IOException e) {
            Thread.sleep(200);
          }
        }
      }
    }

    RunResult result(String store, String mode, Map<Fault, Integer> faults, Fuzzer.Result fuzz, String countUrl, Duration took) throws IOException {
      Map<String, List<Long>> rows = new HashMap<>();
      try (Connection c = DriverManager.getConnection(countUrl);
          Statement s = c.createStatement();
          ResultSet rs = s.executeQuery("SELECT title, id FROM notes")) {
        while (rs.next()) {
          rows.computeIfAbsent(rs.getString(1), t -> new ArrayList<>()).add(rs.getLong(2));
        }
      } catch (SQLException e) {
        throw new IOException("could not count the notes: " + e.getMessage(), e);
      }
      int answered2xx = 0;
      int unanswered = 0;
      int duplicates = 0;
      int lost = 0;
      int anotherRow = 0;
      int rowsWithout2xx = 0;
      int crossScope = 0;
      Map<Integer, Integer> finalOther = new TreeMap<>();
      for (Operation op : operations) {
        List<Long> ids = rows.getOrDefault(op.title, List.of());
        // one row per operation of the marker: one, or two for a cross-scope pair (counted once, at its first)
        int expected = op.partner == null ? 1 : 2;
        if (ids.size() > expected && op.leads) {
          duplicates++;
          config.log().println("[campaign] " + name + ": duplicate: " + ids.size() + " rows " + ids + " for key " + op.key);
        }
        OperationResult mine = op.answer;
        OperationResult theirs = op.partner == null ? null : op.partner.answer;
        if (op.partner != null && op.leads && mine != null && theirs != null && mine.status() / 100 == 2 && theirs.status() / 100 == 2
            && (Arrays.equals(mine.body(), theirs.body()) || noteId(mine) >= 0 && noteId(mine) == noteId(theirs))) {
          crossScope++;
          config.log().println("[campaign] " + name + ": cross-scope replay: " + op.user + " and " + op.partner.user + " got one answer for key "
              + op.key + ": " + mine.bodyAsString());
        }
        OperationResult a = op.answer;
        if (a == null) {
          unanswered++;
          config.log().println("[campaign] " + name + ": unanswered: " + op.failure);
          if (!ids.isEmpty()) {
            rowsWithout2xx++;
          }
          continue;
        }
        if (a.status() / 100 != 2) {
          finalOther.merge(a.status(), 1, Integer::sum);
          config.log().println("[campaign] " + name + ": final " + a.status() + " for key " + op.key + ": " + a.bodyAsString());
          if (!ids.isEmpty()) {
            rowsWithout2xx++;
          }
          continue;
        }
        answered2xx++;
        if (ids.isEmpty()) {
          lost++;
          config.log().println("[campaign] " + name + ": lost write: key " + op.key + " answered " + a.bodyAsString());
          continue;
        }
        long id = noteId(a);
        if (!ids.contains(id)) {
          anotherRow++;
          config.log().println("[campaign] " + name + ": the answer names note " + id + ", the rows are " + ids);
        }
      }
      verification.forEach((key, v) -> config.log().println("[campaign] " + name + ": two different 2xx for key " + key + ": " + v));
      crossScopeOnResend.forEach(k -> config.log().println("[campaign] " + name + ": cross-scope replay on the resend: " + k));
      Map<String, Integer> faultCounts = new TreeMap<>();
      faults.forEach((f, n) -> faultCounts.put(f.label(), n));
      return new RunResult(store, mode, operations.size(), answered2xx, finalOther, unanswered, attempts.get(), faultCounts,
          duplicates, lost, anotherRow, verification.size(), rowsWithout2xx, new TreeMap<>(fiveXx), new TreeMap<>(ioFailures),
          crossScope + crossScopeOnResend.size(), fuzz.requests(), fuzz.fiveXx(), fuzz.statuses(), took);
    }
  }

  /** @return the note id a 2xx answer names, -1 if none */
  static long noteId(OperationResult a) {
    try {
      return JSON.readTree(a.body()).path("id").asLong(-1);
    } catch (IOException e) {
      return -1;
    }
  }

  /**
   * The long run from the command line; writes its results into {@code docs/reports/reliability.md}
   * (between its campaign markers) when {@code --out} names that file.
   *
   * <pre>
   * --operations N   operations per store and mode (default 20000)
   * --faults N       faults of each kind per store and mode (default 50)
   * --fuzz N         malformed and odd requests per store and mode after the load (default 6300)
   * --stores LIST    sqlite,postgresql,redis (default sqlite,postgresql; redis runs in lease mode only)
   * --modes LIST     transactional,lease (default both)
   * --concurrency N  client threads (default 8)
   * --lease DURATION the service's idem.lease in lease mode, ISO-8601 or seconds (default 5)
   * --seed N         the random seed (default: the time)
   * --jar PATH       the notes service jar (default examples/notes-service/target/notes-service.jar)
   * --out FILE       the Markdown file whose section for this run's stores and modes is replaced
   *                  (default: none); sections of other stores and modes are kept
   * </pre>
   *
   * Exits 0 when every invariant held, 1 when one did not, 2 on a usage or set-up error.
   */
  public static void main(String[] args) throws Exception {
    int operations = 20000;
    int faults = 50;
    int fuzz = 6300;
    List<String> stores = List.of("sqlite", "postgresql");
    List<String> modes = List.of("transactional", "lease");
    int concurrency = 8;
    Duration lease = Duration.ofSeconds(5);
    long seed = System.nanoTime();
    Path jar = Path.of("examples/notes-service/target/notes-service.jar");
    Path out = null;
    try {
      for (int i = 0; i < args.length; i++) {
        switch (args[i]) {
          case "--operations" -> operations = Integer.parseInt(args[++i]);
          case "--faults" -> faults = Integer.parseInt(args[++i]);
          case "--fuzz" -> fuzz = Integer.parseInt(args[++i]);
          case "--stores" -> stores = List.of(args[++i].split(","));
          case "--modes" -> modes = List.of(args[++i].split(","));
          case "--concurrency" -> concurrency = Integer.parseInt(args[++i]);
          case "--lease" -> lease = args[i + 1].startsWith("P") ? Duration.parse(args[++i]) : Duration.ofSeconds(Long.parseLong(args[++i]));
          case "--seed" -> seed = Long.parseLong(args[++i]);
          case "--jar" -> jar = Path.of(args[++i]);
          case "--out" -> out = Path.of(args[++i]);
          default -> throw new IllegalArgumentException("unknown option " + args[i]);
        }
      }
    } catch (RuntimeException e) {
      System.err.println("usage: Campaign [--operations N] [--faults N] [--fuzz N] [--stores sqlite,postgresql,redis] [--modes transactional,lease]"
          + " [--concurrency N] [--lease SECONDS] [--seed N] [--jar PATH] [--out docs/reports/reliability.md]: " + e.getMessage());
      System.exit(2);
      return;
    }
    if (!Files.isRegularFile(jar)) {
      System.err.println("the notes service jar is missing: " + jar + " (build it with ./mvnw -B -q -pl examples/notes-service -am package -DskipTests)");
      System.exit(2);
      return;
    }
    if (stores.contains("postgresql") && PostgresInstance.unavailableReason() != null) {
      System.err.println(PostgresInstance.unavailableReason());
      System.exit(2);
      return;
    }
    if (stores.contains("redis") && RedisInstance.unavailableReason() != null) {
      System.err.println(RedisInstance.unavailableReason());
      System.exit(2);
      return;
    }
    Path work = Files.createTempDirectory("idem-campaign");
    long started = System.nanoTime();
    List<RunResult> results = new Campaign(new Config(jar.toAbsolutePath(), work, stores, modes, operations, faults, fuzz, concurrency, lease, seed, System.out)).run();
    Duration took = Duration.ofNanos(System.nanoTime() - started);
    String report = Report.markdown(results, stores, modes, String.join(" ", args), seed, concurrency, lease, took);
    System.out.println(report);
    if (out != null) {
      Report.replaceSection(out, report);
      System.out.println("[campaign] written to " + out);
    }
    deleteQuietly(work);
    System.exit(Report.violations(results).isEmpty() ? 0 : 1);
  }

  static void deleteQuietly(Path dir) {
    try (var walk = Files.walk(dir)) {
      walk.sorted(Collections.reverseOrder()).forEach(p -> {
        try {
          Files.deleteIfExists(p);
        } catch (IOException ignored) {
          // a temporary directory
        }
      });
    } catch (IOException ignored) {
      // a temporary directory
    }
  }
}
