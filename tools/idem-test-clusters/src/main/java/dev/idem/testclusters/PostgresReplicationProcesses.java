package dev.idem.testclusters;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * A PostgreSQL primary and one streaming-replication standby that this object started on free
 * loopback ports, for tests, each in a data directory of its own under one temporary directory:
 * {@code initdb}, then {@code pg_basebackup -R} for the standby. {@link Replication#SYNCHRONOUS}
 * sets {@code synchronous_standby_names = '*'} with {@code synchronous_commit = on}, so a commit is
 * acknowledged only once the standby has flushed it; {@link Replication#ASYNCHRONOUS} leaves
 * {@code synchronous_standby_names} empty; {@link Replication#NONE} starts the primary alone, to
 * compare against. {@link #close()} stops only these processes and deletes the directory.
 *
 * <p>{@link #killPrimary()} is a {@code kill -9} of the primary's postmaster; {@link #promote()}
 * runs {@code pg_ctl promote} on the standby, which becomes the primary; {@link #rebuildStandby()}
 * replaces the old primary's data directory with a new base backup of the new primary and starts
 * it as its standby, so failovers can follow one another. {@link #failover()} does all three.
 * {@link #jdbcUrl(String)} names both servers with {@code targetServerType=primary}, so a client
 * reconnects to whichever is the primary.
 *
 * <p>The binaries are taken from {@code IDEM_TEST_POSTGRES_BIN}, else the newest {@code
 * /usr/lib/postgresql/<version>/bin}, else the {@code PATH}. PostgreSQL refuses to run as root: as
 * root every server command runs as the {@code postgres} user ({@code setpriv}). Not thread-safe.
 */
public final class PostgresReplicationProcesses implements AutoCloseable {

  /** How the standby acknowledges commits. */
  public enum Replication {
    /** {@code synchronous_commit = on} with {@code synchronous_standby_names = '*'}: a commit waits for the standby's flush. */
    SYNCHRONOUS,
    /** Streaming replication without waiting: a commit is acknowledged once the primary flushed it. */
    ASYNCHRONOUS,
    /** No standby at all. */
    NONE
  }

  private static final long START_TIMEOUT_MILLIS = 60_000;

  private final Path bin;
  private final Path dir;
  private final Replication replication;
  private final @Nullable String user;
  private final List<String> extraSettings;
  private final Server[] servers = new Server[2];
  private int primary;

  private static final class Server {
    final String name;
    final int port;
    final Path data;
    @Nullable Process process;

    Server(String name, int port, Path data) {
      this.name = name;
      this.port = port;
      this.data = data;
    }
  }

  private PostgresReplicationProcesses(Path bin, Path dir, Replication replication, @Nullable String user, List<String> extraSettings) {
    this.bin = bin;
    this.dir = dir;
    this.replication = replication;
    this.user = user;
    this.extraSettings = List.copyOf(extraSettings);
  }

  /** @return the directory with {@code initdb}, {@code pg_ctl}, {@code pg_basebackup} and {@code postgres}, or {@code null} */
  public static @Nullable Path binaries() {
    String configured = System.getenv("IDEM_TEST_POSTGRES_BIN");
    if (configured != null && !configured.isBlank()) {
      Path p = Path.of(configured);
      return hasAll(p) ? p : null;
    }
    File[] versions = new File("/usr/lib/postgresql").listFiles();
    if (versions != null) {
      Arrays.sort(versions, Comparator.comparingInt(PostgresReplicationProcesses::version).reversed());
      for (File v : versions) {
        Path p = v.toPath().resolve("bin");
        if (hasAll(p)) {
          return p;
        }
      }
    }
    String initdb = ProcessSupport.executable(null, "initdb");
    if (initdb != null && hasAll(Path.of(initdb).getParent())) {
      return Path.of(initdb).getParent();
    }
    return null;
  }

  private static int version(File f) {
    try {
      return Integer.parseInt(f.getName().replaceAll("[^0-9].*$", ""));
    } catch (NumberFormatException e) {
      return 0;
    }
  }

  private static boolean hasAll(Path bin) {
    for (String tool : new String[] {"initdb", "pg_ctl", "pg_basebackup", "postgres"}) {
      if (!Files.isExecutable(bin.resolve(tool))) {
        return false;
      }
    }
    return true;
  }

  /** @return what is missing to start the servers here, or {@code null} when nothing is */
  public static @Nullable String missing() {
    List<String> missing = new ArrayList<>();
    if (binaries() == null) {
      missing.add("PostgreSQL's server binaries initdb, pg_ctl, pg_basebackup and postgres (Debian package"
          + " postgresql, or IDEM_TEST_POSTGRES_BIN)");
    }
    if (ProcessSupport.root()) {
      if (!ProcessSupport.userExists("postgres")) {
        missing.add("a 'postgres' user to run the servers as (this JVM runs as root)");
      }
      if (ProcessSupport.executable(null, "setpriv", "/usr/bin/setpriv") == null) {
        missing.add("setpriv (util-linux), to run the servers as 'postgres'");
      }
    }
    return missing.isEmpty() ? null : String.join(", ", missing);
  }

  /** @return true if the servers can be started here ({@link #missing()} is {@code null}) */
  public static boolean available() {
    return missing() == null;
  }

  /**
   * Starts a primary and, unless {@link Replication#NONE}, a standby streaming from it, and waits
   * until the standby is connected (and, when synchronous, {@code sync}).
   *
   * @param replication how the standby acknowledges commits
   * @param extraSettings more {@code postgresql.conf} lines for both servers, such as {@code "fsync = off"}
   * @return the running servers; the caller closes them
   * @throws IllegalStateException if something is missing or the servers do not come up within 60 s
   */
  public static PostgresReplicationProcesses start(Replication replication, String... extraSettings) {
    String missing = missing();
    if (missing != null) {
      throw new IllegalStateException("cannot start PostgreSQL servers, missing: " + missing);
    }
    Path dir;
    try {
      dir = Files.createTempDirectory("idem-pg-ha-");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    PostgresReplicationProcesses pg = new PostgresReplicationProcesses(binaries(), dir, replication,
        ProcessSupport.root() ? "postgres" : null, List.of(extraSettings));
    try {
      List<Integer> ports = ProcessSupport.freePorts(2);
      pg.servers[0] = new Server("a", ports.get(0), dir.resolve("a"));
      pg.servers[1] = new Server("b", ports.get(1), dir.resolve("b"));
      if (pg.user != null) {
        ProcessSupport.chown(dir, pg.user);
      }
      pg.initPrimary(pg.servers[0]);
      pg.launch(pg.servers[0]);
      pg.awaitAnswer(pg.servers[0]);
      pg.primary = 0;
      if (replication != Replication.NONE) {
        pg.baseBackup(pg.servers[1], pg.servers[0]);
        pg.launch(pg.servers[1]);
        pg.awaitAnswer(pg.servers[1]);
        pg.awaitStandbyStreaming(START_TIMEOUT_MILLIS);
      }
      return pg;
    } catch (RuntimeException e) {
      pg.close();
      throw e;
    }
  }

  /** @return how the standby acknowledges commits */
  public Replication replication() {
    return replication;
  }

  /** @return the current primary's port */
  public int primaryPort() {
    return servers[primary].port;
  }

  /** @return the current standby's port, or -1 without one */
  public int standbyPort() {
    return replication == Replication.NONE ? -1 : servers[1 - primary].port;
  }

  /**
   * @param database a database name
   * @return a pgjdbc URL with both servers and {@code targetServerType=primary}, as {@code postgres}
   *     without a password: a new connection goes to whichever is the primary now
   */
  public String jdbcUrl(String database) {
    StringBuilder hosts = new StringBuilder("127.0.0.1:" + servers[0].port);
    if (replication != Replication.NONE) {
      hosts.append(",127.0.0.1:").append(servers[1].port);
    }
    return "jdbc:postgresql://" + hosts + "/" + database + "?user=postgres&targetServerType=primary&connectTimeout=3";
  }

  /** @return a URL for the current primary alone */
  public String primaryUrl(String database) {
    return "jdbc:postgresql://127.0.0.1:" + primaryPort() + "/" + database + "?user=postgres&connectTimeout=3";
  }

  /** Runs one statement on the primary, in auto-commit, in database {@code postgres}. */
  public void execute(String sql) {
    try (Connection c = DriverManager.getConnection(primaryUrl("postgres")); Statement st = c.createStatement()) {
      st.execute(sql);
    } catch (SQLException e) {
      throw new IllegalStateException(sql + ": " + e.getMessage(), e);
    }
  }

  /** @return the primary's {@code SELECT version()} */
  public String serverVersion() {
    return queryValue(primaryPort(), "SHOW server_version");
  }

  private @Nullable String queryValue(int port, String sql) {
    try (Connection c = DriverManager.getConnection("jdbc:postgresql://127.0.0.1:" + port + "/postgres?user=postgres&connectTimeout=3");
        Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
      return rs.next() ? rs.getString(1) : null;
    } catch (SQLException e) {
      throw new IllegalStateException("port " + port + ": " + sql + ": " + e.getMessage(), e);
    }
  }

  /** Kills the primary's postmaster with SIGKILL ({@code kill -9}); its backends exit when they notice. */
  public void killPrimary() {
    Server s = servers[primary];
    if (s.process == null) {
      throw new IllegalStateException("the primary was never started");
    }
    // Its listening socket goes with it, so new connections are refused at once; its backends exit
    // on their own when they notice, closing their clients' connections.
    ProcessSupport.killHard(s.process);
  }

  /**
   * Promotes the standby ({@code pg_ctl promote -w}): it becomes the primary, and the old primary's
   * server has no role until {@link #rebuildStandby()}.
   */
  public void promote() {
    if (replication == Replication.NONE) {
      throw new IllegalStateException("no standby to promote");
    }
    Server standby = servers[1 - primary];
    asUser(List.of(bin.resolve("pg_ctl").toString(), "promote", "-w", "-t", "60", "-D", standby.data.toString()), 90);
    primary = 1 - primary;
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (!"f".equals(queryValue(primaryPort(), "SELECT pg_is_in_recovery()"))) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException("the promoted standby is still in recovery after 30 s");
      }
      ProcessSupport.sleep(50);
    }
  }

  /**
   * Makes the server that is not the primary a new standby of the primary: its data directory is
   * replaced by a base backup ({@code pg_basebackup -R}), it is started, and this waits until it
   * streams (and, when synchronous, is {@code sync}). A server still running is stopped first.
   */
  public void rebuildStandby() {
    Server old = servers[1 - primary];
    if (old.process != null && old.process.isAlive()) {
      ProcessSupport.stop(old.process, 30);
    }
    ProcessSupport.deleteTree(old.data);
    baseBackup(old, servers[primary]);
    launch(old);
    awaitAnswer(old);
    awaitStandbyStreaming(START_TIMEOUT_MILLIS);
  }

  /** {@link #killPrimary()}, {@link #promote()}, then {@link #rebuildStandby()}. */
  public void failover() {
    killPrimary();
    promote();
    rebuildStandby();
  }

  /**
   * Waits until the primary sees its standby streaming, and, when synchronous, as {@code sync}.
   *
   * @throws IllegalStateException on timeout
   */
  public void awaitStandbyStreaming(long timeoutMillis) {
    String wanted = replication == Replication.SYNCHRONOUS ? "sync" : "async";
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
    String last = "";
    while (System.nanoTime() < deadline) {
      try {
        last = String.valueOf(queryValue(primaryPort(), "SELECT string_agg(state || '/' || sync_state, ',') FROM pg_stat_replication"));
        if (last.equals("streaming/" + wanted)) {
          return;
        }
      } catch (IllegalStateException notYet) {
        last = notYet.getMessage();
      }
      ProcessSupport.sleep(100);
    }
    throw new IllegalStateException("the standby was not streaming (" + wanted + ") within " + timeoutMillis + " ms: " + last
        + "\n" + ProcessSupport.tail(servers[1 - primary].data.resolve("log/server.log"), 30));
  }

  /** Stops both servers (SIGTERM: a fast shutdown, then SIGKILL after 30 s) and deletes their files. */
  @Override
  public void close() {
    for (Server s : servers) {
      if (s != null && s.process != null && s.process.isAlive()) {
        s.process.destroy();
      }
    }
    for (Server s : servers) {
      if (s != null && s.process != null) {
        ProcessSupport.stop(s.process, 30);
      }
    }
    ProcessSupport.deleteTree(dir);
  }

  @Override
  public String toString() {
    return "PostgresReplicationProcesses[" + replication + ", primary " + primaryPort() + ", standby " + standbyPort() + "]";
  }

  // ------------------------------------------------------------------ processes

  private void initPrimary(Server s) {
    asUser(List.of(bin.resolve("initdb").toString(), "-D", s.data.toString(), "-U", "postgres", "--auth=trust", "-E", "UTF8",
        "--locale=C", "--no-sync"), 120);
    List<String> conf = new ArrayList<>(List.of(
        "listen_addresses = '127.0.0.1'",
        "unix_socket_directories = '" + dir + "'",
        "max_connections = 200",
        "shared_buffers = 64MB",
        "wal_level = replica",
        "max_wal_senders = 5",
        "wal_keep_size = 256MB",
        "hot_standby = on",
        "logging_collector = on",
        "log_directory = 'log'",
        "log_filename = 'server.log'",
        "synchronous_commit = on",
        "synchronous_standby_names = '" + (replication == Replication.SYNCHRONOUS ? "*" : "") + "'"));
    conf.addAll(extraSettings);
    try {
      Files.writeString(s.data.resolve("postgresql.conf"), "\n# idem-test-clusters\n" + String.join("\n", conf) + "\n",
          StandardCharsets.UTF_8, StandardOpenOption.APPEND);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private void baseBackup(Server target, Server source) {
    asUser(List.of(bin.resolve("pg_basebackup").toString(), "-h", "127.0.0.1", "-p", Integer.toString(source.port), "-U", "postgres",
        "-D", target.data.toString(), "-R", "-X", "stream", "-c", "fast", "--no-sync"), 120);
  }

  private void launch(Server s) {
    List<String> args = new ArrayList<>(asUserPrefix());
    args.addAll(List.of(bin.resolve("postgres").toString(), "-D", s.data.toString(), "-p", Integer.toString(s.port),
        "-c", "cluster_name=idem-" + s.name));
    try {
      s.process = new ProcessBuilder(args).directory(dir.toFile()).redirectErrorStream(true)
          .redirectOutput(ProcessBuilder.Redirect.appendTo(dir.resolve("postgres-" + s.name + ".out").toFile())).start();
    } catch (IOException e) {
      throw new UncheckedIOException("could not start postgres", e);
    }
  }

  private void awaitAnswer(Server s) {
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(START_TIMEOUT_MILLIS);
    while (System.nanoTime() < deadline) {
      if (s.process == null || !s.process.isAlive()) {
        throw new IllegalStateException("postgres " + s.name + " exited:\n" + ProcessSupport.tail(dir.resolve("postgres-" + s.name + ".out"), 20)
            + "\n" + ProcessSupport.tail(s.data.resolve("log/server.log"), 30));
      }
      try (Connection c = DriverManager.getConnection("jdbc:postgresql://127.0.0.1:" + s.port + "/postgres?user=postgres&connectTimeout=2")) {
        return;
      } catch (SQLException notYet) {
        ProcessSupport.sleep(100);
      }
    }
    throw new IllegalStateException("postgres " + s.name + " did not answer within " + START_TIMEOUT_MILLIS + " ms:\n"
        + ProcessSupport.tail(s.data.resolve("log/server.log"), 30));
  }

  private List<String> asUserPrefix() {
    if (user == null) {
      return List.of();
    }
    return List.of(ProcessSupport.executable(null, "setpriv", "/usr/bin/setpriv"), "--reuid=" + user, "--regid=" + user,
        "--init-groups", "--");
  }

  private String asUser(List<String> command, int timeoutSeconds) {
    List<String> args = new ArrayList<>(asUserPrefix());
    args.addAll(command);
    return ProcessSupport.runOrFail(args, timeoutSeconds, dir);
  }
}
