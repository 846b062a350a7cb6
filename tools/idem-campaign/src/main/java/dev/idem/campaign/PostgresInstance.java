package dev.idem.campaign;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;

/**
 * A private PostgreSQL server that the campaign creates ({@code initdb} into a directory of its
 * own, trust authentication), starts on a free loopback port with its socket directory in that
 * directory, kills with SIGKILL and starts again. The postmaster runs in the foreground as a child
 * of this JVM, so {@link #kill()} kills exactly that process (and waits for its own backends, which
 * leave when they see their postmaster gone); nothing else on the machine is touched.
 *
 * <p>PostgreSQL refuses to run as root: when this JVM runs as root, {@code initdb} and {@code
 * postgres} are started through {@code setpriv} (which execs, so the process handle is still the
 * postmaster's) as the user {@code postgres}. Not thread-safe.
 */
public final class PostgresInstance implements AutoCloseable {

  /** Where Debian and Ubuntu install PostgreSQL 15's server programs; {@code IDEM_PG_BIN} overrides it. */
  public static final Path DEFAULT_BIN = Path.of("/usr/lib/postgresql/15/bin");

  private final Path bin;
  private final Path dir;
  private final Path data;
  private final int port;
  private final boolean asPostgresUser;
  private Process postmaster;
  private int kills;

  private PostgresInstance(Path bin, Path dir, int port, boolean asPostgresUser) {
    this.bin = bin;
    this.dir = dir;
    this.data = dir.resolve("data");
    this.port = port;
    this.asPostgresUser = asPostgresUser;
  }

  /**
   * @return the directory of the server programs: {@code IDEM_PG_BIN} if set, else {@link #DEFAULT_BIN}
   */
  public static Path binaries() {
    String env = System.getenv("IDEM_PG_BIN");
    return env == null || env.isBlank() ? DEFAULT_BIN : Path.of(env);
  }

  /** @return why a private instance cannot be made here, or {@code null} if it can */
  public static String unavailableReason() {
    Path bin = binaries();
    if (!Files.isExecutable(bin.resolve("initdb")) || !Files.isExecutable(bin.resolve("postgres"))) {
      return "PostgreSQL server programs not found in " + bin + " (set IDEM_PG_BIN)";
    }
    if (isRoot() && !Files.isExecutable(Path.of("/usr/bin/setpriv"))) {
      return "running as root and /usr/bin/setpriv is missing (PostgreSQL refuses to run as root)";
    }
    return null;
  }

  private static boolean isRoot() {
    return "root".equals(System.getProperty("user.name"));
  }

  /**
   * Creates the cluster in {@code dir} and starts it.
   *
   * @param dir an empty or missing directory, deleted by nobody (the caller's temporary directory)
   * @return the running instance with a database {@code campaign}
   * @throws IOException if initdb or the server fails (the message names the log)
   * @throws InterruptedException if interrupted
   */
  public static PostgresInstance create(Path dir) throws IOException, InterruptedException {
    Objects.requireNonNull(dir, "dir");
    Files.createDirectories(dir);
    boolean root = isRoot();
    PostgresInstance pg = new PostgresInstance(binaries(), dir, Ports.free(), root);
    if (root) {
      UserPrincipal owner = dir.getFileSystem().getUserPrincipalLookupService().lookupPrincipalByName("postgres");
      Files.setOwner(dir, owner);
      Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx------"));
      // the postgres user must be able to reach dir through its parents
      for (Path p = dir.getParent(); p != null; p = p.getParent()) {
        try {
          var perms = Files.getPosixFilePermissions(p);
          perms.add(PosixFilePermission.OTHERS_EXECUTE);
          Files.setPosixFilePermissions(p, perms);
        } catch (IOException | UnsupportedOperationException ignored) {
          // best effort: a parent we may not change is usually already traversable
        }
      }
    }
    Path log = dir.resolve("initdb.log");
    List<String> initdb = pg.command(pg.bin.resolve("initdb").toString(), "-D", pg.data.toString(), "-U", "postgres",
        "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C");
    Process p = new ProcessBuilder(initdb).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    if (!p.waitFor(120, TimeUnit.SECONDS) || p.exitValue() != 0) {
      p.destroyForcibly();
      throw new IOException("initdb failed; its log: " + log + "\n" + tail(log));
    }
    pg.start();
    try (Connection c = DriverManager.getConnection(pg.url("postgres"), "postgres", "");
        var s = c.createStatement()) {
      s.execute("CREATE DATABASE campaign");
    } catch (SQLException e) {
      pg.close();
      throw new IOException("could not create the database: " + e.getMessage(), e);
    }
    return pg;
  }

  private List<String> command(String... args) {
    List<String> c = new ArrayList<>();
    if (asPostgresUser) {
      c.addAll(List.of("/usr/bin/setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", "--"));
    }
    c.addAll(List.of(args));
    return c;
  }

  /**
   * Starts the postmaster and waits until it accepts connections.
   *
   * @throws IOException if it does not within 60 seconds
   * @throws InterruptedException if interrupted
   */
  public void start() throws IOException, InterruptedException {
    if (postmaster != null && postmaster.isAlive()) {
      return;
    }
    Path log = dir.resolve("postgres.log");
    long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
    while (true) {
      // fsync stays on: a killed server must recover what it acknowledged, as in production
      List<String> cmd = command(bin.resolve("postgres").toString(), "-D", data.toString(), "-p", Integer.toString(port),
          "-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=" + dir, "-c", "max_connections=100",
          "-c", "shared_buffers=16MB");
      postmaster = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
      while (System.nanoTime() < deadline && postmaster.isAlive()) {
        if (accepts()) {
          return;
        }
        Thread.sleep(100);
      }
      if (System.nanoTime() >= deadline) {
        postmaster.destroyForcibly();
        throw new IOException("PostgreSQL did not start within 60 s; its log: " + log + "\n" + tail(log));
      }
      // it exited (for example: the old instance's shared memory was still attached); try again
      Thread.sleep(300);
    }
  }

  private boolean accepts() {
    try (Connection c = DriverManager.getConnection(url("postgres") + "&connectTimeout=1", "postgres", "")) {
      return c.isValid(1);
    } catch (SQLException e) {
      return false;
    }
  }

  /**
   * Kills the postmaster with SIGKILL (as a machine crash or the OOM killer would) and waits until
   * its own backends have gone. Does not restart it.
   *
   * @throws InterruptedException if interrupted
   */
  public void kill() throws InterruptedException {
    if (postmaster == null || !postmaster.isAlive()) {
      return;
    }
    List<ProcessHandle> backends = postmaster.descendants().toList();
    postmaster.destroyForcibly(); // SIGKILL
    postmaster.waitFor(10, TimeUnit.SECONDS);
    long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
    for (ProcessHandle b : backends) {
      while (b.isAlive() && System.nanoTime() < deadline) {
        Thread.sleep(20);
      }
      if (b.isAlive()) {
        b.destroyForcibly(); // a backend of the instance this campaign started
      }
    }
    kills++;
  }

  /** @return how many times {@link #kill()} killed the server */
  public int kills() {
    return kills;
  }

  /** @return the port it listens on, on 127.0.0.1 */
  public int port() {
    return port;
  }

  /**
   * @param database a database name
   * @return a JDBC URL of that database, directly (not through any proxy)
   */
  public String url(String database) {
    return "jdbc:postgresql://127.0.0.1:" + port + "/" + database + "?user=postgres";
  }

  /** Kills the server if it runs. Idempotent. */
  @Override
  public void close() {
    if (postmaster != null && postmaster.isAlive()) {
      List<ProcessHandle> backends = postmaster.descendants().toList();
      postmaster.destroyForcibly();
      try {
        postmaster.waitFor(10, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      backends.forEach(ProcessHandle::destroyForcibly);
    }
  }

  static String tail(Path log) {
    try {
      List<String> lines = Files.readAllLines(log);
      return String.join("\n", lines.subList(Math.max(0, lines.size() - 15), lines.size()));
    } catch (IOException e) {
      return "(unreadable: " + e.getMessage() + ")";
    }
  }
}
